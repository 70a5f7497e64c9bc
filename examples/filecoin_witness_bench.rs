//! The witness path on filecoin-proofs' own 2 KiB PoRep C2 circuit, on the host (no GPU, no
//! Groth parameters).
//!
//!     cargo run --release --features filecoin --example filecoin_witness_bench -- --runs 3
//!
//! Seals a 2 KiB sector with filecoin-proofs (pre-commit 1 and 2, then commit phase 1, none of
//! which needs parameters), builds the C2 circuit of one partition from the commit-phase-1
//! output exactly as `cuzk::filecoin` (and filecoin-proofs) build it
//! (`StackedCompound::circuit`), and prints, median of `--runs`:
//!
//! - full synthesis (`Prover::synthesize` into a `ProvingAssignment`);
//! - recording (`CompiledCircuit::record`: full synthesis that also records A, B, C);
//! - witness-only synthesis: `WitnessCs::new().without_generator()` on the heap, the same in
//!   pool buffers sized for the circuit's aux (what the default `Prover` policy runs on a
//!   witness-path partition), and `WitnessCs::new()` with the generator shortcuts on (neptune's
//!   Poseidon then writes its values through `allocate_empty`: whether `CompiledCircuit::check`
//!   accepts that witness is printed);
//! - host evaluation: `CompiledCircuit::assignment` (aux expanded, a, b, c into pool buffers)
//!   and `CompiledCircuit::evaluate` (a, b, c read straight from the compact witness);
//!
//! and the sizes: constraints, aux, the share of aux that is 0 or 1, the compact witness
//! against 32·aux, the full path's a, b, c and aux, the compiled circuit and its non-zeros.
//! a, b, c of both evaluations are compared with the full synthesis's element for element
//! (exit 1 when they differ). `--profile-witness N` only runs N witness-only syntheses (for
//! `perf record`).

mod support;

use std::fs::{File, OpenOptions};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use blstrs::Scalar;
use clap::Parser;
use cuzk::compiled::{CompiledCircuit, Witness, WitnessCs};
use cuzk::filecoin::{self, RegisteredSealProof};
use cuzk::{BackendChoice, PinnedPool, PoolConfig, Prover};
use filecoin_proofs_api::seal::{self as api_seal, SealPreCommitPhase2Output};
use filecoin_proofs_api::{PieceInfo, SectorId, UnpaddedBytesAmount};
use rand::{Rng, SeedableRng};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound};
use support::fail;

const SEAL: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
const MINER: u64 = 1000;
type Tree = filecoin_proofs::SectorShape2KiB;
type Piece = filecoin_proofs::DefaultPieceHasher;
type Circuit = StackedCircuit<Tree, Piece>;

/// The witness path on filecoin-proofs' 2 KiB PoRep C2 circuit, on the host.
#[derive(Parser)]
#[command(name = "filecoin_witness_bench")]
struct Args {
    /// Timed runs per step (the median is printed).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = support::at_least_one)]
    runs: usize,
    /// Which partition's circuit to measure.
    #[arg(long, value_name = "K", default_value_t = 0)]
    partition: usize,
    /// Scratch directory for the sealed sector (emptied first, removed at the end).
    #[arg(long, value_name = "DIR", default_value = "target/filecoin-witness-bench")]
    scratch: PathBuf,
    /// Only run N witness-only syntheses (`without_generator`, heap) and print their times:
    /// for `perf record`.
    #[arg(long, value_name = "N")]
    profile_witness: Option<usize>,
}

fn ok<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| fail(&format!("{what}: {e}")))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Median time of `runs` calls of `f`, and the last output (the previous run's output is
/// dropped before the next starts, so its buffers are reused, not added to).
fn timed<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        drop(last.take());
        let start = Instant::now();
        let out = f();
        times.push(start.elapsed());
        last = Some(out);
    }
    (median(times), last.expect("at least one run"))
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

fn mib(bytes: usize) -> String {
    format!("{:.2}", bytes as f64 / (1u64 << 20) as f64)
}

fn prover_id() -> [u8; 32] {
    filecoin::prover_id_from_miner_id(MINER)
}

