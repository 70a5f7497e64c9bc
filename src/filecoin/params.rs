//! Finding Filecoin's Groth16 parameters in filecoin-proofs' cache directory and keeping them
//! loaded: one [`Loaded`] per file per process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use filecoin_proofs::{PoRepConfig, PoStConfig, PoStType};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::{parameter_cache_params_path, CacheableParameters};

use crate::error::{Error, Result};
use crate::params::{Parameters, PointCheck};
use crate::proof::PreparedVerifyingKey;

/// Which circuit a parameter file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamsKind {
    /// PoRep commit phase 2 (`stacked-proof-of-replication-…`) of a registered seal proof.
    Seal(filecoin_proofs_api::RegisteredSealProof),
    /// Window or Winning PoSt (`proof-of-spacetime-fallback-…`) of a registered PoSt proof.
    PoSt(filecoin_proofs_api::RegisteredPoStProof),
    /// SnapDeals (`empty-sector-update-…`) of a registered update proof.
    Update(filecoin_proofs_api::RegisteredUpdateProof),
}

/// The path of the `.params` file filecoin-proofs uses for `kind`: in the parameter cache
/// directory (`FIL_PROOFS_PARAMETER_CACHE`, read once per process by filecoin-proofs, else
/// `/var/tmp/filecoin-proof-parameters/`), named `v28-<circuit identifier>.params` with
/// filecoin-proofs' own identifier.
///
/// # Errors
/// [`Error::InvalidArgument`] for a sector size no registered proof names.
pub fn parameter_path(kind: ParamsKind) -> Result<PathBuf> {
    match kind {
        ParamsKind::Seal(p) => seal_path(&p.as_v1_config()),
        ParamsKind::PoSt(p) => post_path(&p.as_v1_config()),
        ParamsKind::Update(p) => update_path(&p.as_v1_config()),
    }
}

pub(crate) fn seal_path(config: &PoRepConfig) -> Result<PathBuf> {
    fn f<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<PathBuf> {
        seal_path_for::<Tree>(config)
    }
    super::with_registered_shape!(u64::from(config.sector_size), f, config)
}

pub(crate) fn seal_path_for<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<PathBuf> {
    use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound};
    type Piece = filecoin_proofs::DefaultPieceHasher;
    let pp = filecoin_proofs::parameters::public_params::<Tree>(config)
        .map_err(|e| super::fil_err("PoRep public parameters", e))?;
    let id =
        <StackedCompound<Tree, Piece> as CacheableParameters<StackedCircuit<Tree, Piece>, _>>::cache_identifier(&pp);
    Ok(parameter_cache_params_path(&id))
}

pub(crate) fn post_path(config: &PoStConfig) -> Result<PathBuf> {
    fn f<Tree: 'static + MerkleTreeTrait>(config: &PoStConfig) -> Result<PathBuf> {
        post_path_for::<Tree>(config)
    }
    super::with_registered_shape!(u64::from(config.sector_size), f, config)
}

pub(crate) fn post_path_for<Tree: 'static + MerkleTreeTrait>(config: &PoStConfig) -> Result<PathBuf> {
    use storage_proofs_post::fallback::{FallbackPoStCircuit, FallbackPoStCompound};
    let pp = match config.typ {
        PoStType::Winning => filecoin_proofs::parameters::winning_post_public_params::<Tree>(config),
        PoStType::Window => filecoin_proofs::parameters::window_post_public_params::<Tree>(config),
    }
    .map_err(|e| super::fil_err("PoSt public parameters", e))?;
    let id = <FallbackPoStCompound<Tree> as CacheableParameters<FallbackPoStCircuit<Tree>, _>>::cache_identifier(&pp);
    Ok(parameter_cache_params_path(&id))
}

pub(crate) fn update_path(config: &PoRepConfig) -> Result<PathBuf> {
    fn f<Tree: 'static + MerkleTreeTrait<Hasher = filecoin_proofs::TreeRHasher>>(
        config: &PoRepConfig,
    ) -> Result<PathBuf> {
        update_path_for::<Tree>(config)
    }
    super::with_registered_shape!(u64::from(config.sector_size), f, config)
}

pub(crate) fn update_path_for<Tree: 'static + MerkleTreeTrait<Hasher = filecoin_proofs::TreeRHasher>>(
    config: &PoRepConfig,
) -> Result<PathBuf> {
    use storage_proofs_update::{EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicParams};
    let pp = PublicParams::from_sector_size(u64::from(config.sector_size));
    let id =
        <EmptySectorUpdateCompound<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, _>>::cache_identifier(
            &pp,
        );
    Ok(parameter_cache_params_path(&id))
}

