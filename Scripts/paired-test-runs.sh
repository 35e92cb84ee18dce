#!/bin/bash
# The busy-machine check of the test suite: `swift test` (the README's command) run RUNS
# times in a row in one fresh clone of HEAD while a second clone runs `swift test` over and
# over beside it, so both cores stay busy. Prints each run's result and time, and exits 1
# if any run of either clone failed. Logs stay in the work folder (printed at the start).
#
#   Scripts/paired-test-runs.sh [RUNS]     # RUNS defaults to 5; about 25 min a run on 2 cores
#
# Set CI=true to make the PostgreSQL suites fail instead of skipping when no server starts.
set -u
runs=${1:-5}
repo=$(git rev-parse --show-toplevel)
work=$(mktemp -d "${TMPDIR:-/tmp}/requestset-paired.XXXXXX")
echo "paired runs of $(git -C "$repo" rev-parse --short HEAD) in $work"
for side in a b; do
  git clone -q "$repo" "$work/$side" || exit 2
  (cd "$work/$side" && swift build --build-tests > "$work/$side-build.log" 2>&1) || {
    echo "clone $side does not build: $work/$side-build.log"
    exit 2
  }
done
loop() {  # side, runs (0: until $work/done exists)
  local side=$1 max=$2 i=0
  while true; do
    i=$((i + 1))
    local start=$(date +%s)
    (cd "$work/$side" && swift test > "$work/$side-run$i.log" 2>&1)
    local rc=$?
    echo "$side run $i: $([ $rc = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - start)) s" \
      | tee -a "$work/summary"
    if [ "$max" != 0 ] && [ $i -ge "$max" ]; then touch "$work/done"; return; fi
    if [ "$max" = 0 ] && [ -e "$work/done" ]; then return; fi
  done
}
loop b 0 &
loop a "$runs"
wait
! grep -q FAILED "$work/summary"
