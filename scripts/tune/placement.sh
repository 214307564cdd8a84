#!/usr/bin/env bash
# Where a process's host buffers lie and how fast one thread reads them, against the time it ran
# (docs/measurement.md): builds scripts/tune/placement_probe.cu, then RUNS (default 4) times, in turn,
# the probe (8 buffers of 256 MiB, 5 rounds) and v0 on case 8 with one thread, each in its own process.
#   scripts/tune/placement.sh [RUNS]     -> $OUT/probe-N.txt, v0-N.{json,log}, build.log
# $OUT defaults to results/local/studies/placement; knnbench comes from $BUILD_DIR (default build-gpu).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/cuda/bin"
OUT=${OUT:-results/local/studies/placement}
BUILD_DIR=${BUILD_DIR:-build-gpu}
mkdir -p "$OUT"
[ -x "$BUILD_DIR/knnbench" ] || { echo "placement.sh: no $BUILD_DIR/knnbench (scripts/gpu/gpu-check.sh build)" >&2; exit 2; }
nvcc -O3 -std=c++17 -o "$OUT/placement_probe" scripts/tune/placement_probe.cu >"$OUT/build.log" 2>&1 ||
  { tail -n 20 "$OUT/build.log"; exit 2; }
status=0
for run in $(seq 1 "${1:-4}"); do
  "$OUT/placement_probe" 8 256 5 >"$OUT/probe-$run.txt" 2>&1 || status=1
  cat "$OUT/probe-$run.txt"
  OMP_NUM_THREADS=1 "$BUILD_DIR/knnbench" --case 8 --version v0 --max-time 1 --json "$OUT/v0-$run.json" \
    >"$OUT/v0-$run.log" 2>&1 || status=1
  grep -A2 "^Median wall time" "$OUT/v0-$run.log"
done
rm -f "$OUT/placement_probe"
exit $status
