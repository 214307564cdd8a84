#!/usr/bin/env bash
# On a GPU machine: configure, build, run the test suite (GPU tests included), then the matrix.
# Results (JSON + markdown + logs) land in results/local/gpu-check, or, when $OUT is set, in one
# archive $OUT/gpu-check.tar.gz (a GPU machine that returns few files).
#
#   scripts/gpu/gpu-check.sh [steps...] [-- knnbench args]
# steps (default: tests matrix pageable):
#   tests       ctest, all labels (GPU tests must run, not skip)
#   gputests    ctest -L gpu only
#   matrix      the default matrix, pinned host memory          -> default.{json,md}
#   pageable    the default matrix, --host-memory pageable      -> pageable.{json,md}
#   trees       configs/trees.json                               -> trees.{json,md}
#   scaling     v8/v9 on cases 0-11 with 1, 2 and all GPUs       -> devices{1,2,N}.{json,md}
#   secondlevel v7 beside test-only t5 (v7 reducing on the GPU)    -> v7-second-level.{json,md}
#   seedgeometry v3 beside test-only t6 (the seeds' v3-v6 grid: 1/m of the work, wrong answers) on
#               cases 10-11, pinned and pageable                  -> seed-geometry{,-pageable}.{json,md}
#   integrity   the default matrix and configs/trees.json each run twice (separate processes), then
#               `compare` of the twins                             -> integrity/{default,trees}-{1,2}.*, compare-*.txt
#               INTEGRITY_SETS="default trees" and INTEGRITY_RUNS="1 2" narrow it (one run per call on a
#               machine with a per-call time limit); the compare runs once both twins exist in $OUT
#   seeds       configs/seeds.json: group small with every version -> seeds-small.*; the large cases
#               (200, 302, 405-416) with every version except v0      -> seeds-large.*
#   slowed      every single-GPU brute-force version plus test-only t8 (v4 whose kernel rescans
#               and uploads KNN_SLOWDOWN_PCT % more references) on cases 8-11, once at 0 % and once at
#               SLOWDOWN_PCT % (default 10: a little under +10 % of the whole call), then `compare`
#                                                                  -> integrity/slowed-{0,N}.*, compare-slowed.txt
#   int8        v15's exact int8 path: its GPU and CPU tests, then configs/int8-shapes.json with
#               KNN_V15_INT8=off, auto and on                       -> int8/shapes-{off,auto,on}.*, tests.log;
#               INT8_REAL=<matrix> adds cases 500 and 501 (Fashion-MNIST) of that matrix with v14
#               and v15, every query validated                     -> int8/fmnist.*
#   v15         v15's tests (GPU and CPU), the default matrix with v4, v6, v7, v14 and v15 (the
#               tensor-core filter where its rule takes it), v15 alone with KNN_V15_TC=off, and
#               configs/tc-shapes.json with KNN_V15_TC=off and on
#                                                  -> v15/default{,-tc-off}.*, v15/tc-shapes-{off,on}.*, tests.log
#   fp32        v15's fp32 filter on CUDA cores: v15's tests (GPU and CPU), the default matrix with v4, v6,
#               v7 and v15 (the filters where their rules take them), v15 with KNN_V15_FP32_FILTER=off and
#               with 4 queries per thread, and configs/fp32-shapes.json with the filter off and on
#                                                  -> fp32/default{,-off,-q4}.*, fp32/shapes-{off,on}.*, tests.log
#   ramp        v15's first chunks growing from 512 KiB (scan_plan.hpp) against equal chunks: v15's tests,
#               cases 8-11 with v4, v6, v7 and v15, then v15 with KNN_V15_RAMP=0, 1, 0 (alternating
#               processes), and configs/fp32-shapes.json and tc-shapes.json both ways
#                                -> ramp/default-{on,off,on2,off2}.*, ramp/{fp32,tc}-shapes-{on,off}.*, tests.log
#   filtertopk  v15's filters with topk 2..32 (lists of keys): the filters' tests (GPU and CPU), then
#               configs/tc-topk-shapes.json with the scan and KNN_V15_TC=on (plain and split TF32), cases
#               412 and 416 (seeds.json) with the scan, 405, 412 and 416 with the filter (plain TF32), the
#               topk sweep's 8 and 32 (v15-topk.json) with the filter, and cases 10-11 at the defaults
#                                          -> filtertopk/*.{json,md,log}, tests.log
#   v15tests    v15's tests alone (GPU and CPU)                    -> v15tests/tests.log
#   v15final    v15 at its defaults: every v15 test (GPU and CPU), cases 8-11 with v4, v6, v7 and v15, cases
#               200, 405, 412 and 416 (seeds.json), the whole topk sweep (v15-topk.json), configs/tc-topk-shapes.json,
#               405 with plain TF32 (KNN_V15_TC_SPLIT=off), and (when ncu is installed) the sections of one
#               of case 405's filter kernels
#               -> v15final/{default,seeds,sweep,tc-topk-shapes,seeds-405-plain}.*, tests.log, ncu-405-filter.txt
#   v15seed     v15's seed (KNN_V15_SEED): every v15 test (GPU and CPU), then cases 200 and 201 (seeds.json)
#               with v14, v15 and v16 at the defaults and v15 unseeded, twice in alternating processes, and
#               configs/seed-shapes.json with KNN_V15_SEED=off and on, cases 8-11 and the topk sweep
#               (v15-topk.json) at the defaults, and (when ncu is installed) the source counters of case
#               200's seeded scan kernel
#   -> v15seed/{seeds,unseeded}-{a,b}.*, shapes-{off,on}.*, default.*, sweep.*, tests.log, ncu-200-scan{.txt,-src.csv}
#   v15collect  v15's candidate buffers for seeded scans (KNN_V15_COLLECT): every v15 test (GPU and CPU),
#               then cases 200, 201 and 405 (seeds.json) with v14, v15 and v16 at the defaults and v15 with
#               the buffers off (register lists or the tensor-core filter), twice in alternating processes;
#               v15 with exact distances for every pair (KNN_V15_COLLECT_SCORES=off), with 1 and 4 queries
#               per thread; configs/seed-shapes.json and tc-topk-shapes.json with the buffers and without;
#               cases 8-11; and (when ncu is installed) the sections of cases 200's and 405's collecting kernels
#   -> v15collect/{seeds,lists}-{a,b}.*, exact.*, seeds-q{1,4}.*, {shapes,tc-topk-shapes}-{on,off}.*, default.*,
#      tests.log, ncu-{200,405}-collect.txt, collect-sass.txt (cases 405's and 200's kernels)
#   v15balance  the buffers' balanced grid (KNN_V15_COLLECT_BALANCE): every v15 test, then cases 200, 201 and
#               405 (seeds.json) with v15 balanced and with blocks of whole groups, three times each in
#               alternating processes, v14 and v16 beside them once; configs/seed-shapes.json both ways;
#               cases 8-11; the SASS of case 405's kernel and (with ncu) its sections
#   -> v15balance/{auto,off}-{1,2,3}.*, peers.*, shapes-{auto,off}.*, default.*, tests.log, ncu-405-collect.txt,
#      collect-sass.txt
#   v15tc       the buffers' tensor-core scores (KNN_V15_COLLECT_TC): every v15 test, then cases 200, 201 and
#               405 with the tensor cores (TF32, and hi + lo split), and with fp32 scores on the CUDA cores,
#               twice each in alternating processes; configs/seed-shapes.json and tc-topk-shapes.json with
#               and without; cases 8-11; the tensor-core kernel's SASS and (with ncu) sections on case 405
#   -> v15tc/{tc,split,cuda}-{1,2}.*, {shapes,tc-topk-shapes}-{on,off}.*, default.*, tests.log,
#      ncu-405-{tc,split}.txt, collect-tc-sass.txt
#   v15stage    v15's fp32 filter reading its rows from a tile staged in shared memory or from global memory
#               (KNN_V15_FP32_STAGE): every v15 test; cases 8-11 at auto and off, twice in alternating
#               processes; configs/fp32-shapes.json at auto; configs/fp32-stage-shapes.json staged and not;
#               (with ncu) case 10's chunk kernels
#   -> v15stage/default-{auto,off}-{1,2}.*, fp32-shapes-auto.*, stage-shapes-{on,off}.*, tests.log,
#      ncu-case10-{on,off}.txt
#   v15taper    the last chunk cut in halves for few queries (KNN_V15_TAPER, scan_plan.hpp): every v15 test,
#               then cases 8-10 with the taper and without, three times in alternating processes
#   -> v15taper/default-{1,0}-{1,2,3}.*, tests.log
#   v15floor    the default matrix's cases 0-11 with every single-machine GPU version that takes them and v15,
#               in one process, and (with matplotlib) results/h100/v15-vs-floor.png drawn from it
#   -> v15floor/default.*, v15-vs-floor.png
#   v15gate     the gate between the buffers' CUDA cores and tensor cores (KNN_V15_COLLECT_TC=auto): every
#               v15 test; cases 200, 201, 405 at the defaults and with the tensor cores off, twice each in
#               alternating processes, and on once; tc-topk-shapes.json and seed-shapes.json at the defaults
#               and off; ad-hoc joins 2^20 x 2^20 at k 4 (uniform, clusters) and 2^18 x 2^20 at k 5, topk 8
#               (auto, off, on); cases 8-11     -> v15gate/*.{json,md,log}, tests.log
#   v15seeds    v15 at its defaults on every case of configs/seeds.json and on cases 0-11, v14 and v16 beside it
#               on case 450 (no tests)                            -> v15seeds/{seeds,default,peers-450}.*
#   v15splits   v15's split of a chunk's rows among blocks for few queries (KNN_V15_MIN_GROUPS, the fewest
#               row groups a thread scans): configs/v15-splits.json and cases 0-11 at each of SPLITS_GROUPS
#               (default "16 4 2 1 8 16"), one process each, 128 queries validated per case; v7 beside
#               it on cases 0-7                  -> v15splits/{shapes,default}-g<G>[-N].*, default-v7.*
#   v15merge    the merge's reduction passes for fewer queries than SMs (KNN_V15_MERGE_RUNS): v15's tests;
#               configs/v15-splits.json with the passes, without, with them and KNN_V15_MIN_GROUPS=64, and with
#               them again, one process each, 128 queries validated per case; a bad knob value
#                                          -> v15merge/shapes-{on,off,on-g64,on2}.*, bad-knob.log, tests.log
#   v15nearest  the nearest neighbour's split minimum (kMinGroupsNearest against KNN_V15_MIN_GROUPS=16): the
#               topk-1 shapes of configs/v15-splits.json, twice each way, alternating
#                                                      -> v15nearest/shapes{,-g16}-{a,b}.*
#   v15heaps    the heaps' minimum for few queries (heap_min_groups against KNN_V15_MIN_GROUPS=16): the topk-64
#               shapes of configs/v15-splits.json and two ad-hoc cases (k 3, 7 x 2^20, topk 1024; k 16,
#               32 x 2^20, topk 256), twice each way, alternating    -> v15heaps/{shapes,adhoc*}{,-g16}-{a,b}.*
#   placement   where a process's host buffers lie and how fast one thread reads them, against the time it
#               ran (scripts/tune/placement_probe.cu), in PLACEMENT_RUNS (default 4) processes, v0 on case 8
#               in a process after each                               -> placement/probe-N.txt, v0-N.json
#   v16         v16's tests, then cases 100 (trees.json), 405 and 409 (seeds.json) twice at the defaults,
#               once each with the last kernel taking over below 1 and 64 x leaves active queries
#               (KNN_V16_TAIL; the default is 16), and cases 200 and 412 at the defaults
#                                 -> v16/{trees-100,seeds}-{a,b}.*, v16/*-tail{1,64}.*, v16/seeds-200-412.*
#   v16nn       v16's pair in registers for topk = 1 (KNN_V16_NEAREST, KNN_V16_LANES): v16's tests, cases 100
#               and 102 (trees.json) twice each at the defaults and without the pair, once each with the
#               last kernel below 32 and 64 x leaves active queries, with 2 lanes and with leaf 128, v11
#               beside v16 on them, cases 200, 405 and 409 at the defaults, and (when ncu is installed)
#               the source counters of case 100's first two waves
#                 -> v16nn/{trees,trees-heaps}-{a,b}.*, v16nn/trees-{tail32,tail64,lanes2,leaf128,v11}.*,
#                    v16nn/seeds.*,
#                    v16nn/ncu-100-wave{0,1}-src.csv, tests.log
#   v16waves    seed 004's Figures 19-21 for v16: configs/v16-waves.json (d = 5, 10, 20) with the box and the
#               median test and every wave sorted (KNN_V16_FINAL=0), one call each, 512 queries validated,
#               WAVES_LIMIT s per process (default 120); v16's tests first unless WAVES_TESTS=0
#                                  -> v16waves/waves-{box,median}.*, tests.log
#   gpuall      every GPU test (Gpu*) and v15's and v16's CPU tests in one knn_tests process (faster than
#               ctest's process per test)                                       -> gpu-tests.log
#   profile     Nsight Compute (when installed): every kernel's duration in one call of v16 on cases 100
#               (trees.json) and 409 (seeds.json), the sections of v16's first search waves on case 100
#               and of v15's chunk kernels on case 10          -> profile/*.txt
#   hostvar     the host-side movement between processes (scripts/tune/process-variance.sh): HOSTVAR_RUNS
#               (default 3) runs of each of HOSTVAR_CONDS (default "default passive"; also pageable, thp,
#               pageable-thp), alternating                        -> hostvar/*, hostvar/summary.txt
#   sanitize    compute-sanitizer memcheck and racecheck, each over every GPU version on cases 0-7 and
#               over the GPU test suite's awkward sizes (SANITIZE_TIMEOUT s per process, SANITIZE_JOBS at once;
#               SANITIZE_VERSIONS=v7,v8 narrows the per-version part, SANITIZE_TOOLS=memcheck both)
set -uo pipefail
export PATH="$PATH:/usr/local/cuda/bin"
cd "$(dirname "$0")/../.."
if [ -n "${OUT:-}" ]; then
  archive="$OUT/gpu-check.tar.gz"
  OUT=$(mktemp -d /tmp/gpu-check.XXXXXX)
  trap 'tar -C "$OUT" -czf "$archive" . && echo "gpu-check: archive $archive"' EXIT
  trap 'echo "gpu-check: terminated"; exit 124' TERM INT
