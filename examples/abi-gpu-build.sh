#!/usr/bin/env bash
# Builds the C ABI checks against a `cuda` build of cuzk, to carry to a GPU machine that has
# no Rust, Go or CUDA toolkit: .gpu/abi/ gets the C toy example, the Go test binary and the
# Go toy command (all statically linked with libcuzk.a, stripped) and run.sh to run them.
#
# From the repository root:
#   source <(../shared/tools/cuda-toolkit.sh --env)   # nvcc for the cuda build
#   bash examples/abi-gpu-build.sh                    # -> .gpu/abi/ (git-ignored)
#   ... copy the repository's .gpu/abi/ to the GPU machine, then there, from the repo root:
#   .gpu/abi/run.sh
#
# --no-cuda builds the same without CUDA (to try this script on a machine without a
# toolkit; run.sh then expects the CPU backend). CUZK_CUDA_ARCHS defaults to 90 (the H200)
# here to keep the build and the binaries small. Needs cargo, cc, go (golang-go), strip.
set -euo pipefail
cd "$(dirname "$0")/.."
cuda=1
if [ "${1:-}" = "--no-cuda" ]; then cuda=0; fi

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$(pwd)/$target" ;; esac
lib="$target/release"
out="$(pwd)/.gpu/abi"
rm -rf "$out"
mkdir -p "$out"

stubs=""
features=""
go_tags=""
expect_backend="cpu"
if [ "$cuda" = 1 ]; then
  command -v nvcc >/dev/null || {
    echo "nvcc not found: run \`source <(../shared/tools/cuda-toolkit.sh --env)\` first (or pass --no-cuda)" >&2
    exit 1
  }
  export CUZK_CUDA_ARCHS="${CUZK_CUDA_ARCHS:-90}"
  echo "== cargo build --release --features cuda --lib (CUZK_CUDA_ARCHS=$CUZK_CUDA_ARCHS)"
  features="--features cuda"
  cargo build --release $features --lib
  # libcuda at link time: the driver's where there is one, else the toolkit's stub (the GPU
  # machine's real libcuda.so.1 is used at run time).
  cuda_root="${CUDA_PATH:-$(dirname "$(dirname "$(command -v nvcc)")")}"
  for d in "$cuda_root/lib64/stubs" "$cuda_root/lib/stubs" "$cuda_root/targets/x86_64-linux/lib/stubs"; do
    if [ -e "$d/libcuda.so" ]; then stubs="-L$d"; break; fi
  done
  go_tags="-tags cuda"
  expect_backend="cuda"
else
  echo "== cargo build --release --lib (--no-cuda)"
  cargo build --release --lib
fi

# What the static library needs from the system (for a cuda build: -lcuda -lstdc++ ...), as
# rustc reports it.
native="$(cargo rustc --release $features --lib --crate-type staticlib -- --print native-static-libs 2>&1 |
  sed -n 's/.*native-static-libs: //p' | tail -1)"
[ -n "$native" ] || { echo "rustc did not report the static library's native libraries" >&2; exit 1; }
echo "   native libraries: $native"

echo "== C toy example"
cc -O2 -Wall -Wextra -Werror -std=c11 -Iinclude examples/c/toy.c "$lib/libcuzk.a" $stubs $native -o "$out/toy"
strip "$out/toy"

echo "== Go test binary and toy command"
(
  cd examples/go
  export CGO_LDFLAGS="-L$lib $stubs"
  go vet $go_tags ./...
  go test -c $go_tags -ldflags="-s -w" -o "$out/cuzk-go.test" .
  go build $go_tags -ldflags="-s -w" -o "$out/go-toy" ./cmd/toy
)

rev="$(git rev-parse --short HEAD 2>/dev/null || echo "an unknown commit")"
git diff --quiet HEAD -- src include examples build.rs Cargo.toml 2>/dev/null || rev="$rev with local changes"
cat >"$out/run.sh" <<RUN
#!/usr/bin/env bash
# Runs the C ABI checks built by examples/abi-gpu-build.sh (at $rev,
# $( [ "$cuda" = 1 ] && echo "cuda build, CUZK_CUDA_ARCHS=$CUZK_CUDA_ARCHS" || echo "no cuda")). No toolchain needed. Expects the $expect_backend backend.
# Linked statically with libcuzk.a and: $native
set -euo pipefail
cd "\$(dirname "\$0")"
command -v nvidia-smi >/dev/null && nvidia-smi -L || true
echo "== C toy example"
./toy | tee toy.log
grep -q "^backend: $expect_backend\$" toy.log || { echo "expected the $expect_backend backend" >&2; exit 1; }
echo "== Go tests (GODEBUG=cgocheck=1)"
GODEBUG=cgocheck=1 ./cuzk-go.test -test.v -test.count=1 | tee go-test.log
grep -q "backend $expect_backend\$" go-test.log || { echo "expected the $expect_backend backend" >&2; exit 1; }
echo "== Go tests (GODEBUG=cgocheck=2)"
GODEBUG=cgocheck=2 ./cuzk-go.test -test.count=1
echo "== Go toy command"
./go-toy
echo "C ABI on the $expect_backend backend: OK"
RUN
chmod +x "$out/run.sh"
du -sh "$out"/*
echo "built $out; run it with .gpu/abi/run.sh"
