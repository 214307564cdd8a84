#!/usr/bin/env bash
# On a GPU machine (a user's, or CI's): build knnbench for this machine's GPU, then run the steps named.
# Every step writes its JSON and markdown (and logs) under $OUT (default results/local/gpu-check;
# ARCHIVE=1: one archive $OUT/gpu-check.tar.gz instead, for a machine that returns few files).
#
#   scripts/gpu/gpu-check.sh [steps...] [-- knnbench args]       (no steps: tests matrix pageable)
#
# First, always: configure and build (Release) in $BUILD_DIR (default build-gpu) for the GPU's compute
# capability (nvidia-smi; CUDAARCHS overrides), KNN_CMAKE_ARGS appended. When python3 imports torch,
# its CMake files (torch.utils.cmake_prefix_path) are added to CMAKE_PREFIX_PATH so that the p-torch
# peers build; otherwise the build says so and goes on without them.                  -> build.log
# steps:
#   build      the build alone
#   tests      ctest, every label (the GPU tests run, not skip)                       -> ctest.log
#   gputests   ctest -L gpu                                                             -> ctest-gpu.log
#   gpuall     every GPU test, and v15's and v16's CPU tests, in one knn_tests process (quicker than
#              ctest's process per test)                                               -> gpu-tests.log
#   sanitize   compute-sanitizer memcheck and racecheck over every GPU version on cases 0-7, one process
#              per version (SANITIZE_VERSIONS=v7,v8 narrows, SANITIZE_TOOLS=memcheck, SANITIZE_TIMEOUT s
#              each, SANITIZE_JOBS at once), and over the GPU tests' awkward sizes     -> sanitize/*
#   matrix     configs/default.json, pinned host memory                                -> default.*
#   pageable   the default matrix, pageable host memory, v1-v7                         -> pageable.*
#   trees      configs/trees.json, v10-v13                                              -> trees.*
#   seeds      configs/seeds.json: group small with every version -> seeds-small.*; the large cases
#              (SEEDS_LARGE_CASES, default 200,302,405,407,409,412,416) with every version but v0 -> seeds-large.*
#   real       configs/real.json: Fashion-MNIST (500, 501) with v14 and v15 -> real-fmnist.*; the cities
#              (510-512) and their uniform twin 519 with v10-v17 -> real-cities.*. Cases whose data files
#              are absent are named and left out (scripts/setup/fetch-data.sh fetches them)
#   integrity  the default and trees matrices twice, separate processes, then `knnbench compare` of the
#              twins (INTEGRITY_SETS="default trees", INTEGRITY_RUNS="1 2" narrow it) -> integrity/*
#   slowed     compare's eye for a slowdown: v1-v7 and test-only t8 (v4 rescanning SLOWDOWN_PCT % more
#              references, default 10) on cases 8-11 at 0 % and at that %, then compare
#                                                    -> integrity/slowed-{0,N}.*, compare-slowed.txt
#   ab         knnbench ab's experiments (docs/measurement.md), AB_PROCESSES per side (default 8), the parts
#              AB_PARTS (default "same-gpu same-cpu same-cpu-large slowed paired runs"):
#              same-gpu  the same binary as A and B, the default matrix's cases 0-11, the GPU versions
#                        AB_GPU_VERSIONS (default v1-v9,v14,v15,v17)                      -> ab/same-gpu.*
#              same-cpu  the same for the CPU versions AB_CPU_VERSIONS (default v0,v10-v13) on AB_CPU_CASES
#                        (default 0-7: cases 8-11 hold calls of 0.1-8 s for them), one sample after a
#                        warm-up per process                                               -> ab/same-cpu.*
#              same-cpu-large  the same on cases 8-11, one call a process and no warm-up (v0 takes
#                        0.05-14 s a call there), one experiment per group of AB_CPU_LARGE_GROUPS
#                        (default "v0 v10,v12 v11,v13")                 -> ab/same-cpu-large-GROUP.*
#              slowed    test-only t7 (v0 slowed) and t8 (v4 with more work) slowed by SLOWDOWN_PCT %
#                        against 0 %, beside v0-v7, cases AB_SLOWED_CASES (default 4-8)  -> ab/slowed.*
#              paired    t7 and t8 slowed by SLOWDOWN_PCT % against 0 %, --paired (both settings in each of
#                        2 x AB_PROCESSES processes), cases AB_SLOWED_CASES                -> ab/paired.*
#              runs      two separate runs of the whole default matrix, every version, and compare (the
#                        host canary's HOST DRIFT)                   -> ab/run-{1,2}.*, ab/compare-runs.txt
#   scaling    v8/v9 on 1, 2 and all GPUs -> devices{1,2,N}.*; then mpirun: scripts/gpu/mpi-check.sh
#              (MPI_STEPS narrows its steps)                                           -> mpi/*
#   (real, peers-gpu: REAL_TRUTH=live runs the real cases whose ground-truth files are absent, validated
#    against v0 computed live on a sample of queries (the case's validate_queries) instead of skipping them:
#    for a machine that receives the data files but not the larger answer files)
#   peers-gpu  v14-v17 beside the GPU peers p-torch and p-torch-direct: cases 8-11 (default.json), 200 and
#              405 (seeds.json), 500, 501, 510, 512 (real.json, those with data files); PEERS_GPU_VERSIONS
#              (a version list) and PEERS_GPU_SETS ("NAME:CONFIG:CASES ...", CONFIG "real" for real.json
#              as REAL_TRUTH says) narrow it
#                                    -> peers-gpu-{default,seeds,real}.{json,md}, their plots (-*.png)
#   peers-cpu  v0, v10, v12 and every CPU peer (p-torch-cpu included) on all the CPU's cores: the CPU peers
#              table (default.json 5-7, seeds.json 201, 300, 301 and 450 without v0, peers.json)
#                                    -> peers-cpu-{default,seeds-small,seeds-450,far}.{json,md}, plots
# The one-off studies of v15-v17 (one knob's settings against each other): scripts/tune/run-study.sh.
set -uo pipefail
export PATH="$PATH:/usr/local/cuda/bin"
cd "$(dirname "$0")/../.."
steps=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; extra=("$@"); break ;;
    --sanitize) steps+=(sanitize) ;;
    build|tests|gputests|gpuall|sanitize|matrix|pageable|trees|seeds|real|integrity|slowed|ab|scaling|peers-gpu|peers-cpu) steps+=("$1") ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | grep '^#'; exit 0 ;;
    *) echo "gpu-check.sh: unknown step '$1' (try --help; the studies are scripts/tune/run-study.sh)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#steps[@]} -eq 0 ] && steps=(tests matrix pageable)
if ! ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU') || [ "$ngpu" -eq 0 ]; then
  echo "gpu-check.sh: no GPU here (nvidia-smi lists none); on a machine without one: ./RUNME.sh --test" >&2
  exit 2
fi
OUT=${OUT:-results/local/gpu-check}
if [ -n "${ARCHIVE:-}" ]; then
  archive="$OUT/gpu-check.tar.gz"
  OUT=$(mktemp -d /tmp/gpu-check.XXXXXX)
  trap 'tar -C "$OUT" -czf "$archive" . && echo "gpu-check: archive $archive"' EXIT
  trap 'echo "gpu-check: terminated"; exit 124' TERM INT
fi
mkdir -p "$OUT"
BUILD_DIR=${BUILD_DIR:-build-gpu}

status=0
log() { echo "== gpu-check: $*" | tee -a "$OUT/gpu-check.log"; }
# run STEM [VAR=value ...] -- BIN ARGS: one knnbench process writing STEM.{json,md,log} (the variables set
# for it alone, the script's extra arguments appended); prints its table; a non-zero exit fails the step.
run() {
  local stem=$1 envs=()
  shift
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$@" --json "$stem.json" --md "$stem.md" "${extra[@]}" >"$stem.log" 2>&1 || status=1
  sed -n '/^Median wall time/,$p' "$stem.log"
}
# plot STEM: the figures of STEM.json beside it (STEM-<figure>.png); no matplotlib is said, not a failure.
plot() {
  [ -f "$1.json" ] || return 0  # the run failed: said above
  python3 scripts/plots/plot.py "$1.json" -o "$1.png" >"$1-plot.log" 2>&1
  case $? in 0) ;; 3) log "no plots: matplotlib missing (scripts/setup/install-deps.sh)" ;; *) status=1; tail -3 "$1-plot.log" ;; esac
}
# registered IDS: those of the comma list IDS that this build registers (`knnbench --list`); the others
# are named in the log.
registered() {
  local have out=() id
  have=$("$bin" --list | awk '{print $1}')
  for id in ${1//,/ }; do
    if grep -qxF -- "$id" <<<"$have"; then out+=("$id"); else log "$id: not registered in this build, left out" >&2; fi
  done
  (IFS=,; echo "${out[*]}")
}
# with_data CONFIG IDS: those of the case ids IDS whose data files exist; the others are named (and logged).
# Under REAL_TRUTH=live an absent ground-truth file does not count (see real_config).
with_data() {
  python3 - "$1" "$2" "$OUT/gpu-check.log" "${REAL_TRUTH:-}" <<'EOF' || echo "$2"  # no python3: knnbench skips them itself, saying why
import json, os, sys
path, ids, log, live = sys.argv[1], [int(i) for i in sys.argv[2].split(",")], sys.argv[3], sys.argv[4] == "live"
cases = {c["id"]: c for c in json.load(open(path))["cases"]}
kept = []
for i in ids:
    fields = ("queries_file", "references_file") + (() if live else ("ground_truth_file",))
    files = [os.path.normpath(os.path.join(os.path.dirname(path), cases[i][f]))
             for f in fields if f in cases[i]]
    absent = [f for f in files if not os.path.exists(f)]
    if absent:
        msg = f"== gpu-check: case {i} of {path} skipped: {', '.join(absent)} absent (fetch: {cases[i].get('fetch', '?')})"
        print(msg, file=sys.stderr)
        print(msg, file=open(log, "a"))
    else:
        kept.append(str(i))
print(",".join(kept))
EOF
}

# real_config: configs/real.json, or under REAL_TRUTH=live a copy beside it (for its relative paths)
# without the ground-truth files that are absent: those cases validate against v0 live, on their sample.
real_config() {
  [ "${REAL_TRUTH:-}" = live ] || { echo configs/real.json; return; }
  python3 - configs/real.json configs/.real-live.json <<'EOF' && echo configs/.real-live.json || echo configs/real.json
import json, os, sys
m = json.load(open(sys.argv[1]))
for c in m["cases"]:
    f = c.get("ground_truth_file")
    if f and not os.path.exists(os.path.join(os.path.dirname(sys.argv[1]), f)):
        del c["ground_truth_file"]
        print(f"== gpu-check: case {c['id']}: {f} absent: validated against v0 live (REAL_TRUTH=live)", file=sys.stderr)
json.dump(m, open(sys.argv[2], "w"))
EOF
}

# The build: for this GPU's compute capability, and with PyTorch's CMake files when python3 has torch.
arch=${CUDAARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')}
cmake_args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=$arch")
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
user_args=(${KNN_CMAKE_ARGS:-})
if [ -n "$torch_prefix" ]; then
  # Appended to the prefix path given in KNN_CMAKE_ARGS, else to the one the build folder holds.
  prefix=$(sed -n 's/^CMAKE_PREFIX_PATH:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)
  for i in "${!user_args[@]}"; do
    case "${user_args[$i]}" in -DCMAKE_PREFIX_PATH=*|-DCMAKE_PREFIX_PATH:*=*) prefix=${user_args[$i]#*=}; unset "user_args[$i]" ;; esac
  done
  case ";$prefix;" in *";$torch_prefix;"*) ;; *) prefix=${prefix:+$prefix;}$torch_prefix ;; esac
  cmake_args+=("-DCMAKE_PREFIX_PATH=$prefix")
  log "torch: PyTorch's CMake files at $torch_prefix (on CMAKE_PREFIX_PATH)"
else
  log "torch: python3 has no torch: building without PyTorch (the p-torch peers skip)"
fi
log "configure + build in $BUILD_DIR for sm_$arch"
nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm,compute_cap --format=csv >>"$OUT/gpu-check.log" 2>&1
if ! { cmake -S . -B "$BUILD_DIR" "${cmake_args[@]}" "${user_args[@]}" &&
       cmake --build "$BUILD_DIR" -j"$(nproc)"; } >"$OUT/build.log" 2>&1; then
  tail -n 40 "$OUT/build.log"
  log "build FAILED"
  exit 2
fi
torch_dir=$(sed -n 's/^Torch_DIR:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")
[ -n "$torch_prefix" ] && log "torch: CMake's Torch_DIR=${torch_dir:-unset}"
bin="$BUILD_DIR/knnbench"
testbin="$BUILD_DIR/tests/knnbench-testbin"
# The build leaves the 1-minute load average high (7 on 16 cores right after a full build), and the
# runs that follow then start on a "busy machine": wait up to 90 s for it to settle below 2.
for _ in $(seq 1 18); do
  awk '{exit !($1 >= 2)}' /proc/loadavg || break
  sleep 5
done
log "load average before measuring: $(cut -d' ' -f1-3 /proc/loadavg)"

for step in "${steps[@]}"; do
  case "$step" in
    build) ;;
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
    gpuall)
      log "every GPU test in one knn_tests process"
      "$BUILD_DIR/tests/knn_tests" --gtest_filter='Gpu*:V15*:V16*' >"$OUT/gpu-tests.log" 2>&1 || status=1
      grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]" "$OUT/gpu-tests.log" | head -n 30
      ;;
    matrix)
      log "default matrix, pinned"
      run "$OUT/default" -- "$bin"
      ;;
    pageable)
      log "default matrix, pageable host memory"
      run "$OUT/pageable" -- "$bin" --host-memory pageable --version v1-v7
      ;;
    trees)
      log "trees matrix"
      run "$OUT/trees" -- "$bin" --config configs/trees.json --version v10-v13 --validate-queries 8192
      ;;
    seeds)
      log "seeds: group small, every version"
      run "$OUT/seeds-small" -- "$bin" --config configs/seeds.json --group small
      not_v0=$("$bin" --list | awk '/^  v[0-9]+ / && $1 != "v0" {print $1}' | paste -sd, -)
      log "seeds: the large cases with $not_v0"
      run "$OUT/seeds-large" -- "$bin" --config configs/seeds.json --case "${SEEDS_LARGE_CASES:-200,302,405,407,409,412,416}" \
        --version "${SEEDS_LARGE_VERSIONS:-$not_v0}"
      ;;
    real)
      real=$(real_config)
      cases=$(with_data "$real" 500,501)
      [ -n "$cases" ] && { log "real: Fashion-MNIST, cases $cases"; run "$OUT/real-fmnist" -- "$bin" --config "$real" --case "$cases" --version v14,v15; }
      cases=$(with_data "$real" 510,511,512,519)
      log "real: cities, cases $cases"
      run "$OUT/real-cities" -- "$bin" --config "$real" --case "$cases" --version v10-v17
      ;;
    integrity)
      # compare exits non-zero when any row is SLOWER: the step fails then.
      mkdir -p "$OUT/integrity"
      for r in ${INTEGRITY_RUNS:-1 2}; do
        for m in ${INTEGRITY_SETS:-default trees}; do
          log "integrity: $m matrix, run $r"
          set_args=()
          [ "$m" = trees ] && set_args=(--config configs/trees.json --version v10-v13 --validate-queries 8192)
          run "$OUT/integrity/$m-$r" -- "$bin" "${set_args[@]}" >/dev/null
        done
      done
      for m in ${INTEGRITY_SETS:-default trees}; do
        [ -f "$OUT/integrity/$m-1.json" ] && [ -f "$OUT/integrity/$m-2.json" ] || continue
        "$bin" compare "$OUT/integrity/$m-1.json" "$OUT/integrity/$m-2.json" >"$OUT/integrity/compare-$m.txt" 2>&1
        rc=$?; log "compare $m: exit $rc"; [ $rc -eq 0 ] || status=1
      done
      ;;
    slowed)
      mkdir -p "$OUT/integrity"
      pct=${SLOWDOWN_PCT:-10}
      for p in 0 "$pct"; do
        log "slowed: v1-v7 and t8 (v4 uploading and rescanning $p % more references) on cases 8-11"
        run "$OUT/integrity/slowed-$p" -- "$testbin" --version v1-v7,t8 --param t8.slowdown=$p --case 8-11 >/dev/null
      done
      "$bin" compare --ignore-params "$OUT/integrity/slowed-0.json" "$OUT/integrity/slowed-$pct.json" >"$OUT/integrity/compare-slowed.txt" 2>&1
      log "compare slowed: exit $? (expected 1: the t8 rows are SLOWER; compare-slowed.txt counts them)"
      ;;
    ab)
      mkdir -p "$OUT/ab"
      short=(--no-validate --warmup 1 --min-samples 3 --max-samples 10 --min-time 0 --max-time 1)
      one=(--no-validate --warmup 1 --min-samples 1 --max-samples 3 --min-time 0 --max-time 1)
      procs=(--processes "${AB_PROCESSES:-8}")
      parts=" ${AB_PARTS:-same-gpu same-cpu same-cpu-large slowed paired runs} "
      if [[ $parts == *" same-gpu "* ]]; then
        log "ab same-gpu: same binary as A and B, cases 0-11, ${AB_GPU_VERSIONS:=v1-v9,v14,v15,v17}"
        "$bin" ab --case 0-11 --version "$AB_GPU_VERSIONS" "${procs[@]}" "${short[@]}" --json "$OUT/ab/same-gpu.json" \
          --md "$OUT/ab/same-gpu.md" "${extra[@]}" >"$OUT/ab/same-gpu.log" 2>&1
        log "ab same-gpu: exit $? (expected 0: no SLOWER)"; tail -n 4 "$OUT/ab/same-gpu.log"
      fi
      if [[ $parts == *" same-cpu "* ]]; then
        log "ab same-cpu: same binary as A and B, cases ${AB_CPU_CASES:=0-7}, ${AB_CPU_VERSIONS:=v0,v10-v13}"
        "$bin" ab --case "$AB_CPU_CASES" --version "$AB_CPU_VERSIONS" "${procs[@]}" "${one[@]}" --json "$OUT/ab/same-cpu.json" \
          --md "$OUT/ab/same-cpu.md" "${extra[@]}" >"$OUT/ab/same-cpu.log" 2>&1
        log "ab same-cpu: exit $? (expected 0: no SLOWER)"; tail -n 4 "$OUT/ab/same-cpu.log"
      fi
      if [[ $parts == *" same-cpu-large "* ]]; then
        # One experiment per group of versions (a process of v0 takes about 17 s there, of v10 or v11
        # 17-35 s: 16 processes of all five would take 17 minutes), each its own files.
        for group in ${AB_CPU_LARGE_GROUPS:-v0 v10,v12 v11,v13}; do
          tag=${group//,/}
          log "ab same-cpu-large: same binary as A and B, cases 8-11, $group, one call a process"
          "$bin" ab --case 8-11 --version "$group" "${procs[@]}" --no-validate --warmup 0 --min-samples 1 --max-samples 1 \
            --min-time 0 --json "$OUT/ab/same-cpu-large-$tag.json" --md "$OUT/ab/same-cpu-large-$tag.md" "${extra[@]}" \
            >"$OUT/ab/same-cpu-large-$tag.log" 2>&1
          log "ab same-cpu-large $group: exit $? (expected 0: no SLOWER)"; tail -n 4 "$OUT/ab/same-cpu-large-$tag.log"
        done
      fi
      if [[ $parts == *" slowed "* ]]; then
        pct=${SLOWDOWN_PCT:-10}
        log "ab slowed: t7 and t8 slowed by $pct % against 0 %, beside v0-v7, cases ${AB_SLOWED_CASES:-4-8}"
        "$testbin" ab --case "${AB_SLOWED_CASES:-4-8}" --version v0-v7,t7,t8 "${procs[@]}" "${short[@]}" \
          --a-param t7.slowdown=0 --a-param t8.slowdown=0 --b-param t7.slowdown=$pct --b-param t8.slowdown=$pct \
          --json "$OUT/ab/slowed.json" --md "$OUT/ab/slowed.md" "${extra[@]}" >"$OUT/ab/slowed.log" 2>&1
        log "ab slowed: exit $? (expected 1: t7 and t8 SLOWER where the slowdown is over 5 % of the call)"; tail -n 4 "$OUT/ab/slowed.log"
      fi
      if [[ $parts == *" paired "* ]]; then
        pct=${SLOWDOWN_PCT:-10}
        log "ab paired: t7 and t8 slowed by $pct % against 0 %, both settings in each process, cases ${AB_SLOWED_CASES:-4-8}"
        "$testbin" ab --paired --case "${AB_SLOWED_CASES:-4-8}" --version t7,t8 "${procs[@]}" "${short[@]}" \
          --a-param t7.slowdown=0 --a-param t8.slowdown=0 --b-param t7.slowdown=$pct --b-param t8.slowdown=$pct \
          --json "$OUT/ab/paired.json" --md "$OUT/ab/paired.md" "${extra[@]}" >"$OUT/ab/paired.log" 2>&1
        log "ab paired: exit $? (expected 1: t7 and t8 SLOWER where the slowdown is over 5 % of the call)"; tail -n 4 "$OUT/ab/paired.log"
      fi
      if [[ $parts == *" runs "* ]]; then
        for r in 1 2; do  # at least 3 samples a result: compare needs them for any verdict
          run "$OUT/ab/run-$r" -- "$bin" "${short[@]}" >/dev/null
        done
        "$bin" compare "$OUT/ab/run-1.json" "$OUT/ab/run-2.json" >"$OUT/ab/compare-runs.txt" 2>&1
        log "compare of two runs: exit $? (HOST DRIFT rows do not count)"; tail -n 3 "$OUT/ab/compare-runs.txt"
      fi
      ;;
    scaling)
      for d in 1 2 "$ngpu"; do
        [ "$d" -gt "$ngpu" ] && continue
        devs=$(seq -s, 0 $((d - 1)))
        log "v8/v9 on devices $devs"
        run "$OUT/devices$d" -- "$bin" --version v8,v9 --devices "$devs"
      done
      log "mpirun: scripts/gpu/mpi-check.sh"
      OUT="$OUT/mpi" BUILD_DIR="$BUILD_DIR" STEPS="${MPI_STEPS:-tests gpupath cpu cpu2 gpu}" scripts/gpu/mpi-check.sh || status=1
      ;;
    peers-gpu)
      versions=$(registered "${PEERS_GPU_VERSIONS:-v14,v15,v16,v17,p-torch,p-torch-direct}")
      [ -n "$versions" ] || { log "peers-gpu: none of its versions is registered: NOT run"; status=1; continue; }
      log "peers-gpu: $versions"
      for set in ${PEERS_GPU_SETS:-default:configs/default.json:8,9,10,11 seeds:configs/seeds.json:200,405 "real:$(real_config):500,501,510,512"}; do
        IFS=: read -r name config ids <<<"$set"
        [ "$config" = real ] && config=$(real_config)
        cases=$(with_data "$config" "$ids")
        [ -n "$cases" ] || continue
        log "peers-gpu: cases $cases of $config"
        run "$OUT/peers-gpu-$name" -- "$bin" --config "$config" --case "$cases" --version "$versions"
        plot "$OUT/peers-gpu-$name"
      done
      ;;
    peers-cpu)
      # Every registered peer whose GPU column (`knnbench --list`) says it needs none.
      cpu_peers=$("$bin" --list | awk '$1 ~ /^p-/ && $3 == "no" {print $1}' | paste -sd, -)
      grep -q p-torch-cpu <<<"$cpu_peers" || log "peers-cpu: p-torch-cpu not registered in this build"
      log "peers-cpu: v0, v10, v12 and $cpu_peers on $(nproc) cores"
      o=(--min-samples 3 --min-time 0.3 --max-time 1)
      for set in default:configs/default.json:5-7:v0, seeds-small:configs/seeds.json:201,300,301:v0, \
                 seeds-450:configs/seeds.json:450: far:configs/peers.json:950,951:v0,; do
        IFS=: read -r name config ids v0 <<<"$set"
        run "$OUT/peers-cpu-$name" -- "$bin" --config "$config" --case "$ids" --version "${v0}v10,v12,$cpu_peers" "${o[@]}"
        plot "$OUT/peers-cpu-$name"
      done
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
          log "$tool $v: ${summary:-no summary} ($rc; $passes pass, $fails fail)"
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
