//! `include/cuzk.h` is what cbindgen (the pinned version) makes of `src/ffi/`, and
//! `examples/go/cuzk.h` is the same file: the Go package carries its own copy so that it builds
//! from wherever a consumer puts it (a `replace` to a checkout, a `vendor/` directory), with no
//! path back into the repository.
//!
//! Fails when either committed header is stale; `CUZK_BLESS=1 cargo test --test header`
//! rewrites both.

use std::path::Path;

/// The committed copies of the header, relative to the repository root.
const COPIES: [&str; 2] = ["include/cuzk.h", "examples/go/cuzk.h"];

fn generated_header(root: &Path) -> String {
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml parses");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/ffi/mod.rs"))
        .generate()
        .expect("cbindgen generates the header from src/ffi/");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    String::from_utf8(generated).expect("the header is UTF-8")
}

#[test]
fn committed_headers_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let generated = generated_header(root);
    let bless = std::env::var_os("CUZK_BLESS").is_some();
    let mut stale = Vec::new();
    for copy in COPIES {
        let path = root.join(copy);
        if bless {
            std::fs::write(&path, &generated).unwrap_or_else(|e| panic!("write {copy}: {e}"));
            continue;
        }
        if std::fs::read_to_string(&path).unwrap_or_default() != generated {
            stale.push(copy);
        }
    }
    assert!(
        stale.is_empty(),
        "stale header(s): {}: regenerate with `CUZK_BLESS=1 cargo test --test header` and commit them",
        stale.join(", ")
    );
    // The header states the ABI version the library reports.
    assert!(generated.contains(&format!("#define CUZK_ABI_VERSION {}", cuzk::ffi::CUZK_ABI_VERSION)));
}
