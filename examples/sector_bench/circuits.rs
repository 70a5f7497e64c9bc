//! The partitions' circuits: PoRep C2's `StackedCircuit` from a sector's vanilla proofs
//! (random ones of a size's production shape, or a small replicated sector's: `vanilla`) or a
//! SnapDeals partition of production's shape (`snap`), a wrapper that times each synthesis,
//! the Winning-PoSt stand-in, and the r, s every stream proves with.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blstrs::Scalar;
use cuzk::filecoin::native::porep::stacked_witness_parallel;
use cuzk::testing::Synthetic;
use cuzk::{Circuit, ConstraintSystem, SynthesisError, WitnessCs};
use ff::{Field, PrimeField};
use rand::{Rng, SeedableRng};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::get_base_tree_count;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, PrivateInputs, PublicInputs, StackedCircuit, StackedCompound, StackedDrg, TemporaryAuxCache,
};

use crate::args::Args;
use crate::ok;
use crate::snap::SnapCircuit;
use crate::vanilla::{random_sector, setup, PorepSector, TreeDomain};
use crate::window::PostCircuit;

/// The 32 GiB sector's tree: Poseidon, arity 8-8-0 (filecoin-proofs' `SectorShape32GiB`).
pub(crate) type Tree = filecoin_proofs::SectorShape32GiB;
/// The data tree's hasher (SHA-256).
pub(crate) type Piece = filecoin_proofs::DefaultPieceHasher;
pub(crate) type Porep = StackedCircuit<Tree, Piece>;

/// Filecoin's witness mix for the Winning-PoSt stand-in.
pub(crate) const FILECOIN_BIT_PERCENT: u32 = 98;

/// A sector's partition circuit, of any kind.
#[derive(Clone)]
pub(crate) enum SectorCircuit {
    Porep(Porep),
    Snap(SnapCircuit),
    Window(PostCircuit),
}

impl Circuit<Scalar> for SectorCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            Self::Porep(c) => c.synthesize(cs),
            Self::Snap(c) => c.synthesize(cs),
            Self::Window(c) => c.synthesize(cs),
        }
    }
}

/// A partition's circuit that records how long its synthesis took (full or witness-only:
/// whatever constraint system the engine synthesizes it into).
#[derive(Clone)]
pub(crate) struct Timed {
    pub(crate) circuit: SectorCircuit,
    pub(crate) slot: usize,
    pub(crate) times: Arc<Mutex<Vec<Option<Duration>>>>,
}

impl Circuit<Scalar> for Timed {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let start = Instant::now();
        let r = self.circuit.synthesize(cs);
        self.times.lock().unwrap_or_else(|p| p.into_inner())[self.slot] = Some(start.elapsed());
        r
    }
}

/// A partition's native witness generator (`Partition::with_generator`'s `generate`): PoRep's
/// from its inputs (`filecoin::native::porep`), SnapDeals' from its circuit
/// (`SnapCircuit::generate`), Window PoSt's from its inputs (`filecoin::native::post`).
pub(crate) type Generator = Arc<dyn Fn(&mut WitnessCs, usize) -> cuzk::Result<()> + Send + Sync>;

/// Each partition's C2 circuit (`StackedCompound::circuit`, as filecoin-proofs builds C2's)
/// with its native witness generator (`filecoin::native::porep`, from the same inputs).
pub(crate) fn porep_partitions(sector: PorepSector) -> Vec<(Porep, Generator)> {
    let PorepSector {
        pub_inputs,
        pp,
        partitions,
    } = sector;
    let shared = Arc::new((pub_inputs, pp));
    partitions
        .into_iter()
        .enumerate()
        .map(|(k, proofs)| {
            let (pub_inputs, pp) = &*shared;
            let circuit = ok(
                "StackedCompound::circuit",
                <StackedCompound<Tree, Piece> as CompoundProof<'_, _, _>>::circuit(
                    pub_inputs,
                    (),
                    &proofs,
                    pp,
                    Some(k),
                ),
            );
            let shared = shared.clone();
            let generate: Generator = Arc::new(move |cs: &mut WitnessCs, threads: usize| {
                let (pub_in, pp) = &*shared;
                stacked_witness_parallel::<Tree, Piece>(pub_in, &proofs, pp, Some(k), threads, cs)
            });
            (circuit, generate)
        })
        .collect()
}

/// The PoRep sector `args` asks for: random vanilla proofs of `--sector-size`'s shape
/// (`vanilla::random_sector`), or with `--replicate` those of a sector replicated here.
pub(crate) fn porep_sector(args: &Args, partitions: usize) -> PorepSector {
    let bytes = args.porep_sector_size();
    if args.replicate {
        replicated_sector(args, bytes, partitions)
    } else {
        random_sector(bytes, args.layers, args.challenges, partitions)
    }
}

/// Replicates a `sector_size` sector of random data and returns its public inputs,
/// parameters and partitions' vanilla proofs (storage-proofs-porep's setup, replication and
/// `prove_all_partitions`): the bench's circuits before the real shape (`--replicate`).
pub(crate) fn replicated_sector(args: &Args, sector_size: u64, partitions: usize) -> PorepSector {
    let nodes = (sector_size / 32) as usize;
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

    let pp = ok(
        "PoRep setup",
        StackedDrg::<Tree, Piece>::setup(&setup(nodes, args.layers, args.challenges)),
    );
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
    let pub_inputs = PublicInputs::<TreeDomain, _> {
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
    drop(priv_inputs);
    let _ = stacked::clear_cache_dir(&cache);
    let _ = std::fs::remove_dir_all(&args.scratch);
    PorepSector {
        pub_inputs,
        pp,
        partitions: vanilla,
    }
}

/// `partitions` SnapDeals partition circuits of a `sector_bytes` sector's production shape:
/// partition i is the sector's partition i mod its partition count, its witness fabricated
/// from seed i / that count (`snap`).
pub(crate) fn snap_circuits(sector_bytes: u64, partitions: usize) -> Vec<SnapCircuit> {
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

pub(crate) fn snap_partition_count(sector_bytes: u64) -> usize {
    storage_proofs_update::PublicParams::from_sector_size(sector_bytes).partition_count
}

pub(crate) fn winning_circuit(k: u32, seed: u64) -> Synthetic {
    let mut c = Synthetic::new(k).with_seed(seed);
    c.bit_percent = FILECOIN_BIT_PERCENT;
    c
}

/// r and s of partition slots `0..n` (sector × partitions per sector + partition): the same
/// for a slot in every stream, so every stream's proofs of a sector are the same bytes.
pub(crate) fn randomness(n: usize) -> (Vec<Scalar>, Vec<Scalar>) {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(42);
    (0..n)
        .map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng)))
        .unzip()
}