/// Seals a 2 KiB sector of random data and returns filecoin-proofs' commit-phase-1 output.
fn seal_and_commit1(dir: &Path, sector_id: u64) -> filecoin_proofs_api::seal::SealCommitPhase1Output {
    let mut rng = rand_chacha::ChaCha20Rng::from_seed([1; 32]);
    let cache = dir.join("cache");
    ok("scratch", std::fs::create_dir_all(&cache));
    let replica = dir.join("sealed");
    ok("sealed file", File::create(&replica));
    let data: Vec<u8> = (0..2032).map(|_| rng.gen()).collect();
    let staged = dir.join("staged");
    let mut target = ok(
        "staged file",
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&staged),
    );
    let (piece, _) = ok(
        "add_piece",
        api_seal::add_piece(
            SEAL,
            Cursor::new(&data),
            &mut target,
            UnpaddedBytesAmount(data.len() as u64),
            &[],
        ),
    );
    drop(target);
    let pieces: Vec<PieceInfo> = vec![piece];
    let ticket: [u8; 32] = rng.gen();
    let pc1 = ok(
        "pre-commit 1",
        api_seal::seal_pre_commit_phase1(
            SEAL,
            &cache,
            &staged,
            &replica,
            prover_id(),
            SectorId::from(sector_id),
            ticket,
            &pieces,
        ),
    );
    let pc2 = ok("pre-commit 2", api_seal::seal_pre_commit_phase2(pc1, &cache, &replica));
    let pc2 = SealPreCommitPhase2Output {
        registered_proof: pc2.registered_proof,
        comm_r: pc2.comm_r,
        comm_d: pc2.comm_d,
    };
    ok(
        "commit 1",
        api_seal::seal_commit_phase1(
            &cache,
            &replica,
            prover_id(),
            SectorId::from(sector_id),
            ticket,
            [4; 32],
            pc2,
            &pieces,
        ),
    )
}

/// The C2 circuits of every partition, built from the commit-phase-1 output as
/// `cuzk::filecoin::seal_commit_phase2` (and filecoin-proofs) build them.
fn partition_circuits(c1: filecoin_proofs_api::seal::SealCommitPhase1Output) -> Vec<Circuit> {
    let config = SEAL.as_v1_config();
    let vanilla: Vec<Vec<filecoin_proofs::VanillaSealProof<Tree>>> = ok("vanilla proofs", c1.vanilla_proofs.try_into());
    let replica_id: Scalar = c1.replica_id.into();
    let public_inputs = stacked::PublicInputs {
        replica_id: replica_id.into(),
        tau: Some(stacked::Tau {
            comm_d: ok(
                "comm_d",
                <filecoin_proofs::DefaultPieceDomain as filecoin_hashers::Domain>::try_from_bytes(&c1.comm_d),
            ),
            comm_r: ok("comm_r", filecoin_proofs::as_safe_commitment(&c1.comm_r, "comm_r")),
        }),
        k: None,
        seed: Some(c1.seed),
    };
    let pub_params = ok(
        "public parameters",
        filecoin_proofs::parameters::public_params::<Tree>(&config),
    );
    vanilla
        .iter()
        .enumerate()
        .map(|(k, v)| {
            ok(
                "StackedCompound::circuit",
                <StackedCompound<Tree, Piece> as CompoundProof<'_, _, _>>::circuit(
                    &public_inputs,
                    (),
                    v,
                    &pub_params,
                    Some(k),
                ),
            )
        })
        .collect()
}

fn witness(cs: WitnessCs, circuit: &Circuit) -> Witness {
    ok("witness synthesis", cs.synthesize(circuit.clone()))
}