else
  OUT=results/local/gpu-check
fi
mkdir -p "$OUT"
BUILD_DIR=${BUILD_DIR:-build-gpu}

steps=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; extra=("$@"); break ;;
    --sanitize) steps+=(sanitize) ;;
    tests|gputests|matrix|pageable|trees|scaling|secondlevel|seedgeometry|integrity|seeds|slowed|int8|v15|fp32|ramp|filtertopk|v15tests|v15final|v15seed|v15collect|v15balance|v15tc|v15gate|v15seeds|v15stage|v15taper|v15floor|v15splits|v15merge|v15nearest|v15heaps|placement|v16|v16nn|v16waves|gpuall|profile|hostvar|sanitize) steps+=("$1") ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | grep '^#'; exit 0 ;;
    *) echo "gpu-check.sh: unknown step '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#steps[@]} -eq 0 ] && steps=(tests matrix pageable)

status=0
log() { echo "== gpu-check: $*" | tee -a "$OUT/gpu-check.log"; }
# One knnbench run: measure STEM [VAR=value ...] -- ARGS writes STEM.{json,md,log} (the variables
# set for this run only, the step's extra arguments appended) and prints its table.
measure() {
  local stem=$1 envs=()
  shift
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$bin" "$@" --json "$stem.json" --md "$stem.md" "${extra[@]}" >"$stem.log" 2>&1 || status=1
  sed -n '/^Median wall time/,$p' "$stem.log"
}
# Shapes measured briefly: a few samples, 1024 queries validated.
quick=(--min-samples 3 --max-time 2 --validate-queries 1024)
# gtests LOG FILTER WHAT: the knn_tests that FILTER selects, in one process, into LOG; prints the summary.
gtests() {
  log "$3"
  "$BUILD_DIR/tests/knn_tests" --gtest_filter="$2" >"$1" 2>&1 || status=1
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]" "$1" | head -n 30
}
# v15's tests (GPU and CPU) into DIR/tests.log.
v15_tests() { gtests "$1/tests.log" '*GpuV15*:V15*' "v15: its tests (GPU and CPU)"; }