/// Parameters loaded from one file, with their prepared verifying key.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The file, which keys this module's cache.
    pub(crate) path: PathBuf,
    pub(crate) params: Parameters,
    pub(crate) pvk: PreparedVerifyingKey,
    /// Whether proofs made with them are checked against `pvk` before they are handed out:
    /// always, except for a benchmark's set ([`install_unchecked_parameters`]).
    pub(crate) checked: bool,
}

/// What the cache holds of one file.
#[derive(Default)]
struct Held {
    /// The set with its host copy, which any engine may prove with.
    host: Option<Arc<Loaded>>,
    /// The set kept on an engine's GPUs without its host copy
    /// ([`EngineConfig::params_on_device`](crate::engine::EngineConfig::params_on_device)),
    /// one per engine that keeps it: each is that engine's alone, since no other engine (nor
    /// the CPU) can prove with it.
    on_device: Vec<Arc<Loaded>>,
    /// The ids of every set loaded from the file (engines may hold any of them).
    loaded: Vec<u64>,
}

impl Held {
    /// The set `engine` keeps on its GPUs, when it keeps one. Sets no engine holds any more
    /// (their engine dropped or removed them) are forgotten on the way.
    fn kept_by(&mut self, engine: &crate::engine::Engine) -> Option<Arc<Loaded>> {
        // Only this cache's clone left: no engine, and no job, holds the set any more.
        self.on_device.retain(|l| l.params.host_copy_holders() > 1);
        self.on_device
            .iter()
            .find(|l| engine.kept_on_device(l.params.id()).is_some())
            .cloned()
    }
}

type Slot = Arc<Mutex<Held>>;

fn cache() -> &'static Mutex<HashMap<PathBuf, Slot>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Slot>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn slot(path: &Path) -> Slot {
    cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(path.to_path_buf())
        .or_default()
        .clone()
}

fn lock(slot: &Slot) -> std::sync::MutexGuard<'_, Held> {
    slot.lock().unwrap_or_else(|p| p.into_inner())
}

/// Forgets every parameter set this module loaded (memory is freed once no proof in flight
/// holds them; a GPU-resident copy stays until the backend evicts it, see
/// [`Prover::evict_resident`](crate::Prover::evict_resident), and a set an engine keeps on its
/// GPUs until [`Engine::remove_parameters`](crate::engine::Engine::remove_parameters)).
pub fn clear_parameter_cache() {
    cache().lock().unwrap_or_else(|p| p.into_inner()).clear();
}

/// Loads the parameters of `kind` now, as the first proof that needs them would, and keeps
/// them. Returns the time it took (zero when they were loaded already).
///
/// # Errors
/// As a proof's: [`Error::FilecoinParams`] naming a missing or bad file.
pub fn preload_parameters(kind: ParamsKind) -> Result<Duration> {
    load(&parameter_path(kind)?, None).map(|(_, took)| took)
}

/// The host bytes of the parameters of `kind` when they are loaded, `None` when not.
///
/// # Errors
/// [`Error::InvalidArgument`] for a sector size no registered proof names.
pub fn parameters_loaded(kind: ParamsKind) -> Result<Option<usize>> {
    Ok(loaded_parameters(kind)?.map(|p| p.host_bytes()))
}

/// The parameters of `kind` when they are loaded (a handle sharing the loaded set: its
/// [`Parameters::id`](crate::Parameters::id) names it in [`EngineStats::params`](crate::engine::EngineStats::params)),
/// `None` when not: the set the process-wide engine keeps on its GPUs when it keeps one, else
/// the set with its host copy, else a set another engine keeps on its GPUs (without its host
/// copy: only that engine proves with it).
///
/// # Errors
/// [`Error::InvalidArgument`] for a sector size no registered proof names.
pub fn loaded_parameters(kind: ParamsKind) -> Result<Option<crate::Parameters>> {
    let path = parameter_path(kind)?;
    let slot = cache().lock().unwrap_or_else(|p| p.into_inner()).get(&path).cloned();
    let Some(slot) = slot else { return Ok(None) };
    let mut held = lock(&slot);
    let process_wide = super::engine_started().then(super::engine).and_then(Result::ok);
    let loaded = process_wide
        .and_then(|e| held.kept_by(e))
        .or_else(|| held.host.clone())
        .or_else(|| held.on_device.first().cloned());
    Ok(loaded.map(|l| l.params.clone()))
}

