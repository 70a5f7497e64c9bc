//! Filecoin fixtures shared by the tests that prove Filecoin proofs (tests/filecoin.rs,
//! tests/daemon.rs): the test parameter cache (filecoin-proofs' own generator, test parameters
//! only), sealed 2 KiB sectors, their C1 outputs and PoSt and SnapDeals vanilla proofs.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once, OnceLock};

use cuzk::filecoin::{self, ParamsKind, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use filecoin_proofs_api::seal::{self as api_seal, SealPreCommitPhase2Output};
use filecoin_proofs_api::{post as api_post, update as api_update};
use filecoin_proofs_api::{PieceInfo, PrivateReplicaInfo, PublicReplicaInfo, SectorId, UnpaddedBytesAmount};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::compound_proof::CompoundProof;

pub const SEAL: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
pub const WINNING: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWinning2KiBV1;
pub const WINDOW: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
pub const UPDATE: RegisteredUpdateProof = RegisteredUpdateProof::StackedDrg2KiBV1;
pub const MINER: u64 = 1000;

pub type Tree = filecoin_proofs::SectorShape2KiB;

/// Where the tests keep parameters, sectors and the Go fixture: `CUZK_FILECOIN_TMP`, else
/// cargo's `<target>/tmp` (a path baked in at build time: set the variable where the binary
/// runs elsewhere, e.g. on the GPU machine).
pub fn tmp_root() -> PathBuf {
    std::env::var_os("CUZK_FILECOIN_TMP")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")))
}

/// Points filecoin-proofs at the test parameter cache before anything reads its settings.
pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").is_none() {
            let dir = tmp_root().join("filecoin-proof-parameters");
            std::fs::create_dir_all(&dir).expect("create the parameter cache");
            std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
        }
    });
}

