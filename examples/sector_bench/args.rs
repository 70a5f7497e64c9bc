//! The command line: `Args` (clap), the proof kind, `--stream` specs and the size parsers.

use std::fmt;
use std::path::PathBuf;

use clap::builder::BoolishValueParser;
use clap::{ArgAction, Parser, ValueEnum};
use cuzk::filecoin::{PRIORITY_SEAL_COMMIT, PRIORITY_SNAP_DEALS, PRIORITY_WINDOW_POST};

use crate::{snap, support, GIB};

/// 32 GiB-shape PoRep C2 or SnapDeals sectors streamed through the engine, with a Winning-PoSt-priority job
/// under that load, and the engine's memory promise checked; one or several streams.
#[derive(Parser)]
#[command(name = "sector_bench")]
pub(crate) struct Args {
    /// The sectors' proof: PoRep C2 (`porep`) or SnapDeals, the empty-sector update (`snap`).
    #[arg(long, value_enum, default_value_t = Kind::Porep)]
    pub(crate) kind: Kind,
    /// The SnapDeals sector's size, whose production shape the partitions have (`2KiB`,
    /// `16KiB`, `512MiB`, `32GiB`, ... or bytes; --kind snap).
    #[arg(long, value_name = "BYTES", default_value = "32GiB", value_parser = parse_snap_sector_size)]
    pub(crate) snap_sector_size: u64,
    /// Window PoSt: the sectors' size, whose TreeR shape the partitions have (`32GiB` or
    /// `64GiB`; --kind window, and --deadline's Window and Winning PoSt partitions).
    #[arg(long, value_name = "SIZE", default_value = "32GiB", value_parser = crate::window::WindowSize::parse)]
    pub(crate) window_sector_size: crate::window::WindowSize,
    /// Window PoSt: sector slots a partition (default: production's, 2349 at 32 GiB and 2300
    /// at 64 GiB; fewer for a quick run; --kind window and --deadline).
    #[arg(long, value_name = "N")]
    pub(crate) window_sectors: Option<usize>,
    /// A proving node's deadline under load (`deadline`): in every stream, when half its
    /// partitions are proved, N Window PoSt partitions (--window-sector-size, --window-sectors
    /// slots) arrive as one job at Window PoSt's priority, then a Winning PoSt partition
    /// (--winning-challenges) at Winning PoSt's; their latencies against their bounds and the
    /// stream's throughput lost. Both sets are made here (shape, random parameters) beside the
    /// stream's and held by its engine under its one budget. --kind porep or snap.
    #[arg(long, value_name = "N", value_parser = support::at_least_one)]
    pub(crate) deadline: Option<usize>,
    /// --deadline: seconds from the Window PoSt job's submission to the Winning PoSt's
    /// (default: one proof of the stream's, its EMA then).
    #[arg(long, value_name = "S", requires = "deadline", value_parser = parse_seconds)]
    pub(crate) deadline_winning_after: Option<f64>,
    /// --deadline: the Winning PoSt partition's challenges, in its one sector slot (production:
    /// 66; fewer for a quick run).
    #[arg(long, value_name = "N", default_value_t = crate::window::WINNING_CHALLENGES, value_parser = support::at_least_one)]
    pub(crate) winning_challenges: usize,
    /// Stacked-DRG layers (storage-proofs-porep accepts 2 or 11; 11 is 32 GiB's; --kind porep).
    #[arg(long, value_name = "2|11", default_value_t = 11, value_parser = parse_layers)]
    pub(crate) layers: usize,
    /// Challenges per partition (18 is 32 GiB's: 176 over 10 partitions, rounded up; --kind
    /// porep).
    #[arg(long, value_name = "N", default_value_t = 18, value_parser = support::at_least_one)]
    pub(crate) challenges: usize,
    /// The PoRep sector's size, whose tree depths the partitions have (`2KiB`, `16KiB`,
    /// `128KiB`, ..., `32GiB`, or bytes): 8 subtrees of 8^k leaves each, k ≥ 1 (2 KiB is the
    /// smallest). Default 32 GiB, production's shape from random vanilla proofs; with
    /// --replicate 2 KiB (at most 1 GiB). 16 KiB is the shape of the bench's rows before the
    /// real shape (112,055,993 constraints at 11 layers and 18 challenges). --kind porep.
    #[arg(long, value_name = "BYTES", value_parser = parse_sector_size)]
    pub(crate) sector_size: Option<u64>,
    /// Build the PoRep partitions from a sector of --sector-size replicated here
    /// (storage-proofs-porep's replication and vanilla proofs: the bench's circuits before the
    /// real shape) instead of random vanilla proofs of its shape. --kind porep.
    #[arg(long)]
    pub(crate) replicate: bool,
    /// Check the two PoRep builders at --sector-size (default 2 KiB; a small shape: it
    /// replicates, synthesizes in full and proves on the CPU), then exit: the replicated
    /// sector's vanilla proofs through both builders give the same a, b, c, aux and the same
    /// proof bytes (same r, s), and a random sector's partition has the replicated one's
    /// compiled fingerprint (the same A, B, C); the native generator's witness equals the
    /// gadgets' for both. Exit 1 on a difference.
    #[arg(long, conflicts_with_all = ["replicate", "shape_only", "count_only", "streams"])]
    pub(crate) check_builders: bool,
    /// A stream of sectors, repeatable (run in order): `native|witness|full[@LIMIT_GIB]:SECTORS`,
    /// e.g. `native:3` (the witness path, each partition's witness by the native generator once
    /// validated), `witness:3` (by the gadgets), `witness@24:2` (CUDA device
    /// memory limit 24 GiB), `full:1`. Replaces --witness-path and --sectors.
    #[arg(long = "stream", value_name = "SPEC", value_parser = parse_stream, conflicts_with_all = ["sectors", "witness_path"])]
    pub(crate) streams: Vec<StreamSpec>,
    /// Sectors streamed (the one stream without --stream).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = support::at_least_one)]
    pub(crate) sectors: usize,
    /// Partitions per sector (default: the proof's, 10 for a 32 GiB C2, the SnapDeals sector
    /// size's partition count, 16 at 32 GiB; past that count a SnapDeals partition index
    /// repeats with another witness).
    #[arg(long, value_name = "N", value_parser = support::at_least_one)]
    pub(crate) partitions_per_sector: Option<usize>,
    /// The engine's memory budget in GiB (default: the parameter sets plus synthesis workers
    /// + GPU workers + 2 partitions, capped at 90% of the host's memory less the constant).
    #[arg(long, value_name = "G")]
    pub(crate) budget_gib: Option<f64>,
    /// The engine's witness path for the one stream without --stream (1: the first partition
    /// records the compiled circuit, the next are synthesized witness-only; 0: every partition
    /// in full).
    #[arg(long, value_name = "0|1", default_value = "1", action = ArgAction::Set, value_parser = BoolishValueParser::new(), hide_possible_values = true)]
    pub(crate) witness_path: bool,
    /// Record the compiled circuit in the shape's full synthesis and give it to every witness
    /// stream (none records in its stream).
    #[arg(long)]
    pub(crate) record_shape: bool,
    /// Count partition 0 (constraints, inputs, aux, domain: nothing stored), time one
    /// witness-only synthesis of it and its native generator (the two witnesses compared value
    /// for value; exit 1 when they differ), then exit: no parameters, no engine.
    #[arg(long)]
    pub(crate) shape_only: bool,
    /// Count partition 0 — constraints, inputs, aux, the A and B densities and the matrices'
    /// non-zero terms, hence the parameters' and the compiled circuit's host bytes — and exit:
    /// nothing synthesized or stored (seconds a million constraints, little memory).
    #[arg(long, conflicts_with = "shape_only")]
    pub(crate) count_only: bool,
    /// Prove on the CPU backend (a smoke test; no GPU needed).
    #[arg(long)]
    pub(crate) cpu: bool,
    /// GPUs (`cuda` build): `all` or a comma-separated list of device numbers.
    #[arg(long, value_name = "all|0,1", default_value = "all")]
    pub(crate) devices: String,
    /// GPU worker threads per device.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = support::at_least_one)]
    pub(crate) gpu_workers: usize,
    /// Synthesis threads (default: the host's cores).
    #[arg(long, value_name = "N", value_parser = support::at_least_one)]
    pub(crate) synthesis_workers: Option<usize>,
    /// EngineConfig::synthesis_bytes_per_constraint (default 0, the engine's).
    #[arg(long, value_name = "B", default_value_t = 0)]
    pub(crate) synthesis_bytes_per_constraint: usize,
    /// The Winning-PoSt stand-in's size: 2^K constraints (default 22; 14 with --cpu).
    #[arg(long, value_name = "K")]
    pub(crate) winning_log_size: Option<u32>,
    /// Prove the first N partitions of the first stream's sector 0 again on the CPU and
    /// compare the bytes.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) compare_cpu: usize,
    /// Keep the sector's parameters on the GPU(s) without their host copy
    /// (`Engine::keep_parameters_on_device`), as a host whose GPU holds them runs: the host
    /// memory is then that of the partitions in flight and the compiled circuit. Needs a
    /// GPU, and refuses a stream under a device memory limit and --compare-cpu (both need the
    /// host copy).
    #[arg(long)]
    pub(crate) params_on_device: bool,
    /// Write the random parameters (after the shape's synthesis) as filecoin-proofs names
    /// the sector size's PoRep C2 file, into DIR (FIL_PROOFS_PARAMETER_CACHE is set to DIR), and
    /// exit (with --stream, the streams follow over the same set): a daemon or `cuzk::filecoin` pointed there loads them as that file (random points:
    /// proofs over them do not verify). For memory measurements at 32 GiB (issue 45: the
    /// daemon's idle RSS with the set loaded). PoRep only.
    #[arg(long, value_name = "DIR")]
    pub(crate) write_params: Option<PathBuf>,
    /// Pace every host->device copy of 1 MiB or more to an emulated link of G GB/s (the
    /// kernels' `CUZK_K_EMULATE_H2D_GBPS`; 25 for PCIe Gen4 x16), one link a GPU shared by its
    /// copies: rows measured so emulate a slower bus on this host, never measure other
    /// hardware. CUDA only; set before any GPU is touched.
    #[arg(long, value_name = "G")]
    pub(crate) emulate_h2d_gbps: Option<f64>,
    /// The most partitions a GPU proves together over a streamed parameter set (the engine's
    /// `stream_batch`; 1: one at a time, as before issue 47's batching).
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub(crate) stream_batch: usize,
    /// What the memory check allows beyond B and the RSS before the parameters, in GiB.
    #[arg(long, value_name = "G", default_value_t = 2.0)]
    pub(crate) slack_gib: f64,
    /// Scratch directory for the replicated sector (emptied first, removed at the end).
    #[arg(long, value_name = "DIR", default_value = "target/sector-bench")]
    pub(crate) scratch: PathBuf,
    /// Append every line to DIR/sector_bench.md and every event to DIR/sector_bench.jsonl as
    /// they happen.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
}

