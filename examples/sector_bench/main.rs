//! 32 GiB-shape PoRep C2, SnapDeals or Window PoSt (`--kind porep|snap|window`; see "The circuits")
//! streamed through the engine (feature `filecoin`; `cuda` for GPUs): per sector wall time, GPU busy, synthesis time per partition and peak host RSS, a
//! Winning-PoSt-priority job's latency under that load against alone, and the engine's memory
//! promise (peak RSS against its budget) — for one or several streams over one set of
//! parameters.
//!
//! ## Streams
//! `--stream SPEC` (repeatable, run in the order given), SPEC =
//! `native|witness|full[@LIMIT_GIB]:SECTORS`: the synthesis path (`witness`: the engine's
//! witness path, witnesses by the gadgets; `native`: the witness path with each partition's
//! native witness generator — `filecoin::native::porep` or `::update` — validated against the
//! gadgets on one partition before the stream, so the stream's partitions are all generated;
//! `full`: every partition synthesized in full), optionally a CUDA device memory limit in GiB,
//! and the sectors. For
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
//!   limit, sectors, steady-state seconds per sector (the partitions proved after the first
//!   sector finished, over the time to the last of them, times the partitions a sector; n/a with
//!   one sector; the mean wall of the later sectors, which batches straddling two sectors make
//!   look faster, is in the stream's line and JSON), the full batches (the largest batch the
//!   GPU took, each timed from the batch before it: count, median, min–max, and the median as
//!   seconds a sector — the GPU's steady rate without cut batches, the stand-in's proof or a
//!   stream's tail), the first sector's seconds, GPU busy, synthesis per
//!   partition (mean over the stream; over the sectors after the first), peak RSS against B,
//!   the Winning stand-in alone / under load / bound, where the parameters were, and the
//!   device/host evaluations. Every stream proves the same partitions with the same r, s, so
//!   the bench also checks that each stream's proofs equal the first stream's (exit 1 if not).
//!
//! ## A deadline under load (`--deadline N`, `deadline`)
//! A proving node's deadline arriving while it seals: N Window PoSt partitions of production's
//! shape (`--window-sector-size`, `--window-sectors`) as one job at Window PoSt's priority, then
//! a Winning PoSt partition (`--winning-challenges`) at Winning PoSt's, submitted in every
//! stream when half its partitions are proved; both sets made here (shape, random parameters)
//! and held by each stream's engine beside the stream's under its one budget (on the host, or
//! on the GPUs with `--params-on-device`). Each is first proved alone on the stream's engine;
//! the stream then prints each one's latency under load against its bound (Window: N × one
//! partition alone + one of the stream's partitions; Winning: one of the stream's partitions +
//! its own alone; the stream's seconds a partition outside the deadline), how long the deadline was open and the stream's throughput lost in it, one
//! `deadline` JSON event, and a `### deadline` table at the end. The Winning-PoSt stand-in is
//! then measured alone only. A smoke run on 2 cores (CI runs it):
//!
//!     sector_bench --cpu --sector-size 2KiB --layers 2 --challenges 1 --partitions-per-sector 2 --synthesis-workers 2 --record-shape --window-sectors 1 --winning-challenges 2 --deadline 2 --stream native:2
//!
//! ## On the H200 host (one GPU, 16 cores, 128 GiB; 600 s a command)
//! **The real PoRep shape** (the default since the random vanilla proofs: 32 GiB's tree
//! depths, 130,278,869 constraints a partition, domain 2^27). Counted here (`--count-only`,
//! exact, 58 s on one core): parameters **44.12 GiB** (39.51 at the 16 KiB shape), a full
//! partition reserves 15.91 GiB (15.36), the compiled circuit ~7.0 GiB (6.87 of matrices and
//! densities; 5.89 at 16 KiB, where 6.04 GiB were recorded). The host memory, scaled from the
//! 16 KiB rows by those: before the streams, the shape's full synthesis with recording (~16 GiB
//! of a, b, c and aux, ~7 GiB recorded) held while the parameters are made, **~70 GiB**;
//! streams with native witnesses ~55 GiB resident and ~68 GiB under 24 GiB (the host
//! evaluation slot: a, b, c and aux, ~16 GiB), ~11 GiB with `--params-on-device`; all within the
//! budget's cap (~111 GiB). The time, scaled from the 16 KiB rows (× 1.16 the synthesis, × 1.12
//! the parameters, a proof ~1.35 s resident and ~3.2 s streamed): ~235 s before the first
//! stream, each native stream ~15 s of engine and ~50 s of validation, native:4 ~55 s,
//! native@24:2 ~65 s: **~490 s** for
//!
//!     cargo run --release --features cuda,filecoin --example sector_bench -- --layers 11 --challenges 18 --devices 0 --record-shape --synthesis-workers 4 --stream native:4 --stream native@24:2 --out OUT
//!
//! (should it run past 600 s, one stream a command: `--stream native:4`, then `--stream
//! native@24:2`). With the gadgets' witnesses (~45–52 s a witness-only synthesis, 16 at once),
//! one stream a command: `--record-shape --stream witness:3`, then `--record-shape --stream
//! witness@24:2`. The 16 KiB shape of the rows before (112,055,993 constraints): add
//! `--sector-size 16KiB` (its structure from random vanilla proofs) or `--replicate
//! --sector-size 16KiB` (the same circuits as then, a replicated sector's).
//!
//! **The 16 KiB shape** (`--replicate --sector-size 16KiB`, the commands of the rows before the
//! real shape; then without `--replicate`, which was the only way). Two commands, sized by the
//! estimate below to end before 600 s; every line is out as it happens, so a command cut short
//! still leaves every finished sector and stream:
//!
//!     cargo run --release --features cuda,filecoin --example sector_bench -- --layers 11 --challenges 18 --replicate --sector-size 16KiB --devices 0 --record-shape --stream witness:3 --stream witness@24:2 --out OUT
//!     cargo run --release --features cuda,filecoin --example sector_bench -- --layers 11 --challenges 18 --replicate --sector-size 16KiB --devices 0 --partitions-per-sector 2 --stream full:2 --out OUT
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
//!   2: "s / sector, steady" is then the seconds per 2 partitions (synthesis-bound: a
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
//! partitions at once, in rounds of 16, so sectors finish in bunches; the column counts the
//! partitions proved after the first sector's end, so a bunch is not counted twice.
//! `sector_bench.jsonl` has every partition's finish for a finer look.
//!
//! The CPU smoke test (any machine): `cargo run --release --features filecoin --example
//! sector_bench -- --sector-size 2KiB --layers 2 --challenges 1 --partitions-per-sector 2 --cpu
//! --stream witness:2 --stream full:1 --out /tmp/sb` (`--record-shape --stream native:2`: the
//! native generator; `--replicate`: a replicated sector's partitions); SnapDeals: `-- --kind
//! snap --snap-sector-size 2KiB --partitions-per-sector 2 --cpu --stream witness:2 --stream
//! full:1 --out /tmp/sb-snap`. A shape alone: `--shape-only` counts partition 0 (constraints,
//! inputs, aux, domain; nothing stored) and times one witness-only synthesis (no parameters,
//! no engine, no GPU); `--count-only` counts it with its densities and non-zero terms and
//! prints the host bytes they make (the parameters', a full partition's, the compiled
//! circuit's), without the synthesis: `--count-only` alone is the real PoRep partition's
//! (130,278,869 constraints). The builders checked against each other: `--check-builders
//! --layers 2 --challenges 1 --partitions-per-sector 2` (see "The circuits"). Other uses: `--devices 0,1` (two GPUs), `--layers 2
//! --challenges 2 --partitions-per-sector 2 --compare-cpu 2 --stream witness:1` (the GPU's bytes
//! against the CPU's, small shape).
//!
//! ## The circuits
//! Each PoRep partition is storage-proofs-porep's own `StackedCircuit`, built by
//! `StackedCompound::circuit` from the sector's public inputs and the partition's vanilla
//! proofs, as filecoin-proofs builds C2's, with `--layers` (11 for 32 GiB; the crate accepts only
//! 2 or 11), `--challenges` per partition (18 for 32 GiB: filecoin-proofs' 176 interactive PoRep
//! challenges over 10 partitions, rounded up) and the 32 GiB tree arity (`SectorShape32GiB`:
//! 8-8-0, Poseidon; SHA-256 for the data tree). Real 32 GiB sectors cannot be sealed here, so the
//! vanilla proofs are (`vanilla.rs`):
//!
//! - **random, of `--sector-size`'s production shape** (the default; 32 GiB by default):
//!   `random_sector` gives every challenge production's lengths — a TreeD path of log2(nodes)
//!   levels, TreeC and TreeR paths of the base levels of arity 8 and the sub level, columns of
//!   `--layers` rows for the node and its 6 + 8 parents — every position its node's, every value
//!   random, as `native_porep_bench` does (the constraints are not satisfied; with random
//!   parameters the proofs do not verify anyway). `StackedCompound::circuit` reads only the
//!   public inputs and the vanilla proofs, and the circuit's structure only their lengths, so at
//!   32 GiB this is the real partition: **130,278,869 constraints** (328 of them the input
//!   constraints), 130,169,893 aux, domain 2^27 (`--count-only`). Made in a fraction of a
//!   second at any size.
//! - **a replicated sector's** (`--replicate`; how the bench built them before, at most 1 GiB):
//!   a sector of `--sector-size` random bytes (default 2 KiB then) replicated
//!   (`replicate_phase1`, `replicate_phase2`) and its vanilla proofs made
//!   (`prove_all_partitions`). Its tree is shallower than a 32 GiB one: 112,055,993 constraints
//!   at 11 layers, 18 challenges and 16 KiB (the rows before the real shape; the smallest
//!   filecoin-proofs sector of this arity; 2 KiB also works: 8 leaves per subtree).
//!
//! **Both builders, checked** (`--check-builders`, a small shape on the CPU: `check.rs`): the
//! replicated sector's vanilla proofs built into partitions with the replicated sector's
//! parameters and with parameters from setup alone (the random builder's) give the same a, b, c,
//! inputs and aux and byte-identical CPU proofs (same random parameters, same r, s); a random
//! sector's partition 0 and the replicated one's record the same compiled circuit (fingerprint:
//! identical A, B, C and densities); the native generator's witness equals the gadgets' for
//! both; and `--count-only`'s parameter bytes are those of the parameters made. So where the two
//! builders give the same circuit (the same vanilla proofs) the proofs are the same bytes, and at
//! the same size they give the same structure: the random 16 KiB partition is the old rows'
//! circuit with other witness values. Run on the dev machine (2 threads): 2 KiB, 2 layers, 1
//! challenge, 2 partitions (1,344,268 constraints) in 67 s; 2 KiB, 11 layers, 1 challenge, 1
//! partition (6,081,250 constraints) in 151 s: all identical.
//!
//! The bench prints the partition's count. A "sector" is `--partitions-per-sector` (10, as a
//! 32 GiB C2) such partitions; every sector proves the same partitions (same vanilla proofs,
//! synthesized anew each time). Each partition has its native witness generator
//! (`filecoin::native::porep::stacked_witness_parallel` over the same public inputs and vanilla
//! proofs), which `--stream native:N` gives the engine.
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
//! **Window PoSt** (`--kind window`, issue 49): each partition is storage-proofs-post's
//! `FallbackPoStCircuit` (`FallbackPoStCompound::circuit`) of `--window-sector-size` sectors
//! (32 GiB by default, TreeR 8-8-0; or 64 GiB, 8-8-2), built from random vanilla proofs of
//! `--window-sectors` sector slots (default production's: 2349 at 32 GiB, 2300 at 64 GiB) of 10
//! challenges each, every inclusion path the TreeR's levels of random values
//! (`sector_bench/window.rs` over `tests/common/post.rs`; the constraints are not satisfied).
//! Partition k's proofs come from seed 38 + k; its native generator is
//! `filecoin::native::post::fallback_post_witness_parallel` over the same inputs. A "sector" is
//! `--partitions-per-sector` partitions (default 1; a deadline of several: 4 say). Run on the
//! dev machine with 2 slots (`--cpu --window-sectors 2 --record-shape --stream native:1
//! --stream witness:1`, both sizes): the generator validated against the gadgets, the native
//! and the gadgets' streams' proofs identical. At production's 2349 slots of 32 GiB
//! (`--count-only`, dev machine, 421 s): **125,305,057 constraints** (25,840 of them input
//! constraints; the circuit's own 125,279,217 are the figure filecoin-proofs' constants.rs gives
//! for its `WINDOW_POST_SECTOR_COUNT`), 25,840 inputs, 126,902,376 aux, domain 2^27; parameters
//! 56.60 GiB on the host; compiled circuit 9.98 GiB (CSR). At 64 GiB's 2300 slots (284 s):
//! **129,913,201 constraints** (the circuit's 129,887,900, filecoin-proofs' figure again, and
//! 25,301 input constraints), 131,500,200 aux, domain 2^27; parameters 58.26 GiB.
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
//! The CPU smoke test above, its tables and what they showed (the Winning stand-in before and
//! after the engine's urgent jobs) are in docs/HISTORY.md.

