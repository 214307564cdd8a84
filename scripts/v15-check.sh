#!/usr/bin/env bash
# One call on a GPU machine for v15: build, v15's tests, then cases 8-11 (with the versions it is
# measured against), the seed cases 200 and 405, and the topk sweep on case 11's sizes. Results,
# logs and markdown go to $OUT (default ./v15-out); each step has its own time limit, so a slow or
# failing step does not cost the others. Usage: scripts/v15-check.sh [build|tests|default|seeds|topk]...
set -u
OUT=${OUT:-v15-out}
B=${B:-/tmp/b}
mkdir -p "$OUT"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build tests default seeds topk)
for step in "${steps[@]}"; do
  start=$(date +%s)
  case "$step" in
    build)
      cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/build.log" 2>&1 &&
        cmake --build "$B" -j16 --target knnbench knn_tests >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; } ;;
    tests)
      timeout 70 "$B/tests/knn_tests" --gtest_filter='*V15*' >"$OUT/tests.log" 2>&1
      echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|Expected|Which is|query" "$OUT/tests.log" | head -40 ;;
    default)
      timeout 85 "$B/knnbench" --version v4,v6,v7,v14,v15 --case 8-11 --max-time 2 --json "$OUT/default.json" \
        --md "$OUT/default.md" >"$OUT/default.log" 2>&1; echo "default rc=$?"; tail -12 "$OUT/default.log" ;;
    seeds)
      timeout 60 "$B/knnbench" --config configs/seeds.json --case 200,405 --version v14,v15 --max-time 3 \
        --json "$OUT/seeds.json" --md "$OUT/seeds.md" >"$OUT/seeds.log" 2>&1; echo "seeds rc=$?"; tail -8 "$OUT/seeds.log" ;;
    topk)
      timeout 45 "$B/knnbench" --config configs/v15-topk.json --version v15 --max-time 2 \
        --json "$OUT/topk.json" --md "$OUT/topk.md" >"$OUT/topk.log" 2>&1; echo "topk rc=$?"; tail -8 "$OUT/topk.log" ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  echo "[$step: $(( $(date +%s) - start )) s]"
done
