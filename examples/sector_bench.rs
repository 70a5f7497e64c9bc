//! 32 GiB-shape PoRep C2 or SnapDeals sectors (`--kind porep|snap`; see "The circuits")
//! streamed through the engine (feature `filecoin`; `cuda` for GPUs): per sector wall time, GPU busy, synthesis time per partition and peak host RSS, a
//! Winning-PoSt-priority job's latency under that load against alone, and the engine's memory
//! promise (peak RSS against its budget) — for one or several streams over one set of
//! parameters.
//!
//! ## Streams
//! `--stream SPEC` (repeatable, run in the order given), SPEC = `witness|full[@LIMIT_GIB]:SECTORS`:
//! the synthesis path (`witness`: the engine's witness path; `full`: every partition
//! synthesized in full), optionally a CUDA device memory limit in GiB, and the sectors. For
//! example `--stream witness:3 --stream witness@24:2 --stream full:1`. Without `--stream`,
//! `--witness-path` and `--sectors` make the one stream (as before; they conflict with
//! `--stream`). The partitions' circuits and the parameters (the expensive part: see "The
//! parameters") are made once; each stream then gets an engine of its own, built the same
//! way (same budget, workers, backends), so its books, pool, budget and peak RSS are its own:
//!
//! - **Compiled circuits are handed on in memory.** After a witness stream the bench takes the
//!   compiled circuits its engine recorded (`Engine::compiled_circuits()`: the PoRep
//!   partition's and the Winning stand-in's, by `CompiledCircuits::get_in_memory`) and inserts
//!   them into the next witness stream's engine (`CompiledCircuits::insert`), so only the first
//!   witness stream records; no file is written (no `compiled_dir`: a file of several GiB would
//!   be written inside the first stream's timing and mapped back from disk). The bench holds
//!   them between streams; a full stream between two witness streams does not get them (its
//!   engine would charge them), so the bench's memory check adds their bytes to that stream's
//!   constant. With `--record-shape` the shape's full synthesis (below) records the partition's
//!   circuit in the same pass (about 11% slower there) and every witness stream gets it: none
//!   records, and the first sector is then pipeline fill only.
//! - **`@LIMIT_GIB`** (CUDA only; refused with `--cpu`): the engines prove on the process's
//!   shared backends (`EngineBackend::Custom(CudaBackend::shared(d))`, the object
//!   `BackendChoice::Gpu(d)` gives). Before every stream the bench sets each device's limit
//!   (`set_memory_limit(Some(limit))`, or the limit the device began with —
//!   `CUZK_GPU_MEMORY_LIMIT` or none — which it restores after the stream) and resets the
//!   device peak. `set_memory_limit` evicts the idle parameter sets, so the stream's engine
//!   places each anew when it prepares it: resident only if it fits beside a proof's working
//!   set (`would_stream`); the engine never pins a set (`add_parameters` prepares, it does not
//!   `keep_resident`) and no proof holds one between streams, so a set bigger than the limit
//!   is not kept. It does not evict the compiled circuits resident on the device (nor forget
//!   those that did not fit): the bench keeps them only for a witness stream whose limit is no
//!   higher than the last stream's, and only when the device memory in use with them is within
//!   the new limit — the state the stream's first witness proof would reach by uploading them;
//!   otherwise it calls `release_device_memory()` first, and the stream
//!   decides anew. The bench prints the prediction, then what the backend did: **resident**
//!   (its resident device bytes reached the set's) or **streamed** (a set held streamed,
//!   resident bytes below the set's), the most resident bytes seen (sampled at every sector),
//!   the device peak, and flags a resident set over the limit (exit 4). It also prints how the
//!   witness proofs were evaluated — `CudaBackend::witness_evaluations()`, this stream's
//!   on-device and on-host counts (the Winning stand-in's proof under load included) — and the
//!   compiled circuits resident on the device at the end (and those kept from before).
//! - **Results survive a timeout.** Every line goes to stdout as soon as it is known (flushed),
//!   each sector's row when the sector finishes; with `--out DIR` the same lines are appended
//!   to `DIR/sector_bench.md`, and one JSON object per event (each partition proved, each
//!   sector, each stream's summary) to `DIR/sector_bench.jsonl`, as they happen. Each stream
//!   ends with its summary row; the process ends with all of them in one table: path, device
//!   limit, sectors, steady-state seconds per sector (the mean wall of the sectors after the
//!   first to finish; n/a with one sector), the first sector's seconds, GPU busy, synthesis per
//!   partition (mean over the stream; over the sectors after the first), peak RSS against B,
//!   the Winning stand-in alone / under load / bound, where the parameters were, and the
//!   device/host evaluations. Every stream proves the same partitions with the same r, s, so
//!   the bench also checks that each stream's proofs equal the first stream's (exit 1 if not).
//!
//! ## On the H200 host (one GPU, 16 cores, 128 GiB; 600 s a command)
//! Two commands, sized by the estimate below to end before 600 s; every line is out as it
//! happens, so a command cut short still leaves every finished sector and stream:
//!
//!     cargo run --release --features cuda,filecoin --example sector_bench -- --layers 11 --challenges 18 --sector-size 16KiB --devices 0 --record-shape --stream witness:3 --stream witness@24:2 --out OUT
//!     cargo run --release --features cuda,filecoin --example sector_bench -- --layers 11 --challenges 18 --sector-size 16KiB --devices 0 --partitions-per-sector 2 --stream full:2 --out OUT
//!
//! The estimate (measured: the shape's full synthesis ~92 s, random parameters ~165 s, a 2^27
//! proof 1.44 s resident and 2.76 s streamed under 24 GiB, parameters ~75 GiB; assumed: a
//! witness-only synthesis ~92 / 2.2 ≈ 42 s, the witness-only/full ratio of the 2 KiB PoRep
//! circuit, 2.16–2.35×, holding with 16 at once; not measured: uploading or page-locking the
//! parameters, guessed 10–20 s a stream):
//!
//! - Both: circuits (seconds) + shape (~92 s; ~102 s recording, `--record-shape`) + parameters
//!   (~165 s) ≈ 265 s before the first stream; per stream ~15 s of engine, parameters and the
//!   stand-in alone.
//! - The budget: the default B is capped near 110 GiB on this host; the parameters take ~76 of
//!   it, a full 2^27 partition reserves ~15 GiB (`partition_bytes`), so **two full syntheses
//!   at a time**. A witness partition reserves its compact witness (~0.2 GiB); when the
//!   backend evaluates a, b, c on the host (the circuit refused on the device, as under a
//!   24 GiB limit) the GPU worker's evaluation slot holds them (a, b, c and aux, ~14 GiB:
//!   `Backend::witness_pool_requests`), charged once per GPU worker, not per partition.
//! - Command 1, ~550 s: witness:3 (30 partitions, the circuit recorded with the shape): two
//!   partitions alone (~45 s), then 16 at a time, ~3 synthesis rounds ≈ 140 s (the GPU, 30 ×
//!   1.44 s, keeps up); witness@24:2 (20 partitions, the compiled circuit kept on the device):
//!   16 + 4 ≈ 2 rounds, the GPU's 20 × 2.76 = 55 s mostly behind the first, ≈ 100 s;
//!   265 + 2 × 15 + 140 + 100 + teardown. Without `--record-shape` the first stream records
//!   in-stream: partition 0 records (~102 s) beside one full synthesis, and another starts in
//!   full when that one ends, so its sector 0 takes ~190 s and the stream ~240 s: ~650 s in
//!   all. If witness-only synthesis runs past ~55 s a partition at 16 at once, the second
//!   stream is cut (the first's rows and summary are out by then).
//! - Command 2, ~470 s: full synthesis, two at a time, 4 partitions = 2 rounds of ~92 s. A
//!   10-partition sector (5 rounds, ~460 s) does not fit beside the 265 s, hence 2 sectors of
//!   2: "s / sector after the first" is then the seconds per 2 partitions (synthesis-bound: a
//!   10-partition sector ≈ 5× that).
//!
//! SnapDeals (`--kind snap`, the 32 GiB shape: 16 partitions a sector, 81,049,504 constraints,
//! domain 2^27), two commands of the same kind, sized by the estimate below:
//!
//!     cargo run --release --features cuda,filecoin --example sector_bench -- --kind snap --devices 0 --record-shape --stream witness:3 --stream witness@24:2 --out OUT
//!     cargo run --release --features cuda,filecoin --example sector_bench -- --kind snap --devices 0 --stream full:1 --out OUT
//!
//! The estimate, from the constraint count (not measured on the H200 host): the shape's full
//! synthesis ~80 s (PoRep's 0.82 µs a constraint there, × 1.19, SnapDeals' cost a constraint
//! against PoRep's at 2 KiB here; ~90 s recording), random parameters ~90 s (PoRep's 165 s
//! scaled by the parameters' bytes: ~32 GiB, from the 2 KiB shape's 0.61 GiB with H scaled by
//! the domain and the rest by aux), a witness-only synthesis 27–36 s (full / 3.0, the ratio at
//! 2 KiB here, or / 2.2, PoRep's), a proof ~1.2–1.44 s resident (the same domain as PoRep's,
//! 72% of its aux) and ≤ 2.76 s streamed under 24 GiB (the parameters exceed it). A full
//! partition reserves ~11 GiB (148 bytes a constraint at 2 KiB), so ~6 full syntheses at a time
//! beside the parameters under the capped B.
//!
//! - Command 1, ~420 s: ~180 s before the first stream; witness:3 (48 partitions) 3 rounds of
//!   16 ≈ 110 s (the GPU's 48 × 1.44 s behind them) + 15 s; witness@24:2 (32 partitions) 2
//!   rounds, GPU-bound streamed, 32 × 2.76 s ≈ 90 s + 15 s. Without `--record-shape` partition
//!   0 records in the first stream (~90 s), about 60 s more.
//! - Command 2, ~430 s: ~170 s before the stream; one sector of 16 full partitions, ~6 at a
//!   time, 3 rounds of ~80 s + 15 s. Two sectors (6 rounds) would not fit.
//!
//! With few sectors the steady-state column is rough: the engine proves every sector's
//! partitions at once, in rounds of 16, so sectors finish in bunches (the column is
//! (last finish − first finish) / (sectors − 1)); `sector_bench.jsonl` has every partition's
//! finish for a finer look.
//!
//! The CPU smoke test (any machine): `cargo run --release --features filecoin --example
//! sector_bench -- --layers 2 --challenges 1 --partitions-per-sector 2 --cpu --stream witness:2
//! --stream full:1 --out /tmp/sb`; SnapDeals: `-- --kind snap --snap-sector-size 2KiB
//! --partitions-per-sector 2 --cpu --stream witness:2 --stream full:1 --out /tmp/sb-snap`. A
//! shape alone: `--kind snap --shape-only` counts partition 0 (constraints, inputs, aux,
//! domain; nothing stored) and times one witness-only synthesis (no parameters, no engine, no
//! GPU). Other uses: `--devices 0,1` (two GPUs), `--layers 2
//! --challenges 2 --partitions-per-sector 2 --compare-cpu 2 --stream witness:1` (the GPU's bytes
//! against the CPU's, small shape).
//!
//! ## The circuits
//! Real 32 GiB sectors cannot be sealed here, so the partitions are storage-proofs-porep's own
//! `StackedCircuit` of production's shape over a small tree: `stacked::SetupParams` with
//! `--layers` (11 for 32 GiB; the crate accepts only 2 or 11) and `--challenges` per partition
//! (18 for 32 GiB: filecoin-proofs' 176 interactive PoRep challenges over 10 partitions, rounded
//! up), the 32 GiB tree arity (`SectorShape32GiB`: 8-8-0, Poseidon; SHA-256 for the data tree),
//! a sector of `--sector-size` random bytes replicated (`replicate_phase1`, `replicate_phase2`),
//! its vanilla proofs made (`prove_all_partitions`) and each partition's circuit built by
//! `StackedCompound::circuit`, as filecoin-proofs builds C2's. The tree is shallower than a
//! 32 GiB one, so a partition has fewer constraints: 112,055,993 at 11 layers, 18 challenges and
//! 16 KiB (the smallest filecoin-proofs sector of this arity; 2 KiB, the default, also works:
//! 8 leaves per subtree), against 130,278,869 for a real 32 GiB partition. The bench prints its
//! count. A "sector" is `--partitions-per-sector` (10, as a 32 GiB C2) such partitions; every
//! sector proves the same partitions (same vanilla proofs, synthesized anew each time).
//!
//! **SnapDeals** (`--kind snap`): a small real sector would not give production's shape (the
//! SHA-256 TreeD paths, as deep as the sector, carry most of the constraints), so each
//! partition is storage-proofs-update's `EmptySectorUpdateCircuit` of `--snap-sector-size`'s
//! production shape (default 32 GiB; 2 KiB, 16 KiB, 512 MiB, ... also): its public parameters
//! from `PublicParams::from_sector_size`, filecoin-proofs' TreeR for that size (8-8-0 at
//! 32 GiB), and a witness fabricated from a seeded RNG with the lengths `synthesize` expects
//! (`sector_bench/snap.rs`: a valid k and production's h, each `leaf_r_new` as the circuit
//! asserts it, everything else random: the constraints are not satisfied, so these proofs do
//! not verify either, whatever the parameters). A sector is its partition count (16 at 32 GiB;
//! `--partitions-per-sector` past it repeats partition indices with other witnesses). The
//! structure is production's: at 2 KiB the fabricated partition and filecoin-proofs' own
//! circuit (from a sealed sector's update) record the same compiled fingerprint — identical
//! A, B, C — and sizes (`tests/filecoin.rs`,
//! `sector_bench_snap_partition_has_the_matrices_of_filecoin_proofs_own`, a CI test). Counted
//! here (`--shape-only`):
//!
//! | sector | partitions | challenges | constraints (+ 5 input) | aux | domain | witness-only synthesis here |
//! |---|---|---|---|---|---|---|
//! | 2 KiB | 1 | 10 | 1,705,044 | 1,703,569 | 2^21 | 0.7 s |
//! | 16 KiB | 2 | 10 | 6,300,026 | 6,293,944 | 2^23 | 2.2 s |
//! | 512 MiB | 16 | 86 | 57,450,484 | 57,401,314 | 2^26 | 30.4 s |
//! | 32 GiB | 16 | 86 | 81,049,504 | 80,978,488 | 2^27 | 51.0 s, peak RSS 0.07 GiB |
//!
//! (5 inputs, the one included; the constraints count the input constraints; the seconds on 2
//! shared Xeon threads.)
//!
//! ## The parameters: the proofs do not verify
//! Groth16 parameters of that shape are made the bench's way, as `engine_bench` makes them:
//! one partition is synthesized in full and `cuzk::testing::random_parameters_for` fills its
//! shape with arbitrary points. There is no trapdoor behind them, so **the proofs do not
//! verify**; every backend must still compute the same bytes from them: `--compare-cpu N`
//! proves the first N partitions of the first stream's sector 0 again on the CPU (synthesize,
//! then prove, same r and s) and compares the bytes with the engine's (exit 1 when they differ)
//! — meant for a small shape, the CPU taking minutes per full-shape partition.
//!
//! ## A stream
//! All its sectors are submitted at once, one engine job each at PoRep C2's priority
//! (`cuzk::filecoin::PRIORITY_SEAL_COMMIT`); the engine streams their partitions through its
//! budget. Per sector: when it finished (since the stream began) and its wall time (since the
//! previous sector finished: the stream's time per sector; the first includes the pipeline's
//! fill and, in the first witness stream, the recording of the compiled circuit and the full
//! syntheses meanwhile), the GPU workers' busy fraction over that time, the synthesis time of
//! its partitions (mean, min–max: measured around the circuit's `synthesize`, full or
//! witness-only), and the process's peak RSS over that time (sampled every 10 ms from
//! `/proc/self/status` VmRSS) and VmHWM (reset at each stream's start through
//! `/proc/self/clear_refs` where the kernel allows; the bench says when it could not). A
//! failed sector is counted and the stream goes on (exit 2 at the end).
//!
//! ## Winning PoSt under load
//! A small job at `cuzk::filecoin::PRIORITY_WINNING_POST` — a synthetic circuit of
//! 2^`--winning-log-size` constraints (default 22 on GPUs, 14 with `--cpu`) with the Filecoin
//! witness mix, standing in for a Winning PoSt (not its circuit) — is proved alone twice on each
//! stream's engine before its stream (the second is reported: its path, and so its time,
//! depends on the stream's), then submitted once mid-stream (half a PoRep proof, by the
//! engine's EMA, after half of the stream's partitions are proved: in the middle of a
//! proof). Its latency is submit to proof. The target: under load ≤ the
//! partition in progress + its own proof, printed as "bound" (one PoRep proof, the engine's
//! EMA, plus the job's latency alone).
//!
//! ## The memory promise
//! The engine's budget `B` (`--budget-gib`; default: the two parameter sets plus synthesis
//! workers + GPU workers + 2 partitions, capped at 90% of the host's memory less the constant
//! below — a full partition of 2^27 reserves ~16 GiB, so uncapped, 16 full syntheses at once
//! would overrun a 128 GiB host) counts what `src/engine/budget.rs` lists: partitions'
//! a/b/c/aux (or compact witnesses), parameter sets, compiled circuits, the pool's idle
//! buffers. It documents no constant for what it does not count; this bench states one: the
//! RSS the process had before the parameters were made (its binary, threads, the vanilla
//! proofs and circuits: the caller's memory) plus `--slack-gib` (default 2 GiB), for what the
//! engine does not count — a circuit's own memory while it synthesizes (unless
//! `--synthesis-bytes-per-constraint` is set; the bench prints what the shape's full synthesis
//! measured), the recorder's memory while it records, the backends' scratch — plus, for a full
//! stream between witness streams, the compiled circuits the bench holds for the next. The
//! bench prints each stream's peak RSS against B and against B + that constant, and **exits 3
//! if a stream's peak exceeds B + the constant**. Between streams it returns the freed heap to
//! the system (`malloc_trim`), so a stream's RSS starts near the parameters and circuits.
//!
//! ## Smoke test on 2 cores, no GPU
//! The command above (2 KiB, 2 partitions a sector; 2 Xeon threads shared with other builds,
//! so the seconds are not a benchmark): 1,344,268 constraints a partition, the shape's full
//! synthesis 1.4 s, random parameters 9.9 s; then, with the summary's numbers:
//!
//! | stream | path | sectors | s / sector after the first | first sector s | busy | synthesis s / partition | peak RSS / B GiB | Winning alone / under load / bound s |
//! |---|---|---|---|---|---|---|---|---|
//! | 0 | witness | 2 | 63.7 | 67.0 | 98% | 2.53; 2.90 | 1.43 / 1.67 | 0.550 / 32.5 / 17.1 |
//! | 1 | full | 1 | n/a | 67.0 | 97% | 2.69 | 1.17 / 1.67 | 0.411 / 34.1 / 10.0 |
//!
//! (stream 0: 2 recorded — the partition's circuit and the stand-in's —, 3 witness-only, 4
//! full, the partitions dispatched while partition 0 recorded going in full; stream 1's proofs
//! identical to stream 0's.) The CPU proves a partition in 10–17 s, so both streams are
//! proof-bound here and witness-only synthesis saves nothing visible. The Winning stand-in
//! took 32–34 s under load, two PoRep proofs, over the "one partition + its own proof" bound:
//! the dispatcher admitted it only when the pacer and a free synthesis worker let it, and a
//! PoRep partition synthesized meanwhile took the GPU first. The engine's urgent jobs
//! (`EngineConfig::urgent_priority`, set here as in the Filecoin engine) fixed that: at
//! bf28dcf the same smoke test (`--stream witness:2`) gave the stand-in 0.219 s alone and
//! 0.385 s under load (bound 16.3 s) — submitted then right at a proof's end, where the
//! holding GPU worker took it at once; it is now submitted mid-proof, so under load it waits
//! for the rest of the partition in progress. `--record-shape --partitions-per-sector 1 --stream witness:1 --stream
//! full:1 --stream witness:2` hands the shape's circuit to stream 0 (0 PoRep recordings; its
//! one recording is the stand-in's) and both circuits over the full stream to stream 2
//! (0 recorded, 5 witness-only), the full stream's constant counting the 0.07 GiB held.
//!
//! The SnapDeals smoke test (2 KiB, one partition index twice a sector): 1,705,044 constraints
//! a partition, the shape's full synthesis 2.1 s, random parameters 18.0 s (0.61 GiB); 340 s in
//! all:
//!
//! | stream | path | sectors | s / sector after the first | first sector s | busy | synthesis s / partition | peak RSS / B GiB | Winning alone / under load / bound s |
//! |---|---|---|---|---|---|---|---|---|
//! | 0 | witness | 2 | 104.6 | 124.0 | 98% | 5.70; 5.85 | 1.64 / 1.81 | 0.684 / 46.7 / 28.5 |
//! | 1 | full | 1 | n/a | 87.8 | 97% | 4.17 | 1.38 / 1.81 | 0.567 / 34.1 / 13.0 |
//!
//! (stream 0: 2 recorded, 3 witness-only, 4 full; stream 1's proofs identical to stream 0's;
//! the CPU's proof of the 2^21 domain, 12–28 s, holds the stand-in past its bound as above.)

