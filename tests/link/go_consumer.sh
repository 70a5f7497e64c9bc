#!/usr/bin/env bash
# The Go package as a consumer outside this repository uses it:
#
#   tests/link/go_consumer.sh [--build-only] [--bin PATH]
#
# A scratch module in $WORK (default: a temporary directory) requires the package by its
# module path and points a `replace` at this checkout's examples/go, as Curio does with
# filecoin-ffi under extern/. tests/link/go_consumer/main.go is then vetted, built and run
#   1. from the replaced directory, and
#   2. from the module's `go mod vendor` copy (the package's header, cuzk.pc and cuzk_link.h
#      must travel with it; the build must use that copy),
# and 3. the Curio adapter in examples/go/README.md is vetted against tests/link/go_adapter's
#      stand-ins for go-state-types, go-cid and filecoin-ffi, with Curio's method set,
# with no CGO_CFLAGS/CGO_LDFLAGS, no build tags, no GOFLAGS and GOPROXY=off: pkg-config's
# cuzk.pc carries every link flag, and nothing is downloaded. It links the library
# scripts/build-lib.sh built last (it wrote examples/go/cuzk.pc and cuzk_link.h): run that
# first, with the features to check. The program proves and verifies the toy circuit, checks
# the library's ABI version against the header's, and that the Filecoin functions are there
# exactly when the library was built with `filecoin`.
#
# --build-only vets and builds without running: a `cuda` library on a machine without the
# NVIDIA driver (the program cannot start there). --bin PATH copies the vendored build's
# program to PATH (examples/abi-gpu-build.sh takes it to the GPU machine). Needs go (the
# version go.mod names, or later) and pkg-config.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$(pwd)"
run=1
bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-only) run=0; shift ;;
    --bin) bin="${2:?--bin needs a path}"; shift 2 ;;
    *) echo "go_consumer.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
pkg="$repo/examples/go"
[ -f "$pkg/cuzk.pc" ] && [ -f "$pkg/cuzk_link.h" ] ||
  { echo "go_consumer.sh: examples/go has no cuzk.pc: run scripts/build-lib.sh first" >&2; exit 1; }
module="$(sed -n 's/^module //p' "$pkg/go.mod")"
go_version="$(sed -n 's/^go //p' "$pkg/go.mod")"
features="$(sed -n 's/^#define CUZK_LINK_FEATURES "\(.*\)"$/\1/p' "$pkg/cuzk_link.h")"
WORK="${WORK:-$(mktemp -d)}"
consumer="$WORK/consumer"
rm -rf "$consumer"
mkdir -p "$consumer"
cp tests/link/go_consumer/main.go "$consumer/"
cat >"$consumer/go.mod" <<MOD
module example.com/cuzk-consumer

go $go_version

require $module v0.0.0

replace $module => $pkg
MOD
echo "   go.mod of the consumer ($consumer):"
sed 's/^/     /' "$consumer/go.mod"
echo "   library: features '$features'; $(sed -n 's/^Libs: //p' "$pkg/cuzk.pc")"

# Only what a consumer's go.mod and cuzk.pc say: no flags, tags or proxy from the environment.
consumer_go() {
  (cd "$consumer" && env -u CGO_CFLAGS -u CGO_CPPFLAGS -u CGO_CXXFLAGS -u CGO_LDFLAGS -u GOFLAGS \
    GOENV=off GOPROXY=off GOFLAGS= CGO_ENABLED=1 go "$@")
}

echo "-- the consumer through the replace"
consumer_go vet .
consumer_go build -o consumer .
dir="$(consumer_go list -f '{{.Dir}}' "$module")"
[ "$dir" = "$pkg" ] || { echo "the package came from $dir, not from the replace ($pkg)" >&2; exit 1; }
if [ "$run" = 1 ]; then "$consumer/consumer" "$features" | sed 's/^/   /'; fi

echo "-- the consumer from its vendor/ copy of the package"
consumer_go mod vendor
vendored="$consumer/vendor/$module"
for f in cuzk.h cuzk.pc cuzk_link.h; do
  [ -f "$vendored/$f" ] || { echo "go mod vendor did not copy $f: a vendored package would not build" >&2; exit 1; }
done
dir="$(consumer_go list -mod=vendor -f '{{.Dir}}' "$module")"
[ "$dir" = "$vendored" ] || { echo "the vendored build used $dir, not $vendored" >&2; exit 1; }
consumer_go build -mod=vendor -o consumer-vendored .
if [ "$run" = 1 ]; then "$consumer/consumer-vendored" "$features" | sed 's/^/   /'; fi
if [ -n "$bin" ]; then cp "$consumer/consumer-vendored" "$bin"; fi

echo "-- examples/go/README.md's Curio adapter compiles and has Curio's ffidirect method set"
# Against tests/link/go_adapter's stand-ins for go-state-types, go-cid and filecoin-ffi
# (their declarations only: the real modules are not reachable here).
adapter="$WORK/adapter"
rm -rf "$adapter"
mkdir -p "$adapter"
stand_in="$repo/tests/link/go_adapter"
cat >"$adapter/go.mod" <<MOD
module example.com/cuzk-curio-adapter

go $go_version

require (
	$module v0.0.0
	github.com/filecoin-project/go-state-types v0.0.0
	github.com/filecoin-project/filecoin-ffi v0.0.0
	github.com/ipfs/go-cid v0.0.0
)

replace (
	$module => $pkg
	github.com/filecoin-project/go-state-types => $stand_in/go-state-types
	github.com/filecoin-project/filecoin-ffi => $stand_in/filecoin-ffi
	github.com/ipfs/go-cid => $stand_in/go-cid
)
MOD
{
  echo "package adapter"
  echo
  awk '/<!-- the Curio adapter:/ { marked = 1; next }
       marked && /^```go$/ { code = 1; next }
       code && /^```$/ { exit }
       code { print }' "$pkg/README.md"
  cat "$stand_in/check.go.txt"
} >"$adapter/adapter.go"
grep -q 'func (f CuzkFFI) GenerateUpdateProofWithVanilla' "$adapter/adapter.go" ||
  { echo "no adapter found in examples/go/README.md (its marker comment, then a go block)" >&2; exit 1; }
(cd "$adapter" && env -u CGO_CFLAGS -u CGO_CPPFLAGS -u CGO_CXXFLAGS -u CGO_LDFLAGS \
  GOENV=off GOPROXY=off GOFLAGS= go vet . && test -z "$(gofmt -l .)") ||
  { echo "examples/go/README.md's adapter does not compile, is not gofmt'd, or lacks a method (above)" >&2; exit 1; }
echo "   $(grep -c '^func ' "$adapter/adapter.go") methods, $(wc -l <"$adapter/adapter.go") lines: OK"
echo "Go consumer ($([ "$run" = 1 ] && echo "built and ran" || echo "built"), features '$features'): OK"
