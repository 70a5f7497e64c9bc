#!/usr/bin/env bash
# Builds cuzk's C library for linking from C, C++ and Go (cgo):
#
#   scripts/build-lib.sh [--features LIST] [--out DIR] [--no-go-pc]
#
# writes
#   DIR/lib/libcuzk.a            the static library; its only global symbols are the C ABI's
#                                functions (every cuzk_* function include/cuzk.h declares)
#   DIR/include/cuzk.h           the header
#   DIR/lib/pkgconfig/cuzk.pc    pkg-config: -I, -L, -lcuzk and the system libraries this
#                                build needs (for `cuda`: -lcuda -lstdc++, plus the toolkit's
#                                stub directory when this machine has no NVIDIA driver)
#   examples/go/cuzk.pc          the same file for the Go package's `#cgo pkg-config:` line,
#   examples/go/cuzk_link.h      and a header naming this build and the archive's SHA-256,
#                                which the package includes: Go's build cache keys on the
#                                package's .h files but not on pkg-config's output or on the
#                                archive, so without it a `go build` after a rebuild of the
#                                library (other features, other code) reuses the old link
#                                (both git-ignored; --no-go-pc skips them). The package's
#                                header is its committed copy examples/go/cuzk.h, which must
#                                equal include/cuzk.h (checked here and by tests/header.rs)
# DIR defaults to <target>/cuzk (<target>: $CARGO_TARGET_DIR or target). LIST is passed to
# cargo (`cuda`, `filecoin`, `cuda,filecoin`); `cuda` needs nvcc (see build.rs).
#
# Why a second step after cargo: a Rust staticlib is an archive of every object of the
# crate and its dependencies, with all their global symbols: Rust's std (rust_eh_personality,
# the allocator shims), compiler_builtins, blst, the CUDA runtime and sppark's host code. A
# program that also links another Rust static library — filecoin-ffi's libfilcrypto.a in
# Curio — gets either `multiple definition of rust_eh_personality` (when the two were built
# by different rustc versions) or, worse, one library silently running the other's copy of
# blst or std. So the archive is turned into one relocatable object whose non-ABI symbols
# are all local:
#   1. `ld -r` links the objects the ABI needs (-u for each ABI function) into one object,
#      resolving every reference between them once, here. --force-group-allocation dissolves
#      the COMDAT groups (C++ inline functions, DW.ref.rust_eh_personality): a group left in
#      place would be merged with another library's group of the same name at the final link
#      and could send cuzk's code, or its unwinding, into the other library's copy.
#   2. `objcopy --keep-global-symbols` makes every defined symbol but the ABI's local
#      (undefined ones — libc, libgcc_s, libstdc++, libcuda — stay as they are), and drops
#      the .llvmbc/.llvmcmd sections: Rust's std objects embed their LLVM bitcode there,
#      `ld -r` concatenates those blobs into something no LLVM reader parses, and binutils'
#      nm/ar crash on it when an LLVM linker plugin is installed. The final link discards
#      both sections anyway.
#   3. `ar` packs the object; a check then lists the archive's defined global symbols and
#      fails unless they are exactly the header's functions.
# libcuzk.so needs none of this: its version script (build.rs) exports only cuzk_*.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

features=""
out=""
go_pc=1
while [ $# -gt 0 ]; do
  case "$1" in
    --features) features="${2:?--features needs a list}"; shift 2 ;;
    --features=*) features="${1#--features=}"; shift ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    --no-go-pc) go_pc=0; shift ;;
    -h | --help) sed -n '2,/^# Why a second step/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-lib.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for tool in cargo ld objcopy ar readelf; do
  command -v "$tool" >/dev/null || { echo "build-lib.sh: '$tool' not found (binutils, cargo)" >&2; exit 1; }
done

# The Go package compiles against its own copy of the header: a stale copy would call this
# library with another ABI's signatures.
if [ "$go_pc" = 1 ] && ! cmp -s include/cuzk.h examples/go/cuzk.h; then
  echo "build-lib.sh: examples/go/cuzk.h differs from include/cuzk.h: run \`CUZK_BLESS=1 cargo test --test header\`" >&2
  exit 1
fi

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
out="${out:-$target/cuzk}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$out/.work"
rm -rf "$work"
mkdir -p "$work"

feature_args=()
[ -n "$features" ] && feature_args=(--features "$features")
echo "== cargo: the static library${features:+ (features: $features)}"
# `cargo rustc` builds the staticlib and reports the system libraries it needs.
cargo rustc --release --lib --crate-type staticlib "${feature_args[@]}" -- --print native-static-libs \
  2>"$work/cargo.log" || { cat "$work/cargo.log" >&2; exit 1; }