#[path = "sector_bench/snap.rs"]
mod snap;
mod support;

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use bellpepper_core::{Index, LinearCombination, Variable};
use blstrs::Scalar;
use clap::builder::BoolishValueParser;
use clap::{ArgAction, Parser, ValueEnum};
use cuzk::compiled::CircuitShape;
use cuzk::engine::budget::{params_hint, partition_bytes};
use cuzk::engine::{Engine, EngineBackend, EngineConfig, EngineStats, Job, Partition};
use cuzk::filecoin::{PRIORITY_SEAL_COMMIT, PRIORITY_SNAP_DEALS, PRIORITY_WINNING_POST};
use cuzk::testing::{random_parameters, random_parameters_for, Synthetic};
use cuzk::{BackendChoice, Circuit, CompiledCircuit, ConstraintSystem, Parameters, Proof, Prover, SynthesisError};
use ff::{Field, PrimeField};
use filecoin_hashers::Hasher;
use rand::{Rng, SeedableRng};
use serde_json::json;
use snap::SnapCircuit;
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::get_base_tree_count;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, Challenges, PrivateInputs, PublicInputs, SetupParams, StackedCircuit, StackedCompound, StackedDrg,
    TemporaryAuxCache, EXP_DEGREE,
};
use support::{fail, machine};

