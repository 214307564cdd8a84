#!/usr/bin/env bash
# knnbench under mpirun (registered by cmake/mpi.cmake, label cpu):
#   mpi_case.sh MPIEXEC NP TESTBIN pass ARGS...          v18 on NP ranks against v0 in one process:
#       both pass validation, the answers (.npy indices and distances) are equal byte for byte
#       (the ranks use v0's loop: no GPU is visible), the checksums agree, and the results record
#       NP ranks with a host and a GPU each
#   mpi_case.sh MPIEXEC NP TESTBIN failing_rank ARGS...  t20 fails on rank 1 (KNN_T20_FAIL_RANK):
#       its result is "fail" naming rank 1 and the reason, v18 after it in the same run passes,
#       mpirun ends (timeout 50 s) with exit code 1
#   mpi_case.sh MPIEXEC NP TESTBIN missing_file          a case whose data file is missing: v0 and v18
#       each skip once (v18 from the sharded room), the run exits 0
set -euo pipefail
mpiexec=$1 np=$2 bin=$3 mode=$4
shift 4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fast=(--warmup 0 --min-samples 2 --max-samples 3 --min-time 0 --max-noise 0)
export OMP_NUM_THREADS=1
launch=("$mpiexec" --oversubscribe -np "$np")
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)

field() { python3 - "$@" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(eval(sys.argv[2], {"j": j, "r": {x["version"]: x for x in j["results"]}}))
PY
}
expect() {  # expect FILE EXPR VALUE
  local got
  got=$(field "$1" "$2")
  [ "$got" = "$3" ] || { echo "FAIL: $2 = '$got', expected '$3' ($1)"; exit 1; }
}

if [ "$mode" = pass ]; then
  set +e
  timeout 50 "${launch[@]}" "$bin" --version v18 "${fast[@]}" "$@" --json "$work/mpi.json" --dump-answers "$work/mpi" --quiet >"$work/mpi.log" 2>&1
  rc=$?
  set -e
  [ $rc = 0 ] || { cat "$work/mpi.log"; echo "FAIL: mpirun -np $np exited $rc"; exit 1; }
  "$bin" --version v0 "${fast[@]}" "$@" --json "$work/one.json" --dump-answers "$work/one" --quiet >"$work/one.log" 2>&1 || { cat "$work/one.log"; exit 1; }
  expect "$work/mpi.json" 'r["v18"]["status"]' pass
  expect "$work/mpi.json" 'r["v18"]["validation"]["status"]' pass
  expect "$work/mpi.json" 'r["v18"]["validation"]["queries_checked"] == r["v18"]["case"]["m"]' True
  expect "$work/mpi.json" 'r["v18"]["path"].startswith("'"$np"' ranks (0 on a GPU")' True
  expect "$work/mpi.json" 'j["mpi"]["ranks"]' "$np"
  expect "$work/mpi.json" 'len({p["rank"] for p in j["mpi"]["per_rank"] if p["host"] and p["gpu"]})' "$np"
  expect "$work/one.json" 'r["v0"]["status"]' pass
  expect "$work/one.json" '"mpi" in j' False
  want=$(field "$work/one.json" 'r["v0"]["case"]["checksums"]')
  expect "$work/mpi.json" 'r["v18"]["case"]["checksums"]' "$want"
  for part in indices distances; do
    cmp "$work/mpi/case0-v18-$part.npy" "$work/one/case0-v0-$part.npy" || { echo "FAIL: v18's $part differ from v0's"; exit 1; }
  done
  echo "ok: v18 on $np ranks = v0 ($*)"
elif [ "$mode" = failing_rank ]; then
  set +e
  KNN_T20_FAIL_RANK=1 timeout 50 "${launch[@]}" -x KNN_T20_FAIL_RANK "$bin" --version t20,v18 "${fast[@]}" "$@" \
    --json "$work/mpi.json" --quiet >"$work/mpi.log" 2>&1
  rc=$?
  set -e
  [ $rc = 124 ] && { cat "$work/mpi.log"; echo "FAIL: mpirun hung"; exit 1; }
  [ $rc = 1 ] || { cat "$work/mpi.log"; echo "FAIL: mpirun exited $rc, expected 1 (a failed result)"; exit 1; }
  expect "$work/mpi.json" 'r["t20"]["status"]' fail
  expect "$work/mpi.json" '"rank 1 failed: injected failure" in r["t20"]["reason"]' True
  expect "$work/mpi.json" 'r["v18"]["status"]' pass
  echo "ok: a failing rank fails its result, the run goes on: $(field "$work/mpi.json" 'r["t20"]["reason"]')"
elif [ "$mode" = missing_file ]; then
  # A case whose data file is to be fetched first: every version skips once, with the command, and
  # the run exits 0 (the sharded v18 says so from its own room; the runner must not say it twice).
  cat >"$work/m.json" <<'JSON'
{"schema_version": 1, "cases": [{"id": 1, "k": 3, "m": 4, "n": 9, "topk": 1,
  "references_file": "nowhere/cities.npy", "fetch": "scripts/setup/fetch-data.sh cities"}]}
JSON
  set +e
  timeout 50 "${launch[@]}" "$bin" --config "$work/m.json" --version v0,v18 "${fast[@]}" --json "$work/mpi.json" --quiet >"$work/mpi.log" 2>&1
  rc=$?
  set -e
  [ $rc = 0 ] || { cat "$work/mpi.log"; echo "FAIL: mpirun exited $rc, expected 0 (skips only)"; exit 1; }
  expect "$work/mpi.json" 'sorted(x["version"] for x in j["results"])' "['v0', 'v18']"
  expect "$work/mpi.json" 'all(x["status"] == "skip" for x in j["results"])' True
  expect "$work/mpi.json" '"scripts/setup/fetch-data.sh cities" in r["v0"]["reason"]' True
  echo "ok: a missing data file skips each version once: $(field "$work/mpi.json" 'r["v18"]["reason"]')"
else
  echo "mpi_case.sh: unknown mode '$mode'" >&2
  exit 2
fi
