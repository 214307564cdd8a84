#!/usr/bin/env bash
# Host-side movement between processes of the same binary. Records the machine's topology (CPUs,
# NUMA nodes, transparent huge pages), then runs, `runs` times and alternating the conditions:
# v0 on case 8 (one thread streaming 192 MB) and v11/v13 on configs/trees.json case 100 (an
# OpenMP build on the host, a GPU search), each in its own process. Prints the median and the
# host-side phases of every process, so a drift in time (all conditions move together) can be
# told from a condition's effect. Conditions:
#   default       knnbench's defaults (pinned inputs, OpenMP binding, active waiting)
#   passive       OMP_WAIT_POLICY=passive
#   pageable      --host-memory pageable (inputs from malloc)
#   thp           glibc malloc asks for transparent huge pages (glibc.malloc.hugetlb=1), with
#                 knnbench's own malloc thresholds
#   pageable-thp  both
#   cpuN          v0 alone, pinned by taskset to CPU N with one OpenMP thread (is a slow process tied
#                 to the CPU it ran on?)
#   scripts/tune/process-variance.sh BIN DIR [runs] [conditions...]
set -uo pipefail
bin=$1; dir=$2; runs=${3:-3}; shift 3 || shift $#
conds=("$@"); [ ${#conds[@]} -eq 0 ] && conds=(default passive)
thp_tunables=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824
mkdir -p "$dir"
{
  lscpu
  echo "NUMA nodes online: $(cat /sys/devices/system/node/online 2>/dev/null)"
  for n in /sys/devices/system/node/node*/cpulist; do [ -e "$n" ] && echo "$n: $(cat "$n")"; done
  echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null); defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null)"
  command -v numactl >/dev/null && numactl -H || echo "numactl: not installed"
  echo "load: $(cat /proc/loadavg)"
} >"$dir/topology.txt" 2>&1
for run in $(seq 1 "$runs"); do
  for cond in "${conds[@]}"; do
    envs=() args=()
    case "$cond" in
      default) ;;
      passive) envs+=(OMP_WAIT_POLICY=passive) ;;
      pageable) args+=(--host-memory pageable) ;;
      thp) envs+=(GLIBC_TUNABLES=$thp_tunables) ;;
      pageable-thp) envs+=(GLIBC_TUNABLES=$thp_tunables); args+=(--host-memory pageable) ;;
      cpu[0-9]*)
        OMP_NUM_THREADS=1 taskset -c "${cond#cpu}" "$bin" --case 8 --version v0 --max-time 1 --json "$dir/$cond-$run-v0.json" \
          --quiet >/dev/null 2>"$dir/$cond-$run-v0.err" || echo "$cond run $run v0: exit $?"
        continue ;;
      *) echo "process-variance.sh: unknown condition '$cond'" >&2; exit 2 ;;
    esac
    env "${envs[@]}" "$bin" --case 8 --version v0 --max-time 2 "${args[@]}" --json "$dir/$cond-$run-v0.json" \
      --quiet >/dev/null 2>"$dir/$cond-$run-v0.err" || echo "$cond run $run v0: exit $?"
    env "${envs[@]}" "$bin" --config configs/trees.json --case 100 --version v11,v13 --max-time 3 "${args[@]}" \
      --validate-queries 1024 --json "$dir/$cond-$run-trees.json" --quiet >/dev/null 2>"$dir/$cond-$run-trees.err" ||
      echo "$cond run $run trees: exit $?"
  done
done
python3 - "$dir" "$runs" "${conds[@]}" <<'PY'
import json, sys, os, collections
d, runs, conds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = collections.defaultdict(list)
for run in range(1, runs + 1):
    for policy in conds:
        for part in ("v0", "trees"):
            f = os.path.join(d, f"{policy}-{run}-{part}.json")
            if not os.path.exists(f):
                continue
            data = json.load(open(f))
            for r in data["results"]:
                if r["status"] != "pass":
                    continue
                ph = {k: v.get("median_ms") for k, v in r["phases"].items()}
                rows[(policy, r["case"]["id"], r["version"])].append((run, r["stats"]["median_ms"], ph, data["host"].get("load_average", [0])[0]))
print(f"{'condition':<13}{'case':>5} {'ver':>4}  per process: median ms (build, h2d) [load]   spread max/min")
for (policy, case, ver), v in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
    meds = [m for _, m, _, _ in v]
    cells = "  ".join(f"{m:7.2f} ({ph.get('build', 0) or 0:5.1f}, {ph.get('h2d', 0) or 0:4.2f}) [{ld:4.1f}]" for _, m, ph, ld in v)
    print(f"{policy:<13}{case:>5} {ver:>4}  {cells}   {max(meds) / min(meds):.3f}")
PY
