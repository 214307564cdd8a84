#!/usr/bin/env bash
# One ablation on a GPU machine: a version's paths switched off in turn, all in ONE knnbench process (the
# matrix's "params" sweep them), then its plot and the verdict of each switch. An ablation is one file,
# configs/ablations/NAME.json: its cases and their "params" (file-wide or a case's own). The version is
# the one its parameters name (v16.test -> v16). The first value of a swept parameter is the baseline;
# each other value is judged against it. docs/ablations.md says what each ablation asks.
#
#   scripts/tune/run-ablation.sh NAME [-- knnbench args]   -> $OUT/NAME.{json,md,log}, NAME-{heatmap,bars-*}.{png,svg},
#                                                             NAME-verdicts.txt
#   scripts/tune/run-ablation.sh --list                     the ablations, a line each
#   scripts/tune/run-ablation.sh --check [NAME...]          runs nothing: each file's parameters checked against
#                          `knnbench params` and `knnbench --list --params --config FILE --version V` run (a
#                          build without CUDA registers no GPU version: there --version and the values go unchecked)
#
# The steps: knnbench --config configs/ablations/NAME.json --version V --json $OUT/NAME.json --md $OUT/NAME.md
# [args]; scripts/plots/plot.py $OUT/NAME.json -o $OUT/NAME.png --only heatmap,bars; for each swept parameter
# P and each value X after its baseline B: knnbench compare --case IDS --params V.P=B V.P=X -- $OUT/NAME.json
# (FASTER: X beats B); each result's median, and the leaves visited per query where its path says (v16).
# $OUT (default results/local/ablations); knnbench from $BUILD_DIR (default build-gpu), or $KNNBENCH.
# ABLATIONS names another folder of ablations (default configs/ablations). Exit: knnbench's run's (0 every
# result passed, 1 a validation failure); 2 for a usage error or a file that does not parse.
set -uo pipefail
cd "$(dirname "$0")/../.."
dir=${ABLATIONS:-configs/ablations}
usage() { sed -n '2,/^set -uo/p' "$0" | grep '^#'; }
list() {
  for f in "$dir"/*.json; do
    printf '  %-14s %s\n' "$(basename "$f" .json)" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("description", "")[:100])' "$f")"
  done
}
# plan FILE: its version on the first line, then "set V.P=VALUE[,VALUE...]" for each setting of the file
# or a case, then a line per comparison: "compare IDS V.P BASELINE VALUE" (IDS: the cases whose effective
# parameters sweep P over the same values). Exit 1 with a message when the file names no version or several.
plan() {
  python3 - "$1" <<'PY'
import json, sys
path = sys.argv[1]
try:
    doc = json.load(open(path))
except (OSError, ValueError) as e:
    sys.exit(f"run-ablation.sh: {path}: {e}")
def specs(p):
    return {k: [str(x) for x in (v if isinstance(v, list) else [v])] for k, v in (p or {}).items()}
top = specs(doc.get("params"))
sweeps = {}  # (name, values) -> case ids
settings = {f"{k}={','.join(v)}" for p in [top] + [specs(c.get("params")) for c in doc.get("cases", [])] for k, v in p.items()}
for c in doc.get("cases", []):
    eff = dict(top, **specs(c.get("params")))
    for name, values in eff.items():
        if len(values) > 1:
            sweeps.setdefault((name, tuple(values)), []).append(str(c.get("id")))
versions = sorted({k.split(".", 1)[0] for k in top} | {k.split(".", 1)[0] for c in doc.get("cases", []) for k in (c.get("params") or {})})
if len(versions) != 1:
    sys.exit(f"run-ablation.sh: {path}: its \"params\" name {'no version' if not versions else 'versions ' + ', '.join(versions)}: an ablation sweeps one version's parameters")
if not sweeps:
    sys.exit(f"run-ablation.sh: {path}: no parameter has two values or more: nothing is switched")
print(versions[0])
for s in sorted(settings):
    print("set", s)
for (name, values), ids in sweeps.items():
    for v in values[1:]:
        print("compare", ",".join(ids), name, values[0], v)
PY
}

check=0
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  --list) list; exit 0 ;;
  --check) check=1; shift ;;
  ''|-*) usage >&2; exit 2 ;;
esac
BUILD_DIR=${BUILD_DIR:-build-gpu}
bin=${KNNBENCH:-$BUILD_DIR/knnbench}

if [ $check = 1 ]; then
  [ -x "$bin" ] || { echo "run-ablation.sh: --check needs $bin" >&2; exit 2; }
  source scripts/tune/param-check.sh  # refused SETTING
  [ $# -gt 0 ] || set -- $(for f in "$dir"/*.json; do basename "$f" .json; done)
  status=0
  for name in "$@"; do
    file="$dir/$name.json"
    p=$(plan "$file") || { status=1; continue; }
    version=$(head -n 1 <<<"$p")
    args=(--list --config "$file")
    while read -r _ setting; do
      if refused "$setting"; then
        [ $unknown = 1 ] || { echo "run-ablation.sh: $file: $why" >&2; status=1; }
      fi
    done < <(grep '^set ' <<<"$p")
    "$bin" params "$version" >/dev/null 2>&1 && args+=(--params --version "$version")
    if ! err=$("$bin" "${args[@]}" 2>&1 >/dev/null); then
      echo "run-ablation.sh: $file: knnbench refuses it: $err" >&2
      status=1
    fi
    echo "run-ablation.sh: $name: $version, $(grep -c '^compare ' <<<"$p") comparison(s)$([ ${#args[@]} -gt 3 ] || echo " (this build registers no $version: its values unchecked)")"
  done
  exit $status
fi

name=$1
shift
[ "${1:-}" = -- ] && shift
file="$dir/$name.json"
if [ ! -f "$file" ]; then
  echo "run-ablation.sh: no ablation '$name' ($file); the ablations:" >&2
  list >&2
  exit 2
fi
p=$(plan "$file") || exit 2
version=$(head -n 1 <<<"$p")
OUT=${OUT:-results/local/ablations}
mkdir -p "$OUT"
if [ ! -x "$bin" ]; then
  echo "run-ablation.sh: no $bin: scripts/gpu/gpu-check.sh build" >&2
  OUT="$OUT/build" BUILD_DIR="$BUILD_DIR" scripts/gpu/gpu-check.sh build || exit 2
fi
out=$OUT/$name
echo "== $name: $bin --config $file --version $version $*"
"$bin" --config "$file" --version "$version" --json "$out.json" --md "$out.md" "$@" 2>&1 | tee "$out.log"
status=${PIPESTATUS[0]}
[ -f "$out.json" ] || { echo "run-ablation.sh: knnbench exited $status and wrote no $out.json" >&2; exit "$status"; }

echo "== plot: scripts/plots/plot.py $out.json -o $out.png --only heatmap,bars"
python3 scripts/plots/plot.py "$out.json" -o "$out.png" --only heatmap,bars
case $? in 0) ;; 3) echo "run-ablation.sh: no plot: matplotlib missing (scripts/setup/install-deps.sh)" ;; *) echo "run-ablation.sh: the plot failed" ;; esac

echo "== each result (median ms; leaves visited per query where the path says)" | tee "$out-verdicts.txt"
python3 - "$out.json" <<'PY' | tee -a "$out-verdicts.txt"
import json, re, sys
for r in json.load(open(sys.argv[1])).get("results", []):
    params, shown = r.get("params") or {}, r.get("params_set") or []
    label = r["version"] + (f"[{','.join(f'{n}={params.get(n)}' for n in shown)}]" if shown else "")
    med = (r.get("stats") or {}).get("median_ms")
    leaves = re.search(r"leaves per query ([0-9.]+)", r.get("path") or "")
    print(f"  case {r['case']['id']:>6}  {label:<44} {r.get('status', '?'):<8} {'' if med is None else f'{med:.4g} ms':>12}"
          + (f"  {leaves.group(1)} leaves/query" if leaves else ""))
PY
while read -r _ ids param base value; do
  echo "== $param: $value against $base (cases $ids): knnbench compare --case $ids --params $param=$base $param=$value -- $out.json" |
    tee -a "$out-verdicts.txt"
  "$bin" compare --case "$ids" --params "$param=$base" "$param=$value" -- "$out.json" 2>&1 | tee -a "$out-verdicts.txt"
done < <(grep '^compare ' <<<"$p")
echo "== $name: knnbench exit $status; files in $OUT ($name.json, .md, .log, -verdicts.txt, the plots)"
exit "$status"
