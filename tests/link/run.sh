#!/usr/bin/env bash
# The C ABI from C, as CI runs it:  tests/link/run.sh LIBDIR DIST
# LIBDIR holds cargo's libcuzk.so (e.g. target/release); DIST is what scripts/build-lib.sh
# wrote (lib/libcuzk.a, lib/pkgconfig/cuzk.pc). Checks, in order:
#   0. include/cuzk.h compiles as pedantic C99 and as C++11;
#   1. libcuzk.so exports only cuzk_* symbols (nm -D), and DIST's libcuzk.a defines exactly
#      the header's functions as global symbols, nothing else;
#   2. examples/c/toy.c builds against the header + libcuzk.a (pkg-config's flags) and runs;
#   3. the same program against libcuzk.so runs; tests/link/abi_edges.c checks the ABI's
#      edge promises (empty circuit, budget refusal, save errors, delta at infinity), and
#      tests/link/abi_edges_jobs.c its bad inputs (enums out of range, counts past their
#      bounds) and job lifecycles under concurrent wait / progress / cancel / free;
#   4. libcuzk.a and a foreign Rust static library (tests/link/otherlib: built by the
#      machine's other rustc, the nightly toolchain, where there is one; blst 0.3.14) link
#      into one C program in both orders, and both libraries' calls work (a cuzk proof
#      verifies, otherlib's blst computes the G1 generator, its panic is caught);
#   5. a program calling a blst function only cuzk's newer blst has gets "undefined
#      reference" from libcuzk.a + otherlib (cuzk provides no blst to its neighbours), and
#      links against cargo's raw staticlib (the leak step 1 rules out);
#   6. tests/link/leak_loop.c runs new -> prove -> free rounds under valgrind with no error
#      and nothing definitely lost, and abi_edges_jobs runs once more under valgrind (no
#      memory error; skipped with CUZK_SKIP_VALGRIND=1).
# Needs cc, nm, readelf, pkg-config, cargo and valgrind. Work files go to $WORK (default: a
# temporary directory). CUZK_OTHER_TOOLCHAIN names the rustup toolchain for otherlib
# (default: nightly when installed).
set -euo pipefail
cd "$(dirname "$0")/../.."
LIB="$(cd "${1:?usage: tests/link/run.sh LIBDIR DIST}" && pwd)"
DIST="$(cd "${2:?usage: tests/link/run.sh LIBDIR DIST}" && pwd)"
WORK="${WORK:-$(mktemp -d)}"
mkdir -p "$WORK"
CC="${CC:-cc}"
CFLAGS="-O2 -g -Wall -Wextra -Werror -std=c11 -Iinclude"
PC="$DIST/lib/pkgconfig/cuzk.pc"
STATIC="$DIST/lib/libcuzk.a"
[ -f "$PC" ] && [ -f "$STATIC" ] || { echo "$DIST has no lib/libcuzk.a and cuzk.pc: run scripts/build-lib.sh" >&2; exit 1; }
LIBS="$(pkg-config --libs "$PC")"

echo "-- 0. include/cuzk.h compiles as C99 (pedantic) and as C++11"
printf '#include "cuzk.h"\nint main(void) { return cuzk_abi_version() == CUZK_ABI_VERSION ? 0 : 1; }\n' >"$WORK/header.c"
$CC -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -Iinclude "$WORK/header.c"
if command -v c++ >/dev/null; then c++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only -x c++ -Iinclude "$WORK/header.c"; fi

echo "-- 1. libcuzk.so exports only cuzk_*"
nm -D --defined-only "$LIB/libcuzk.so" | awk '{print $NF}' | sort >"$WORK/exports"
if grep -v '^cuzk_' "$WORK/exports"; then
  echo "libcuzk.so exports symbols other than cuzk_* (above)" >&2
  exit 1
fi
n=$(wc -l <"$WORK/exports")
[ "$n" -gt 20 ] || { echo "libcuzk.so exports only $n cuzk_* symbols" >&2; exit 1; }
echo "   $n symbols, all cuzk_*"
grep -oE '\bcuzk_[a-z0-9_]+[[:space:]]*\(' include/cuzk.h | tr -d ' (' | sort -u >"$WORK/abi"
readelf -Ws "$STATIC" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" { print $8 }' | sort -u >"$WORK/static-globals"
if ! diff -u "$WORK/abi" "$WORK/static-globals" >"$WORK/static.diff"; then
  head -40 "$WORK/static.diff" >&2
  echo "$STATIC: its global symbols are not exactly the header's $(wc -l <"$WORK/abi") functions (diff above: - header, + archive)" >&2
  exit 1
fi
echo "   libcuzk.a: $(wc -l <"$WORK/static-globals") global symbols, exactly the header's functions"

echo "-- 2. examples/c/toy.c with libcuzk.a (pkg-config: $LIBS)"
$CC $CFLAGS examples/c/toy.c $LIBS -o "$WORK/toy"
"$WORK/toy"

echo "-- 3. examples/c/toy.c with libcuzk.so"
$CC $CFLAGS examples/c/toy.c -L"$LIB" -lcuzk -Wl,-rpath,"$LIB" -lpthread -ldl -lrt -lm -o "$WORK/toy-shared"
"$WORK/toy-shared" >/dev/null

