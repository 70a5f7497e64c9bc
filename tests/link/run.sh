#!/usr/bin/env bash
# The C ABI from C, as CI runs it:  tests/link/run.sh LIBDIR
# LIBDIR holds libcuzk.a and libcuzk.so (e.g. target/release). Checks, in order:
#   0. include/cuzk.h compiles as pedantic C99 and as C++11;
#   1. libcuzk.so exports only cuzk_* symbols (nm -D);
#   2. examples/c/toy.c builds against include/cuzk.h + libcuzk.a and runs;
#   3. the same program against libcuzk.so runs;
#   4. libcuzk.a and a second Rust static library (tests/link/otherlib) link into one C
#      program that uses both;
#   5. tests/link/leak_loop.c runs new -> prove -> free rounds under valgrind with no error
#      and nothing definitely lost (skipped with CUZK_SKIP_VALGRIND=1).
# Needs cc, nm, cargo and valgrind. Work files go to $WORK (default: a temporary directory).
set -euo pipefail
cd "$(dirname "$0")/../.."
LIB="$(cd "${1:?usage: tests/link/run.sh LIBDIR}" && pwd)"
WORK="${WORK:-$(mktemp -d)}"
mkdir -p "$WORK"
CC="${CC:-cc}"
CFLAGS="-O2 -g -Wall -Wextra -Werror -std=c11 -Iinclude"
LIBS="-lpthread -ldl -lrt -lm"

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

echo "-- 2. examples/c/toy.c with libcuzk.a"
$CC $CFLAGS examples/c/toy.c "$LIB/libcuzk.a" $LIBS -o "$WORK/toy"
"$WORK/toy"

echo "-- 3. examples/c/toy.c with libcuzk.so"
$CC $CFLAGS examples/c/toy.c -L"$LIB" -lcuzk -Wl,-rpath,"$LIB" $LIBS -o "$WORK/toy-shared"
"$WORK/toy-shared" >/dev/null

echo "-- 4. libcuzk.a + a second Rust static library in one program"
cargo build --quiet --release --manifest-path tests/link/otherlib/Cargo.toml --target-dir "$WORK/otherlib-target"
$CC $CFLAGS tests/link/two_rust_libs.c "$LIB/libcuzk.a" "$WORK/otherlib-target/release/libotherlib.a" $LIBS \
  -o "$WORK/two_rust_libs"
"$WORK/two_rust_libs"

if [ "${CUZK_SKIP_VALGRIND:-0}" = 1 ]; then
  echo "-- 5. valgrind leak loop: skipped (CUZK_SKIP_VALGRIND=1)"
  exit 0
fi
echo "-- 5. new -> prove -> free under valgrind"
$CC $CFLAGS tests/link/leak_loop.c "$LIB/libcuzk.a" $LIBS -o "$WORK/leak_loop"
# Rust's process-lifetime allocations (the rayon pool, the logger) are "still reachable";
# anything definitely lost, or any memory error, fails.
valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 \
  --log-file="$WORK/valgrind.log" "$WORK/leak_loop" "${CUZK_LEAK_ROUNDS:-10}"
grep -E "definitely lost|ERROR SUMMARY|in use at exit|All heap blocks" "$WORK/valgrind.log" | sed 's/^==[0-9]*== /   /'
grep -qE "ERROR SUMMARY: 0 errors" "$WORK/valgrind.log"
if grep -q "definitely lost:" "$WORK/valgrind.log"; then
  grep -qE "definitely lost: 0 bytes" "$WORK/valgrind.log"
fi
echo "C ABI link checks: OK"
