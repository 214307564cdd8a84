#!/usr/bin/env bash
# Run-to-run variance of the host side: the tree versions on two tree cases, several separate
# processes per condition, each condition an environment (OpenMP binding, glibc malloc thresholds,
# OpenMP wait policy). Writes one results file per (condition, run) under DIR and prints the
# median of each (case, version) per process, so the spread across processes can be read off.
#   scripts/tune/variance.sh BIN DIR [runs] [conditions...]
set -uo pipefail
bin=$1; dir=$2; runs=${3:-3}; shift 3 || shift $#
conds=("$@"); [ ${#conds[@]} -eq 0 ] && conds=(none bind malloc bind+malloc bind+malloc+active)
mkdir -p "$dir"
for cond in "${conds[@]}"; do
  envs=()
  case "$cond" in *none*) envs+=(OMP_PROC_BIND=false) ;; esac
  case "$cond" in *bind*) envs+=(OMP_PROC_BIND=close OMP_PLACES=cores) ;; esac
  case "$cond" in *malloc*) envs+=(GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296) ;; esac
  case "$cond" in *active*) envs+=(OMP_WAIT_POLICY=active) ;; esac
  for run in $(seq 1 "$runs"); do
    env "${envs[@]}" "$bin" --config configs/trees.json --case 100,103 --version v10,v11,v13 --validate-queries 1024 \
      --json "$dir/$cond-$run.json" --quiet >/dev/null 2>"$dir/$cond-$run.err" || echo "$cond run $run: exit $?"
  done
done
python3 - "$dir" <<'PY'
import json, sys, glob, os, collections
rows = collections.defaultdict(list)
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    cond = os.path.basename(f).rsplit("-", 1)[0]
    for r in json.load(open(f))["results"]:
        if r["status"] == "pass":
            b = r["phases"].get("build", {}).get("median_ms")
            rows[(cond, r["case"]["id"], r["version"])].append((r["stats"]["median_ms"], b))
print(f"{'condition':<22}{'case':>5} {'ver':>4}  medians per process (build phase)  spread max/min")
for (cond, case, ver), v in sorted(rows.items()):
    meds = [m for m, _ in v]
    print(f"{cond:<22}{case:>5} {ver:>4}  " + "  ".join(f"{m:7.1f} ({b:5.1f})" for m, b in v) + f"   {max(meds)/min(meds):.3f}")
PY