log "configure + build in $BUILD_DIR"
nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm --format=csv >>"$OUT/gpu-check.log" 2>&1 || true
if ! { cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${KNN_CMAKE_ARGS:-} &&
       cmake --build "$BUILD_DIR" -j"$(nproc)"; } >"$OUT/build.log" 2>&1; then
  tail -n 40 "$OUT/build.log"
  log "build FAILED"
  exit 2
fi
bin="$BUILD_DIR/knnbench"
# The build leaves the 1-minute load average high (7 on 16 cores right after a full build), and the
# runs that follow then start on a "busy machine": wait up to 90 s for it to settle below 2.
for _ in $(seq 1 18); do
  awk '{exit !($1 >= 2)}' /proc/loadavg || break
  sleep 5
done
log "load average before measuring: $(cut -d' ' -f1-3 /proc/loadavg)"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')

for step in "${steps[@]}"; do
  case "$step" in
    tests)
      log "ctest"
      ctest --test-dir "$BUILD_DIR" --output-on-failure -j4 >"$OUT/ctest.log" 2>&1 || status=1
      grep -E "tests passed|tests failed|Skipped|\*\*\*Failed" "$OUT/ctest.log" | tail -n 15
      ;;
    gputests)
      log "ctest -L gpu"
      ctest --test-dir "$BUILD_DIR" --output-on-failure -L gpu -j4 >"$OUT/ctest-gpu.log" 2>&1 || status=1
      grep -E "tests passed|tests failed|\*\*\*Failed" "$OUT/ctest-gpu.log" | tail -n 15
      ;;
    matrix)
      log "default matrix, pinned"
      "$bin" --json "$OUT/default.json" --md "$OUT/default.md" "${extra[@]}" >"$OUT/default.log" 2>&1 || status=1
      sed -n '/^Median wall time/,$p' "$OUT/default.log"
      ;;
    pageable)
      log "default matrix, pageable host memory"
      "$bin" --host-memory pageable --version v1,v2,v3,v4,v5,v6,v7 --json "$OUT/pageable.json" --md "$OUT/pageable.md" "${extra[@]}" \
        >"$OUT/pageable.log" 2>&1 || status=1
      sed -n '/^Median wall time/,$p' "$OUT/pageable.log"
      ;;
    trees)
      log "trees matrix"
      "$bin" --config configs/trees.json --version v10,v11,v12,v13 --validate-queries 8192 --json "$OUT/trees.json" --md "$OUT/trees.md" \
        "${extra[@]}" >"$OUT/trees.log" 2>&1 || status=1
      sed -n '/^Median wall time/,$p' "$OUT/trees.log"
      ;;
    scaling)
      for d in 1 2 "$ngpu"; do
        [ "$d" -gt "$ngpu" ] && continue
        devs=$(seq -s, 0 $((d - 1)))
        log "v8/v9 on devices $devs"
        "$bin" --version v8,v9 --devices "$devs" --json "$OUT/devices$d.json" --md "$OUT/devices$d.md" "${extra[@]}" \
          >"$OUT/devices$d.log" 2>&1 || status=1
        sed -n '/^Median wall time/,$p' "$OUT/devices$d.log"
      done
      ;;
    secondlevel)
      log "v7 (host second-level reduction) beside t5 (GPU second-level reduction)"
      "$BUILD_DIR/tests/knnbench-testbin" --version v7,t5 --json "$OUT/v7-second-level.json" --md "$OUT/v7-second-level.md" \
        "${extra[@]}" >"$OUT/v7-second-level.log" 2>&1 || status=1
      sed -n '/^Median wall time/,$p' "$OUT/v7-second-level.log"
      ;;
    seedgeometry)
      # t6 fails validation by design; the step fails only when another result does not pass.
      for mem in pinned pageable; do
        name=seed-geometry; [ "$mem" = pageable ] && name=seed-geometry-pageable
        log "v3 beside t6 (the seeds' v3 geometry), cases 10-11, $mem host memory"
        "$BUILD_DIR/tests/knnbench-testbin" --version v3,t6 --case 10,11 --host-memory "$mem" --json "$OUT/$name.json" \
          --md "$OUT/$name.md" "${extra[@]}" >"$OUT/$name.log" 2>&1
        sed -n '/^Median wall time/,$p' "$OUT/$name.log"
        others=$(grep -E "^(Fail|Error|Skip)" "$OUT/$name.log" | grep -vc " t6 ")
        [ "$others" -eq 0 ] || status=1
      done
      ;;
    integrity)
      # compare exits non-zero when any row is SLOWER: the step fails then.
      mkdir -p "$OUT/integrity"
      for run in ${INTEGRITY_RUNS:-1 2}; do
        for m in ${INTEGRITY_SETS:-default trees}; do
          log "integrity: $m matrix, run $run"
          if [ "$m" = trees ]; then
            set_args=(--config configs/trees.json --version v10,v11,v12,v13 --validate-queries 8192)
          else
            set_args=()
          fi
          "$bin" "${set_args[@]}" --json "$OUT/integrity/$m-$run.json" --md "$OUT/integrity/$m-$run.md" "${extra[@]}" \
            >"$OUT/integrity/$m-$run.log" 2>&1 || status=1
        done
      done
      for m in ${INTEGRITY_SETS:-default trees}; do
        [ -f "$OUT/integrity/$m-1.json" ] && [ -f "$OUT/integrity/$m-2.json" ] || continue
        "$bin" compare "$OUT/integrity/$m-1.json" "$OUT/integrity/$m-2.json" >"$OUT/integrity/compare-$m.txt" 2>&1
        rc=$?; echo "compare $m: exit $rc" | tee -a "$OUT/gpu-check.log"; [ $rc -eq 0 ] || status=1
      done
      ;;
    seeds)
      log "seeds: group small, every version"
      "$bin" --config configs/seeds.json --group small --json "$OUT/seeds-small.json" --md "$OUT/seeds-small.md" \
        "${extra[@]}" >"$OUT/seeds-small.log" 2>&1 || status=1
      sed -n '/^Median wall time/,$p' "$OUT/seeds-small.log"
      not_v0=$("$bin" --list | awk '/^  v[0-9]+ / && $1 != "v0" {print $1}' | paste -sd, -)
      log "seeds: cases 200, 302, 405-416 with $not_v0"
      "$bin" --config configs/seeds.json --case "${SEEDS_LARGE_CASES:-200,302,405,407,409,412,416}" \
        --version "${SEEDS_LARGE_VERSIONS:-$not_v0}" --json "$OUT/seeds-large.json" --md "$OUT/seeds-large.md" \
        "${extra[@]}" >"$OUT/seeds-large.log" 2>&1 || status=1
      sed -n '/^Median wall time/,$p' "$OUT/seeds-large.log"
      ;;
    slowed)
      mkdir -p "$OUT/integrity"
      for pct in 0 "${SLOWDOWN_PCT:-10}"; do
        log "slowed: v1-v7 and t8 (v4 uploading and rescanning $pct % more references) on cases 8-11"
        KNN_SLOWDOWN_PCT=$pct "$BUILD_DIR/tests/knnbench-testbin" --version v1,v2,v3,v4,v5,v6,v7,t8 --case 8-11 \
          --json "$OUT/integrity/slowed-$pct.json" --md "$OUT/integrity/slowed-$pct.md" "${extra[@]}" \
          >"$OUT/integrity/slowed-$pct.log" 2>&1 || status=1
      done
      "$bin" compare "$OUT/integrity/slowed-0.json" "$OUT/integrity/slowed-${SLOWDOWN_PCT:-10}.json" >"$OUT/integrity/compare-slowed.txt" 2>&1
      echo "compare slowed: exit $? (expected 1: the t8 rows are SLOWER; compare-slowed.txt counts them)" | tee -a "$OUT/gpu-check.log"
      ;;
    int8)
      mkdir -p "$OUT/int8"
      v15_tests "$OUT/int8"
      for mode in off auto on; do
        log "int8: configs/int8-shapes.json, v15 with KNN_V15_INT8=$mode"
        measure "$OUT/int8/shapes-$mode" KNN_V15_INT8=$mode -- --config configs/int8-shapes.json --version v15 --min-samples 3 --max-time 2
      done
      if [ -n "${INT8_REAL:-}" ]; then
        log "int8: cases 500 and 501 of $INT8_REAL with v14 and v15"
        measure "$OUT/int8/fmnist" -- --config "$INT8_REAL" --case 500,501 --version v14,v15
      fi
      ;;
    v15)
      mkdir -p "$OUT/v15"
      v15_tests "$OUT/v15"
      log "v15: default matrix with the tensor-core filter (automatic) beside the best of v1-v7 and v14"
      measure "$OUT/v15/default" -- --version v4,v6,v7,v14,v15
      log "v15: default matrix with KNN_V15_TC=off (the fused scan)"
      measure "$OUT/v15/default-tc-off" KNN_V15_TC=off -- --version v15
      for mode in off on; do
        log "v15: configs/tc-shapes.json with KNN_V15_TC=$mode"
        measure "$OUT/v15/tc-shapes-$mode" KNN_V15_TC=$mode -- --config configs/tc-shapes.json --version v15 "${quick[@]}"
      done
      ;;
    fp32)
      mkdir -p "$OUT/fp32"
      v15_tests "$OUT/fp32"
      log "v15: default matrix (the filters where their rules take them) beside v4, v6 and v7"
      measure "$OUT/fp32/default" -- --version v4,v6,v7,v15
      log "v15: default matrix with KNN_V15_FP32_FILTER=off, and cases 8-11 with 4 queries per thread"
      measure "$OUT/fp32/default-off" KNN_V15_FP32_FILTER=off -- --version v15
      measure "$OUT/fp32/default-q4" KNN_V15_FP32_QUERIES=4 -- --version v15 --case 8-11
      for mode in off on; do
        log "v15: configs/fp32-shapes.json with KNN_V15_FP32_FILTER=$mode"
        measure "$OUT/fp32/shapes-$mode" KNN_V15_FP32_FILTER=$mode -- --config configs/fp32-shapes.json --version v15 "${quick[@]}"
      done
      ;;
    ramp)
      mkdir -p "$OUT/ramp"
      v15_tests "$OUT/ramp"
      log "ramp: cases 8-11, v4, v6, v7 and v15, then v15 with the ramp off, on, off"
      measure "$OUT/ramp/default-on" -- --case 8-11 --version v4,v6,v7,v15
      measure "$OUT/ramp/default-off" KNN_V15_RAMP=0 -- --case 8-11 --version v15
      measure "$OUT/ramp/default-on2" -- --case 8-11 --version v15
      measure "$OUT/ramp/default-off2" KNN_V15_RAMP=0 -- --case 8-11 --version v15
      for shapes in fp32 tc; do
        measure "$OUT/ramp/$shapes-shapes-on" -- --config "configs/$shapes-shapes.json" --version v15 "${quick[@]}"
        measure "$OUT/ramp/$shapes-shapes-off" KNN_V15_RAMP=0 -- --config "configs/$shapes-shapes.json" --version v15 "${quick[@]}"
      done
      ;;
    v16)
      mkdir -p "$OUT/v16"
      gtests "$OUT/v16/tests.log" '*V16*' "v16: its tests"
      trees=(--config configs/trees.json --case 100 --version v16 --validate-queries 8192)
      seeds=(--config configs/seeds.json --case 405,409 --version v16 --validate-queries 8192 --max-time 3)
      for run in a b; do
        measure "$OUT/v16/trees-100-$run" -- "${trees[@]}"
        measure "$OUT/v16/seeds-$run" -- "${seeds[@]}"
      done
      for tail in 1 64; do
        measure "$OUT/v16/trees-100-tail$tail" KNN_V16_TAIL=$tail -- "${trees[@]}"
        measure "$OUT/v16/seeds-tail$tail" KNN_V16_TAIL=$tail -- "${seeds[@]}"
      done
      measure "$OUT/v16/seeds-200-412" -- --config configs/seeds.json --case 200,412 --version v16 \
        --validate-queries 8192 --max-time 2
      ;;
    v16nn)
      mkdir -p "$OUT/v16nn"
      gtests "$OUT/v16nn/tests.log" '*V16*' "v16: its tests"
      trees=(--config configs/trees.json --case 100,102 --version v16 --validate-queries 8192)
      for run in a b; do
        measure "$OUT/v16nn/trees-$run" -- "${trees[@]}"
        measure "$OUT/v16nn/trees-heaps-$run" KNN_V16_NEAREST=0 -- "${trees[@]}"
      done
      for tail in 32 64; do measure "$OUT/v16nn/trees-tail$tail" KNN_V16_TAIL=$tail -- "${trees[@]}"; done
      measure "$OUT/v16nn/trees-lanes2" KNN_V16_LANES=2 -- "${trees[@]}"
      measure "$OUT/v16nn/trees-leaf128" KNN_V16_LEAF=128 -- "${trees[@]}"
      measure "$OUT/v16nn/trees-v11" -- --config configs/trees.json --case 100,102 --version v11,v16 \
        --validate-queries 8192 --max-time 2
      seeds=(--config configs/seeds.json --case 200,405,409 --version v16 --validate-queries 8192 --max-time 3)
      measure "$OUT/v16nn/seeds" -- "${seeds[@]}"
      if command -v ncu >/dev/null 2>&1; then
        log "ncu: source counters of case 100's first two search waves"
        for wave in 0 1; do
          ncu --clock-control none -k regex:nearest_kernel -s $wave -c 1 --section SourceCounters \
            --section WarpStateStats --section SpeedOfLight --section Occupancy --import-source yes \
            -o "$OUT/v16nn/w$wave" "$bin" --config configs/trees.json --case 100 --version v16 --warmup 0 \
            --min-samples 1 --max-samples 1 --min-time 0 --max-noise 0 --no-validate --quiet >/dev/null 2>&1 || status=1
          ncu -i "$OUT/v16nn/w$wave.ncu-rep" --page details >"$OUT/v16nn/ncu-100-wave$wave.txt" 2>&1 || status=1
          ncu -i "$OUT/v16nn/w$wave.ncu-rep" --page source --csv --print-source cuda,sass \
            >"$OUT/v16nn/ncu-100-wave$wave-src.csv" 2>&1 || status=1
          rm -f "$OUT/v16nn/w$wave.ncu-rep"
        done
      fi
      ;;
    v16waves)
      mkdir -p "$OUT/v16waves"
      [ "${WAVES_TESTS:-1}" = 0 ] || gtests "$OUT/v16waves/tests.log" '*V16*' "v16: its tests"
      for t in box median; do
        log "v16 waves, $t test (every wave sorted)"
        KNN_V16_TEST=$t KNN_V16_FINAL=0 timeout "${WAVES_LIMIT:-120}" "$bin" --config configs/v16-waves.json \
          --version v16 --validate-queries 512 --warmup 0 --min-samples 1 --max-samples 1 --min-time 0 \
          --json "$OUT/v16waves/waves-$t.json" --md "$OUT/v16waves/waves-$t.md" >"$OUT/v16waves/waves-$t.log" 2>&1 ||
          { log "waves, $t test: exit $? (124: past WAVES_LIMIT; the finished cases are in the JSON)"; status=1; }
        sed -n '/^Median wall time/,$p' "$OUT/v16waves/waves-$t.log"
      done
      ;;
    filtertopk)
      mkdir -p "$OUT/filtertopk"
      gtests "$OUT/filtertopk/tests.log" '*GpuFilterTopk*:*GpuTc*:*GpuFp32*:V15*' "v15: the filters' tests (GPU and CPU)"
      shapes=(--config configs/tc-topk-shapes.json --version v15 --min-samples 3 --max-time 2)
      measure "$OUT/filtertopk/shapes-scan" KNN_V15_TC=off -- "${shapes[@]}"
      measure "$OUT/filtertopk/shapes-tc-plain" KNN_V15_TC=on KNN_V15_TC_SPLIT=off -- "${shapes[@]}"
      measure "$OUT/filtertopk/shapes-tc-split" KNN_V15_TC=on KNN_V15_TC_SPLIT=on -- "${shapes[@]}"
      seeds=(--config configs/seeds.json --version v15 --validate-queries 2048 --max-time 2)
      measure "$OUT/filtertopk/seeds-412-416-scan" KNN_V15_TC=off -- "${seeds[@]}" --case 412,416 --min-samples 2
      measure "$OUT/filtertopk/seeds-tc-plain" KNN_V15_TC=on KNN_V15_TC_SPLIT=off -- "${seeds[@]}" --case 405,412,416
      measure "$OUT/filtertopk/sweep-tc" KNN_V15_TC=on -- --config configs/v15-topk.json --case 1508,1532 --version v15 \
        --validate-queries 1024 --max-time 2
      measure "$OUT/filtertopk/default-10-11" -- --case 10,11 --version v15
      ;;
    v15tests)
      mkdir -p "$OUT/v15tests"
      v15_tests "$OUT/v15tests"
      ;;
    v15final)
      mkdir -p "$OUT/v15final"
      v15_tests "$OUT/v15final"
      measure "$OUT/v15final/default" -- --case 8-11 --version v4,v6,v7,v15
      measure "$OUT/v15final/seeds" -- --config configs/seeds.json --case 200,405,412,416 --version v15 \
        --validate-queries 2048 --max-time 2
      measure "$OUT/v15final/sweep" -- --config configs/v15-topk.json --version v15 --validate-queries 1024 --max-time 2
      measure "$OUT/v15final/tc-topk-shapes" -- --config configs/tc-topk-shapes.json --version v15 --min-samples 3 --max-time 2
      measure "$OUT/v15final/seeds-405-plain" KNN_V15_TC_SPLIT=off -- --config configs/seeds.json --case 405 --version v15 \
        --validate-queries 2048 --max-time 2
      if command -v ncu >/dev/null 2>&1; then
        log "ncu: one of case 405's filter kernels"
        ncu --clock-control none -k regex:filter_kernel -s 1 -c 1 --section SpeedOfLight --section Occupancy \
          --section WarpStateStats --section SchedulerStats --section InstructionStats --section ComputeWorkloadAnalysis \
          "$bin" --config configs/seeds.json --case 405 --version v15 --warmup 0 --min-samples 1 --max-samples 1 \
          --min-time 0 --max-noise 0 --no-validate --quiet >"$OUT/v15final/ncu-405-filter.txt" 2>&1 || status=1
      fi
      ;;
    v15seed)
      mkdir -p "$OUT/v15seed"
      v15_tests "$OUT/v15seed"
      for run in a b; do
        measure "$OUT/v15seed/seeds-$run" -- --config configs/seeds.json --case 200,201 --version v14,v15,v16 \
          --validate-queries 8192 --max-time 2
        measure "$OUT/v15seed/unseeded-$run" KNN_V15_SEED=off -- --config configs/seeds.json --case 200,201 \
          --version v15 --validate-queries 8192 --max-time 2
      done
      for run in off on; do
        measure "$OUT/v15seed/shapes-$run" KNN_V15_SEED=$run -- --config configs/seed-shapes.json --version v15 --max-time 2
      done
      measure "$OUT/v15seed/default" -- --case 8-11 --version v15 --max-time 2
      measure "$OUT/v15seed/sweep" -- --config configs/v15-topk.json --version v15 --validate-queries 1024 --max-time 2
      if command -v ncu >/dev/null 2>&1; then
        log "ncu: source counters of case 200's seeded scan"
        ncu --clock-control none -k regex:scan_kernel -s 0 -c 1 --section SourceCounters --section WarpStateStats \
          --section SpeedOfLight --section Occupancy --import-source yes -o "$OUT/v15seed/scan" "$bin" \
          --config configs/seeds.json --case 200 --version v15 --warmup 0 --min-samples 1 --max-samples 1 \
          --min-time 0 --max-noise 0 --no-validate --quiet >/dev/null 2>&1 || status=1
        ncu -i "$OUT/v15seed/scan.ncu-rep" --page details >"$OUT/v15seed/ncu-200-scan.txt" 2>&1 || status=1
        ncu -i "$OUT/v15seed/scan.ncu-rep" --page source --csv --print-source cuda,sass \
          >"$OUT/v15seed/ncu-200-scan-src.csv" 2>&1 || status=1
        rm -f "$OUT/v15seed/scan.ncu-rep"
      fi
      ;;
    v15collect)
      mkdir -p "$OUT/v15collect"
      v15_tests "$OUT/v15collect"
      for run in a b; do
        measure "$OUT/v15collect/seeds-$run" -- --config configs/seeds.json --case 200,201,405 --version v14,v15,v16 \
          --validate-queries 8192 --max-time 2
        measure "$OUT/v15collect/lists-$run" KNN_V15_COLLECT=off -- --config configs/seeds.json --case 200,201,405 \
          --version v15 --validate-queries 8192 --max-time 2
      done
      measure "$OUT/v15collect/exact" KNN_V15_COLLECT_SCORES=off -- --config configs/seeds.json --case 200,201,405 \
        --version v15 --validate-queries 8192 --max-time 2
      for q in 1 4; do
        measure "$OUT/v15collect/seeds-q$q" KNN_V15_COLLECT_QUERIES=$q -- --config configs/seeds.json --case 200,201,405 \
          --version v15 --validate-queries 8192 --max-time 2
      done
      for run in on off; do
        measure "$OUT/v15collect/shapes-$run" KNN_V15_COLLECT=$run -- --config configs/seed-shapes.json --version v15 --max-time 2
        measure "$OUT/v15collect/tc-topk-shapes-$run" KNN_V15_COLLECT=$run -- --config configs/tc-topk-shapes.json \
          --version v15 --max-time 2
      done
      measure "$OUT/v15collect/default" -- --case 8-11 --version v15 --max-time 2
      obj="$BUILD_DIR/CMakeFiles/knn_versions.dir/kernels/common/seed_collect.cu.o"
      if command -v cuobjdump >/dev/null 2>&1 && [ -f "$obj" ]; then  # the SASS of case 405's and 200's kernels
        cuobjdump -sass "$obj" | awk '/Function : /{f=($0 ~ /collect_kernelILi5ELi4ELb1|collect_kernelILi2ELi2ELb1/)} f' \
          >"$OUT/v15collect/collect-sass.txt" 2>&1 || status=1
      fi
      if command -v ncu >/dev/null 2>&1; then
        for c in 200 405; do
          log "ncu: case $c's collecting kernel"
          ncu --clock-control none -k regex:collect_kernel -s 0 -c 1 --section SpeedOfLight --section Occupancy \
            --section WarpStateStats --section SchedulerStats --section LaunchStats "$bin" --config configs/seeds.json \
            --case $c --version v15 --warmup 0 --min-samples 1 --max-samples 1 --min-time 0 --max-noise 0 --no-validate \
            --quiet >"$OUT/v15collect/ncu-$c-collect.txt" 2>&1 || status=1
        done
      fi
      ;;
    v15balance)
      mkdir -p "$OUT/v15balance"
      v15_tests "$OUT/v15balance"
      for run in 1 2 3; do
        for b in auto off; do
          measure "$OUT/v15balance/$b-$run" KNN_V15_COLLECT_BALANCE=$b -- --config configs/seeds.json --case 200,201,405 \
            --version v15 --validate-queries 8192 --max-time 2
        done
      done
      measure "$OUT/v15balance/peers" -- --config configs/seeds.json --case 200,201,405 --version v14,v16 \
        --validate-queries 8192 --max-time 2
      for b in auto off; do
        measure "$OUT/v15balance/shapes-$b" KNN_V15_COLLECT_BALANCE=$b -- --config configs/seed-shapes.json --version v15 --max-time 2
      done
      measure "$OUT/v15balance/default" -- --case 8-11 --version v15 --max-time 2
      obj="$BUILD_DIR/CMakeFiles/knn_versions.dir/kernels/common/seed_collect.cu.o"
      if command -v cuobjdump >/dev/null 2>&1 && [ -f "$obj" ]; then
        cuobjdump -sass "$obj" | awk '/Function : /{f=($0 ~ /collect_kernelILi5ELi4ELb1/)} f' \
          >"$OUT/v15balance/collect-sass.txt" 2>&1 || status=1
      fi
      if command -v ncu >/dev/null 2>&1; then
        log "ncu: case 405's collecting kernel"
        ncu --clock-control none -k regex:collect_kernel -s 0 -c 1 --section SpeedOfLight --section Occupancy \
          --section WarpStateStats --section SchedulerStats --section LaunchStats "$bin" --config configs/seeds.json \
          --case 405 --version v15 --warmup 0 --min-samples 1 --max-samples 1 --min-time 0 --max-noise 0 --no-validate \
          --quiet >"$OUT/v15balance/ncu-405-collect.txt" 2>&1 || status=1
      fi
      ;;
    v15tc)
      mkdir -p "$OUT/v15tc"
      v15_tests "$OUT/v15tc"
      for run in 1 2; do
        measure "$OUT/v15tc/tc-$run" KNN_V15_COLLECT_TC=on KNN_V15_TC_SPLIT=off -- --config configs/seeds.json \
          --case 200,201,405 --version v15 --validate-queries 8192 --max-time 2
        measure "$OUT/v15tc/split-$run" KNN_V15_COLLECT_TC=on KNN_V15_TC_SPLIT=on -- --config configs/seeds.json \
          --case 200,201,405 --version v15 --validate-queries 8192 --max-time 2
        measure "$OUT/v15tc/cuda-$run" KNN_V15_COLLECT_TC=off -- --config configs/seeds.json --case 200,201,405 \
          --version v15 --validate-queries 8192 --max-time 2
      done
      for run in on off; do
        measure "$OUT/v15tc/shapes-$run" KNN_V15_COLLECT_TC=$run KNN_V15_TC_SPLIT=off -- --config configs/seed-shapes.json \
          --version v15 --max-time 2
        measure "$OUT/v15tc/tc-topk-shapes-$run" KNN_V15_COLLECT_TC=$run KNN_V15_TC_SPLIT=off -- \
          --config configs/tc-topk-shapes.json --version v15 --max-time 2
      done
      measure "$OUT/v15tc/default" -- --case 8-11 --version v15 --max-time 2
      obj="$BUILD_DIR/CMakeFiles/knn_versions.dir/kernels/common/seed_collect_tc.cu.o"
      if command -v cuobjdump >/dev/null 2>&1 && [ -f "$obj" ]; then
        cuobjdump -sass "$obj" >"$OUT/v15tc/collect-tc-sass.txt" 2>&1 || status=1
      fi
      if command -v ncu >/dev/null 2>&1; then
        for split in off on; do
          log "ncu: case 405's tensor-core collecting kernel, split $split"
          KNN_V15_COLLECT_TC=on KNN_V15_TC_SPLIT=$split ncu --clock-control none -k regex:collect_tc_kernel -s 0 -c 1 \
            --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
            --section LaunchStats --section ComputeWorkloadAnalysis "$bin" --config configs/seeds.json --case 405 \
            --version v15 --warmup 0 --min-samples 1 --max-samples 1 --min-time 0 --max-noise 0 --no-validate \
            --quiet >"$OUT/v15tc/ncu-405-$([ $split = on ] && echo split || echo tc).txt" 2>&1 || status=1
        done
      fi
      ;;
    v15gate)
      mkdir -p "$OUT/v15gate"
      v15_tests "$OUT/v15gate"
      seeds=(--config configs/seeds.json --case 200,201,405 --version v15 --validate-queries 8192 --max-time 2)
      for run in 1 2; do
        measure "$OUT/v15gate/auto-$run" -- "${seeds[@]}"
        measure "$OUT/v15gate/off-$run" KNN_V15_COLLECT_TC=off -- "${seeds[@]}"
      done
      measure "$OUT/v15gate/on" KNN_V15_COLLECT_TC=on -- "${seeds[@]}"
      for tc in auto off; do
        measure "$OUT/v15gate/tc-topk-shapes-$tc" KNN_V15_COLLECT_TC=$tc -- --config configs/tc-topk-shapes.json --version v15 --max-time 2
        measure "$OUT/v15gate/shapes-$tc" KNN_V15_COLLECT_TC=$tc -- --config configs/seed-shapes.json --version v15 --max-time 2
      done
      for tc in auto off on; do
        measure "$OUT/v15gate/k4-uniform-$tc" KNN_V15_COLLECT_TC=$tc -- --k 4 --m 1048576 --n 1048576 --topk 5 \
          --version v15 --validate-queries 4096 --max-time 2
        measure "$OUT/v15gate/k4-clusters-$tc" KNN_V15_COLLECT_TC=$tc -- --k 4 --m 1048576 --n 1048576 --topk 5 \
          --distribution clusters --version v15 --validate-queries 4096 --max-time 2
        measure "$OUT/v15gate/k5-top8-$tc" KNN_V15_COLLECT_TC=$tc -- --k 5 --m 262144 --n 1048576 --topk 8 \
          --version v15 --validate-queries 4096 --max-time 2
      done
      measure "$OUT/v15gate/default" -- --case 8-11 --version v15 --max-time 2
      ;;
    v15seeds)
      mkdir -p "$OUT/v15seeds"
      measure "$OUT/v15seeds/seeds" -- --config configs/seeds.json --version v15 --validate-queries 2048 --max-time 2
      measure "$OUT/v15seeds/default" -- --case 0-11 --version v15 --max-time 2
      measure "$OUT/v15seeds/peers-450" -- --config configs/seeds.json --case 450 --version v14,v15,v16 --max-time 2
      ;;
    v15stage)
      mkdir -p "$OUT/v15stage"
      v15_tests "$OUT/v15stage"
      for run in 1 2; do
        for stage in auto off; do
          measure "$OUT/v15stage/default-$stage-$run" KNN_V15_FP32_STAGE=$stage -- --case 8-11 --version v15 --max-time 2
        done
      done
      measure "$OUT/v15stage/fp32-shapes-auto" KNN_V15_FP32_FILTER=on -- --config configs/fp32-shapes.json --version v15 "${quick[@]}"
      for stage in on off; do
        measure "$OUT/v15stage/stage-shapes-$stage" KNN_V15_FP32_STAGE=$stage KNN_V15_FP32_FILTER=on -- \
          --config configs/fp32-stage-shapes.json --version v15 "${quick[@]}"
      done
      if command -v ncu >/dev/null 2>&1; then
        for stage in on off; do
          log "ncu: case 10's fp32 filter kernels, KNN_V15_FP32_STAGE=$stage"
          KNN_V15_FP32_STAGE=$stage ncu --clock-control none -k regex:'^(staged|filter)_kernel' -c 5 \
            --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
            --section WarpStateStats "$bin" --case 10 --version v15 --warmup 0 --min-samples 1 --max-samples 1 \
            --min-time 0 --max-noise 0 --no-validate --quiet >"$OUT/v15stage/ncu-case10-$stage.txt" 2>&1 || status=1
        done
      fi
      ;;
    v15taper)
      mkdir -p "$OUT/v15taper"
      v15_tests "$OUT/v15taper"
      for run in 1 2 3; do
        for taper in 1 0; do
          measure "$OUT/v15taper/default-$taper-$run" KNN_V15_TAPER=$taper -- --case 8-10 --version v15 --max-time 1.5
        done
      done
      ;;
    v15floor)
      mkdir -p "$OUT/v15floor"
      measure "$OUT/v15floor/default" -- --case 0-11 --version v1,v2,v3,v4,v5,v6,v7,v8,v9,v11,v13,v15 --max-time 2
      if python3 -c 'import matplotlib' 2>/dev/null; then
        python3 scripts/plots/plot.py "$OUT/v15floor/default.json" -o "$OUT/v15floor/v15-vs-floor.png" --only vs-floor \
          --highlight v15 >"$OUT/v15floor/plot.log" 2>&1 || status=1
      fi
      ;;
    v15splits)
      mkdir -p "$OUT/v15splits"
      measure "$OUT/v15splits/default-v7" -- --case 0-7 --version v7 --max-time 1
      declare -A seen=()
      for g in ${SPLITS_GROUPS:-16 4 2 1 8 16}; do
        seen[$g]=$(( ${seen[$g]:-0} + 1 )); tag=g$g; [ "${seen[$g]}" -gt 1 ] && tag=g$g-${seen[$g]}
        log "v15 with KNN_V15_MIN_GROUPS=$g ($tag)"
        measure "$OUT/v15splits/shapes-$tag" KNN_V15_MIN_GROUPS=$g -- --config configs/v15-splits.json --version v15 --min-samples 3 --max-time 2 --validate-queries 128
        measure "$OUT/v15splits/default-$tag" KNN_V15_MIN_GROUPS=$g -- --case 0-11 --version v15 --max-time 1 --validate-queries 128
      done
      ;;
    v15merge)
      mkdir -p "$OUT/v15merge"
      v15_tests "$OUT/v15merge"
      splits=(--config configs/v15-splits.json --version v15 --min-samples 3 --max-time 2 --validate-queries 128)
      measure "$OUT/v15merge/shapes-on" -- "${splits[@]}"
      measure "$OUT/v15merge/shapes-off" KNN_V15_MERGE_RUNS=0 -- "${splits[@]}"
      measure "$OUT/v15merge/shapes-on-g64" KNN_V15_MIN_GROUPS=64 -- "${splits[@]}"
      measure "$OUT/v15merge/shapes-on2" -- "${splits[@]}"
      KNN_V15_MERGE_RUNS=2 "$bin" --case 0 --version v15 --max-time 1 --json "$OUT/v15merge/bad-knob.json" \
        >"$OUT/v15merge/bad-knob.log" 2>&1; echo "exit $?" >>"$OUT/v15merge/bad-knob.log"
      tail -n 5 "$OUT/v15merge/bad-knob.log"
      ;;
    v15nearest)
      mkdir -p "$OUT/v15nearest"
      nearest=(--config configs/v15-splits.json --case "$(seq -s, 1850 3 1919)" --version v15 --min-samples 3 --max-time 2
               --validate-queries 128)
      for run in a b; do
        measure "$OUT/v15nearest/shapes-$run" -- "${nearest[@]}"
        measure "$OUT/v15nearest/shapes-g16-$run" KNN_V15_MIN_GROUPS=16 -- "${nearest[@]}"
      done
      ;;
    v15heaps)
      mkdir -p "$OUT/v15heaps"
      heaps=(--config configs/v15-splits.json --case "$(seq -s, 1852 3 1921)" --version v15 --min-samples 3 --max-time 2
             --validate-queries 128)
      adhoc1=(--k 3 --m 7 --n 1048576 --topk 1024 --version v15 --min-samples 3 --max-time 2)
      adhoc2=(--k 16 --m 32 --n 1048576 --topk 256 --version v15 --min-samples 3 --max-time 2)
      for run in a b; do
        measure "$OUT/v15heaps/shapes-$run" -- "${heaps[@]}"
        measure "$OUT/v15heaps/shapes-g16-$run" KNN_V15_MIN_GROUPS=16 -- "${heaps[@]}"
        measure "$OUT/v15heaps/adhoc1-$run" -- "${adhoc1[@]}"
        measure "$OUT/v15heaps/adhoc1-g16-$run" KNN_V15_MIN_GROUPS=16 -- "${adhoc1[@]}"
        measure "$OUT/v15heaps/adhoc2-$run" -- "${adhoc2[@]}"
        measure "$OUT/v15heaps/adhoc2-g16-$run" KNN_V15_MIN_GROUPS=16 -- "${adhoc2[@]}"
      done
      ;;
    placement)
      log "host buffers' placement against their read speed (scripts/tune/placement_probe.cu)"
      mkdir -p "$OUT/placement"
      nvcc -O3 -std=c++17 -o "$BUILD_DIR/placement_probe" scripts/tune/placement_probe.cu >"$OUT/placement/build.log" 2>&1 || status=1
      for run in $(seq 1 "${PLACEMENT_RUNS:-4}"); do
        "$BUILD_DIR/placement_probe" 8 256 5 >"$OUT/placement/probe-$run.txt" 2>&1 || status=1
        cat "$OUT/placement/probe-$run.txt"
        OMP_NUM_THREADS=1 "$bin" --case 8 --version v0 --max-time 1 --json "$OUT/placement/v0-$run.json" \
          >"$OUT/placement/v0-$run.log" 2>&1 || status=1
        grep -A2 "^Median wall time" "$OUT/placement/v0-$run.log"
      done
      ;;
    gpuall)
      gtests "$OUT/gpu-tests.log" 'Gpu*:V15*:V16*' "every GPU test, and v15's and v16's CPU tests, in one process"
      ;;
    profile)
      mkdir -p "$OUT/profile"
      if ! command -v ncu >/dev/null 2>&1; then
        log "ncu not found: profile step NOT run"; status=1; continue
      fi
      once=(--warmup 0 --min-samples 1 --max-samples 1 --min-time 0 --max-noise 0 --no-validate --quiet)
      log "profile: kernel durations of one v16 call on cases 100 and 409"
      ncu --clock-control none --metrics gpu__time_duration.sum -c 2000 "$bin" --config configs/trees.json --case 100 \
        --version v16 "${once[@]}" >"$OUT/profile/v16-100-kernels.txt" 2>&1 || status=1
      ncu --clock-control none --metrics gpu__time_duration.sum -c 2000 "$bin" --config configs/seeds.json --case 409 \
        --version v16 "${once[@]}" >"$OUT/profile/v16-409-kernels.txt" 2>&1 || status=1
      sections=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
                --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section InstructionStats)
      log "profile: sections of v16's first search waves (case 100) and v15's chunk kernels (case 10)"
      ncu --clock-control none -k regex:search_kernel -c 3 "${sections[@]}" "$bin" --config configs/trees.json \
        --case 100 --version v16 "${once[@]}" >"$OUT/profile/v16-100-search.txt" 2>&1 || status=1
      ncu --clock-control none -k regex:filter_kernel -c 3 "${sections[@]}" "$bin" --case 10 --version v15 "${once[@]}" \
        >"$OUT/profile/v15-10-fp32.txt" 2>&1 || status=1
      ;;
    hostvar)
      log "host-side movement between processes (scripts/tune/process-variance.sh)"
      mkdir -p "$OUT/hostvar"
      scripts/tune/process-variance.sh "$bin" "$OUT/hostvar" ${HOSTVAR_RUNS:-3} ${HOSTVAR_CONDS:-default passive} >"$OUT/hostvar/summary.txt" 2>&1 || status=1
      cat "$OUT/hostvar/summary.txt"
      ;;
    sanitize)
      if ! command -v compute-sanitizer >/dev/null 2>&1; then
        log "compute-sanitizer not found: sanitize step NOT run"; status=1; continue
      fi
      gpu_versions=${SANITIZE_VERSIONS:-$("$bin" --list | awk '/^  v[0-9]+ / && $3 != "no" {print $1}' | paste -sd, -)}
      tools=${SANITIZE_TOOLS:-memcheck racecheck}
      one=(--warmup 0 --min-samples 1 --min-time 0 --max-samples 1)
      limit=${SANITIZE_TIMEOUT:-420}
      jobs_max=${SANITIZE_JOBS:-6}
      mkdir -p "$OUT/sanitize"
      # One process per (tool, version), several at a time: racecheck on case 7 takes seconds to
      # minutes per version, so a single process over all of them outlives any sensible limit.
      for tool in $tools; do
        log "$tool on $gpu_versions, cases 0-7 (one process per version, $jobs_max at a time, ${limit}s each)"
        for v in ${gpu_versions//,/ }; do
          ( timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 99 "$bin" --version "$v" --case 0-7 "${one[@]}" \
              --json "$OUT/sanitize/$tool-$v.json" >"$OUT/sanitize/$tool-$v.log" 2>&1
            echo "exit $?" >>"$OUT/sanitize/$tool-$v.log" ) &
          while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
        done
        wait
        for v in ${gpu_versions//,/ }; do
          f="$OUT/sanitize/$tool-$v.log"
          summary=$(grep -E "(ERROR|RACECHECK) SUMMARY" "$f" | tail -n 1)
          rc=$(tail -n 1 "$f")
          passes=$(grep -c "^Pass:" "$f"); fails=$(grep -c "^Fail:" "$f")
          echo "$tool $v: ${summary:-no summary} ($rc; $passes pass, $fails fail)" | tee -a "$OUT/gpu-check.log"
          [ "$rc" = "exit 0" ] || status=1
        done
      done
      # The GPU test suite's awkward sizes (cases 0-7 are covered above), every GPU version each.
      for tool in $tools; do
        log "$tool on the GPU test suite's awkward sizes"
        timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 99 "$BUILD_DIR/tests/knn_tests" \
          --gtest_filter='Gpu/*:-Gpu/GpuVersions.ValidateAgainstV0/case*' >"$OUT/sanitize/$tool-awkward.log" 2>&1 || status=1
        grep -E "(ERROR|RACECHECK) SUMMARY|PASSED|FAILED" "$OUT/sanitize/$tool-awkward.log" | tail -n 4 | tee -a "$OUT/gpu-check.log"
      done
      ;;
  esac
done
log "done, status $status; files in $OUT"
exit $status
