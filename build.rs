//! Build script. The default build needs nothing beyond a C compiler (for blst). With the
//! `cuda` feature it compiles `kernels/*.cu` with nvcc into a static library linked into the
//! crate, against sppark's field headers (`DEP_SPPARK_ROOT`) and blst's (`DEP_BLST_C_SRC`).
//!
//! Environment:
//! - `NVCC`: the nvcc to use (default: `nvcc` on PATH, then `$CUDA_PATH/bin/nvcc`);
//! - `CUZK_CUDA_ARCHS`: comma- or space-separated SM versions (default `80,86,89,90,100,120`); SASS is
//!   built for each and PTX for the last, so newer GPUs can JIT.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    cdylib_exports_only_the_c_abi();
    #[cfg(feature = "cuda")]
    cuda::build();
    #[cfg(feature = "daemon")]
    daemon_proto();
    #[cfg(feature = "filecoin")]
    native_generator_digest();
}

/// The `filecoin` feature: the digest kept validations of cuzk's own native witness generators
/// are tied to (`CUZK_GENERATOR_DIGEST`): cuzk's version, the generators' sources and the
/// mirrored crates' resolved versions (`src/filecoin/native/digest.rs`), watched for changes.
#[cfg(feature = "filecoin")]
#[path = "src/filecoin/native/digest.rs"]
mod generator_digest;

#[cfg(feature = "filecoin")]
fn native_generator_digest() {
    let root = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let (digest, read) = generator_digest::of_package(&root, &version)
        .unwrap_or_else(|e| panic!("the native generators' digest: reading their sources: {e}"));
    println!(
        "cargo:rerun-if-changed={}",
        root.join(generator_digest::SOURCE_DIR).display()
    );
    for path in read {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rustc-env=CUZK_GENERATOR_DIGEST={digest}");
}

/// The `daemon` feature: Curio's `cuzk.v1` protocol compiled from proto/ by protox (pure Rust,
/// no system protoc) into tonic's server and client code in OUT_DIR.
#[cfg(feature = "daemon")]
fn daemon_proto() {
    let proto = "proto/cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={proto}");
    let files = protox::compile([proto], ["proto"]).unwrap_or_else(|e| panic!("{proto}: {e}"));
    tonic_prost_build::configure()
        .compile_fds(files)
        .unwrap_or_else(|e| panic!("{proto}: {e}"));
}

/// `libcuzk.so` exports only the C ABI (`cuzk_*`): a version script hides everything else
/// (Rust's and the C dependencies' symbols), so a program that also links another Rust
/// library, or blst, sees no clashes. `nm -D` checks it in CI.
fn cdylib_exports_only_the_c_abi() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let script = out.join("cuzk-exports.map");
    std::fs::write(&script, "{\n  global: cuzk_*;\n  local: *;\n};\n").expect("write the version script");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", script.display());
}

#[cfg(feature = "cuda")]
mod cuda {
    use std::env;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    fn fail(msg: &str) -> ! {
        // A panic in a build script is how cargo reports a build error; this one says what to do.
        panic!("\n\ncuzk (feature `cuda`): {msg}\n\n")
    }

    fn find_nvcc() -> PathBuf {
        println!("cargo:rerun-if-env-changed=NVCC");
        println!("cargo:rerun-if-env-changed=CUDA_PATH");
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(n) = env::var_os("NVCC") {
            candidates.push(n.into());
        }
        candidates.push("nvcc".into());
        if let Some(p) = env::var_os("CUDA_PATH") {
            candidates.push(Path::new(&p).join("bin/nvcc"));
        }
        candidates.push("/usr/local/cuda/bin/nvcc".into());
        for c in &candidates {
            if let Ok(out) = Command::new(c).arg("--version").output() {
                if out.status.success() {
                    return c.clone();
                }
            }
        }
        fail(&format!(
            "nvcc not found (tried {candidates:?}). Install a CUDA toolkit (≥ 12) and put its bin/ on \
             PATH, or set NVCC (or CUDA_PATH) to it; docs/DEVELOPING.md says how. Without CUDA, \
             build without `--features cuda`."
        ))
    }