echo "-- 3b. the ABI's edge promises, from C (tests/link/abi_edges.c)"
$CC $CFLAGS tests/link/abi_edges.c $LIBS -o "$WORK/abi_edges"
mkdir -p "$WORK/edges"
"$WORK/abi_edges" "$WORK/edges" | sed 's/^/   /'
$CC $CFLAGS -pthread tests/link/abi_edges_jobs.c $LIBS -o "$WORK/abi_edges_jobs"
"$WORK/abi_edges_jobs" 3 >"$WORK/abi_edges_jobs.log" || { cat "$WORK/abi_edges_jobs.log"; exit 1; }
echo "   abi_edges_jobs: $(grep -c '^ok' "$WORK/abi_edges_jobs.log") promises held"

echo "-- 4. libcuzk.a + a foreign Rust static library, both orders"
toolchain="${CUZK_OTHER_TOOLCHAIN:-}"
if [ -z "$toolchain" ] && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then toolchain=nightly; fi
cargo_other=(cargo)
[ -n "$toolchain" ] && cargo_other=(cargo "+$toolchain")
ours="$(rustc -V)"
theirs="$(rustc ${toolchain:++$toolchain} -V)"
if [ "$ours" = "$theirs" ]; then
  echo "   WARNING: no second Rust toolchain here: otherlib is built by cuzk's own $ours"
else
  echo "   cuzk: $ours; otherlib: $theirs"
fi
"${cargo_other[@]}" build --quiet --release --manifest-path tests/link/otherlib/Cargo.toml --target-dir "$WORK/otherlib-target"
OTHER="$WORK/otherlib-target/release/libotherlib.a"
readelf -Ws "$OTHER" | awk '$5 == "GLOBAL" && $7 != "UND" { print $8 }' >"$WORK/other-globals"
grep -qx 'blst_p1_add' "$WORK/other-globals" ||
  { echo "otherlib exports no blst: the foreign library would prove nothing" >&2; exit 1; }
# shellcheck disable=SC2086 # LIBS is a list of flags
$CC $CFLAGS tests/link/two_rust_libs.c $LIBS "$OTHER" -o "$WORK/cuzk_first"
"$WORK/cuzk_first" | sed 's/^/   cuzk first: /'
# otherlib first: pkg-config's flags without -lcuzk, then the archive itself after otherlib.
$CC $CFLAGS tests/link/two_rust_libs.c "$OTHER" "$STATIC" $LIBS -o "$WORK/otherlib_first"
"$WORK/otherlib_first" | sed 's/^/   otherlib first: /'

echo "-- 5. cuzk's blst stays its own"
if $CC $CFLAGS tests/link/newer_blst.c $LIBS "$OTHER" -o "$WORK/newer_blst" 2>"$WORK/newer_blst.log"; then
  echo "a program linked blst_fp_from_be_bytes out of libcuzk.a: cuzk exports its blst" >&2
  exit 1
fi
if grep -q "multiple definition" "$WORK/newer_blst.log" ||
  ! grep -q "undefined reference to .blst_fp_from_be_bytes" "$WORK/newer_blst.log"; then
  cat "$WORK/newer_blst.log" >&2
  echo "expected only 'undefined reference to blst_fp_from_be_bytes' (above)" >&2
  exit 1
fi
echo "   libcuzk.a + otherlib: undefined reference to blst_fp_from_be_bytes (as it must)"
if [ -f "$LIB/libcuzk.a" ]; then
  # The control: cargo's raw staticlib does hand out its blst, so the check above can fail.
  $CC $CFLAGS tests/link/newer_blst.c "$LIB/libcuzk.a" -lgcc_s -lpthread -ldl -lrt -lm -o "$WORK/newer_blst_raw"
  echo "   cargo's raw libcuzk.a: links it (the leak that scripts/build-lib.sh removes)"
fi

if [ "${CUZK_SKIP_VALGRIND:-0}" = 1 ]; then
  echo "-- 6. valgrind leak loop: skipped (CUZK_SKIP_VALGRIND=1)"
  exit 0
fi
echo "-- 6. new -> prove -> free under valgrind"
$CC $CFLAGS tests/link/leak_loop.c $LIBS -o "$WORK/leak_loop"
# Rust's process-lifetime allocations (the rayon pool, the logger) are "still reachable";
# anything definitely lost, or any memory error, fails.
valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 \
  --log-file="$WORK/valgrind.log" "$WORK/leak_loop" "${CUZK_LEAK_ROUNDS:-10}"
grep -E "definitely lost|ERROR SUMMARY|in use at exit|All heap blocks" "$WORK/valgrind.log" | sed 's/^==[0-9]*== /   /'
grep -qE "ERROR SUMMARY: 0 errors" "$WORK/valgrind.log"
if grep -q "definitely lost:" "$WORK/valgrind.log"; then
  grep -qE "definitely lost: 0 bytes" "$WORK/valgrind.log"
fi
echo "-- 6b. abi_edges_jobs under valgrind (threads, callbacks, frees mid-job)"
valgrind --error-exitcode=99 --log-file="$WORK/valgrind-edges.log" "$WORK/abi_edges_jobs" 1 >"$WORK/abi_edges_jobs.vg.log" ||
  { cat "$WORK/abi_edges_jobs.vg.log"; tail -40 "$WORK/valgrind-edges.log"; exit 1; }
grep -E "ERROR SUMMARY" "$WORK/valgrind-edges.log" | sed 's/^==[0-9]*== /   /'
echo "C ABI link checks: OK"
