#!/usr/bin/env bash
# Packs what ../shared/tools/gpu-bundle built into a tree's .gpu/ (test binaries, bin/) into
# one xz archive under 64 MiB for the device tool, leaving out the CPU-only test binaries.
# Usage: scripts/gpu/pack.sh BUILT_TREE [OUT_ARCHIVE]   (default OUT: .gpu/tests.tar.xz here)
# Then, with .gpu/suite.sh copied from scripts/gpu/suite.sh, the device tool's run with
# carry [".gpu"]: `bash .gpu/suite.sh plain` (every binary), `bash .gpu/suite.sh ignored
# test-filecoin test-filecoin_native test-daemon`, `bash .gpu/suite.sh bench sector_bench ARGS`.
set -euo pipefail
src=${1:?the tree whose .gpu/ gpu-bundle filled}
out=${2:-$PWD/.gpu/tests.tar.xz}
# Absolute: the archive is written from inside a temporary directory.
out=$(realpath -m -- "$out")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tests" "$tmp/bin" "$(dirname "$out")"
for f in "$src"/.gpu/tests/*; do
  b=$(basename "$f")
  case $b in
    # CPU-only binaries (CI runs them) and the daemon, which goes to bin/.
    test-header|test-kernel_plan|test-layering|test-native_*|test-daemon_python|bin-cuzk-daemon) continue;;
  esac
  cp "$f" "$tmp/tests/"
done
[ -f "$src/.gpu/tests/bin-cuzk-daemon" ] && cp "$src/.gpu/tests/bin-cuzk-daemon" "$tmp/bin/cuzk-daemon"
for b in "$src"/.gpu/bin/*; do [ -f "$b" ] && cp "$b" "$tmp/bin/"; done
(cd "$tmp" && tar -cf - . | xz -T2 -9 > "$out")
echo "$out: $(du -h "$out" | cut -f1), $(ls "$tmp/tests" | wc -l) test binaries, bin: $(ls "$tmp/bin" | tr '\n' ' ')"
