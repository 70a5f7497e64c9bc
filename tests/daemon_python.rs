//! `cuzk-daemon` driven by a Python `grpcio` client generated from the same `.proto` by
//! `grpcio-tools` (tests/python/daemon_client.py): this test makes the 2 KiB fixtures (sealed
//! sectors, bincode PoSt vanilla proofs, the test parameters), runs the Python client — which
//! starts the daemon as a child on a TCP port and on a Unix socket and sends Curio's shapes,
//! cancels, timeouts, repeated request ids, bad requests, and a load of 8 clients with random
//! cancels and timeouts — then verifies every proof it got back with filecoin-proofs.
//!
//! Needs a Python with `grpcio-tools` (`CUZK_PYTHON`, default `python3`; .ci/run makes a venv):
//!     python3 -m venv target/daemon-py && target/daemon-py/bin/pip install grpcio-tools==1.85.1
//!     CUZK_PYTHON=target/daemon-py/bin/python cargo test --release --features daemon --test daemon_python
//! `CUZK_DAEMON_LOAD` sets the load's proofs per client (default 25; a 2 KiB Winning PoSt takes
//! ~5 s on 2 busy cores, so CI sets fewer).

#![cfg(feature = "daemon")]

#[path = "common/filecoin.rs"]
mod fixtures;

use std::path::{Path, PathBuf};
use std::process::Command;

use cuzk::filecoin::ParamsKind;
use filecoin_proofs_api::post as api_post;
use fixtures::*;

const WINNING_RANDOMNESS: [u8; 32] = [41; 32];
const WINDOW_RANDOMNESS: [u8; 32] = [43; 32];

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// What the Python client sends: Curio's fields, the vanilla proofs in hex.
fn write_fixtures(path: &Path) {
    let (winning, _) = winning_vanilla(&WINNING_RANDOMNESS);
    let (window, _) = window_vanilla(&WINDOW_RANDOMNESS);
    let fixture = serde_json::json!({
        "miner": MINER,
        "winning": {
            "registered_proof": 0, // abi.RegisteredPoStProof_StackedDrgWinning2KiBV1
            "sector_size": 2048,
            "randomness": hex(&WINNING_RANDOMNESS),
            "vanilla": winning.iter().map(|v| hex(v)).collect::<Vec<_>>(),
        },
        "window": {
            "registered_proof": 10, // abi.RegisteredPoStProof_StackedDrgWindow2KiBV1_1
            "sector_size": 2048,
            "randomness": hex(&WINDOW_RANDOMNESS),
            // Two sectors per 2 KiB partition, as Curio splits them.
            "partitions": window.chunks(2).map(|c| c.iter().map(|v| hex(v)).collect::<Vec<_>>()).collect::<Vec<_>>(),
        },
    });
    std::fs::write(path, serde_json::to_vec_pretty(&fixture).unwrap()).unwrap();
}

fn proof_files(manifest: &serde_json::Value, key: &str) -> Vec<String> {
    manifest[key]
        .as_array()
        .unwrap_or_else(|| panic!("manifest.json has no {key}: {manifest}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_python_grpcio_client_gets_proofs_filecoin_proofs_verifies() {
    ensure_params(ParamsKind::PoSt(WINNING));
    ensure_params(ParamsKind::PoSt(WINDOW));
    let dir = scratch("daemon-python");
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let fixture = dir.join("fixtures.json");
    write_fixtures(&fixture);
    let python = std::env::var("CUZK_PYTHON").unwrap_or_else(|_| "python3".into());
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let params = std::env::var("FIL_PROOFS_PARAMETER_CACHE").expect("set by init()");
    let mut cmd = Command::new(&python);
    cmd.arg(repo.join("tests/python/daemon_client.py"))
        .arg("--daemon")
        .arg(env!("CARGO_BIN_EXE_cuzk-daemon"))
        .arg("--proto-root")
        .arg(repo.join("proto"))
        .arg("--fixtures")
        .arg(&fixture)
        .arg("--param-dir")
        .arg(&params)
        .arg("--out")
        .arg(&out);
    if let Ok(n) = std::env::var("CUZK_DAEMON_LOAD") {
        cmd.args(["--load", &n]);
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("running {python} (set CUZK_PYTHON to a Python with grpcio-tools): {e}"));
    assert!(
        status.success(),
        "the Python client's tests failed ({status}); logs in {}",
        out.display()
    );

    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let read = |name: &str| std::fs::read(out.join(name)).unwrap();

    // Winning PoSt: over TCP, over the Unix socket, after a timeout, the idempotent one, after
    // the bad requests, and every completed one of the load.
    let (_, public) = winning_vanilla(&WINNING_RANDOMNESS);
    let winning = [proof_files(&manifest, "winning"), proof_files(&manifest, "load")].concat();
    assert!(winning.len() >= 5, "{manifest}");
    for name in &winning {
        let proof = read(name);
        assert!(
            api_post::verify_winning_post(&WINNING_RANDOMNESS, &proof, &public, prover_id()).unwrap(),
            "{name} does not verify"
        );
    }
    // The verifier tells: under other randomness the same bytes fail.
    let mut other = WINNING_RANDOMNESS;
    other[0] ^= 1;
    assert!(!api_post::verify_winning_post(&other, &read(&winning[0]), &public, prover_id()).unwrap_or(false));

    // Window PoSt: the partitions' proofs merged in index order verify as one Window PoSt.
    let (_, public) = window_vanilla(&WINDOW_RANDOMNESS);
    let windows = manifest["window"].as_array().unwrap();
    assert_eq!(windows.len(), 1, "{manifest}");
    let parts: Vec<_> = windows[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| filecoin_proofs_api::PartitionSnarkProof(read(p.as_str().unwrap())))
        .collect();
    assert_eq!(parts.len(), 2, "three sectors, two partitions");
    let merged = api_post::merge_window_post_partition_proofs(WINDOW, parts).unwrap();
    assert!(api_post::verify_window_post(&WINDOW_RANDOMNESS, &[(WINDOW, &merged)], &public, prover_id()).unwrap());
    eprintln!(
        "python client: {} Winning PoSt proofs and a Window PoSt of 2 partitions verified",
        winning.len()
    );
}