    pub fn build() {
        let nvcc = find_nvcc();
        let sppark =
            env::var("DEP_SPPARK_ROOT").unwrap_or_else(|_| fail("DEP_SPPARK_ROOT is not set (sppark dependency)"));
        let blst_src =
            env::var("DEP_BLST_C_SRC").unwrap_or_else(|_| fail("DEP_BLST_C_SRC is not set (blst dependency)"));
        // blst.h, for the host-side last step of an MSM (kernels/host_final.cu).
        let blst_bindings =
            env::var("DEP_BLST_BINDINGS").unwrap_or_else(|_| fail("DEP_BLST_BINDINGS is not set (blst dependency)"));
        println!("cargo:rerun-if-env-changed=CUZK_CUDA_ARCHS");
        let archs: Vec<String> = env::var("CUZK_CUDA_ARCHS")
            .unwrap_or_else(|_| "80,86,89,90,100,120".into())
            .split([',', ' '])
            .filter(|s| !s.is_empty())
            .map(|s| s.trim_start_matches("sm_").to_string())
            .collect();
        if archs.is_empty() || archs.iter().any(|a| !a.chars().all(|c| c.is_ascii_digit())) {
            fail(&format!(
                "CUZK_CUDA_ARCHS must list SM versions like 80,90; found {archs:?}"
            ));
        }

        println!("cargo:rustc-env=CUZK_BUILT_ARCHS={}", archs.join(","));
        let kernels = Path::new("kernels");
        let mut sources = Vec::new();
        for entry in std::fs::read_dir(kernels).unwrap_or_else(|e| fail(&format!("cannot read kernels/: {e}"))) {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                // Header folders (kernels/msm/): cargo watches a directory's files recursively.
                if path.file_name().and_then(|n| n.to_str()) != Some("test") {
                    println!("cargo:rerun-if-changed={}", path.display());
                }
                continue;
            }
            match path.extension().and_then(|e| e.to_str()) {
                Some("cu") => sources.push(path.clone()),
                Some("cuh") | Some("h") => {}
                _ => continue,
            }
            println!("cargo:rerun-if-changed={}", path.display());
        }
        sources.sort();

        // cc finds nvcc on PATH: put ours first.
        if let Some(dir) = nvcc.parent().filter(|d| !d.as_os_str().is_empty()) {
            let path = env::var_os("PATH").unwrap_or_default();
            let mut dirs = vec![dir.to_path_buf()];
            dirs.extend(env::split_paths(&path));
            env::set_var("PATH", env::join_paths(dirs).expect("PATH entries"));
        }
        // One cc build per .cu file: each is then compiled whole-program (cc switches to
        // relocatable device code, and its duplicate-symbol rules, when a build has several
        // CUDA files). The builds run side by side; nvcc splits each over its architectures.
        let base = {
            let mut b = cc::Build::new();
            b.cuda(true)
                .cudart("static")
                .flag("-std=c++17")
                .flag("-O3")
                .flag("--expt-relaxed-constexpr")
                .flag("-t0")
                .flag("-Xcompiler")
                .flag("-fPIC")
                .include(&sppark)
                .include(&blst_src)
                .include(&blst_bindings)
                .include(kernels)
                .warnings(false)
                // Never device debug (-G): cc derives it from the profile's debug info.
                .debug(false);
            if env::var_os("CARGO_FEATURE_FAULT_INJECTION").is_some() {
                b.define("CUZK_FAULT_INJECTION", None);
            }
            for a in &archs {
                b.flag(format!("-gencode=arch=compute_{a},code=sm_{a}"));
            }
            let last = archs.last().expect("non-empty");
            b.flag(format!("-gencode=arch=compute_{last},code=compute_{last}"));
            b
        };
        std::thread::scope(|scope| {
            for src in &sources {
                let mut b = base.clone();
                scope.spawn(move || {
                    let stem = src
                        .file_stem()
                        .and_then(|s| s.to_str())
                        .expect("utf-8 kernel file name");
                    b.file(src);
                    if let Err(e) = b.try_compile(&format!("cuzk_kernels_{stem}")) {
                        fail(&format!("nvcc failed on {}: {e}", src.display()));
                    }
                });
            }
        });

        // cudart_static needs these on Linux.
        if let Some(root) = nvcc
            .canonicalize()
            .ok()
            .and_then(|p| p.parent()?.parent().map(Path::to_path_buf))
        {
            for lib in ["lib64", "lib"] {
                let dir = root.join(lib);
                if dir.exists() {
                    println!("cargo:rustc-link-search=native={}", dir.display());
                }
            }
        }
        println!("cargo:rustc-link-lib=static=cudart_static");
        // The kernels save and restore the caller's context through the driver API.
        println!("cargo:rustc-link-lib=dylib=cuda");
        println!("cargo:rustc-link-lib=dylib=stdc++");
        println!("cargo:rustc-link-lib=dylib=dl");
        println!("cargo:rustc-link-lib=dylib=rt");
        println!("cargo:rustc-link-lib=dylib=pthread");
    }
}