/// Forgets the parameters of `kind` (as [`clear_parameter_cache`] does all of them) and, with
/// `engine`, drops every set of the file that engine holds: its host copy, and the set it keeps
/// on its GPUs, which leaves them now or, while proofs of the engine use it, when the last of
/// them ends ([`Engine::remove_parameters_when_idle`](crate::engine::Engine::remove_parameters_when_idle)).
/// Sets other engines keep on their GPUs stay theirs. Returns the bytes forgotten when
/// anything was loaded: host bytes of the host copies, device bytes of kept sets.
///
/// # Errors
/// [`Error::InvalidArgument`] for a sector size no registered proof names.
pub fn evict_parameters(kind: ParamsKind, engine: Option<&crate::engine::Engine>) -> Result<Option<usize>> {
    let path = parameter_path(kind)?;
    let slot = cache().lock().unwrap_or_else(|p| p.into_inner()).get(&path).cloned();
    let Some(slot) = slot else { return Ok(None) };
    let mut held = lock(&slot);
    let host = held.host.take();
    let mut freed = host.as_ref().map(|h| h.params.host_bytes());
    let Some(engine) = engine else { return Ok(freed) };
    if let Some(kept) = held.kept_by(engine) {
        held.on_device.retain(|l| !Arc::ptr_eq(l, &kept));
    }
    for &id in &held.loaded {
        let Some(params) = engine.held_parameters(id) else {
            continue;
        };
        engine.remove_parameters_when_idle(&params);
        let bytes = if !params.has_host_copy() {
            params.device_bytes()
        } else if host.as_ref().is_some_and(|h| h.params.id() == id) {
            0 // counted above
        } else {
            params.host_bytes()
        };
        freed = Some(freed.unwrap_or(0) + bytes);
    }
    Ok(freed)
}

/// **Benchmarks only.** Holds `params` as the parameters of `kind` in this process, as if
/// loaded from its file (which need not exist), in place of the host copy loaded before (a set
/// an engine already keeps on its GPUs stays that engine's until evicted), and marks them so
/// that **the proofs made with them are handed out unchecked**: not verified against their
/// verifying key, not retried. This is what a benchmark at production's shapes needs where the
/// real files cannot be had (e.g. `examples/daemon_bench.rs`: random parameters
/// from `cuzk::testing::random_parameters`, which have no trapdoor behind them, and random
/// vanilla proofs, which do not satisfy the circuits — no proof of theirs verifies). Everything
/// else about a proof is as with a real set: the engine, its budget, `params_on_device`, the
/// daemon. [`clear_parameter_cache`] or [`evict_parameters`] forgets them; the next proof of
/// `kind` then loads the real file, checked. Logged at warn.
///
/// # Errors
/// [`Error::InvalidArgument`] for a sector size no registered proof names.
pub fn install_unchecked_parameters(kind: ParamsKind, params: Parameters) -> Result<()> {
    let path = parameter_path(kind)?;
    let pvk = PreparedVerifyingKey::new(params.vk());
    let loaded = Arc::new(Loaded {
        path: path.clone(),
        params,
        pvk,
        checked: false,
    });
    log::warn!(
        "filecoin: parameters {} installed for {kind:?} UNCHECKED (benchmarks only): proofs made with them are not verified",
        loaded.params.id()
    );
    let slot = slot(&path);
    let mut held = lock(&slot);
    held.loaded.push(loaded.params.id());
    held.host = Some(loaded);
    Ok(())
}

const HOW_TO_GET: &str = "Filecoin parameter files come from the network's trusted setup: fetch them \
     (e.g. `curio fetch-params <sector size>` or `lotus fetch-params <sector size>`) into the directory \
     FIL_PROOFS_PARAMETER_CACHE names (default /var/tmp/filecoin-proof-parameters/); cuzk never \
     generates them. A truncated file (an interrupted download) must be deleted and fetched again";

/// The parameters in `path` for a proof on `engine` (`None`: the process-wide engine, when it
/// has started): the set that engine keeps on its GPUs when it keeps one, else the set with
/// its host copy, loaded on first use and kept for the life of the process (concurrent
/// callers of one path wait for one load). Returns the time spent loading (zero when they
/// were already loaded).
pub(crate) fn load(path: &Path, engine: Option<&crate::engine::Engine>) -> Result<(Arc<Loaded>, Duration)> {
    let engine = engine.or_else(|| super::engine_started().then(super::engine).and_then(Result::ok));
    let slot = slot(path);
    let mut held = lock(&slot);
    if let Some(kept) = engine.and_then(|e| held.kept_by(e)) {
        return Ok((kept, Duration::ZERO));
    }
    if let Some(loaded) = held.host.as_ref() {
        return Ok((loaded.clone(), Duration::ZERO));
    }
    let start = Instant::now();
    let wrap = |source: Error| Error::FilecoinParams {
        path: path.to_path_buf(),
        source: Box::new(source),
        help: HOW_TO_GET,
    };
    let params = Parameters::load(path, PointCheck::OnCurve).map_err(wrap)?;
    let pvk = PreparedVerifyingKey::new(params.vk());
    let loaded = Arc::new(Loaded {
        path: path.to_path_buf(),
        params,
        pvk,
        checked: true,
    });
    held.loaded.push(loaded.params.id());
    held.host = Some(loaded.clone());
    Ok((loaded, start.elapsed()))
}

