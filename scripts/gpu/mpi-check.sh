#!/usr/bin/env bash
# On a GPU machine: knnbench under mpirun (v18), in one go. Also the mpirun part of
# `scripts/gpu/gpu-check.sh scaling`.
# It runs the binaries of $BUILD_DIR (default build-gpu), built by `scripts/gpu/gpu-check.sh build` when absent.
# steps:
#   tests    the mpirun tests (ctest -L mpi: the CPU engine, 2 and 4 ranks, a failing rank)
#   gpupath  the GPU path under mpirun: 2 ranks sharing the GPU, v18 beside v15 on small plain, self-join
#            and topk-32 cases, every query validated                       -> gpu-path-{1,2,3}.{json,md}
#   cpu      the CPU engine on 1, 2, 4 and 8 ranks, cores/ranks cores each, no GPU visible,
#            case (k 16, m 512, n 2^20) top-8                               -> cpu-ranks{1,2,4,8}.{json,md}
#   cpu2     the same case with 2 cores per rank (1, 2, 4, 8 ranks: 2 to 16 cores) -> cpu2-ranks{1,2,4,8}.*
#   gpu      1 and 2 ranks on the one GPU (v15's engine; cores/ranks cores each): (16, 16384, 2^25) top-8
#            and case 9's shape at 2^26 references                          -> gpu-ranks{1,2}-*.{json,md}
#   multigpu one rank per GPU (1, 2, 4, ..., every GPU of this machine; GPUS=1,2 narrows): the 2^25 shape
#            and the 2^26 top-1 shape above -> mgpu-ranks{N}-{2p25,2p26}.*; cases 8-11 with v18 on every
#            GPU count of 2 or more (mpirun) -> mgpu-v18-default-N.*, beside v8/v9 on the same N GPUs (one process) -> mgpu-v8v9-default-N.*;
#            the real cases 500, 501, 510, 512 with v18 on each GPU count -> mgpu-real-ranksN.*
#            (cases whose data files are absent are left out; REAL_TRUTH=live as gpu-check.sh)
# Results land in $OUT (default results/local/mpi-check). STEPS="tests gpupath cpu cpu2 gpu" narrows it.
set -uo pipefail
export PATH="$PATH:/usr/local/cuda/bin"
cd "$(dirname "$0")/../.."
OUT=${OUT:-results/local/mpi-check}
mkdir -p "$OUT"
STEPS=${STEPS:-tests gpupath cpu cpu2 gpu}
LIMIT=${LIMIT:-60}  # seconds per mpirun
log() { echo "== mpi-check $(date -u +%H:%M:%S): $*" | tee -a "$OUT/mpi-check.log"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }
cores=$(nproc)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# Each rank's OpenMP threads are its own: no binding (ranks would bind to the same cores), and
# threads that sleep between parallel regions, so a rank in an MPI call leaves its cores to others.
export OMP_PROC_BIND=false OMP_WAIT_POLICY=passive
mpi=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)

BUILD_DIR=${BUILD_DIR:-build-gpu}
if ! "$BUILD_DIR/knnbench" -V >/dev/null 2>&1; then
  log "no knnbench in $BUILD_DIR: scripts/gpu/gpu-check.sh build"
  OUT="$OUT" BUILD_DIR="$BUILD_DIR" scripts/gpu/gpu-check.sh build || exit 2
fi
bin=$BUILD_DIR
"$bin/knnbench" -V | tee -a "$OUT/mpi-check.log"

status=0
if has tests; then
  log "ctest -L mpi"
  ctest --test-dir "$bin" -L mpi --output-on-failure -j4 >"$OUT/ctest-mpi.log" 2>&1 || status=1
  tail -12 "$OUT/ctest-mpi.log" | tee -a "$OUT/mpi-check.log"
fi

fast=(--warmup 1 --min-samples 3 --max-samples 5 --min-time 0 --max-noise 0 --max-time 20)
slow=(--warmup 1 --min-samples 2 --max-samples 2 --min-time 0 --max-noise 0 --max-time 30)  # calls of seconds
run() {  # run NAME NP THREADS [env...] -- knnbench args
  local name=$1 np=$2 threads=$3
  shift 3
  log "$name: $np rank(s) x $threads threads: $*"
  OMP_NUM_THREADS=$threads timeout "$LIMIT" "${mpi[@]}" -np "$np" "$bin/knnbench" "$@" --json "$OUT/$name.json" --md "$OUT/$name.md" \
    >"$OUT/$name.log" 2>&1
  local rc=$?
  [ $rc = 0 ] || { status=1; log "$name: exit $rc"; tail -5 "$OUT/$name.log"; }
  grep -E "^(Pass|Fail|Skip)|passed" "$OUT/$name.log" | tee -a "$OUT/mpi-check.log"
}