/// The 32 GiB sector's tree: Poseidon, arity 8-8-0 (filecoin-proofs' `SectorShape32GiB`).
type Tree = filecoin_proofs::SectorShape32GiB;
/// The data tree's hasher (SHA-256).
type Piece = filecoin_proofs::DefaultPieceHasher;
type Porep = StackedCircuit<Tree, Piece>;

/// A real 32 GiB PoRep C2 partition's constraints (measured on the H200 host, issue 23).
const REAL_32GIB_CONSTRAINTS: usize = 130_278_869;
/// Filecoin's witness mix for the Winning-PoSt stand-in.
const FILECOIN_BIT_PERCENT: u32 = 98;
/// The default budget's cap: this share of the host's memory (less the bench's constant).
const HOST_SHARE: f64 = 0.9;
const GIB: f64 = (1u64 << 30) as f64;

/// 32 GiB-shape PoRep C2 or SnapDeals sectors streamed through the engine, with a Winning-PoSt-priority job
/// under that load, and the engine's memory promise checked; one or several streams.
#[derive(Parser)]
#[command(name = "sector_bench")]
struct Args {
    /// The sectors' proof: PoRep C2 (`porep`) or SnapDeals, the empty-sector update (`snap`).
    #[arg(long, value_enum, default_value_t = Kind::Porep)]
    kind: Kind,
    /// The SnapDeals sector's size, whose production shape the partitions have (`2KiB`,
    /// `16KiB`, `512MiB`, `32GiB`, ... or bytes; --kind snap).
    #[arg(long, value_name = "BYTES", default_value = "32GiB", value_parser = parse_snap_sector_size)]
    snap_sector_size: u64,
    /// Stacked-DRG layers (storage-proofs-porep accepts 2 or 11; 11 is 32 GiB's; --kind porep).
    #[arg(long, value_name = "2|11", default_value_t = 11, value_parser = parse_layers)]
    layers: usize,
    /// Challenges per partition (18 is 32 GiB's: 176 over 10 partitions, rounded up; --kind
    /// porep).
    #[arg(long, value_name = "N", default_value_t = 18, value_parser = support::at_least_one)]
    challenges: usize,
    /// The small PoRep sector's size (`2KiB`, `16KiB`, `128KiB`, ... or bytes): 8 subtrees of
    /// 8^k leaves each, k ≥ 1 (2 KiB is the smallest; --kind porep).
    #[arg(long, value_name = "BYTES", default_value = "2KiB", value_parser = parse_sector_size)]
    sector_size: u64,
    /// A stream of sectors, repeatable (run in order): `witness|full[@LIMIT_GIB]:SECTORS`, e.g.
    /// `witness:3`, `witness@24:2` (CUDA device memory limit 24 GiB), `full:1`. Replaces
    /// --witness-path and --sectors.
    #[arg(long = "stream", value_name = "SPEC", value_parser = parse_stream, conflicts_with_all = ["sectors", "witness_path"])]
    streams: Vec<StreamSpec>,
    /// Sectors streamed (the one stream without --stream).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = support::at_least_one)]
    sectors: usize,
    /// Partitions per sector (default: the proof's, 10 for a 32 GiB C2, the SnapDeals sector
    /// size's partition count, 16 at 32 GiB; past that count a SnapDeals partition index
    /// repeats with another witness).
    #[arg(long, value_name = "N", value_parser = support::at_least_one)]
    partitions_per_sector: Option<usize>,
    /// The engine's memory budget in GiB (default: the parameter sets plus synthesis workers
    /// + GPU workers + 2 partitions, capped at 90% of the host's memory less the constant).
    #[arg(long, value_name = "G")]
    budget_gib: Option<f64>,
    /// The engine's witness path for the one stream without --stream (1: the first partition
    /// records the compiled circuit, the next are synthesized witness-only; 0: every partition
    /// in full).
    #[arg(long, value_name = "0|1", default_value = "1", action = ArgAction::Set, value_parser = BoolishValueParser::new(), hide_possible_values = true)]
    witness_path: bool,
    /// Record the compiled circuit in the shape's full synthesis and give it to every witness
    /// stream (none records in its stream).
    #[arg(long)]
    record_shape: bool,
    /// Count partition 0 (constraints, inputs, aux, domain: nothing stored) and time one
    /// witness-only synthesis of it, then exit: no parameters, no engine.
    #[arg(long)]
    shape_only: bool,
    /// Prove on the CPU backend (a smoke test; no GPU needed).
    #[arg(long)]
    cpu: bool,
    /// GPUs (`cuda` build): `all` or a comma-separated list of device numbers.
    #[arg(long, value_name = "all|0,1", default_value = "all")]
    devices: String,
    /// GPU worker threads per device.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = support::at_least_one)]
    gpu_workers: usize,
    /// Synthesis threads (default: the host's cores).
    #[arg(long, value_name = "N", value_parser = support::at_least_one)]
    synthesis_workers: Option<usize>,
    /// EngineConfig::synthesis_bytes_per_constraint (default 0, the engine's).
    #[arg(long, value_name = "B", default_value_t = 0)]
    synthesis_bytes_per_constraint: usize,
    /// The Winning-PoSt stand-in's size: 2^K constraints (default 22; 14 with --cpu).
    #[arg(long, value_name = "K")]
    winning_log_size: Option<u32>,
    /// Prove the first N partitions of the first stream's sector 0 again on the CPU and
    /// compare the bytes.
    #[arg(long, value_name = "N", default_value_t = 0)]
    compare_cpu: usize,
    /// What the memory check allows beyond B and the RSS before the parameters, in GiB.
    #[arg(long, value_name = "G", default_value_t = 2.0)]
    slack_gib: f64,
    /// Scratch directory for the replicated sector (emptied first, removed at the end).
    #[arg(long, value_name = "DIR", default_value = "target/sector-bench")]
    scratch: PathBuf,
    /// Append every line to DIR/sector_bench.md and every event to DIR/sector_bench.jsonl as
    /// they happen.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// The sectors' proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Kind {
    /// PoRep C2: storage-proofs-porep's `StackedCircuit` over a small replicated sector.
    Porep,
    /// SnapDeals: storage-proofs-update's `EmptySectorUpdateCircuit` of a sector size's
    /// production shape, its witness fabricated (`snap`).
    Snap,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::Porep => "PoRep C2",
            Self::Snap => "SnapDeals",
        }
    }

    /// The engine priority its sectors' jobs have, as the Filecoin engine's.
    fn priority(self) -> i32 {
        match self {
            Self::Porep => PRIORITY_SEAL_COMMIT,
            Self::Snap => PRIORITY_SNAP_DEALS,
        }
    }
}

/// One stream of `--stream`: the synthesis path, the device memory limit, the sectors.
#[derive(Clone, Debug, PartialEq)]
struct StreamSpec {
    witness: bool,
    limit_gib: Option<f64>,
    sectors: usize,
}

impl StreamSpec {
    fn limit_bytes(&self) -> Option<usize> {
        self.limit_gib.map(|g| (g * GIB) as usize)
    }

    fn path(&self) -> &'static str {
        if self.witness {
            "witness"
        } else {
            "full"
        }
    }
}

impl fmt::Display for StreamSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.path())?;
        if let Some(g) = self.limit_gib {
            write!(f, "@{g}")?;
        }
        write!(f, ":{}", self.sectors)
    }
}

fn parse_stream(s: &str) -> Result<StreamSpec, String> {
    const USAGE: &str = "expected witness|full[@LIMIT_GIB]:SECTORS, e.g. witness:3, witness@24:2, full:1";
    let (head, sectors) = s.rsplit_once(':').ok_or_else(|| format!("{s:?}: {USAGE}"))?;
    let sectors = support::at_least_one(sectors.trim()).map_err(|e| format!("{s:?}: sectors {e}"))?;
    let (path, limit) = match head.split_once('@') {
        Some((p, l)) => (p, Some(l)),
        None => (head, None),
    };
    let witness = match path.trim() {
        "witness" => true,
        "full" => false,
        p => return Err(format!("{s:?}: path {p:?}: {USAGE}")),
    };
    let limit_gib = match limit.map(|l| (l, l.trim().parse::<f64>())) {
        None => None,
        Some((_, Ok(g))) if g.is_finite() && g > 0.0 => Some(g),
        Some((l, _)) => return Err(format!("{s:?}: device memory limit {l:?}: a positive number of GiB")),
    };
    Ok(StreamSpec {
        witness,
        limit_gib,
        sectors,
    })
}