native="$(sed -n 's/.*native-static-libs: //p' "$work/cargo.log" | tail -1)"
[ -n "$native" ] || { cat "$work/cargo.log" >&2; echo "build-lib.sh: rustc reported no native libraries" >&2; exit 1; }
# Only now the previous output goes: a failed build leaves the last good library (and the
# cuzk.pc files naming it) in place.
rm -rf "$out/lib" "$out/include"
mkdir -p "$out/lib/pkgconfig" "$out/include"
rust_archive="$target/release/libcuzk.a"

# The C ABI: the functions the header declares.
grep -oE '\bcuzk_[a-z0-9_]+[[:space:]]*\(' include/cuzk.h | tr -d ' (' | sort -u >"$work/abi"
[ -s "$work/abi" ] || { echo "build-lib.sh: no cuzk_* function found in include/cuzk.h" >&2; exit 1; }

defined_globals() { # the defined global and weak symbols of an object or archive, sorted
  readelf -Ws "$1" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" { print $8 }' | sed 's/@.*//' | sort -u
}
defined_globals "$rust_archive" >"$work/rust-globals"
missing="$(comm -23 "$work/abi" "$work/rust-globals")"
[ -z "$missing" ] || { echo "build-lib.sh: the header declares functions the library lacks: $missing" >&2; exit 1; }

echo "== ld -r + objcopy: one object, only the $(wc -l <"$work/abi") ABI functions global"
ld -r --force-group-allocation $(sed 's/^/-u /' "$work/abi") -o "$work/cuzk.o" "$rust_archive"
objcopy --remove-section=.llvmbc --remove-section=.llvmcmd --keep-global-symbols="$work/abi" \
  "$work/cuzk.o" "$work/libcuzk.o"
ar rcsD "$out/lib/libcuzk.a" "$work/libcuzk.o"
defined_globals "$out/lib/libcuzk.a" >"$work/globals"
if ! diff -u "$work/abi" "$work/globals" >"$work/globals.diff"; then
  cat "$work/globals.diff" >&2
  echo "build-lib.sh: $out/lib/libcuzk.a's global symbols differ from the header's functions (above)" >&2
  exit 1
fi
cp include/cuzk.h "$out/include/"

# libcuda at link time: the driver's where there is one, else the toolkit's stub (the real
# libcuda.so.1 is found at run time).
libs="$native"
if [[ " $native " == *" -lcuda "* ]] && ! ldconfig -p 2>/dev/null | grep 'libcuda\.so\b' >/dev/null; then
  nvcc="${NVCC:-$(command -v nvcc || true)}"
  root="${CUDA_PATH:-${nvcc:+$(dirname "$(dirname "$nvcc")")}}"
  for d in "$root/lib64/stubs" "$root/lib/stubs" "$root/targets/x86_64-linux/lib/stubs"; do
    if [ -e "$d/libcuda.so" ]; then libs="-L$d $libs"; break; fi
  done
fi
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
write_pc() {
  cat >"$1" <<PC
# Written by scripts/build-lib.sh${features:+ --features $features}; cuzk $version.
prefix=$out
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: cuzk
Description: Groth16 proving on BLS12-381, fast on NVIDIA GPUs${features:+ (features: $features)}
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lcuzk $libs
PC
}
write_pc "$out/lib/pkgconfig/cuzk.pc"
if [ "$go_pc" = 1 ]; then
  write_pc "$repo/examples/go/cuzk.pc"
  digest="$(sha256sum "$out/lib/libcuzk.a" | cut -d' ' -f1)"
  cat >"$repo/examples/go/cuzk_link.h" <<H
/* Written by scripts/build-lib.sh: which library cuzk.pc links. The Go package includes
 * this file so that Go's build cache, which keys on it, relinks when the library changes. */
#define CUZK_LINK_FEATURES "${features:-default}"
#define CUZK_LINK_PREFIX "$out"
#define CUZK_LINK_ARCHIVE_SHA256 "$digest"
H
fi
rm -rf "$work"
size="$(du -h "$out/lib/libcuzk.a" | cut -f1)"
echo "built $out/lib/libcuzk.a ($size; globals: the header's functions only), $out/lib/pkgconfig/cuzk.pc"
echo "   link flags: $(sed -n 's/^Libs: //p' "$out/lib/pkgconfig/cuzk.pc" | sed "s|\${libdir}|$out/lib|")"
