#!/usr/bin/env bash
# --isolate under mpirun is refused before anything runs (exit 2), with a message that says it
# cannot be used there and why (issue 43: it used to read "--isolate: not under mpirun").
# Usage: test_outputs_isolate_mpi.sh KNNBENCH SOURCE_DIR. Skips (77) without mpirun or an MPI build.
set -uo pipefail
bin=$1
source "$(dirname "$0")/mpi/preamble.sh"
launch=(mpirun --oversubscribe -np 2)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
timeout 60 "${launch[@]}" "$bin" --isolate --version v0 --k 4 --m 8 --n 64 --warmup 0 --min-samples 1 --min-time 0 --max-noise 0 \
  --json "$work/r.json" >"$work/log" 2>&1
rc=$?
cat "$work/log"
[ $rc = 124 ] && { echo "FAIL: mpirun hung"; exit 1; }
[ $rc = 0 ] && { echo "FAIL: --isolate under mpirun ran (exit 0)"; exit 1; }
grep -q -- "--isolate cannot be used under mpirun" "$work/log" || { echo "FAIL: the message does not say --isolate cannot be used under mpirun"; exit 1; }
grep -q -- "not under mpirun" "$work/log" && { echo "FAIL: the old message is still there"; exit 1; }
[ -e "$work/r.json" ] && { echo "FAIL: the run began"; exit 1; }
echo "ok: exit $rc, refused with the reason"