fn parse_layers(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n @ (2 | 11)) => Ok(n),
        Ok(n) => Err(format!("storage-proofs-porep accepts 2 or 11 layers, not {n}")),
        Err(e) => Err(e.to_string()),
    }
}

/// `2KiB`, `32GiB`, `512` (bytes).
fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().map_err(|e| format!("{s:?}: {e}"))?;
    let shift = match unit.trim() {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        u => return Err(format!("{s:?}: unit {u:?} (KiB, MiB, GiB or none)")),
    };
    n.checked_mul(1 << shift).ok_or_else(|| format!("{s:?}: too large"))
}

fn parse_sector_size(s: &str) -> Result<u64, String> {
    let bytes = parse_bytes(s)?;
    // 8 base trees (8-8-0), each of 8^k leaves of 32 bytes, k >= 1.
    let per_tree = bytes / 32 / 8;
    let mut leaves = 8u64;
    while leaves < per_tree {
        leaves *= 8;
    }
    if bytes % 256 != 0 || leaves != per_tree {
        return Err(format!(
            "{s:?}: an 8-8-0 tree needs 8 subtrees of 8^k 32-byte leaves (2KiB, 16KiB, 128KiB, 1MiB, ...)"
        ));
    }
    Ok(bytes)
}

fn parse_snap_sector_size(s: &str) -> Result<u64, String> {
    let bytes = parse_bytes(s)?;
    snap::TreeShape::of(bytes)?;
    Ok(bytes)
}

fn gib(bytes: usize) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

fn ok<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| fail(&format!("{what}: {e}")))
}

/// A field of /proc/self/status in bytes (`VmRSS`, `VmHWM`).
fn proc_status(field: &str) -> Option<usize> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

fn rss() -> usize {
    proc_status("VmRSS:").unwrap_or(0)
}

/// Samples VmRSS every 10 ms: the peak since it started, and the peak since the last `window`.
struct Sampler {
    peak: Arc<AtomicUsize>,
    window: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start() -> Self {
        let (peak, window, stop) = (
            Arc::new(AtomicUsize::new(rss())),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (p, w, s) = (peak.clone(), window.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let now = rss();
                p.fetch_max(now, Ordering::Relaxed);
                w.fetch_max(now, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        Self {
            peak,
            window,
            stop,
            thread: Some(thread),
        }
    }

    fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed).max(rss())
    }

    /// The peak since the last call, and a new window.
    fn window(&self) -> usize {
        self.window.swap(rss(), Ordering::Relaxed).max(rss())
    }

    fn stop(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak()
    }
}

/// A sector's partition circuit, of either kind.
#[derive(Clone)]
enum SectorCircuit {
    Porep(Porep),
    Snap(SnapCircuit),
}

impl Circuit<Scalar> for SectorCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            Self::Porep(c) => c.synthesize(cs),
            Self::Snap(c) => c.synthesize(cs),
        }
    }
}

/// A partition's circuit that records how long its synthesis took (full or witness-only:
/// whatever constraint system the engine synthesizes it into).
#[derive(Clone)]
struct Timed {
    circuit: SectorCircuit,
    slot: usize,
    times: Arc<Mutex<Vec<Option<Duration>>>>,
}

impl Circuit<Scalar> for Timed {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let start = Instant::now();
        let r = self.circuit.synthesize(cs);
        self.times.lock().unwrap_or_else(|p| p.into_inner())[self.slot] = Some(start.elapsed());
        r
    }
}

/// Replicates a `sector_size` sector of random data and returns its partitions' C2 circuits
/// (storage-proofs-porep's setup, replication and vanilla proofs; `StackedCompound::circuit`).
fn porep_circuits(args: &Args, partitions: usize) -> Vec<Porep> {
    let nodes = (args.sector_size / 32) as usize;
    assert_eq!(nodes % get_base_tree_count::<Tree>(), 0);
    let _ = std::fs::remove_dir_all(&args.scratch);
    ok("scratch", std::fs::create_dir_all(&args.scratch));
    let cache = args.scratch.join("cache");
    ok("scratch", std::fs::create_dir_all(&cache));
    let replica_path = args.scratch.join("replica");

    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(32);
    let replica_id: Scalar = Scalar::random(&mut rng);
    let data: Vec<u8> = (0..nodes)
        .flat_map(|_| Scalar::random(&mut rng).to_repr().as_ref().to_vec())
        .collect();
    ok("writing the replica", std::fs::write(&replica_path, &data));
    let file = ok(
        "opening the replica",
        std::fs::OpenOptions::new().read(true).write(true).open(&replica_path),
    );
    // SAFETY: the file is this process's scratch file, mapped once, not resized while mapped.
    let mut mapped = ok("mapping the replica", unsafe { memmap2::MmapMut::map_mut(&file) });

    let setup = SetupParams {
        nodes,
        degree: storage_proofs_core::drgraph::BASE_DEGREE,
        expansion_degree: EXP_DEGREE,
        porep_id: [5; 32],
        challenges: Challenges::new_interactive(args.challenges),
        num_layers: args.layers,
        api_version: ApiVersion::V1_2_0,
        api_features: vec![],
    };
    let pp = ok("PoRep setup", StackedDrg::<Tree, Piece>::setup(&setup));
    let replica_domain = replica_id.into();
    let (labels, _) = ok(
        "replicate_phase1",
        StackedDrg::<Tree, Piece>::replicate_phase1(&pp, &replica_domain, &cache),
    );
    let (tau, (p_aux, t_aux)) = ok(
        "replicate_phase2",
        StackedDrg::<Tree, Piece>::replicate_phase2(
            &pp,
            labels,
            mapped.as_mut().into(),
            None,
            cache.clone(),
            replica_path.clone(),
        ),
    );
    drop(mapped);
    let seed: [u8; 32] = rng.gen();
    let pub_inputs =
        PublicInputs::<<<Tree as storage_proofs_core::merkle::MerkleTreeTrait>::Hasher as Hasher>::Domain, _> {
            replica_id: replica_domain,
            seed: Some(seed),
            tau: Some(tau),
            k: None,
        };
    let t_aux = ok(
        "TemporaryAuxCache",
        TemporaryAuxCache::<Tree, Piece>::new(&t_aux, replica_path, false),
    );
    let priv_inputs = PrivateInputs::<Tree, Piece> { p_aux, t_aux };
    let vanilla = ok(
        "vanilla proofs",
        StackedDrg::<Tree, Piece>::prove_all_partitions(&pp, &pub_inputs, &priv_inputs, partitions),
    );
    let circuits = vanilla
        .iter()
        .enumerate()
        .map(|(k, proofs)| {
            ok(
                "StackedCompound::circuit",
                <StackedCompound<Tree, Piece> as CompoundProof<'_, _, _>>::circuit(
                    &pub_inputs,
                    (),
                    proofs,
                    &pp,
                    Some(k),
                ),
            )
        })
        .collect();
    drop(priv_inputs);
    let _ = stacked::clear_cache_dir(&cache);
    let _ = std::fs::remove_dir_all(&args.scratch);
    circuits
}

/// `partitions` SnapDeals partition circuits of a `sector_bytes` sector's production shape:
/// partition i is the sector's partition i mod its partition count, its witness fabricated
/// from seed i / that count (`snap`).
fn snap_circuits(sector_bytes: u64, partitions: usize) -> Vec<SnapCircuit> {
    let count = snap_partition_count(sector_bytes);
    (0..partitions)
        .map(|i| {
            ok(
                "SnapDeals circuit",
                SnapCircuit::fabricate(sector_bytes, i % count, (i / count) as u64),
            )
        })
        .collect()
}

fn snap_partition_count(sector_bytes: u64) -> usize {
    storage_proofs_update::PublicParams::from_sector_size(sector_bytes).partition_count
}

/// Counts a circuit's variables and constraints, computing no value and storing nothing (for
/// a shape too big to synthesize here).
struct Count {
    inputs: usize,
    aux: usize,
    constraints: usize,
}

impl ConstraintSystem<Scalar> for Count {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1;
    }

    fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self {
        self
    }
}

/// `--shape-only`: partition 0 counted (`Count`), then synthesized witness-only once as the
/// engine's witness path does (`WitnessCs` without the generator shortcut), timed, with the
/// peak RSS over it.
fn shape_only(circuit: &SectorCircuit, out: &mut Out) {
    let t = Instant::now();
    // The prover's "one" first, as every count here has it.
    let mut count = Count {
        inputs: 1,
        aux: 0,
        constraints: 0,
    };
    ok("counting partition 0", circuit.clone().synthesize(&mut count));
    let counted = t.elapsed();
    // The prover appends one constraint per input: the rows of A, B, C, the domain's floor.
    let rows = count.constraints + count.inputs;
    out.line(&format!(
        "partition 0: {rows} constraints ({} of the circuit + {} input constraints), {} inputs, {} aux; domain 2^{}; \
         counted in {:.1} s",
        count.constraints,
        count.inputs,
        count.inputs,
        count.aux,
        rows.next_power_of_two().trailing_zeros(),
        secs(counted)
    ));
    let before = rss();
    let sampler = Sampler::start();
    let t = Instant::now();
    let witness = ok(
        "witness-only synthesis",
        cuzk::WitnessCs::new().without_generator().synthesize(circuit.clone()),
    );
    let took = t.elapsed();
    let peak = sampler.stop();
    if (witness.num_constraints(), witness.num_inputs(), witness.num_aux())
        != (count.constraints, count.inputs, count.aux)
    {
        fail(&format!(
            "the witness synthesis counted {} constraints, {} inputs, {} aux; the count {}, {}, {}",
            witness.num_constraints(),
            witness.num_inputs(),
            witness.num_aux(),
            count.constraints,
            count.inputs,
            count.aux
        ));
    }
    out.line(&format!(
        "witness-only synthesis: {:.1} s; its witness {:.2} GiB ({} of {} aux values 0/1); peak RSS {:.2} GiB ({:.2} before)",
        secs(took),
        gib(witness.byte_size()),
        witness.num_bits(),
        witness.num_aux(),
        gib(peak),
        gib(before)
    ));
}

fn winning_circuit(k: u32, seed: u64) -> Synthetic {
    let mut c = Synthetic::new(k).with_seed(seed);
    c.bit_percent = FILECOIN_BIT_PERCENT;
    c
}