mod args;
mod check;
mod circuits;
mod deadline;
mod gpus;
mod memory;
mod report;
mod shape;
mod snap;
mod stream;
#[path = "../support/mod.rs"]
mod support;
mod vanilla;
mod window;

#[path = "../../tests/common/post.rs"]
mod post_fixtures;

use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use cuzk::engine::budget::{params_hint, partition_bytes};
use cuzk::testing::random_parameters;
use cuzk::{BackendChoice, CompiledCircuit, Parameters, Proof, Prover};

use args::{Args, Kind, StreamSpec};
use circuits::{
    porep_partitions, porep_sector, randomness, snap_circuits, snap_partition_count, winning_circuit, Generator,
    SectorCircuit,
};
use deadline::{Deadline, DeadlineCircuits, DeadlineResult};
use gpus::Gpus;
use memory::{host_memory, rss, trim_heap};
use report::{gib, secs, summary_event, Out, StreamResult};
use shape::{count_only, shape_only};
use stream::Bench;
use support::{fail, machine};

/// A real 32 GiB PoRep C2 partition's constraints (measured on the H200 host, issue 23).
const REAL_32GIB_CONSTRAINTS: usize = 130_278_869;
/// The largest sector `--replicate` replicates (its labels and trees are built here).
const MOST_REPLICATED: u64 = 1 << 30;