impl Args {
    /// The PoRep sector's size: --sector-size, or 32 GiB (2 KiB with --replicate or
    /// --check-builders).
    pub(crate) fn porep_sector_size(&self) -> u64 {
        self.sector_size.unwrap_or(if self.replicate || self.check_builders {
            2 << 10
        } else {
            32 << 30
        })
    }
}

/// The sectors' proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Kind {
    /// PoRep C2: storage-proofs-porep's `StackedCircuit` from random vanilla proofs of a
    /// sector size's shape (32 GiB's by default), or a small replicated sector's.
    Porep,
    /// SnapDeals: storage-proofs-update's `EmptySectorUpdateCircuit` of a sector size's
    /// production shape, its witness fabricated (`snap`).
    Snap,
    /// Window PoSt: storage-proofs-post's `FallbackPoStCircuit` of 32 GiB sectors from random
    /// vanilla proofs, `--window-sectors` slots a partition (`window`); a "sector" of the
    /// stream is `--partitions-per-sector` partitions (default 1; a deadline's several).
    Window,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Porep => "PoRep C2",
            Self::Snap => "SnapDeals",
            Self::Window => "Window PoSt",
        }
    }

    /// The engine priority its sectors' jobs have, as the Filecoin engine's.
    pub(crate) fn priority(self) -> i32 {
        match self {
            Self::Porep => PRIORITY_SEAL_COMMIT,
            Self::Snap => PRIORITY_SNAP_DEALS,
            Self::Window => PRIORITY_WINDOW_POST,
        }
    }
}