/// The (engine, set) pairs whose engine refused to keep the set on its devices (not tried
/// again).
fn refused() -> &'static Mutex<Vec<(usize, u64)>> {
    static REFUSED: Mutex<Vec<(usize, u64)>> = Mutex::new(Vec::new());
    &REFUSED
}

/// `loaded` as `engine` wants it held ([`EngineConfig::params_on_device`](crate::engine::EngineConfig::params_on_device)):
/// with that off, or for a set without its host copy already (the engine's own: [`load`]
/// hands no engine another's), as it is; else kept on the engine's GPUs
/// ([`Engine::keep_parameters_on_device`](crate::engine::Engine::keep_parameters_on_device)),
/// and the set without its host copy, which is returned, is held in this module's cache as
/// that engine's alone. The host copy leaves the cache (and memory, once the jobs that hold it
/// end): another engine proving the kind loads the file again. A refusal (the CPU, a GPU that
/// streams the set) is logged at warn once per set and leaves it as it was.
pub(crate) fn placed(loaded: Arc<Loaded>, engine: &crate::engine::Engine) -> Arc<Loaded> {
    let id = loaded.params.id();
    let tried = (engine as *const crate::engine::Engine as usize, id);
    if !engine.params_on_device()
        || !loaded.params.has_host_copy()
        || refused().lock().unwrap_or_else(|p| p.into_inner()).contains(&tried)
    {
        return loaded;
    }
    // The slot's lock, held through the upload, makes concurrent first proofs upload once.
    let slot = slot(&loaded.path);
    let mut held = lock(&slot);
    if let Some(kept) = held.kept_by(engine) {
        return kept; // an earlier job of this engine kept it meanwhile
    }
    match engine.keep_parameters_on_device(&loaded.params) {
        Ok(params) => {
            let kept = Arc::new(Loaded {
                path: loaded.path.clone(),
                params,
                pvk: loaded.pvk.clone(),
                checked: loaded.checked,
            });
            log::info!(
                "filecoin: parameters {id} kept on the GPU(s); their host copy ({} MiB) is released once the proofs holding it end",
                loaded.params.host_bytes() >> 20
            );
            held.on_device.push(kept.clone());
            if held.host.as_ref().is_some_and(|h| h.params.id() == id) {
                held.host = None;
            }
            kept
        }
        Err(e) => {
            log::warn!("filecoin: parameters {id} stay in host memory: {e}");
            refused().lock().unwrap_or_else(|p| p.into_inner()).push(tried);
            loaded
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_named_with_how_to_get_it() {
        let path = std::env::temp_dir().join("cuzk-no-such-dir/v28-nothing.params");
        let err = load(&path, None).unwrap_err();
        assert!(matches!(err, Error::FilecoinParams { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("v28-nothing.params"), "{msg}");
        assert!(msg.contains("FIL_PROOFS_PARAMETER_CACHE"), "{msg}");
        assert!(
            matches!(&err, Error::FilecoinParams { source, .. } if matches!(**source, Error::ParamsIo { .. })),
            "{err:?}"
        );
    }

    #[test]
    fn a_truncated_file_is_named_and_not_cached() {
        let dir = std::env::temp_dir().join(format!("cuzk-params-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("v28-truncated.params");
        // A whole verifying key, then nothing: the file ends where the H query should start.
        use group::prime::PrimeCurveAffine;
        let (g1, g2) = (blstrs::G1Affine::generator(), blstrs::G2Affine::generator());
        let vk = crate::params::VerifyingKey {
            alpha_g1: g1,
            beta_g1: g1,
            beta_g2: g2,
            gamma_g2: g2,
            delta_g1: g1,
            delta_g2: g2,
            ic: vec![g1],
        };
        let mut bytes = Vec::new();
        vk.write(&mut bytes).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let err = load(&path, None).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("v28-truncated.params") && msg.contains("truncated"),
            "{msg}"
        );
        assert!(
            matches!(&err, Error::FilecoinParams { source, .. } if matches!(**source, Error::ParamsTruncated { .. })),
            "{err:?}"
        );
        // Not cached as a failure: the same call fails the same way again.
        assert!(load(&path, None).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