/// The default budget's cap: this share of the host's memory (less the bench's constant).
const HOST_SHARE: f64 = 0.9;
pub(crate) const GIB: f64 = (1u64 << 30) as f64;

/// `--write-params`: `params` written where filecoin-proofs looks for the sector size's PoRep
/// C2 parameters (registered proof V1_1), FIL_PROOFS_PARAMETER_CACHE being the directory.
fn write_params(args: &Args, params: &cuzk::Parameters, out: &mut Out) {
    let size = args.porep_sector_size();
    let registered = cuzk::filecoin::SECTOR_SIZES
        .iter()
        .position(|s| cuzk::byte_size::parse(s).is_ok_and(|b| b as u64 == size));
    let Some(i) = registered else {
        fail(&format!("--write-params: {size} B is not a registered sector size"));
    };
    let proof = cuzk::filecoin::seal_proof_from_abi(5 + i as u64).expect("the V1_1 block has five sizes");
    let path = ok(
        "the parameter file's path",
        cuzk::filecoin::parameter_path(cuzk::filecoin::ParamsKind::Seal(proof)),
    );
    let t = Instant::now();
    ok("writing the parameters", params.save(&path));
    out.line(&format!(
        "parameters of the {} shape written to {} ({:.2} GiB) in {:.1} s; random points: proofs over them do not verify",
        cuzk::filecoin::SECTOR_SIZES[i],
        path.display(),
        gib(std::fs::metadata(&path).map_or(0, |m| m.len() as usize)),
        secs(t.elapsed())
    ));
}