if has gpupath; then
  for c in "--m 300 --n 5000 --k 5 --topk 8" "--m 3000 --n 3000 --k 16 --topk 32 --self-join --distribution clusters" \
           "--m 64 --n 20000 --k 3 --topk 32 --distribution duplicates"; do
    i=$((${i:-0} + 1))
    run gpu-path-$i 2 $((cores / 2)) --version v15,v18 $c --warmup 0 --min-samples 2 --max-samples 2 --min-time 0 --max-noise 0
  done
fi
if has cpu; then
  for np in 1 2 4 8; do
    CUDA_VISIBLE_DEVICES= run cpu-ranks$np $np $((cores / np)) --version v18 --k 16 --m 512 --n 1048576 --topk 8 --validate-queries 64 "${fast[@]}"
  done
fi
if has cpu2; then  # the same case, 2 cores per rank: 2 to 16 cores in all
  for np in 1 2 4 8; do
    CUDA_VISIBLE_DEVICES= run cpu2-ranks$np $np 2 --version v18 --k 16 --m 512 --n 1048576 --topk 8 --validate-queries 64 "${slow[@]}"
  done
fi
if has gpu; then
  for np in 1 2; do
    run gpu-ranks$np-2p25 $np $((cores / np)) --version v18 --k 16 --m 16384 --n 33554432 --topk 8 --validate-queries 16 "${slow[@]}"
    run gpu-ranks$np-case9x4 $np $((cores / np)) --version v18 --k 16 --m 1 --n 67108864 --topk 1 "${fast[@]}"
  done
fi
if has multigpu; then
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  counts=${GPUS:-$(for g in 1 2 4 8 16; do [ "$g" -le "$ngpu" ] && echo -n "$g,"; done)}
  for np in ${counts//,/ }; do
    run mgpu-ranks$np-2p25 $np $((cores / np)) --version v18 --k 16 --m 16384 --n 33554432 --topk 8 --validate-queries 16 "${slow[@]}"
    run mgpu-ranks$np-2p26 $np $((cores / np)) --version v18 --k 16 --m 1 --n 67108864 --topk 1 "${fast[@]}"
  done
  for np in ${counts//,/ }; do  # cases 8-11: v18 on np ranks beside v8/v9 on the same np GPUs
    [ "$np" -ge 2 ] || continue
    run mgpu-v18-default-$np "$np" $((cores / np)) --version v18 --case 8-11 "${fast[@]}"
    log "mgpu-v8v9-default-$np: v8, v9 on $np GPUs, one process"
    timeout "$LIMIT" "$bin/knnbench" --version v8,v9 --case 8-11 --devices "$(seq -s, 0 $((np - 1)))" "${fast[@]}" \
      --json "$OUT/mgpu-v8v9-default-$np.json" --md "$OUT/mgpu-v8v9-default-$np.md" >"$OUT/mgpu-v8v9-default-$np.log" 2>&1 || status=1
    grep -E "^(Pass|Fail|Skip)" "$OUT/mgpu-v8v9-default-$np.log" | tee -a "$OUT/mpi-check.log"
  done
  real=configs/real.json
  if [ "${REAL_TRUTH:-}" = live ]; then  # the ground truths that are absent: validated against v0 live
    python3 - configs/real.json configs/.real-live.json <<'PY' && real=configs/.real-live.json
import json, os, sys
m = json.load(open(sys.argv[1]))
for c in m["cases"]:
    f = c.get("ground_truth_file")
    if f and not os.path.exists(os.path.join(os.path.dirname(sys.argv[1]), f)):
        del c["ground_truth_file"]
json.dump(m, open(sys.argv[2], "w"))
PY
  fi
  for np in ${counts//,/ }; do
    run mgpu-real-ranks$np $np $((cores / np)) --config "$real" --case 500,501,510,512 --version v18 "${fast[@]}"
  done
fi
log "done (status $status)"
exit $status
