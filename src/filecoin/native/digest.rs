//! What a kept validation of cuzk's own native witness generators is tied to: a digest of
//! what decides their witnesses besides the compiled circuit — cuzk's version, the generators'
//! sources and the resolved versions of the crates whose gadgets they mirror. `build.rs`
//! computes it at build time into `CUZK_GENERATOR_DIGEST` (this file is included there: std
//! only); the crate's test recomputes it from the sources to check that the build's is theirs.
//! Nothing of the executable goes in: a rebuild that changes none of these keeps the
//! validations, one that changes any validates again.

use std::io;
use std::path::{Path, PathBuf};

/// The crates whose gadgets a generator mirrors value for value (their resolved versions go
/// into the digest; `gadgets/NOTES.md` names the mirrored ones).
pub const MIRRORED: &[&str] = &[
    "bellpepper",
    "bellpepper-core",
    "bellperson",
    "filecoin-hashers",
    "filecoin-proofs",
    "merkletree",
    "neptune",
    "storage-proofs-core",
    "storage-proofs-porep",
    "storage-proofs-post",
    "storage-proofs-update",
];

/// The generators' sources, relative to the package root: every `.rs` file under it. (Not the
/// Filecoin families' files that hand a generator its inputs: a change there that changed a
/// witness would fail verification, which forgets the kept validations; watching them would
/// rerun the build script, and its CUDA part, on every edit of theirs.)
pub const SOURCE_DIR: &str = "src/filecoin/native";

/// The generators' source files under `root` (the package root), sorted, as paths relative to
/// it.
pub fn sources(root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut dirs = vec![PathBuf::from(SOURCE_DIR)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(root.join(&dir))? {
            let entry = entry?;
            let rel = dir.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                dirs.push(rel);
            } else if rel.extension().is_some_and(|e| e == "rs") {
                found.push(rel);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The lock file the build resolved its dependencies from: the nearest `Cargo.lock` at or
/// above `root` (the package's, or its workspace's).
pub fn lock_file(root: &Path) -> Option<PathBuf> {
    root.ancestors().map(|d| d.join("Cargo.lock")).find(|p| p.is_file())
}

/// `name version` of every package of `lock` (a `Cargo.lock`'s text) named in [`MIRRORED`],
/// sorted.
pub fn mirrored_versions(lock: &str) -> Vec<String> {
    let unquote = |line: &str, key: &str| -> Option<String> {
        let value = line.strip_prefix(key)?.trim().strip_prefix('=')?.trim();
        Some(value.trim_matches('"').to_string())
    };
    let mut found = Vec::new();
    let mut name: Option<String> = None;
    for line in lock.lines().map(str::trim) {
        if line == "[[package]]" {
            name = None;
        } else if let Some(n) = unquote(line, "name") {
            name = Some(n);
        } else if let (Some(n), Some(v)) = (&name, unquote(line, "version")) {
            if MIRRORED.contains(&n.as_str()) {
                found.push(format!("{n} {v}"));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The digest (32 hex digits: FNV-1a, 128 bits) of cuzk's `version`, the `sources` (relative
/// path and bytes each) and the `versions` lines (or, without a lock file, the manifest that
/// pins them).
pub fn digest(version: &str, sources: &[(PathBuf, Vec<u8>)], versions: &[String]) -> String {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    let mut h = OFFSET;
    let mut feed = |bytes: &[u8]| {
        // Each part's length first: no two lists of parts run together the same way.
        for &b in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            h ^= u128::from(b);
            h = h.wrapping_mul(PRIME);
        }
    };
    feed(version.as_bytes());
    for (path, bytes) in sources {
        feed(path.to_string_lossy().as_bytes());
        feed(bytes);
    }
    for line in versions {
        feed(line.as_bytes());
    }
    format!("{h:032x}")
}

/// The digest of the package at `root` as built now: `version`, its generators' sources, and
/// the mirrored crates' versions from its lock file (else its `Cargo.toml`, which pins them).
/// Also returns every file read, for the build to watch.
pub fn of_package(root: &Path, version: &str) -> io::Result<(String, Vec<PathBuf>)> {
    let mut read = Vec::new();
    let mut files = Vec::new();
    for rel in sources(root)? {
        let path = root.join(&rel);
        files.push((rel, std::fs::read(&path)?));
        read.push(path);
    }
    let versions = match lock_file(root) {
        Some(lock) => {
            let text = std::fs::read_to_string(&lock)?;
            read.push(lock);
            mirrored_versions(&text)
        }
        None => {
            let manifest = root.join("Cargo.toml");
            let text = std::fs::read_to_string(&manifest)?;
            read.push(manifest);
            vec![text]
        }
    };
    Ok((digest(version, &files, &versions), read))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The build's digest is that of the generators' sources and the mirrored crates'
    /// versions as they are now (build.rs watches them), and each of those changes it.
    #[test]
    fn the_builds_digest_is_that_of_the_generators_sources_and_mirrored_versions() {
        // Where the tests run away from their build (a GPU machine runs the packed binaries
        // from the root of a checkout of the same commit), the sources are the current
        // directory's.
        let built = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = if built.join(SOURCE_DIR).is_dir() {
            built
        } else {
            Path::new(".")
        };
        let (now, read) = of_package(root, env!("CARGO_PKG_VERSION")).unwrap();
        assert_eq!(now, env!("CUZK_GENERATOR_DIGEST"), "the build's digest is the sources'");
        assert!(read.iter().any(|p| p.ends_with("native/gadgets/sha256.rs")), "{read:?}");
        assert!(read.iter().any(|p| p.ends_with("native/porep.rs")), "{read:?}");

        let files = vec![(PathBuf::from("src/filecoin/native/post.rs"), b"fn a() {}".to_vec())];
        let versions = vec!["neptune 11.0.0".to_string(), "storage-proofs-core 19.1.0".to_string()];
        let base = digest("0.1.0", &files, &versions);
        assert_eq!(base.len(), 32);
        assert_eq!(base, digest("0.1.0", &files, &versions), "deterministic");
        let edited = vec![(files[0].0.clone(), b"fn b() {}".to_vec())];
        assert_ne!(base, digest("0.1.0", &edited, &versions), "a source edited");
        let bumped = vec![versions[0].clone(), "storage-proofs-core 19.2.0".to_string()];
        assert_ne!(base, digest("0.1.0", &files, &bumped), "a mirrored crate bumped");
        assert_ne!(base, digest("0.2.0", &files, &versions), "another cuzk version");
    }

    /// Only the mirrored crates' versions are read from a lock file, each once.
    #[test]
    fn the_mirrored_versions_are_read_from_the_lock_file() {
        let lock = r#"
version = 4

[[package]]
name = "neptune"
version = "11.0.0"
source = "registry+https://github.com/rust-lang/crates.io-index"

[[package]]
name = "rayon"
version = "1.10.0"

[[package]]
name = "bellpepper-core"
version = "0.2.1"

[[package]]
name = "bellpepper-core"
version = "0.4.0"
"#;
        assert_eq!(
            mirrored_versions(lock),
            vec!["bellpepper-core 0.2.1", "bellpepper-core 0.4.0", "neptune 11.0.0"]
        );
    }
}