pub(crate) fn ok<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| fail(&format!("{what}: {e}")))
}

fn main() {
    support::init_logging("warn");
    let args = Args::parse();
    if let Some(dir) = &args.write_params {
        if args.kind != Kind::Porep {
            fail("--write-params writes a PoRep C2 parameter file (--kind porep)");
        }
        ok("creating the --write-params directory", std::fs::create_dir_all(dir));
        // filecoin-proofs reads it once, at its first use: before anything touches it.
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    let streams = if args.streams.is_empty() {
        vec![StreamSpec {
            witness: args.witness_path,
            native: false,
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
    if args.params_on_device {
        if args.cpu {
            fail("--params-on-device keeps the parameters on a GPU; --cpu proves on the CPU (drop one)");
        }
        if let Some(s) = streams.iter().find(|s| s.limit_gib.is_some()) {
            fail(&format!(
                "--stream {s}: parameters under a device memory limit are streamed from their host copy, which \
                 --params-on-device releases (drop the @LIMIT or --params-on-device)"
            ));
        }
        if args.compare_cpu > 0 {
            fail("--compare-cpu proves on the CPU with the parameters' host copy, which --params-on-device releases");
        }
    }
    if args.kind == Kind::Porep && (args.replicate || args.check_builders) && args.porep_sector_size() > MOST_REPLICATED
    {
        fail(&format!(
            "--sector-size {}: --replicate and --check-builders replicate the sector here, at most 1 GiB; without \
             them the partitions have the size's shape from random vanilla proofs",
            args.porep_sector_size()
        ));
    }
    if args.deadline.is_some() && args.kind == Kind::Window {
        fail("--deadline puts a Window PoSt deadline beside PoRep or SnapDeals sectors (--kind porep or snap)");
    }
    if args.check_builders && args.kind != Kind::Porep {
        fail("--check-builders checks the PoRep builders (--kind porep)");
    }
    let pps = args.partitions_per_sector.unwrap_or(match args.kind {
        Kind::Porep => 10,
        Kind::Snap => snap_partition_count(args.snap_sector_size),
        Kind::Window => 1,
    });
    let window_sectors = args
        .window_sectors
        .unwrap_or(args.window_sector_size.production_sectors());
    if (args.kind == Kind::Window || args.deadline.is_some()) && window_sectors == 0 {
        fail("--window-sectors: at least one sector slot");
    }
    let cores = std::thread::available_parallelism().map_or(2, |c| c.get());
    let synthesis_workers = args.synthesis_workers.unwrap_or(cores);
    let winning_k = args.winning_log_size.unwrap_or(if args.cpu { 14 } else { 22 });
    if let Some(g) = args.emulate_h2d_gbps {
        if args.cpu || !g.is_finite() || g <= 0.0 {
            fail("--emulate-h2d-gbps paces the GPUs' host->device copies: a rate > 0, without --cpu");
        }
        // Read once by the kernels when a device context is made: before any GPU is touched.
        std::env::set_var("CUZK_K_EMULATE_H2D_GBPS", g.to_string());
    }
    let gpus = Gpus::new(&args);
    let mut out = Out::open(args.out.as_deref());
    let command: Vec<String> = std::env::args().collect();
    out.line("");
    out.line(&format!(
        "## sector_bench, {}: {}",
        args.kind.name(),
        if args.shape_only {
            "shape only".to_string()
        } else if args.count_only {
            "count only".to_string()
        } else if args.check_builders {
            "the PoRep builders checked".to_string()
        } else {
            streams.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
        }
    ));
    out.line(&format!("command: `{}`", command.join(" ")));
    out.line(&format!("machine: {}", machine()));
    if let Some(g) = args.emulate_h2d_gbps {
        out.line(&format!(
            "host->device link: EMULATED at {g} GB/s (every copy of 1 MiB or more paced on one timeline a GPU): an emulation of a slower bus on this host, not a measurement of other hardware"
        ));
    }
    if args.check_builders {
        if !check::check_builders(&args, pps, &mut out) {
            std::process::exit(1);
        }
        return;
    }

    // The circuits: storage-proofs-porep's setup, replication, vanilla proofs; or SnapDeals'
    // of production's shape.
    let t = Instant::now();
    let generators: Vec<Option<Generator>>;
    let circuits: Vec<SectorCircuit> = match args.kind {
        Kind::Porep => {
            let circuits = porep_partitions(porep_sector(&args, pps));
            eprintln!(
                "{} a {} B sector ({} layers, {} challenges per partition) and built {pps} partition circuits in {:.2} s",
                if args.replicate {
                    "replicated"
                } else {
                    "made random vanilla proofs of"
                },
                args.porep_sector_size(),
                args.layers,
                args.challenges,
                secs(t.elapsed())
            );
            let (circuits, made): (Vec<_>, Vec<_>) = circuits.into_iter().unzip();
            generators = made.into_iter().map(Some).collect();
            circuits.into_iter().map(SectorCircuit::Porep).collect()
        }
        Kind::Snap => {
            let circuits = snap_circuits(args.snap_sector_size, pps);
            eprintln!(
                "built {pps} SnapDeals partition circuits of a {} B sector's shape in {:.2} s",
                args.snap_sector_size,
                secs(t.elapsed())
            );
            generators = circuits
                .iter()
                .map(|c| {
                    let c = c.clone();
                    let generate: Generator =
                        Arc::new(move |cs: &mut cuzk::WitnessCs, threads: usize| c.generate(threads, cs));
                    Some(generate)
                })
                .collect();
            circuits.into_iter().map(SectorCircuit::Snap).collect()
        }
        Kind::Window => {
            let partitions = window::window_partitions(args.window_sector_size, window_sectors, pps);
            eprintln!(
                "built {pps} Window PoSt partition circuits of {window_sectors} {} sectors each from random vanilla proofs in {:.2} s",
                args.window_sector_size.name(),
                secs(t.elapsed())
            );
            let (circuits, made): (Vec<_>, Vec<_>) = partitions.into_iter().unzip();
            generators = made.into_iter().map(Some).collect();
            circuits.into_iter().map(SectorCircuit::Window).collect()
        }
    };
    if args.shape_only {
        shape_only(&circuits[0], generators[0].as_ref(), &mut out);
        return;
    }
    if args.count_only {
        count_only(&circuits[0], &mut out);
        return;
    }
    let baseline = rss();

    // The parameters' shape: one partition in full (recording it with --record-shape), its RSS
    // over it sampled; --deadline's two shapes on a thread of their own meanwhile (each is a
    // single-threaded synthesis of minutes at production's shapes).
    let deadline_circuits = args.deadline.map(|n| DeadlineCircuits::build(&args, window_sectors, n));
    let (shape, deadline_shapes) = std::thread::scope(|scope| {
        let others = deadline_circuits
            .as_ref()
            .map(|d| scope.spawn(|| d.shapes(args.record_shape, baseline)));
        let shape = shape::synthesized("partition 0", circuits[0].clone(), args.record_shape, baseline);
        let others = others.map(|h| h.join().unwrap_or_else(|_| fail("the deadline's shapes: a panic")));
        (shape, others)
    });
    let shape::Made {
        params,
        recorded,
        constraints,
        inputs,
        aux,
        shape_time,
        params_time,
    } = shape.made();
    let t = Instant::now();
    if args.write_params.is_some() {
        eprintln!("random parameters made in {:.2} s", secs(params_time));
        write_params(&args, &params, &mut out);
        // With --stream the streams follow, over the same set (one shape synthesis for both).
        if args.streams.is_empty() {
            return;
        }
    }
    let wparams = ok(
        "Winning PoSt stand-in parameters",
        random_parameters(winning_circuit(winning_k, 0), 22),
    );
    let params_time = params_time + t.elapsed();
    eprintln!("random parameters made in {:.2} s", secs(params_time));
    // With --params-on-device each set goes onto the GPUs as soon as it is made, its host copy
    // released before the next is made.
    let keep = |params: Parameters| -> Parameters {
        if !args.params_on_device {
            return params;
        }
        let t = Instant::now();
        let kept = ok("keeping the parameters on the GPU(s)", gpus.keep_on_device(&params));
        drop(params);
        trim_heap();
        eprintln!(
            "parameters uploaded for good in {:.2} s, their host copy released: RSS now {:.2} GiB",
            secs(t.elapsed()),
            gib(rss())
        );
        kept
    };
    let params = keep(params);
    let mut carried: Vec<Arc<CompiledCircuit>> = recorded.into_iter().collect();
    let deadline = deadline_circuits
        .zip(deadline_shapes)
        .map(|(c, shapes)| Deadline::new(&args, c, shapes, &keep, &mut carried, &mut out));

    // The engines' budget (the same for every stream).
    let gpu_workers = gpus.count() * args.gpu_workers;
    let one = partition_bytes(params_hint(&params), 1.0);
    let slack = (args.slack_gib * GIB) as usize;
    let deadline_bytes = deadline
        .as_ref()
        .map_or(0, |d| d.window_params.host_bytes() + d.winning_params.host_bytes());
    let formula =
        params.host_bytes() + wparams.host_bytes() + deadline_bytes + (synthesis_workers + gpu_workers + 2) * one;
    let cap = host_memory().map(|m| ((m as f64 * HOST_SHARE) as usize).saturating_sub(baseline + slack));
    let (budget, capped) = match (args.budget_gib, cap) {
        (Some(g), _) if g > 0.0 => ((g * GIB) as usize, false),
        (_, Some(cap)) if cap < formula => (cap, true),
        _ => (formula, false),
    };
    let described = match &circuits[0] {
        SectorCircuit::Porep(_) => format!(
            "PoRep C2 shape: {} layers, {} challenges per partition, 8-8-0 tree over {} B, {} ({constraints} constraints \
             a partition, {inputs} inputs, {aux} aux; a real 32 GiB partition has {REAL_32GIB_CONSTRAINTS} constraints)",
            args.layers,
            args.challenges,
            args.porep_sector_size(),
            if args.replicate {
                "replicated here"
            } else {
                "random vanilla proofs"
            },
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
        SectorCircuit::Window(_) => format!(
            "Window PoSt shape: FallbackPoStCircuit of {window_sectors} {} sector slots of 10 challenges a partition (production: {}), \
             random vanilla proofs ({constraints} constraints a partition, {inputs} inputs, {aux} aux)",
            args.window_sector_size.name(),
            args.window_sector_size.production_sectors(),
        ),
    };
    out.line(&format!(
        "{described}; domain 2^{}; {pps} partitions a sector; random parameters of that shape (the proofs do not verify); \
         shape's full synthesis{} {:.1} s, parameters made in {:.1} s",
        constraints.next_power_of_two().trailing_zeros(),
        if args.record_shape { " with recording" } else { "" },
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
        generators: &generators,
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
        deadline: deadline.as_ref(),
    };
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
        "(steady state: the partitions proved after the first sector finished, over the time to the last of them, times the partitions a sector; full batches: the largest batch, each from the end of the batch before it; synthesis: mean over the stream's partitions, \
         then over those of the sectors after the first; bound: one partition's proof (EMA) + the stand-in alone; evaluations: \
         this stream's witness proofs with a, b, c evaluated on the device / on the host)",
    );
    if results.iter().any(|r| r.deadline.is_some()) {
        out.line("");
        out.line("### deadline");
        for l in DeadlineResult::header() {
            out.line(l);
        }
        for (i, r) in results.iter().enumerate() {
            if let Some(d) = &r.deadline {
                out.line(&d.row(i, &r.spec.to_string()));
            }
        }
        out.line(
            "(bounds: Window, its partitions × one alone + one of the stream's partitions (its seconds a partition outside \
             the deadline; its proof EMA at submission where too few); Winning, one of the stream's partitions + its own alone; open: from the Window job's submission to the later proof; lost: open less the \
             stream's partitions proved in it at its rate outside it)",
        );
    }
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
