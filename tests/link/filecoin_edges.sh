#!/usr/bin/env bash
# The C bad-input harness (tests/link/abi_edges_jobs.c) against the `filecoin` build of the C
# library, with the Winning PoSt fixture `cargo test --features filecoin --test filecoin`
# writes:  tests/link/filecoin_edges.sh DIST FIXTURES
# DIST is what `scripts/build-lib.sh --features filecoin` wrote; FIXTURES holds winning.json
# (its vanilla proof, hex, and the parameter cache). Runs the SnapDeals and PoSt edges and a
# real Winning PoSt job raced by concurrent wait / progress / cancel / free, natively; then
# under valgrind (no memory error): every refusal, and with CUZK_FILECOIN_VALGRIND=1 the real
# proofs too (they make it many minutes long). Work files go to $WORK.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: tests/link/filecoin_edges.sh DIST FIXTURES" >&2; exit 2; }
pc="$(realpath "$1")/lib/pkgconfig/cuzk.pc"
fixture="$(realpath "$2")/winning.json"
work="${WORK:-$(mktemp -d)}" && mkdir -p "$work"
cd "$(dirname "$0")/../.."
# The fixture's first vanilla proof as bytes, and its parameter cache.
cache=$(python3 - "$fixture" "$work/winning.vanilla" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
open(sys.argv[2], "wb").write(bytes.fromhex(d["vanilla"][0]))
print(d["param_cache"])
PY
)
# shellcheck disable=SC2046 # pkg-config's flags are a list
cc -O2 -g -Wall -Wextra -Werror -std=c11 -Iinclude -pthread tests/link/abi_edges_jobs.c \
  $(pkg-config --libs "$pc") -o "$work/abi_edges_jobs_filecoin"
"$work/abi_edges_jobs_filecoin" 1 "$work/winning.vanilla" "$cache" >"$work/edges.log" || { cat "$work/edges.log"; exit 1; }
grep -q "Winning PoSt job, concurrent calls: one finished event" "$work/edges.log" ||
  { cat "$work/edges.log"; echo "the Filecoin edges did not run" >&2; exit 1; }
echo "   abi_edges_jobs (filecoin): $(grep -c '^ok' "$work/edges.log") promises held"
# Under valgrind: every Filecoin call's refusals always (a minute); with
# CUZK_FILECOIN_VALGRIND=1 the real proofs too (the bit flips and the raced job: many minutes).
no_proofs=1
[ "${CUZK_FILECOIN_VALGRIND:-0}" = 1 ] && no_proofs=""
CUZK_EDGES_NO_PROOFS=$no_proofs valgrind --error-exitcode=99 --log-file="$work/valgrind.log" \
  "$work/abi_edges_jobs_filecoin" 1 "$work/winning.vanilla" "$cache" >"$work/edges.vg.log" ||
  { cat "$work/edges.vg.log"; tail -40 "$work/valgrind.log"; exit 1; }
grep -q "abi_edges_jobs: OK" "$work/edges.vg.log" || { cat "$work/edges.vg.log"; exit 1; }
echo "   abi_edges_jobs (filecoin) under valgrind${no_proofs:+, no proofs}: $(grep -c '^ok' "$work/edges.vg.log") promises held"
grep -E "ERROR SUMMARY" "$work/valgrind.log" | sed 's/^==[0-9]*== /   /'
