//! Build script. The default build needs nothing beyond a C compiler (for blst);
//! the CUDA kernels in `kernels/` are compiled here once the `cuda` feature lands.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}