/// A fresh directory under [`tmp_root`] named `what` and the process id (emptied first), and
/// an engine maker over it: the witness path on, native generators `native`, compiled circuits
/// kept in the directory (a second engine made is a restart).
pub fn engines_over(what: &str, native: bool) -> (PathBuf, impl Fn() -> cuzk::engine::Engine) {
    let dir = tmp_root().join(format!("{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let kept = dir.clone();
    let make = move || {
        cuzk::engine::Engine::new(cuzk::engine::EngineConfig {
            witness_path: true,
            native_witness: native,
            compiled_dir: Some(kept.clone()),
            ..cuzk::engine::EngineConfig::default()
        })
        .expect("an engine")
    };
    (dir, make)
}

pub fn prover_id() -> [u8; 32] {
    filecoin::prover_id_from_miner_id(MINER)
}

/// Held while parameters are generated (one at a time) or their absence is relied on.
pub static PARAMS_LOCK: Mutex<()> = Mutex::new(());

/// Makes sure the parameters of `kind` exist in the cache, generating them with
/// filecoin-proofs' own generator (test parameters) when they do not. One at a time. Their
/// verifying key is written here too, under the lock: filecoin-proofs writes it at the first
/// verification with `create_new`, so two tests verifying at once on a fresh cache would race
/// ("File exists", seen on the GPU machine).
pub fn ensure_params(kind: ParamsKind) -> PathBuf {
    init();
    let _guard = PARAMS_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let path = filecoin::parameter_path(kind).expect("parameter path");
    // filecoin-proofs writes the file in place: one without our marker may be the remains of
    // an interrupted generation, so it is made again.
    let done = path.with_extension("params.complete");
    if path.exists() && done.exists() {
        return path;
    }
    let _ = std::fs::remove_file(&path);
    let start = std::time::Instant::now();
    let mut rng = rand::rngs::OsRng;
    match kind {
        ParamsKind::Seal(p) => {
            let pp = filecoin_proofs::parameters::public_params::<Tree>(&p.as_v1_config()).unwrap();
            <storage_proofs_porep::stacked::StackedCompound<Tree, filecoin_proofs::DefaultPieceHasher> as CompoundProof<
                '_,
                _,
                storage_proofs_porep::stacked::StackedCircuit<Tree, filecoin_proofs::DefaultPieceHasher>,
            >>::groth_params(Some(&mut rng), &pp)
            .unwrap();
            <storage_proofs_porep::stacked::StackedCompound<Tree, filecoin_proofs::DefaultPieceHasher> as CompoundProof<
                '_,
                _,
                storage_proofs_porep::stacked::StackedCircuit<Tree, filecoin_proofs::DefaultPieceHasher>,
            >>::verifying_key(Some(&mut rng), &pp)
            .unwrap();
        }
        ParamsKind::PoSt(p) => {
            let config = p.as_v1_config();
            let pp = match config.typ {
                filecoin_proofs::PoStType::Winning => {
                    filecoin_proofs::parameters::winning_post_public_params::<Tree>(&config).unwrap()
                }
                filecoin_proofs::PoStType::Window => {
                    filecoin_proofs::parameters::window_post_public_params::<Tree>(&config).unwrap()
                }
            };
            <storage_proofs_post::fallback::FallbackPoStCompound<Tree> as CompoundProof<
                '_,
                _,
                storage_proofs_post::fallback::FallbackPoStCircuit<Tree>,
            >>::groth_params(Some(&mut rng), &pp)
            .unwrap();
            <storage_proofs_post::fallback::FallbackPoStCompound<Tree> as CompoundProof<
                '_,
                _,
                storage_proofs_post::fallback::FallbackPoStCircuit<Tree>,
            >>::verifying_key(Some(&mut rng), &pp)
            .unwrap();
        }
        ParamsKind::Update(p) => {
            let pp = storage_proofs_update::PublicParams::from_sector_size(u64::from(p.sector_size()));
            <storage_proofs_update::EmptySectorUpdateCompound<Tree> as CompoundProof<
                '_,
                _,
                storage_proofs_update::EmptySectorUpdateCircuit<Tree>,
            >>::groth_params(Some(&mut rng), &pp)
            .unwrap();
            <storage_proofs_update::EmptySectorUpdateCompound<Tree> as CompoundProof<
                '_,
                _,
                storage_proofs_update::EmptySectorUpdateCircuit<Tree>,
            >>::verifying_key(Some(&mut rng), &pp)
            .unwrap();
        }
    }
    eprintln!(
        "generated test parameters {} in {:.1?}",
        path.display(),
        start.elapsed()
    );
    assert!(path.exists(), "filecoin-proofs wrote {}", path.display());
    std::fs::write(&done, b"").unwrap();
    path
}

/// A sealed 2 KiB sector (pre-commit 1 and 2 done by filecoin-proofs).
pub struct Sealed {
    pub dir: PathBuf,
    pub cache: PathBuf,
    pub replica: PathBuf,
    pub sector_id: u64,
    pub ticket: [u8; 32],
    pub pieces: Vec<PieceInfo>,
    pub pc2: SealPreCommitPhase2Output,
}

impl Sealed {
    pub fn comm_r(&self) -> [u8; 32] {
        self.pc2.comm_r
    }

    pub fn private(&self, post: RegisteredPoStProof) -> PrivateReplicaInfo {
        PrivateReplicaInfo::new(post, self.comm_r(), self.cache.clone(), self.replica.clone())
    }
}

pub fn scratch(name: &str) -> PathBuf {
    let dir = tmp_root().join(format!("filecoin-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes one piece of `data` (2032 bytes, a full 2 KiB sector) into a staged sector file.
pub fn stage(dir: &Path, name: &str, data: &[u8]) -> (PathBuf, PieceInfo) {
    let staged = dir.join(name);
    let mut target = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)
        .unwrap();
    let size = UnpaddedBytesAmount(data.len() as u64);
    let (piece, _) = api_seal::add_piece(SEAL, Cursor::new(data), &mut target, size, &[]).unwrap();
    (staged, piece)
}

pub fn seal(name: &str, sector_id: u64, rng: &mut ChaCha20Rng) -> Sealed {
    init();
    let dir = scratch(name);
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let replica = dir.join("sealed");
    File::create(&replica).unwrap();
    let data: Vec<u8> = (0..2032).map(|_| rng.gen()).collect();
    let (staged, piece) = stage(&dir, "staged", &data);
    let ticket: [u8; 32] = rng.gen();
    let pieces = vec![piece];
    let pc1 = api_seal::seal_pre_commit_phase1(
        SEAL,
        &cache,
        &staged,
        &replica,
        prover_id(),
        SectorId::from(sector_id),
        ticket,
        &pieces,
    )
    .unwrap();
    let pc2 = api_seal::seal_pre_commit_phase2(pc1, &cache, &replica).unwrap();
    Sealed {
        dir,
        cache,
        replica,
        sector_id,
        ticket,
        pieces,
        pc2,
    }
}

/// The sectors shared by the tests (sealing a 2 KiB sector takes well under a second).
pub fn sectors() -> &'static [Sealed] {
    static SECTORS: OnceLock<Vec<Sealed>> = OnceLock::new();
    SECTORS.get_or_init(|| {
        let mut rng = ChaCha20Rng::from_seed([7; 32]);
        (0..3).map(|i| seal(&format!("sector{i}"), 100 + i, &mut rng)).collect()
    })
}

/// filecoin-ffi's commit phase 1 output (JSON) for sector 0 with `seed`.
pub fn c1_json(s: &Sealed, seed: [u8; 32]) -> Vec<u8> {
    let pc2 = SealPreCommitPhase2Output {
        registered_proof: s.pc2.registered_proof,
        comm_r: s.pc2.comm_r,
        comm_d: s.pc2.comm_d,
    };
    let c1 = api_seal::seal_commit_phase1(
        &s.cache,
        &s.replica,
        prover_id(),
        SectorId::from(s.sector_id),
        s.ticket,
        seed,
        pc2,
        &s.pieces,
    )
    .unwrap();
    serde_json::to_vec(&c1).unwrap()
}

/// What filecoin-proofs builds a C2's partition circuits from, decoded from a C1 output's
/// JSON as `seal_commit_phase2` decodes it: the public inputs, the public parameters and each
/// partition's vanilla proofs.
pub struct C2Inputs {
    pub pub_in: storage_proofs_porep::stacked::PublicInputs<
        <<Tree as storage_proofs_core::merkle::MerkleTreeTrait>::Hasher as filecoin_hashers::Hasher>::Domain,
        filecoin_proofs::DefaultPieceDomain,
    >,
    pub pub_params: storage_proofs_porep::stacked::PublicParams<Tree>,
    pub vanilla: Vec<Vec<filecoin_proofs::VanillaSealProof<Tree>>>,
}

pub type C2Circuit = storage_proofs_porep::stacked::StackedCircuit<Tree, filecoin_proofs::DefaultPieceHasher>;

impl C2Inputs {
    pub fn of_json(json: &[u8]) -> Self {
        use storage_proofs_porep::stacked;
        let c1: api_seal::SealCommitPhase1Output = serde_json::from_slice(json).unwrap();
        let vanilla: Vec<Vec<filecoin_proofs::VanillaSealProof<Tree>>> = c1.vanilla_proofs.try_into().unwrap();
        let replica_id: blstrs::Scalar = c1.replica_id.into();
        let pub_in = stacked::PublicInputs {
            replica_id: replica_id.into(),
            tau: Some(stacked::Tau {
                comm_d: <filecoin_proofs::DefaultPieceDomain as filecoin_hashers::Domain>::try_from_bytes(&c1.comm_d)
                    .unwrap(),
                comm_r: filecoin_proofs::as_safe_commitment(&c1.comm_r, "comm_r").unwrap(),
            }),
            k: None,
            seed: Some(c1.seed),
        };
        let pub_params = filecoin_proofs::parameters::public_params::<Tree>(&SEAL.as_v1_config()).unwrap();
        Self {
            pub_in,
            pub_params,
            vanilla,
        }
    }

    /// Partition `k`'s circuit, as `StackedCompound::circuit` builds it.
    pub fn circuit(&self, k: usize) -> C2Circuit {
        <storage_proofs_porep::stacked::StackedCompound<Tree, filecoin_proofs::DefaultPieceHasher> as CompoundProof<
            '_,
            _,
            _,
        >>::circuit(&self.pub_in, (), &self.vanilla[k], &self.pub_params, Some(k))
        .unwrap()
    }
}

/// filecoin-proofs' SnapDeals circuits for these vanilla partition proofs, one per partition,
/// built as its `generate_empty_sector_update_proof_with_vanilla` builds them.
pub fn update_circuits(
    vanilla: &[Vec<u8>],
    [comm_r_old, comm_r_new, comm_d_new]: [[u8; 32]; 3],
) -> Vec<storage_proofs_update::EmptySectorUpdateCircuit<Tree>> {
    use filecoin_hashers::Domain;
    use storage_proofs_update::{
        EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof, PublicInputs,
        SetupParams,
    };
    type R = <filecoin_proofs::TreeRHasher as filecoin_hashers::Hasher>::Domain;
    let config = filecoin_proofs::SectorUpdateConfig::from_porep_config(&UPDATE.as_v1_config());
    let partitions = usize::from(config.update_partitions);
    let public_inputs = PublicInputs {
        k: partitions,
        comm_r_old: R::try_from_bytes(&comm_r_old).unwrap(),
        comm_d_new: filecoin_proofs::DefaultPieceDomain::try_from_bytes(&comm_d_new).unwrap(),
        comm_r_new: R::try_from_bytes(&comm_r_new).unwrap(),
        h: config.h,
    };
    let setup = storage_proofs_core::compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: u64::from(config.sector_size),
        },
        partitions: Some(partitions),
        priority: false,
    };
    let pub_params = <EmptySectorUpdateCompound<Tree> as CompoundProof<
        '_,
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::setup(&setup)
    .unwrap();
    assert_eq!(vanilla.len(), partitions);
    vanilla
        .iter()
        .enumerate()
        .map(|(k, bytes)| {
            let proof: PartitionProof<Tree> = bincode::deserialize(bytes).unwrap();
            <EmptySectorUpdateCompound<Tree> as CompoundProof<'_, _, _>>::circuit(
                &public_inputs,
                (),
                &proof,
                &pub_params.vanilla_params,
                Some(k),
            )
            .unwrap()
        })
        .collect()
}

