//! `include/cuzk.h` is what cbindgen (the pinned version) makes of `src/ffi/`.
//!
//! Fails when the committed header is stale; `CUZK_BLESS=1 cargo test --test header`
//! rewrites it.

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml parses");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/ffi/mod.rs"))
        .generate()
        .expect("cbindgen generates the header from src/ffi/");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).expect("the header is UTF-8");
    let path = root.join("include/cuzk.h");
    if std::env::var_os("CUZK_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/cuzk.h");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/cuzk.h is stale: regenerate it with `CUZK_BLESS=1 cargo test --test header` and commit it"
    );
    // The header states the ABI version the library reports.
    assert!(generated.contains(&format!("#define CUZK_ABI_VERSION {}", cuzk::ffi::CUZK_ABI_VERSION)));
}