/// One stream of `--stream`: the synthesis path, the device memory limit, the sectors.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StreamSpec {
    pub(crate) witness: bool,
    /// The witness path with native witness generators (`native`).
    pub(crate) native: bool,
    pub(crate) limit_gib: Option<f64>,
    pub(crate) sectors: usize,
}

impl StreamSpec {
    pub(crate) fn limit_bytes(&self) -> Option<usize> {
        self.limit_gib.map(|g| (g * GIB) as usize)
    }

    pub(crate) fn path(&self) -> &'static str {
        match (self.witness, self.native) {
            (true, true) => "native",
            (true, false) => "witness",
            _ => "full",
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
    const USAGE: &str =
        "expected native|witness|full[@LIMIT_GIB]:SECTORS, e.g. native:3, witness:3, witness@24:2, full:1";
    let (head, sectors) = s.rsplit_once(':').ok_or_else(|| format!("{s:?}: {USAGE}"))?;
    let sectors = support::at_least_one(sectors.trim()).map_err(|e| format!("{s:?}: sectors {e}"))?;
    let (path, limit) = match head.split_once('@') {
        Some((p, l)) => (p, Some(l)),
        None => (head, None),
    };
    let (witness, native) = match path.trim() {
        "native" => (true, true),
        "witness" => (true, false),
        "full" => (false, false),
        p => return Err(format!("{s:?}: path {p:?}: {USAGE}")),
    };
    let limit_gib = match limit.map(|l| (l, l.trim().parse::<f64>())) {
        None => None,
        Some((_, Ok(g))) if g.is_finite() && g > 0.0 => Some(g),
        Some((l, _)) => return Err(format!("{s:?}: device memory limit {l:?}: a positive number of GiB")),
    };
    Ok(StreamSpec {
        witness,
        native,
        limit_gib,
        sectors,
    })
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("{s:?}: seconds, a number >= 0")),
    }
}

fn parse_layers(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n @ (2 | 11)) => Ok(n),
        Ok(n) => Err(format!("storage-proofs-porep accepts 2 or 11 layers, not {n}")),
        Err(e) => Err(e.to_string()),
    }
}

fn parse_sector_size(s: &str) -> Result<u64, String> {
    let bytes = support::parse_bytes(s)?;
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
    let bytes = support::parse_bytes(s)?;
    snap::TreeShape::of(bytes)?;
    Ok(bytes)
}