pub fn verify_seal(s: &Sealed, comm_r: [u8; 32], seed: [u8; 32], proof: &[u8]) -> bool {
    api_seal::verify_seal(
        SEAL,
        comm_r,
        s.pc2.comm_d,
        prover_id(),
        SectorId::from(s.sector_id),
        s.ticket,
        seed,
        proof,
    )
    .unwrap_or(false)
}

pub fn winning_vanilla(randomness: &[u8; 32]) -> (Vec<Vec<u8>>, BTreeMap<SectorId, PublicReplicaInfo>) {
    let s = &sectors()[0];
    let id = SectorId::from(s.sector_id);
    let challenged = api_post::generate_winning_post_sector_challenge(WINNING, randomness, 1, prover_id()).unwrap();
    assert_eq!(challenged, vec![0], "one sector: it is the challenged one");
    let challenges = api_post::generate_fallback_sector_challenges(WINNING, randomness, &[id], prover_id()).unwrap();
    let vanilla = api_post::generate_single_vanilla_proof(WINNING, id, &s.private(WINNING), &challenges[&id]).unwrap();
    let mut public = BTreeMap::new();
    public.insert(id, PublicReplicaInfo::new(WINNING, s.comm_r()));
    (vec![vanilla], public)
}

/// The Window PoSt inputs of the three shared sectors: their vanilla proofs (in sector order)
/// and public replica infos.
pub fn window_vanilla(randomness: &[u8; 32]) -> (Vec<Vec<u8>>, BTreeMap<SectorId, PublicReplicaInfo>) {
    let ids: Vec<SectorId> = sectors().iter().map(|s| SectorId::from(s.sector_id)).collect();
    let challenges = api_post::generate_fallback_sector_challenges(WINDOW, randomness, &ids, prover_id()).unwrap();
    let mut vanilla = Vec::new();
    let mut public = BTreeMap::new();
    for s in sectors() {
        let id = SectorId::from(s.sector_id);
        vanilla
            .push(api_post::generate_single_vanilla_proof(WINDOW, id, &s.private(WINDOW), &challenges[&id]).unwrap());
        public.insert(id, PublicReplicaInfo::new(WINDOW, s.comm_r()));
    }
    (vanilla, public)
}