fn main() {
    support::init_logging("warn");
    let args = Args::parse();
    let _ = std::fs::remove_dir_all(&args.scratch);
    ok("scratch", std::fs::create_dir_all(&args.scratch));

    let start = Instant::now();
    let c1 = seal_and_commit1(&args.scratch, 7);
    let sealed = start.elapsed();
    let start = Instant::now();
    let circuits = partition_circuits(c1);
    let built = start.elapsed();
    let _ = std::fs::remove_dir_all(&args.scratch);
    let partitions = circuits.len();
    let circuit = circuits
        .into_iter()
        .nth(args.partition)
        .unwrap_or_else(|| fail(&format!("--partition {}: the proof has {partitions}", args.partition)));

    if let Some(n) = args.profile_witness {
        for i in 0..n {
            let start = Instant::now();
            let w = witness(WitnessCs::new().without_generator(), &circuit);
            eprintln!(
                "witness-only synthesis {}/{n}: {:.1} ms ({} aux)",
                i + 1,
                start.elapsed().as_secs_f64() * 1e3,
                w.num_aux()
            );
        }
        return;
    }

    println!("machine: {}", support::machine());
    println!(
        "circuit: filecoin-proofs 19.1 PoRep C2 ({SEAL:?}), partition {} of {partitions}; median of {} runs",
        args.partition, args.runs
    );
    println!(
        "sealing + commit phase 1: {:.2} s; circuits built in {:.1} ms\n",
        sealed.as_secs_f64(),
        built.as_secs_f64() * 1e3
    );

    let prover = ok("CPU prover", Prover::new().with_backend(BackendChoice::Cpu));
    let pool = PinnedPool::heap(PoolConfig::default());

    let (t_full, full) = timed(args.runs, || ok("full synthesis", prover.synthesize(circuit.clone())));
    let (t_record, compiled) = timed(args.runs, || {
        ok("recording", CompiledCircuit::record(circuit.clone(), None, None)).1
    });
    let (t_witness, w) = timed(args.runs, || witness(WitnessCs::new().without_generator(), &circuit));
    ok(
        "the witness (without_generator) against its circuit",
        compiled.check(&w),
    );
    let (t_pooled, pooled) = timed(args.runs, || {
        let cs = ok(
            "witness system in the pool",
            WitnessCs::in_pool(&pool, compiled.num_aux()),
        );
        witness(cs.without_generator(), &circuit)
    });
    ok("the pooled witness against its circuit", compiled.check(&pooled));
    drop(pooled);
    let (t_generator, generated) = timed(args.runs, || witness(WitnessCs::new(), &circuit));
    let generator_check = match compiled.check(&generated) {
        Ok(()) => "accepted".to_string(),
        Err(_) if generated.generated_values() > 0 => format!(
            "refused ({} values from witness-generator methods)",
            generated.generated_values()
        ),
        Err(e) => format!("refused: {e}"),
    };
    drop(generated);
    let (t_assign, assignment) = timed(args.runs, || ok("assignment", compiled.assignment(&w, Some(&pool))));
    if assignment.a() != full.a() || assignment.b() != full.b() || assignment.c() != full.c() {
        eprintln!("filecoin_witness_bench: a, b, c of CompiledCircuit::assignment differ from full synthesis");
        std::process::exit(1);
    }
    if assignment.aux_assignment() != full.aux_assignment() || assignment.input_assignment() != full.input_assignment()
    {
        eprintln!("filecoin_witness_bench: the witness differs from full synthesis");
        std::process::exit(1);
    }
    drop(assignment);
    let (t_compact, abc) = timed(args.runs, || ok("evaluate", compiled.evaluate(&w)));
    if abc.a.as_slice() != full.a() || abc.b.as_slice() != full.b() || abc.c.as_slice() != full.c() {
        eprintln!("filecoin_witness_bench: a, b, c of CompiledCircuit::evaluate differ from full synthesis");
        std::process::exit(1);
    }
    drop(abc);

    let speedup = |t: Duration| format!("{:.2}×", t_full.as_secs_f64() / t.as_secs_f64());
    let rows = [
        ("full synthesis (`Prover::synthesize`)", t_full, "1.00×".to_string()),
        (
            "recording A, B, C (`CompiledCircuit::record`)",
            t_record,
            speedup(t_record),
        ),
        (
            "witness only, `WitnessCs::new().without_generator()` (heap)",
            t_witness,
            speedup(t_witness),
        ),
        (
            "witness only, `without_generator`, pool buffers (the default policy's)",
            t_pooled,
            speedup(t_pooled),
        ),
        (
            "witness only, `WitnessCs::new()` (generator shortcuts on)",
            t_generator,
            format!("{}; check: {generator_check}", speedup(t_generator)),
        ),
        (
            "host eval → assignment (`CompiledCircuit::assignment`)",
            t_assign,
            String::new(),
        ),
        (
            "host eval from the compact witness (`CompiledCircuit::evaluate`)",
            t_compact,
            String::new(),
        ),
    ];
    println!("| step | ms | full ÷ step |");
    println!("|---|---|---|");
    for (step, t, note) in rows {
        println!("| {step} | {} | {note} |", ms(t));
    }

    let aux = w.num_aux();
    let n = full.num_constraints();
    let inputs = full.input_assignment().len();
    let full_bytes = 32 * (3 * n + aux + inputs);
    let (a, b, c) = (compiled.a(), compiled.b(), compiled.c());
    println!();
    println!("| size | value |");
    println!("|---|---|");
    println!(
        "| constraints (enforce calls + {inputs} input constraints) | {n} ({} + {inputs}) |",
        compiled.circuit_constraints()
    );
    println!("| inputs / aux | {inputs} / {aux} |");
    println!(
        "| aux that are 0 or 1 | {:.2}% ({} of {aux}) |",
        100.0 * w.num_bits() as f64 / aux.max(1) as f64,
        w.num_bits()
    );
    println!(
        "| compact witness / 32·aux | {} MiB / {} MiB ({:.3} bytes per aux; {}) |",
        mib(w.byte_size()),
        mib(32 * aux),
        w.byte_size() as f64 / aux.max(1) as f64,
        if w.is_compact() { "compact" } else { "dense" }
    );
    println!("| full path a, b, c, aux, inputs | {} MiB |", mib(full_bytes));
    println!(
        "| compiled circuit | {} MiB: A {} + B {} + C {} non-zeros, {} constants |",
        mib(compiled.byte_size()),
        a.non_zeros(),
        b.non_zeros(),
        c.non_zeros(),
        compiled.constants().len()
    );
    println!("| a, b, c equal to full synthesis's (both evaluations) | yes |");
}
