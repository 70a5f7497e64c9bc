#!/usr/bin/env bash
# (scripts/gpu/suite.sh: copy it to .gpu/suite.sh beside the archive scripts/gpu/pack.sh writes.)
# Unpacks the test binaries outside the repository and runs them from the repo root.
# Usage: bash .gpu/suite.sh plain|ignored [binary names...]
#        bash .gpu/suite.sh bench NAME ARGS...   (an example from bin/, its output under $OUT)
#        bash .gpu/suite.sh bg NAME ARGS...      (the same, started in the background: for a run
#                                                 longer than one command's 600 s; its output in
#                                                 /tmp/cuzk-bg, which lives while the machine is warm)
#        bash .gpu/suite.sh repeat N BINARY FILTER  (one test binary's tests matching FILTER, N times:
#                                                 a flake's rate)
#        bash .gpu/suite.sh wait SECS            (waits up to SECS for the background run, then
#                                                 copies its output under $OUT; call it again, within
#                                                 the machine's 30 s idle, until it says "ended")
set -u
mode=${1:-plain}; shift || true
T=/tmp/cuzk-tests
if [ ! -d $T/tests ]; then mkdir -p $T && xz -dc .gpu/tests.tar.xz | tar -xf - -C $T; fi
export CUZK_DAEMON_BIN=$T/bin/cuzk-daemon
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
OUTD=${OUT:-/tmp/out}; mkdir -p $OUTD
failed=(); passed=0
if [ "$mode" = bg ]; then
  name=$1; shift
  B=/tmp/cuzk-bg; rm -rf $B; mkdir -p $B
  free -g | head -2; nproc
  # setsid: out of the command's process group, in case the device tool ends that group with it.
  OUT=$B setsid nohup bash -c '"$0" "$@" > "$OUT/$(basename "$0").log" 2>&1; echo $? > "$OUT/rc"' $T/bin/$name "$@" > /dev/null 2>&1 < /dev/null &
  echo "$name started in the background (pid $!): bash .gpu/suite.sh wait SECS"
  exit 0
elif [ "$mode" = wait ]; then
  B=/tmp/cuzk-bg; secs=${1:-540}; start=$(date +%s)
  while [ ! -f $B/rc ] && [ $(( $(date +%s) - start )) -lt "$secs" ]; do sleep 5; done
  cp -r $B/. $OUTD/ 2>/dev/null
  if [ -f $B/rc ]; then echo "background run ended: rc=$(cat $B/rc)"; else echo "background run still going"; fi
  tail -40 $B/*.log
  exit 0
elif [ "$mode" = repeat ]; then
  n=$1; t=$2; filter=${3:-}; f=0
  for i in $(seq 1 "$n"); do
    if ! $T/tests/$t $filter --test-threads 1 > $OUTD/$t-repeat.log 2>&1; then
      f=$((f+1)); cp $OUTD/$t-repeat.log $OUTD/$t-repeat-failed-$i.log
      grep -E "panicked" -A4 $OUTD/$t-repeat.log | head -12
    fi
  done
  echo "repeat: $t $filter: $f failed of $n"
  [ $f -eq 0 ]; exit
elif [ "$mode" = bench ]; then
  name=$1; shift
  free -g | head -2; nproc
  start=$(date +%s)
  $T/bin/$name "$@" > $OUTD/$name.log 2>&1; rc=$?
  echo "$name rc=$rc $(( $(date +%s) - start ))s"; tail -60 $OUTD/$name.log
  exit $rc
elif [ "$mode" = plain ]; then
  list=("$@"); [ ${#list[@]} -eq 0 ] && list=($(ls $T/tests))
  for t in "${list[@]}"; do
    start=$(date +%s)
    if $T/tests/$t --test-threads 1 > $OUTD/$t.log 2>&1; then passed=$((passed+1)); r=ok; else failed+=("$t"); r=FAIL; fi
    echo "$t $r $(( $(date +%s) - start ))s $(grep -E '^test result' $OUTD/$t.log | tail -1)"
  done
else
  for t in "$@"; do
    start=$(date +%s)
    if $T/tests/$t --ignored --test-threads 1 > $OUTD/$t-ignored.log 2>&1; then passed=$((passed+1)); r=ok; else failed+=("$t"); r=FAIL; fi
    echo "$t --ignored $r $(( $(date +%s) - start ))s $(grep -E '^test result' $OUTD/$t-ignored.log | tail -1)"
  done
fi
echo "suite: $passed passed, ${#failed[@]} failed: ${failed[*]:-}"
for t in "${failed[@]:-}"; do [ -n "$t" ] && { echo "=== $t"; grep -E "panicked|FAILED|failures:|^test .* FAILED" -A6 $OUTD/$t*.log | head -60; }; done
