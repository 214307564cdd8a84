#!/usr/bin/env bash
# One call on a GPU machine for v16: build, v16's tests, the seed and tree cases beside the versions
# v16 is measured against, the thesis's ablation on d9 (case 409: each step a knob), leaf sizes
# 64-512, and the wave study of configs/v16-waves.json. Results, logs and markdown go to $OUT
# (default ./v16-out); every step has its own time limit, so a slow or failing step does not cost
# the others. B names the build directory (default /tmp/b); PREBUILT may name a tarball of knnbench and
# tests/knn_tests built for this GPU elsewhere: the build step keeps whichever runs here, else builds.
# smoke runs the small seed cases 450 and 201 (fully validated) and stops the script when v16 fails.
# stage sweeps KNN_V16_STAGE_KIB (shared memory for staged leaves per block; 0: never staged).
# Usage: scripts/v16-check.sh [build|tests|smoke|figures|ablation|leaf|waves|stage]...
set -u
OUT=${OUT:-v16-out}
B=${B:-/tmp/b}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64:/usr/local/cuda/lib
mkdir -p "$OUT"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build tests smoke figures ablation leaf waves)
bench() {  # bench NAME LIMIT ARGS...: one knnbench run, its table's tail on stdout
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$B/knnbench" --json "$OUT/$name.json" --md "$OUT/$name.md" "$@" >"$OUT/$name.log" 2>&1
  echo "$name rc=$?"
  grep -E "^\| [0-9]+ \|.*\| v1[0-9] \|" "$OUT/$name.md" | cut -c1-400
}
seeds=(--config configs/seeds.json --warmup 1 --min-samples 1 --max-time 1)
for step in "${steps[@]}"; do
  start=$(date +%s)
  case "$step" in
    build)
      nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv >"$OUT/gpu.txt" 2>&1
      if [ -n "${PREBUILT:-}" ] && [ -f "$PREBUILT" ]; then
        mkdir -p /tmp/prebuilt && tar -C /tmp/prebuilt -xzf "$PREBUILT" && B=/tmp/prebuilt
      fi
      if "$B/knnbench" --list >/dev/null 2>&1 && "$B/tests/knn_tests" --gtest_list_tests >/dev/null 2>&1; then
        echo "build: $B runs here, kept"; echo "[build: 0 s]"; continue
      fi
      B=/tmp/b
      cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/build.log" 2>&1 &&
        cmake --build "$B" -j16 --target knnbench knn_tests >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; } ;;
    tests)
      timeout 90 "$B/tests/knn_tests" --gtest_filter='*V16*' >"$OUT/tests.log" 2>&1
      echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure|Expected|Which is|query" "$OUT/tests.log" | head -40 ;;
    smoke)
      bench smoke 40 --config configs/seeds.json --case 450,201 --version v16 --warmup 0 --min-samples 1 --max-samples 1
      [ "$(grep -c '| v16 | pass |' "$OUT/smoke.md" 2>/dev/null)" = 2 ] || { echo "smoke: v16 failed, stopping"; exit 1; } ;;
    figures)
      bench seeds-405-409 70 "${seeds[@]}" --max-samples 3 --case 405,409 --version v11,v15,v16,v17
      bench seeds-412-416 45 "${seeds[@]}" --case 412,416 --version v15,v16 --max-samples 1
      bench seeds-200 30 "${seeds[@]}" --max-samples 3 --case 200 --version v14,v15,v16,v17
      bench trees-100 40 --config configs/trees.json --case 100 --version v11,v15,v16 --validate-queries 8192 \
        --warmup 1 --min-samples 1 --max-samples 5 --max-time 1 ;;
    ablation)
      # seed 004's Table 2 steps: baseline (unsorted, median test, no final steps), + sorting by leaf,
      # + the boundary (box) test, + the final steps (sort-partition, run to the end under 1 query/leaf).
      one=(--config configs/seeds.json --case 409 --version v16 --validate-queries 2048 --warmup 1 --min-samples 1 --max-samples 2 --max-time 1)
      KNN_V16_SORT=0 KNN_V16_TEST=median KNN_V16_FINAL=0 bench ablation-1-baseline 60 "${one[@]}"
      KNN_V16_SORT=1 KNN_V16_TEST=median KNN_V16_FINAL=0 bench ablation-2-sorted 40 "${one[@]}"
      KNN_V16_SORT=1 KNN_V16_TEST=box KNN_V16_FINAL=0 bench ablation-3-box 30 "${one[@]}"
      KNN_V16_SORT=1 KNN_V16_TEST=box KNN_V16_FINAL=1 bench ablation-4-final 30 "${one[@]}"
      KNN_V16_STAGE_KIB=24 bench ablation-5-staged 30 "${one[@]}" ;;
    leaf)
      for leaf in 64 128 256 512; do
        KNN_V16_LEAF=$leaf bench leaf-$leaf 30 --config configs/seeds.json --case 200,405,409 --version v16 \
          --validate-queries 2048 --warmup 1 --min-samples 1 --max-samples 3 --max-time 1
        KNN_V16_LEAF=$leaf bench leaf-$leaf-100 20 --config configs/trees.json --case 100 --version v16 \
          --validate-queries 2048 --warmup 1 --min-samples 1 --max-samples 3 --max-time 1
      done ;;
    stage)
      for kib in ${STAGE_KIBS:-0 12 24 48 96}; do
        KNN_V16_STAGE_KIB=$kib bench stage-$kib 30 --config configs/seeds.json --case 200,405,409 --version v16 \
          --validate-queries 2048 --warmup 1 --min-samples 1 --max-samples 3 --max-time 1
        KNN_V16_STAGE_KIB=$kib bench stage-$kib-100 20 --config configs/trees.json --case 100 --version v16 \
          --validate-queries 2048 --warmup 1 --min-samples 1 --max-samples 3 --max-time 1
      done ;;
    waves)
      # One process per (test, d); WAVES_CASES="1605 1610 1620" adds d = 20 (neither test finished it in 25 s
      # with every wave sorted on an H100).
      for c in ${WAVES_CASES:-1605 1610}; do
        for t in box median; do
          KNN_V16_TEST=$t KNN_V16_FINAL=0 bench waves-$t-$c "${WAVES_LIMIT:-25}" --config configs/v16-waves.json \
            --case $c --version v16 --warmup 0 --min-samples 1 --max-samples 1
        done
      done ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  echo "[$step: $(( $(date +%s) - start )) s]"
done