/// r and s of partition slots `0..n` (sector × partitions per sector + partition): the same
/// for a slot in every stream, so every stream's proofs of a sector are the same bytes.
fn randomness(n: usize) -> (Vec<Scalar>, Vec<Scalar>) {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(42);
    (0..n)
        .map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng)))
        .unzip()
}

/// Resets VmHWM to the current RSS (`/proc/self/clear_refs`, Linux ≥ 4.0); false where the
/// kernel does not allow it.
fn reset_hwm() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Returns the heap's free memory to the system, so the next stream's RSS is its own.
fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of glibc's heap; it takes no pointer.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The host's memory (`MemTotal`) in bytes.
fn host_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: usize = info
        .lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib << 10)
}

/// What the CUDA backends did, summed over the devices (all zero without them).
#[derive(Clone, Copy, Default)]
struct DeviceBooks {
    on_device: usize,
    on_host: usize,
    resident_bytes: usize,
    streamed_sets: usize,
    resident_circuits: usize,
    circuit_bytes: usize,
    peak: usize,
    oom_retries: usize,
    evicted_for_streamed: usize,
}

/// The CUDA backends every stream's engine proves on: the process's shared backend of each
/// device (`CudaBackend::shared`), with the device memory limit each had to begin with. None
/// with `--cpu` (or without `cuda`): the engines then prove on the CPU backend.
struct Gpus {
    #[cfg(feature = "cuda")]
    list: Vec<(Arc<cuzk::prover::cuda::CudaBackend>, Option<usize>)>,
    /// The limit of the last stream (`usize::MAX`: none); None before the first.
    #[cfg(feature = "cuda")]
    last_limit: std::cell::Cell<Option<usize>>,
}

impl Gpus {
    fn new(args: &Args) -> Self {
        if args.cpu || args.shape_only {
            return Self {
                #[cfg(feature = "cuda")]
                list: Vec::new(),
                #[cfg(feature = "cuda")]
                last_limit: Default::default(),
            };
        }
        #[cfg(not(feature = "cuda"))]
        fail("built without the `cuda` feature: --cpu, or build with --features cuda,filecoin");
        #[cfg(feature = "cuda")]
        {
            use cuzk::prover::cuda::{device_count, CudaBackend};
            let devices: Vec<usize> = match args.devices.as_str() {
                "all" => (0..device_count().unwrap_or_else(|e| fail(&format!("no GPU: {e}")))).collect(),
                list => list
                    .split(',')
                    .map(|d| {
                        d.trim().parse().unwrap_or_else(|_| {
                            fail(&format!("--devices: `all` or device numbers such as 0,1, not {d:?}"))
                        })
                    })
                    .collect(),
            };
            if devices.is_empty() {
                fail("no GPU");
            }
            let list = devices
                .into_iter()
                .map(|d| {
                    let b = CudaBackend::shared(d).unwrap_or_else(|e| fail(&format!("GPU {d}: {e}")));
                    let limit = b.memory_stats(false).ok().map(|m| m.limit).filter(|&l| l > 0);
                    (b, limit)
                })
                .collect();
            Self {
                list,
                last_limit: Default::default(),
            }
        }
    }

    fn is_cpu(&self) -> bool {
        #[cfg(feature = "cuda")]
        {
            self.list.is_empty()
        }
        #[cfg(not(feature = "cuda"))]
        {
            true
        }
    }

    /// The engines' backends: the GPUs, or the one CPU backend.
    fn count(&self) -> usize {
        #[cfg(feature = "cuda")]
        {
            self.list.len().max(1)
        }
        #[cfg(not(feature = "cuda"))]
        {
            1
        }
    }

    fn engine_backends(&self) -> Vec<EngineBackend> {
        #[cfg(feature = "cuda")]
        if !self.list.is_empty() {
            return self
                .list
                .iter()
                .map(|(b, _)| EngineBackend::Custom(b.clone()))
                .collect();
        }
        vec![EngineBackend::Choice(BackendChoice::Cpu)]
    }

    /// Before a stream: every device's limit set (`limit`, else the one it began with), which
    /// evicts its idle parameter sets and frees its caches, and its peak reset. The compiled
    /// circuits resident from an earlier witness stream stay for a witness stream whose limit
    /// is no higher than that stream's when the device memory in use with them is within the
    /// new limit: the state its first witness proof would reach by uploading them. Otherwise
    /// (and before a full stream) the device's memory is released (`release_device_memory`:
    /// parameter sets, compiled circuits and the list of those that did not fit), so the stream
    /// decides anew. Returns the compiled circuits' device bytes kept.
    fn begin(&self, limit: Option<usize>, witness: bool) -> Result<usize, String> {
        #[cfg_attr(not(feature = "cuda"), allow(unused_mut))]
        let mut kept = 0;
        #[cfg(feature = "cuda")]
        for (b, original) in &self.list {
            let d = b.info().device;
            let e = |e: cuzk::Error| format!("GPU {d}: {e}");
            let limit = limit.or(*original);
            let effective = limit.unwrap_or(usize::MAX);
            b.set_memory_limit(limit).map_err(e)?;
            let circuits = b.witness_evaluations();
            let used = b.memory_stats(false).map_err(e)?.used;
            let lower = self.last_limit.get().is_some_and(|last| effective <= last);
            if witness && circuits.resident_circuits > 0 && lower && used <= effective {
                kept += circuits.circuit_bytes;
            } else {
                b.release_device_memory().map_err(e)?;
            }
            b.memory_stats(true).map_err(e)?;
        }
        #[cfg(feature = "cuda")]
        self.last_limit.set(Some(limit.unwrap_or(usize::MAX)));
        #[cfg(not(feature = "cuda"))]
        let _ = (limit, witness);
        Ok(kept)
    }

    /// After a stream: every device's original limit back.
    fn restore(&self) -> Result<(), String> {
        #[cfg(feature = "cuda")]
        for (b, original) in &self.list {
            b.set_memory_limit(*original)
                .map_err(|e| format!("GPU {}: {e}", b.info().device))?;
        }
        Ok(())
    }

    /// Whether the backends would stream `params` under their limits now (None on the CPU).
    fn would_stream(&self, params: &Parameters) -> Option<bool> {
        #[cfg(feature = "cuda")]
        if !self.list.is_empty() {
            return Some(self.list.iter().any(|(b, _)| b.would_stream(params)));
        }
        let _ = params;
        None
    }

    fn books(&self) -> DeviceBooks {
        #[cfg_attr(not(feature = "cuda"), allow(unused_mut))]
        let mut books = DeviceBooks::default();
        #[cfg(feature = "cuda")]
        for (b, _) in &self.list {
            let w = b.witness_evaluations();
            books.on_device += w.on_device;
            books.on_host += w.on_host;
            books.resident_circuits += w.resident_circuits;
            books.circuit_bytes += w.circuit_bytes;
            books.resident_bytes += b.resident_bytes();
            books.streamed_sets += b.streamed_sets();
            books.peak = books.peak.max(b.memory_stats(false).map_or(0, |m| m.peak));
            books.oom_retries += b.oom_retries();
            books.evicted_for_streamed += b.evicted_for_streamed_proofs();
        }
        books
    }
}

fn busy(stats: &EngineStats) -> Duration {
    stats.workers.iter().map(|w| w.busy).sum()
}

/// Proves the Winning-PoSt stand-in at its priority and returns its latency (submit → proof).
fn winning(engine: &Engine, params: &Parameters, k: u32, seed: u64) -> Duration {
    let start = Instant::now();
    let job = Job::from_circuits(params.clone(), vec![winning_circuit(k, seed)])
        .with_priority(PRIORITY_WINNING_POST)
        .with_label("winning-post stand-in");
    ok("Winning PoSt stand-in", engine.submit(job).wait());
    start.elapsed()
}

struct SectorRow {
    done_at: Duration,
    wall: Duration,
    busy: f64,
    synthesis: Vec<Duration>,
    window_rss: usize,
    hwm: usize,
    failed: usize,
}

/// Where the lines and events go: stdout (flushed at once) and, with `--out`, appended to
/// DIR/sector_bench.md and DIR/sector_bench.jsonl as they happen.
struct Out {
    md: Option<std::fs::File>,
    jsonl: Option<std::fs::File>,
}

impl Out {
    fn open(dir: Option<&Path>) -> Self {
        let Some(dir) = dir else {
            return Self { md: None, jsonl: None };
        };
        ok(&format!("--out {}", dir.display()), std::fs::create_dir_all(dir));
        let open = |name: &str| {
            let path = dir.join(name);
            ok(
                &format!("opening {}", path.display()),
                std::fs::OpenOptions::new().create(true).append(true).open(&path),
            )
        };
        Self {
            md: Some(open("sector_bench.md")),
            jsonl: Some(open("sector_bench.jsonl")),
        }
    }

    fn line(&mut self, s: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{s}");
        let _ = stdout.flush();
        if let Some(f) = &mut self.md {
            if let Err(e) = writeln!(f, "{s}") {
                eprintln!("warning: writing sector_bench.md: {e}");
            }
        }
    }

    fn event(&mut self, v: serde_json::Value) {
        if let Some(f) = &mut self.jsonl {
            if let Err(e) = writeln!(f, "{v}") {
                eprintln!("warning: writing sector_bench.jsonl: {e}");
            }
        }
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn mean(v: &[Duration]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().map(Duration::as_secs_f64).sum::<f64>() / v.len() as f64)
}

/// What one stream measured.
struct StreamResult {
    spec: StreamSpec,
    rows: Vec<Option<SectorRow>>,
    failed_sectors: usize,
    wall: Duration,
    gpu_busy: f64,
    peak_rss: usize,
    bound: usize,
    alone: Duration,
    under_load: Option<Duration>,
    proof_ema: Duration,
    /// "resident", "streamed", "host" (the CPU backend), "unknown".
    placement: &'static str,
    over_limit: bool,
    evaluations: Option<(usize, usize)>,
    /// Whether its proofs equal the first stream's, sector by sector (None for the first).
    same_as_first: Option<bool>,
}

impl StreamResult {
    /// The sectors finished, in the order they finished.
    fn finished(&self) -> Vec<&SectorRow> {
        let mut v: Vec<&SectorRow> = self.rows.iter().flatten().collect();
        v.sort_by_key(|r| r.done_at);
        v
    }

    /// Mean wall of the sectors after the first to finish (None with fewer than two).
    fn steady(&self) -> Option<f64> {
        let later: Vec<Duration> = self.finished().iter().skip(1).map(|r| r.wall).collect();
        mean(&later)
    }

