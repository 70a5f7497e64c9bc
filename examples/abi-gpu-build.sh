#!/usr/bin/env bash
# Builds the C ABI checks against a `cuda` build of cuzk, to carry to a GPU machine that has
# no Rust, Go or CUDA toolkit: .gpu/abi/ gets the C toy example, the Go test binaries and the
# program of a Go module outside the repository that requires the package and proves the toy
# circuit (tests/link/go_consumer.sh: a replace, then vendor/; no CGO_LDFLAGS, no build tags;
# it stands in for cmd/toy, which would add the same 11 MB and keep .gpu/ over the 64 MiB the
# GPU machine takes), all statically linked with scripts/build-lib.sh's libcuzk.a, stripped,
# and run.sh to run them.
# It leaves examples/go/cuzk.pc pointing at that library.
#
# From the repository root:
#   source <(../shared/tools/cuda-toolkit.sh --env)   # nvcc for the cuda build
#   bash examples/abi-gpu-build.sh                    # -> .gpu/abi/ (git-ignored)
#   ... copy the repository's .gpu/abi/ to the GPU machine, then there, from the repo root:
#   .gpu/abi/run.sh
#
# --no-cuda builds the same without CUDA (to try this script on a machine without a
# toolkit; run.sh then expects the CPU backend). CUZK_CUDA_ARCHS defaults to 90 (the H200)
# here to keep the build and the binaries small. Needs cargo, cc, go, pkg-config, strip.
set -euo pipefail
cd "$(dirname "$0")/.."
cuda=1
if [ "${1:-}" = "--no-cuda" ]; then cuda=0; fi

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$(pwd)/$target" ;; esac
out="$(pwd)/.gpu/abi"
rm -rf "$out"
mkdir -p "$out"

features=""
expect_backend="cpu"
if [ "$cuda" = 1 ]; then
  command -v nvcc >/dev/null || {
    echo "nvcc not found: run \`source <(../shared/tools/cuda-toolkit.sh --env)\` first (or pass --no-cuda)" >&2
    exit 1
  }
  export CUZK_CUDA_ARCHS="${CUZK_CUDA_ARCHS:-90}"
  features="--features cuda"
  expect_backend="cuda"
fi
# The library as C and Go callers get it (only cuzk_* global; cuzk.pc with the build's link
# flags, for a cuda build -lcuda -lstdc++ and the toolkit's stub libcuda where there is no
# driver: the GPU machine's real libcuda.so.1 is used at run time).
echo "== scripts/build-lib.sh $features${CUZK_CUDA_ARCHS:+ (CUZK_CUDA_ARCHS=$CUZK_CUDA_ARCHS)}"
bash scripts/build-lib.sh $features --out "$target/cuzk-abi"
pc="$target/cuzk-abi/lib/pkgconfig/cuzk.pc"
native="$(pkg-config --libs "$pc")"

echo "== C toy example"
cc -O2 -Wall -Wextra -Werror -std=c11 examples/c/toy.c $(pkg-config --cflags "$pc") $native -o "$out/toy"
cc -O2 -Wall -Wextra -Werror -std=c11 tests/link/abi_edges.c $(pkg-config --cflags "$pc") $native -o "$out/abi_edges"
strip "$out/toy" "$out/abi_edges"

echo "== Go test binaries"
(
  cd examples/go
  go vet ./...
  go test -c -ldflags="-s -w" -o "$out/cuzk-go.test" .
  GOEXPERIMENT=cgocheck2 go test -c -ldflags="-s -w" -o "$out/cuzk-go-cgocheck2.test" .
)
echo "== a Go module outside the repository on the package (tests/link/go_consumer.sh)"
WORK="$target/abi-go-consumer" bash tests/link/go_consumer.sh --build-only --bin "$out/go-consumer"
strip "$out/go-consumer"

rev="$(git rev-parse --short HEAD 2>/dev/null || echo "an unknown commit")"
git diff --quiet HEAD -- src include examples build.rs Cargo.toml 2>/dev/null || rev="$rev with local changes"
cat >"$out/run.sh" <<RUN
#!/usr/bin/env bash
# Runs the C ABI checks built by examples/abi-gpu-build.sh (at $rev,
# $( [ "$cuda" = 1 ] && echo "cuda build, CUZK_CUDA_ARCHS=$CUZK_CUDA_ARCHS" || echo "no cuda")). No toolchain needed. Expects the $expect_backend backend.
# Linked statically with scripts/build-lib.sh's libcuzk.a and: $native
set -euo pipefail
cd "\$(dirname "\$0")"
command -v nvidia-smi >/dev/null && nvidia-smi -L || true
echo "== C toy example"
./toy | tee toy.log
grep -q "^backend: $expect_backend\$" toy.log || { echo "expected the $expect_backend backend" >&2; exit 1; }
echo "== the ABI's edge promises (tests/link/abi_edges.c)"
edges="\$(mktemp -d)"
./abi_edges "\$edges"
rm -rf "\$edges"
echo "== Go tests (GODEBUG=cgocheck=1)"
GODEBUG=cgocheck=1 ./cuzk-go.test -test.v -test.count=1 | tee go-test.log
grep -q "backend $expect_backend\$" go-test.log || { echo "expected the $expect_backend backend" >&2; exit 1; }
echo "== Go tests (built with GOEXPERIMENT=cgocheck2)"
./cuzk-go-cgocheck2.test -test.count=1
echo "== a Go module outside the repository (replace + vendor/, no CGO_LDFLAGS, no tags)"
./go-consumer $( [ "$cuda" = 1 ] && echo cuda || echo default) | tee go-consumer.log
grep -q "on the $expect_backend backend: verifies" go-consumer.log || { echo "expected the $expect_backend backend" >&2; exit 1; }
echo "C ABI on the $expect_backend backend: OK"
RUN
chmod +x "$out/run.sh"
du -sh "$out"/*
echo "built $out; run it with .gpu/abi/run.sh"