/// `key` updated with 2032 bytes of new data (a new replica under `key.dir/name`), and the
/// vanilla partition proofs of the update, with the commitments: CommR old, CommR new, CommD
/// new.
pub fn update_vanilla(key: &Sealed, name: &str) -> (Vec<Vec<u8>>, [[u8; 32]; 3]) {
    let dir = key.dir.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let new_cache = dir.join("cache");
    std::fs::create_dir_all(&new_cache).unwrap();
    let new_replica = dir.join("updated");
    let f = File::create(&new_replica).unwrap();
    f.set_len(std::fs::metadata(&key.replica).unwrap().len()).unwrap();
    drop(f);
    let mut rng = ChaCha20Rng::from_seed([21; 32]);
    let data: Vec<u8> = (0..2032).map(|_| rng.gen()).collect();
    let (staged, piece) = stage(&dir, "staged", &data);
    let encoded = api_update::empty_sector_update_encode_into(
        UPDATE,
        &new_replica,
        &new_cache,
        &key.replica,
        &key.cache,
        &staged,
        &[piece],
    )
    .unwrap();
    let comm_r_old = key.comm_r();
    let vanilla = api_update::generate_partition_proofs(
        UPDATE,
        comm_r_old,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &key.replica,
        &key.cache,
        &new_replica,
        &new_cache,
    )
    .unwrap();
    let vanilla = vanilla.into_iter().map(|p| p.0).collect();
    (vanilla, [comm_r_old, encoded.comm_r_new, encoded.comm_d_new])
}