    fn synthesis(&self) -> (Option<f64>, Option<f64>) {
        let done = self.finished();
        let all: Vec<Duration> = done.iter().flat_map(|r| r.synthesis.iter().copied()).collect();
        let later: Vec<Duration> = done.iter().skip(1).flat_map(|r| r.synthesis.iter().copied()).collect();
        (mean(&all), mean(&later))
    }

    fn header() -> [&'static str; 2] {
        [
            "| stream | path | device limit | sectors | s / sector after the first | first sector s | GPU busy | synthesis s / partition (mean; after the first sector) | peak RSS / B GiB | Winning alone / under load / bound s | parameters | evaluations device / host |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
    }

    fn row(&self, index: usize, budget: usize) -> String {
        let s = &self.spec;
        let fmt1 = |x: Option<f64>| x.map_or("n/a".to_string(), |x| format!("{x:.1}"));
        let done = self.finished();
        let (all, later) = self.synthesis();
        let synthesis = match (all, later) {
            (Some(a), Some(l)) => format!("{a:.2}; {l:.2}"),
            (Some(a), None) => format!("{a:.2}; n/a"),
            _ => "n/a".into(),
        };
        let under = self
            .under_load
            .map_or("not submitted".to_string(), |l| format!("{:.3}", secs(l)));
        let bound = secs(self.proof_ema + self.alone);
        format!(
            "| {index} | {} | {} | {}{} | {} | {} | {:.0}% | {synthesis} | {:.2} / {:.2}{} | {:.3} / {under} / {bound:.3} | {}{} | {} |",
            if s.witness { "witness" } else { "full" },
            s.limit_gib.map_or("none".to_string(), |g| format!("{g} GiB")),
            done.len(),
            if self.failed_sectors > 0 {
                format!(" ({} failed)", self.failed_sectors)
            } else {
                String::new()
            },
            fmt1(self.steady()),
            fmt1(done.first().map(|r| secs(r.wall))),
            self.gpu_busy * 100.0,
            gib(self.peak_rss),
            gib(budget),
            if self.peak_rss > self.bound { " OVER B + constant" } else { "" },
            secs(self.alone),
            self.placement,
            if self.over_limit { " OVER THE LIMIT" } else { "" },
            self.evaluations
                .map_or("n/a".to_string(), |(d, h)| format!("{d} / {h}")),
        )
    }
}

/// What every stream shares: the circuits, the parameters, the engine's configuration.
struct Bench<'a> {
    args: &'a Args,
    gpus: &'a Gpus,
    circuits: &'a [SectorCircuit],
    kind: Kind,
    partitions_per_sector: usize,
    params: &'a Parameters,
    wparams: &'a Parameters,
    synthesis_workers: usize,
    gpu_workers: usize,
    winning_k: u32,
    budget: usize,
    baseline: usize,
    slack: usize,
}

impl Bench<'_> {
    /// The compiled circuits of `engine` the next witness stream's engine can use: the sector
    /// partition's and the Winning stand-in's (the engine keys them by circuit type and shape).
    fn compiled_of(&self, engine: &Engine) -> Vec<Arc<CompiledCircuit>> {
        let cache = engine.compiled_circuits();
        [
            cache.get_in_memory(std::any::type_name::<Timed>(), CircuitShape::of_params(self.params)),
            cache.get_in_memory(
                std::any::type_name::<Synthetic>(),
                CircuitShape::of_params(self.wparams),
            ),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// Runs stream `index` on an engine of its own; returns what it measured and its proofs
    /// by sector (None for a failed sector). `carried`: compiled circuits from earlier streams
    /// (given to a witness stream's engine, replaced by its own when `later_witness`).
    fn stream(
        &self,
        index: usize,
        spec: &StreamSpec,
        carried: &mut Vec<Arc<CompiledCircuit>>,
        later_witness: bool,
        out: &mut Out,
    ) -> (StreamResult, Vec<Option<Vec<Proof>>>) {
        let (args, params, wparams) = (self.args, self.params, self.wparams);
        let (n_sectors, pps, winning_k) = (spec.sectors, self.partitions_per_sector, self.winning_k);
        let total = n_sectors * pps;
        if !spec.witness && !later_witness {
            carried.clear();
        }
        trim_heap();
        let limit = spec.limit_bytes();
        let kept = ok("device memory limit", self.gpus.begin(limit, spec.witness));
        let hwm_reset = reset_hwm();
        let rss_start = rss();
        let engine = ok(
            "engine",
            Engine::new(EngineConfig {
                synthesis_workers: self.synthesis_workers,
                budget_bytes: self.budget,
                gpu_workers_per_backend: args.gpu_workers,
                backends: self.gpus.engine_backends(),
                witness_path: spec.witness,
                synthesis_bytes_per_constraint: args.synthesis_bytes_per_constraint,
                // As the Filecoin engine: Winning PoSt (here its stand-in) is urgent.
                urgent_priority: Some(PRIORITY_WINNING_POST),
                ..EngineConfig::default()
            }),
        );
        let (handed, outside) = if spec.witness {
            for c in carried.iter() {
                ok(
                    "handing a compiled circuit on",
                    engine.compiled_circuits().insert(c.clone()),
                );
            }
            (carried.len(), 0)
        } else {
            (0, carried.iter().map(|c| c.byte_size()).sum::<usize>())
        };
        let predicted = self.gpus.would_stream(params);
        let t = Instant::now();
        ok("parameters", engine.add_parameters(params));
        ok("parameters", engine.add_parameters(wparams));
        let ready = t.elapsed();
        let sampler = Sampler::start();

        out.line("");
        out.line(&format!("### stream {index}: {spec}"));
        out.line(&format!(
            "{}, device memory limit {}, {n_sectors} sector(s) of {pps} partitions; parameters {}, ready in {:.1} s; \
             {handed} compiled circuit(s) handed on from earlier streams{}; RSS at the start {:.2} GiB{}",
            if spec.witness { "witness path" } else { "full synthesis" },
            spec.limit_gib
                .map_or("none (the device's)".to_string(), |g| format!("{g} GiB")),
            match predicted {
                None => "on the host (CPU backend)".to_string(),
                Some(s) => format!(
                    "to be {} ({:.2} GiB; would_stream)",
                    if s { "streamed" } else { "resident" },
                    gib(params.device_bytes())
                ),
            },
            secs(ready),
            if kept > 0 {
                format!(
                    " ({:.2} GiB of them kept resident on the device: within the limit)",
                    gib(kept)
                )
            } else {
                String::new()
            },
            gib(rss_start),
            if hwm_reset {
                ""
            } else {
                " (VmHWM could not be reset: process-wide)"
            }
        ));

        // Winning PoSt alone on this engine (twice; the second counts).
        let first_alone = winning(&engine, wparams, winning_k, 1);
        let alone = winning(&engine, wparams, winning_k, 2);
        out.line(&format!(
            "Winning PoSt stand-in (2^{winning_k}) alone: {:.3} s, then {:.3} s",
            secs(first_alone),
            secs(alone)
        ));
        let books_start = self.gpus.books();

        // The stream: every sector submitted at once.
        let times = Arc::new(Mutex::new(vec![None; total]));
        let (r, s) = randomness(total);
        let (tx, rx) = mpsc::channel::<(usize, cuzk::engine::Progress, Instant)>();
        out.event(json!({
            "event": "stream_start", "stream": index, "kind": self.kind.name(), "spec": spec.to_string(), "sectors": n_sectors,
            "partitions_per_sector": pps, "parameters_ready_s": secs(ready), "winning_alone_s": secs(alone),
            "predicted_streamed": predicted,
        }));
        out.line("| sector | done at s | wall s | GPU busy | synthesis s / partition (mean, min–max) | peak RSS GiB (sector / VmHWM) | failed partitions |");
        out.line("|---|---|---|---|---|---|---|");
        sampler.window();
        let start = Instant::now();
        let start_stats = engine.stats();
        let handles: Vec<_> = (0..n_sectors)
            .map(|sector| {
                let partitions = self
                    .circuits
                    .iter()
                    .enumerate()
                    .map(|(k, c)| {
                        Partition::circuit(Timed {
                            circuit: c.clone(),
                            slot: sector * pps + k,
                            times: times.clone(),
                        })
                    })
                    .collect();
                let range = sector * pps..(sector + 1) * pps;
                let job = Job::new(params.clone(), partitions)
                    .with_priority(self.kind.priority())
                    .with_randomness(r[range.clone()].to_vec(), s[range].to_vec())
                    .with_label(format!("stream {index} sector {sector}"));
                let handle = engine.submit(job);
                let tx = tx.clone();
                handle.on_progress(Box::new(move |p| {
                    let _ = tx.send((sector, p, Instant::now()));
                }));
                handle
            })
            .collect();
        drop(tx);

        let mut rows: Vec<Option<SectorRow>> = (0..n_sectors).map(|_| None).collect();
        let (mut last_at, mut last_busy) = (start, busy(&start_stats));
        let mut done = vec![0usize; n_sectors];
        let mut winning_under_load: Option<mpsc::Receiver<Option<Duration>>> = None;
        let (mut most_resident, mut most_streamed) = (0usize, 0usize);
        let mut seen = vec![(0usize, 0usize); n_sectors];
        for (sector, p, at) in rx {
            done[sector] = p.done;
            let proved: usize = done.iter().sum();
            if seen[sector] != (p.done, p.failed) {
                seen[sector] = (p.done, p.failed);
                out.event(json!({
                    "event": "partition", "stream": index, "spec": spec.to_string(), "sector": sector,
                    "done": p.done, "failed": p.failed, "total": p.total, "at_s": secs(at.duration_since(start)),
                }));
            }
            if winning_under_load.is_none() && proved * 2 >= total && proved < total {
                // Mid-proof, not at a proof's end (when the next GPU start is still open): half
                // a partition's proof after this one finished.
                let delay = engine.stats().gpu_time_ema.unwrap_or_default() / 2;
                std::thread::sleep(delay);
                let (wtx, wrx) = mpsc::channel();
                let on_gpu = engine.stats().on_gpu;
                let job = Job::from_circuits(wparams.clone(), vec![winning_circuit(winning_k, 3)])
                    .with_priority(PRIORITY_WINNING_POST)
                    .with_label("winning-post stand-in under load");
                let submitted = Instant::now();
                let handle = engine.submit(job);
                eprintln!(
                    "stream {index}: Winning PoSt stand-in submitted {:.2} s after a proof ended ({on_gpu} partition(s) on the GPUs)",
                    delay.as_secs_f64()
                );
                std::thread::spawn(move || {
                    let latency = match handle.wait() {
                        Ok(_) => Some(submitted.elapsed()),
                        Err(e) => {
                            eprintln!("error: Winning PoSt stand-in under load: {e}");
                            None
                        }
                    };
                    let _ = wtx.send(latency);
                });
                winning_under_load = Some(wrx);
            }
            if p.finished {
                let st = engine.stats();
                let b = busy(&st);
                let wall = at.duration_since(last_at);
                let busy_frac =
                    (b - last_busy).as_secs_f64() / (wall.as_secs_f64() * self.gpu_workers as f64).max(1e-9);
                let synthesis: Vec<Duration> = times.lock().unwrap_or_else(|p| p.into_inner())
                    [sector * pps..(sector + 1) * pps]
                    .iter()
                    .flatten()
                    .copied()
                    .collect();
                let dev = self.gpus.books();
                most_resident = most_resident.max(dev.resident_bytes);
                most_streamed = most_streamed.max(dev.streamed_sets);
                let row = SectorRow {
                    done_at: at.duration_since(start),
                    wall,
                    busy: busy_frac.min(1.0),
                    synthesis,
                    window_rss: sampler.window(),
                    hwm: proc_status("VmHWM:").unwrap_or(0),
                    failed: p.failed,
                };
                let secs_v: Vec<f64> = row.synthesis.iter().map(Duration::as_secs_f64).collect();
                let m = mean(&row.synthesis).unwrap_or(0.0);
                let (min, max) = secs_v
                    .iter()
                    .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
                out.line(&format!(
                    "| {sector} | {:.1} | {:.1} | {:.0}% | {m:.2} ({:.2}–{max:.2}) | {:.1} / {:.1} | {} |",
                    secs(row.done_at),
                    secs(row.wall),
                    row.busy * 100.0,
                    if secs_v.is_empty() { 0.0 } else { min },
                    gib(row.window_rss),
                    gib(row.hwm),
                    row.failed
                ));
                out.event(json!({
                    "event": "sector", "stream": index, "spec": spec.to_string(), "sector": sector,
                    "done_at_s": secs(row.done_at), "wall_s": secs(row.wall), "gpu_busy": row.busy,
                    "synthesis_s": secs_v, "peak_rss_bytes": row.window_rss, "vmhwm_bytes": row.hwm,
                    "failed_partitions": row.failed,
                }));
                eprintln!(
                    "stream {index} sector {sector} done at {:.1} s ({} failed partitions); budget {:.1}/{:.1} GiB (host-evaluation slots {:.1}), RSS {:.1} GiB",
                    secs(row.done_at),
                    p.failed,
                    gib(st.budget_used),
                    gib(st.budget_limit),
                    gib(st.evaluation_reserved),
                    gib(rss())
                );
                rows[sector] = Some(row);
                (last_at, last_busy) = (at, b);
                // The callbacks (and their senders) live as long as the handles: stop counting.
                if rows.iter().all(Option::is_some) {
                    break;
                }
            }
        }
        let proofs: Vec<Option<Vec<Proof>>> = handles
            .into_iter()
            .enumerate()
            .map(|(i, h)| match h.wait() {
                Ok(p) => Some(p),
                Err(e) => {
                    eprintln!("error: stream {index} sector {i}: {e}");
                    None
                }
            })
            .collect();
        let failed_sectors = proofs.iter().filter(|p| p.is_none()).count();
        let stream_wall = start.elapsed();
        let under_load = winning_under_load.and_then(|rx| rx.recv().ok().flatten());
        let end = engine.stats();
        let dev = self.gpus.books();
        most_resident = most_resident.max(dev.resident_bytes);
        most_streamed = most_streamed.max(dev.streamed_sets);
        let stream_peak = sampler.stop();
        if spec.witness && later_witness {
            let own = self.compiled_of(&engine);
            if !own.is_empty() {
                *carried = own;
            }
        }
        if !later_witness {
            carried.clear();
        }
        drop(engine);
        ok("restoring the device memory limit", self.gpus.restore());

        // The stream's report.
        let all_busy = (busy(&end) - busy(&start_stats)).as_secs_f64()
            / (stream_wall.as_secs_f64() * self.gpu_workers as f64).max(1e-9);
        let proof_ema = end.gpu_time_ema.unwrap_or_default();
        let (placement, evaluations) = if self.gpus.is_cpu() {
            ("host", None)
        } else {
            let placement = if most_resident >= params.device_bytes() {
                "resident"
            } else if most_streamed > 0 {
                "streamed"
            } else {
                "unknown"
            };
            let evaluations = (dev.on_device - books_start.on_device, dev.on_host - books_start.on_host);
            (placement, Some(evaluations))
        };
        let over_limit = limit.is_some_and(|l| most_resident > l);
        let bound = self.budget + self.baseline + self.slack + outside;
        let result = StreamResult {
            spec: spec.clone(),
            rows,
            failed_sectors,
            wall: stream_wall,
            gpu_busy: all_busy.min(1.0),
            peak_rss: stream_peak,
            bound,
            alone,
            under_load,
            proof_ema,
            placement,
            over_limit,
            evaluations,
            same_as_first: None,
        };
        let steady = result
            .steady()
            .map_or("n/a (one sector)".to_string(), |x| format!("{x:.1} s"));
        out.line(&format!(
            "stream {index} ({spec}): {:.1} s for {n_sectors} sector(s) ({failed_sectors} failed); per sector after the first: {steady}; \
             GPU busy {:.0}%; synthesis EMA {:.2} s, proof EMA {:.3} s a partition",
            secs(stream_wall),
            result.gpu_busy * 100.0,
            end.synthesis_time_ema.unwrap_or_default().as_secs_f64(),
            secs(proof_ema)
        ));
        let w = end.witness;
        out.line(&format!(
            "synthesis path: {} recorded, {} witness-only, {} full, {} fallbacks (the Winning stand-in's 3 proofs included); \
             compiled circuits {:.2} GiB; budget peak {:.2} GiB, {} waits",
            w.recorded,
            w.witness,
            w.full,
            w.fallbacks,
            gib(end.compiled_bytes),
            gib(end.budget_peak),
            end.budget_waits
        ));
        if let Some((on_device, on_host)) = evaluations {
            out.line(&format!(
                "device: parameters {placement}{} (predicted {}; most resident {:.2} GiB of the set's {:.2} GiB, {most_streamed} set(s) streamed); \
                 device peak {:.2} GiB, limit {}; witness proofs evaluated on the device {on_device}, on the host {on_host} \
                 (the Winning stand-in's under load included); compiled circuits resident on the device at the end: {} ({:.2} GiB); \
                 out-of-memory retries {}, idle sets evicted before streamed proofs {}",
                if over_limit { ", OVER THE LIMIT" } else { "" },
                if predicted == Some(true) { "streamed" } else { "resident" },
                gib(most_resident),
                gib(params.device_bytes()),
                gib(dev.peak),
                spec.limit_gib.map_or("none".to_string(), |g| format!("{g} GiB")),
                dev.resident_circuits,
                gib(dev.circuit_bytes),
                dev.oom_retries - books_start.oom_retries,
                dev.evicted_for_streamed - books_start.evicted_for_streamed
            ));
        }
        match under_load {
            Some(lat) => out.line(&format!(
                "Winning PoSt stand-in (2^{winning_k}, priority {PRIORITY_WINNING_POST}): alone {:.3} s, under load {:.3} s; \
                 bound (one {} proof + alone) {:.3} s: {}",
                secs(alone),
                secs(lat),
                self.kind.name(),
                secs(proof_ema + alone),
                if lat <= proof_ema + alone { "within" } else { "OVER" }
            )),
            None => out.line(&format!(
                "Winning PoSt stand-in: alone {:.3} s; not measured under load (the stream ended first, or it failed)",
                secs(alone)
            )),
        }
        out.line(&format!(
            "memory: peak RSS over the stream {:.2} GiB (VmHWM {:.2} GiB); B {:.2} GiB; B + constant {:.2} GiB \
             (RSS before the parameters {:.2} GiB + slack {:.2} GiB{}): {}",
            gib(stream_peak),
            gib(proc_status("VmHWM:").unwrap_or(0)),
            gib(self.budget),
            gib(bound),
            gib(self.baseline),
            gib(self.slack),
            if outside > 0 {
                format!(" + compiled circuits held for a later stream {:.2} GiB", gib(outside))
            } else {
                String::new()
            },
            if stream_peak <= self.budget {
                "within B"
            } else if stream_peak <= bound {
                "over B, within B + constant"
            } else {
                "OVER B + constant"
            }
        ));
        (result, proofs)
    }
}

/// Appends stream `index`'s summary (its row, under the table's header) to the report.
fn summary_event(out: &mut Out, index: usize, r: &StreamResult, budget: usize) {
    let (all, later) = r.synthesis();
    let done = r.finished();
    out.event(json!({
        "event": "stream", "stream": index, "spec": r.spec.to_string(), "path": r.spec.path(),
        "limit_gib": r.spec.limit_gib, "sectors": done.len(), "failed_sectors": r.failed_sectors,
        "wall_s": secs(r.wall), "steady_s_per_sector": r.steady(),
        "first_sector_s": done.first().map(|s| secs(s.wall)), "gpu_busy": r.gpu_busy,
        "synthesis_s_per_partition": all, "synthesis_s_per_partition_after_first": later,
        "peak_rss_bytes": r.peak_rss, "budget_bytes": budget, "bound_bytes": r.bound,
        "winning_alone_s": secs(r.alone), "winning_under_load_s": r.under_load.map(secs),
        "winning_bound_s": secs(r.proof_ema + r.alone), "parameters": r.placement,
        "over_limit": r.over_limit,
        "evaluations_device": r.evaluations.map(|e| e.0), "evaluations_host": r.evaluations.map(|e| e.1),
        "proofs_same_as_first": r.same_as_first,
    }));
}

fn main() {
    support::init_logging("warn");
    let args = Args::parse();
    let streams = if args.streams.is_empty() {
        vec![StreamSpec {
            witness: args.witness_path,
            limit_gib: None,
            sectors: args.sectors,
        }]
    } else {
        args.streams.clone()
    };
    if args.cpu {
        if let Some(s) = streams.iter().find(|s| s.limit_gib.is_some()) {
            fail(&format!(
                "--stream {s}: a device memory limit applies to the CUDA backends; --cpu proves on the CPU (drop the @LIMIT or --cpu)"
            ));
        }
    }
    let pps = args.partitions_per_sector.unwrap_or(match args.kind {
        Kind::Porep => 10,
        Kind::Snap => snap_partition_count(args.snap_sector_size),
    });
    let cores = std::thread::available_parallelism().map_or(2, |c| c.get());
    let synthesis_workers = args.synthesis_workers.unwrap_or(cores);
    let winning_k = args.winning_log_size.unwrap_or(if args.cpu { 14 } else { 22 });
    let gpus = Gpus::new(&args);
    let mut out = Out::open(args.out.as_deref());
    let command: Vec<String> = std::env::args().collect();
    out.line("");
    out.line(&format!(
        "## sector_bench, {}: {}",
        args.kind.name(),
        if args.shape_only {
            "shape only".to_string()
        } else {
            streams.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
        }
    ));
    out.line(&format!("command: `{}`", command.join(" ")));
    out.line(&format!("machine: {}", machine()));

    // The circuits: storage-proofs-porep's setup, replication, vanilla proofs; or SnapDeals'
    // of production's shape.
    let t = Instant::now();
    let circuits: Vec<SectorCircuit> = match args.kind {
        Kind::Porep => {
            let circuits = porep_circuits(&args, pps);
            eprintln!(
                "replicated a {} B sector ({} layers, {} challenges per partition) and built {pps} partition circuits in {:.2} s",
                args.sector_size,
                args.layers,
                args.challenges,
                secs(t.elapsed())
            );
            circuits.into_iter().map(SectorCircuit::Porep).collect()
        }
        Kind::Snap => {
            let circuits = snap_circuits(args.snap_sector_size, pps);
            eprintln!(
                "built {pps} SnapDeals partition circuits of a {} B sector's shape in {:.2} s",
                args.snap_sector_size,
                secs(t.elapsed())
            );
            circuits.into_iter().map(SectorCircuit::Snap).collect()
        }
    };
    if args.shape_only {
        shape_only(&circuits[0], &mut out);
        return;
    }
    let baseline = rss();

    // The parameters' shape: one partition in full (recording it with --record-shape), its RSS
    // over it sampled.
    let sampler = Sampler::start();
    let t = Instant::now();
    let (shape, recorded) = if args.record_shape {
        let timed = Timed {
            circuit: circuits[0].clone(),
            slot: 0,
            times: Arc::new(Mutex::new(vec![None])),
        };
        let (shape, compiled) = ok("recording partition 0", CompiledCircuit::record(timed, None, None));
        (shape, Some(Arc::new(compiled)))
    } else {
        let shape = ok(
            "synthesizing partition 0",
            Prover::new().synthesize(circuits[0].clone()),
        );
        (shape, None)
    };
    let shape_time = t.elapsed();
    let shape_peak = sampler.stop();
    let constraints = shape.num_constraints();
    let (inputs, aux) = (shape.input_assignment().len(), shape.aux_assignment().len());
    let held = cuzk::engine::budget::assignment_bytes(&shape) + recorded.as_ref().map_or(0, |c| c.byte_size());
    let overhead = shape_peak.saturating_sub(baseline).saturating_sub(held);
    eprintln!(
        "partition 0: {constraints} constraints, {inputs} inputs, {aux} aux; full synthesis{} {:.2} s; \
         its own memory beyond a/b/c/aux{} ~{} bytes per constraint",
        if recorded.is_some() { " with recording" } else { "" },
        secs(shape_time),
        if recorded.is_some() {
            " and the compiled circuit"
        } else {
            ""
        },
        overhead / constraints.max(1)
    );
    let t = Instant::now();
    let params = ok("random parameters", random_parameters_for(&shape, 32));
    drop(shape);
    let wparams = ok(
        "Winning PoSt stand-in parameters",
        random_parameters(winning_circuit(winning_k, 0), 22),
    );
    let params_time = t.elapsed();
    eprintln!("random parameters made in {:.2} s", secs(params_time));

    // The engines' budget (the same for every stream).
    let gpu_workers = gpus.count() * args.gpu_workers;
    let one = partition_bytes(params_hint(&params), 1.0);
    let slack = (args.slack_gib * GIB) as usize;
    let formula = params.host_bytes() + wparams.host_bytes() + (synthesis_workers + gpu_workers + 2) * one;
    let cap = host_memory().map(|m| ((m as f64 * HOST_SHARE) as usize).saturating_sub(baseline + slack));
    let (budget, capped) = match (args.budget_gib, cap) {
        (Some(g), _) if g > 0.0 => ((g * GIB) as usize, false),
        (_, Some(cap)) if cap < formula => (cap, true),
        _ => (formula, false),
    };
    let described = match &circuits[0] {
        SectorCircuit::Porep(_) => format!(
            "PoRep C2 shape: {} layers, {} challenges per partition, 8-8-0 tree over {} B ({constraints} constraints a \
             partition, {inputs} inputs, {aux} aux; a real 32 GiB partition has {REAL_32GIB_CONSTRAINTS} constraints)",
            args.layers, args.challenges, args.sector_size,
        ),
        SectorCircuit::Snap(c) => {
            let p = c.public_params();
            format!(
                "SnapDeals shape: EmptySectorUpdateCircuit of a {} B sector, production's ({} challenges per partition, {} \
                 partition(s), {} apex leaves, {:?} TreeR; {constraints} constraints a partition, {inputs} inputs, {aux} aux), \
                 its witness fabricated",
                args.snap_sector_size,
                p.challenge_count,
                p.partition_count,
                p.apex_leaf_count,
                snap::TreeShape::of(args.snap_sector_size).expect("checked by the parser"),
            )
        }
    };
    out.line(&format!(
        "{described}; domain 2^{}; {pps} partitions a sector; random parameters of that shape (the proofs do not verify); \
         shape's full synthesis{} {:.1} s, parameters made in {:.1} s",
        constraints.next_power_of_two().trailing_zeros(),
        if recorded.is_some() { " with recording" } else { "" },
        secs(shape_time),
        secs(params_time)
    ));
    out.line(&format!(
        "engines (one per stream): {} × {} ({} GPU worker(s) each), {synthesis_workers} synthesis workers, budget {:.2} GiB{} \
         (one full partition reserves {:.2} GiB; parameters {:.2} GiB)",
        gpus.count(),
        if gpus.is_cpu() { "cpu" } else { "cuda" },
        args.gpu_workers,
        gib(budget),
        if capped {
            format!(" (capped at {:.0}% of the host's memory less the constant)", HOST_SHARE * 100.0)
        } else {
            String::new()
        },
        gib(one),
        gib(params.host_bytes())
    ));

    let bench = Bench {
        args: &args,
        gpus: &gpus,
        circuits: &circuits,
        kind: args.kind,
        partitions_per_sector: pps,
        params: &params,
        wparams: &wparams,
        synthesis_workers,
        gpu_workers,
        winning_k,
        budget,
        baseline,
        slack,
    };
    let mut carried: Vec<Arc<CompiledCircuit>> = recorded.into_iter().collect();
    let mut results: Vec<StreamResult> = Vec::new();
    let mut first_proofs: Vec<Option<Vec<Proof>>> = Vec::new();
    for (i, spec) in streams.iter().enumerate() {
        let later_witness = streams[i + 1..].iter().any(|s| s.witness);
        let (mut result, proofs) = bench.stream(i, spec, &mut carried, later_witness, &mut out);
        if i == 0 {
            first_proofs = proofs;
        } else {
            let compared: Vec<bool> = proofs
                .iter()
                .zip(&first_proofs)
                .filter_map(|(a, b)| Some(a.as_ref()? == b.as_ref()?))
                .collect();
            if !compared.is_empty() {
                let same = compared.iter().all(|&x| x);
                result.same_as_first = Some(same);
                out.line(&format!(
                    "proofs of {} sector(s) against stream 0's (same partitions, same r, s): {}",
                    compared.len(),
                    if same { "identical" } else { "DIFFER" }
                ));
            }
        }
        for l in StreamResult::header() {
            out.line(l);
        }
        out.line(&result.row(i, budget));
        summary_event(&mut out, i, &result, budget);
        results.push(result);
    }

    // GPU bytes against the CPU's.
    let compared = args.compare_cpu.min(pps);
    let mut identical = results.iter().all(|r| r.same_as_first != Some(false));
    if compared > 0 {
        match first_proofs.first().and_then(Option::as_ref) {
            None => out.line("CPU comparison: the first stream's sector 0 has no proofs"),
            Some(sector0) => {
                let cpu = ok("CPU prover", Prover::new().with_backend(BackendChoice::Cpu));
                let (r, s) = randomness(pps);
                let mut same_all = true;
                for (k, circuit) in circuits.iter().take(compared).enumerate() {
                    let a = ok("CPU synthesis", cpu.synthesize_for(circuit.clone(), &params));
                    let (p, _) = ok(
                        "CPU proof",
                        cpu.prove_synthesized(vec![a], &params, &r[k..=k], &s[k..=k]),
                    );
                    let same = p[0] == sector0[k];
                    eprintln!(
                        "sector 0 partition {k}: CPU bytes {}",
                        if same { "identical" } else { "DIFFER" }
                    );
                    same_all &= same;
                }
                out.line(&format!(
                    "CPU bytes of the first stream's sector 0, first {compared} partition(s): {}",
                    if same_all { "identical" } else { "DIFFER" }
                ));
                identical &= same_all;
            }
        }
    }

    // The summary: one row per stream.
    out.line("");
    out.line("### summary");
    for l in StreamResult::header() {
        out.line(l);
    }
    for (i, r) in results.iter().enumerate() {
        out.line(&r.row(i, budget));
    }
    out.line(
        "(steady state: mean wall of the sectors after the first to finish; synthesis: mean over the stream's partitions, \
         then over those of the sectors after the first; bound: one partition's proof (EMA) + the stand-in alone; evaluations: \
         this stream's witness proofs with a, b, c evaluated on the device / on the host)",
    );
    if !identical {
        std::process::exit(1);
    }
    if results.iter().any(|r| r.failed_sectors > 0) {
        std::process::exit(2);
    }
    if results.iter().any(|r| r.peak_rss > r.bound) {
        std::process::exit(3);
    }
    if results.iter().any(|r| r.over_limit) {
        std::process::exit(4);
    }
}
