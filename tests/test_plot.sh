#!/usr/bin/env bash
# scripts/plots/plot.py on the committed results: every figure kind is written as a 1600 px wide PNG and
# an SVG holding the labels it must show; --compare agrees with `knnbench compare` verdict for
# verdict; skipped and failed versions are marked; usage errors exit 2.
# Usage: test_plot.sh <path-to-knnbench> <source-dir>. Exit 77 = skipped (no matplotlib).
set -euo pipefail
knnbench=$1
src=$2
res=$src/results/h100

# Debian's python3-matplotlib installs for /usr/bin/python3, which another python3 on PATH may hide.
python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import matplotlib' >/dev/null 2>&1; then
    python=$candidate
    break
  fi
done
if [[ -z $python ]]; then
  echo "SKIP: matplotlib not installed (apt-get install python3-matplotlib, or scripts/setup/install-deps.sh)"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trees=$tmp/trees.json  # the committed tree run, unpacked: the checks below read it as plain JSON too
gunzip -c "$res/trees.json.gz" >"$trees" || { echo "FAIL: cannot unpack $res/trees.json.gz"; exit 1; }
plot() { "$python" "$src/scripts/plots/plot.py" "$@"; }
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

# <stem> <figure> <label>...: the PNG is a 1600 px wide PNG, the SVG an SVG with every label.
check_figure() {
  local stem=$1 fig=$2
  shift 2
  local png=$stem-$fig.png svg=$stem-$fig.svg
  [[ -s $png ]] || { bad "$png missing or empty"; return; }
  [[ -s $svg ]] || { bad "$svg missing or empty"; return; }
  local size
  size=$("$python" -c 'import struct,sys; d=open(sys.argv[1],"rb").read(24); print("%dx%d" % struct.unpack(">II", d[16:24]) if d[:8]==b"\x89PNG\r\n\x1a\n" else "not-a-png")' "$png")
  [[ $size == 1600x* ]] || bad "$png is $size, expected 1600 px wide"
  grep -q "<svg" "$svg" || bad "$svg is not an SVG"
  for label in "$@"; do
    grep -qF -- "$label" "$svg" || bad "$svg lacks the label '$label'"
  done
}

# The default matrix: heat map, a bar chart per family, the trees, and vs-floor for v14.
plot "$res/default.json.gz" -o "$tmp/d.png" --highlight v14 >"$tmp/d.log" || bad "plot.py default.json.gz exited $?"
check_figure "$tmp/d" heatmap "11: k=16 m=1024 n=1Mi" "v14" "fastest" "skip: v12 (cases 4, 7, 9, 11)" "all cases: topk=1, uniform"
for family in cpu gpu multi-gpu tree; do
  check_figure "$tmp/d" "bars-$family" "copy floor" "GB/s (median of" "8: k=3 m=1 n=16Mi"
done
check_figure "$tmp/d" trees "build" "query" "fastest brute force"
check_figure "$tmp/d" vs-floor "v14 fastest on" "fastest other" "× the floor"
# Each bar's value is its median: case 11's v6 median, as the JSON holds it, is on the gpu chart.
v6=$("$python" -c 'import gzip,json,sys; r=[r for r in json.load(gzip.open(sys.argv[1]))["results"] if r["case"]["id"]==11 and r["version"]=="v6"][0]; print("%.3g" % r["stats"]["median_ms"])' "$res/default.json.gz")
grep -qF ">$v6<" "$tmp/d-bars-gpu.svg" || bad "bars-gpu does not label case 11's v6 bar with its median $v6"

# A file with recorded floors (docs/measurement.md, "Floors"): vs-floor draws each case's recorded
# floor and names its bound and rate, and covers every case, one where the version did not run too.
"$python" - "$res/default.json.gz" "$tmp/floors.json" <<'PY'
import gzip, json, sys
doc = json.load(gzip.open(sys.argv[1]))
kept = []
for r in doc["results"]:
    if r["version"] == "v14" and r["case"]["id"] == 0:
        continue  # case 0 without v14: its slot says "not run"
    med = (r.get("stats") or {}).get("median_ms")
    if r["version"] == "v14" and r["status"] == "pass" and med:
        compute = r["case"]["id"] % 2 == 0
        fl = med / 4
        r["floor"] = {"floor_ms": fl, "x_floor": 4.0, "bound": "compute" if compute else "copy",
                      "rate_name": "tf32_tflops" if compute else "h2d_pinned_gbps", "rate": 400.0 if compute else 25.0,
                      "copy_ms": fl / 2 if compute else fl, "compute_ms": fl if compute else None, "note": None}
    kept.append(r)
doc["results"] = kept
json.dump(doc, open(sys.argv[2], "w"))
PY
plot "$tmp/floors.json" -o "$tmp/f.png" --only vs-floor --highlight v14 >/dev/null || bad "plot.py on a file with floors exited $?"
ncases=$("$python" -c 'import gzip,json,sys; print(len({r["case"]["id"] for r in json.load(gzip.open(sys.argv[1]))["results"]}))' "$res/default.json.gz")
check_figure "$tmp/f" vs-floor "compute floor" "copy floor" "(recorded)" "4.00× its floor" \
  "floors recorded by knnbench in" "of $ncases cases" "not run" "0: k=3"

# A gzipped results file (results/**/*.json.gz) plots as it is; a cut one is refused by name.
plot "$res/default.json.gz" -o "$tmp/z.png" --only vs-floor --highlight v15 >/dev/null || bad "plot.py default.json.gz exited $?"
check_figure "$tmp/z" vs-floor "v15 fastest on" "fastest other" "11: k=16 m=1024 n=1Mi"
head -c 4096 "$res/default.json.gz" >"$tmp/cut.json.gz"
rc=0; plot "$tmp/cut.json.gz" -o "$tmp/cut.png" >/dev/null 2>"$tmp/cut.err" || rc=$?
[[ $rc == 2 ]] && grep -qF "cut.json.gz" "$tmp/cut.err" || bad "a cut .json.gz: exit $rc, $(cat "$tmp/cut.err")"

# The trees file: cases 100 and 101 differ only in topk, 100 and 102 only in distribution.
plot "$trees" -o "$tmp/t.png" --only heatmap,trees >/dev/null || bad "plot.py trees.json exited $?"
check_figure "$tmp/t" heatmap "100: k=3 m=1Mi n=1Mi topk=1 uniform" "101: k=3 m=1Mi n=1Mi topk=8 uniform" "102: k=3 m=1Mi n=1Mi topk=1 clusters"
check_figure "$tmp/t" trees "103: k=3 m=1Mi n=1Mi topk=8 clusters" "ms a call"
[[ ! -e $tmp/t-bars-tree.png ]] || bad "--only heatmap,trees also wrote bars-tree"

# -o naming: a stem that already ends in -<figure> is used as it is.
plot "$res/default.json.gz" -o "$tmp/v14-vs-floor.png" --only vs-floor --highlight v14 >/dev/null || bad "vs-floor alone exited $?"
[[ -s $tmp/v14-vs-floor.png && -s $tmp/v14-vs-floor.svg ]] || bad "-o v14-vs-floor.png --only vs-floor did not write v14-vs-floor.png/.svg"

# --compare: the figure, and the verdicts of knnbench compare on committed pairs, one by one.
plot --compare "$res/integrity/trees-1.json.gz" "$res/integrity/trees-2.json.gz" -o "$tmp/c.png" >/dev/null || bad "plot.py --compare exited $?"
check_figure "$tmp/c" compare "FASTER" "SAME" "B's noise" "geometric mean of B/A" "101: k=3 m=1Mi n=1Mi topk=8 uniform"
kinds=""
for pair in "integrity/trees-1 integrity/trees-2" "integrity/slowed-0 integrity/slowed-25" "integrity/slowed-25 integrity/slowed-0" "variance/trees-before-1 variance/trees-before-2"; do
  set -- $pair
  a=$res/$1.json b=$res/$2.json
  for f in a b; do  # some committed files are gzip-compressed (results/README.md)
    if [[ ! -f ${!f} && -f ${!f}.gz ]]; then gunzip -c "${!f}.gz" >"$tmp/$f.json"; printf -v "$f" '%s' "$tmp/$f.json"; fi
  done
  set +e
  "$knnbench" compare "$a" "$b" --md - 2>&1 | sed 's/\*\*//g' >"$tmp/cpp.txt"  # markdown rows are never wrapped; bold dropped
  set -e
  # Rows: version, case, ..., verdict at the end of the line (text or markdown table).
  sed -nE 's/^\|? *([A-Za-z]+[0-9]+) *\|? +([0-9]+) .*(SAME|FASTER|SLOWER|too few samples|\?\?\?\?) *\|? *$/\1 \2 \3/p' "$tmp/cpp.txt" | sort >"$tmp/cpp.v"
  plot --compare "$a" "$b" --list-verdicts | sort >"$tmp/py.v"
  [[ -s $tmp/cpp.v ]] || bad "no verdict rows read from knnbench compare $1 $2: $(head -c 300 "$tmp/cpp.txt")"
  if ! diff "$tmp/cpp.v" "$tmp/py.v" >"$tmp/diff.txt"; then
    bad "plot.py's verdicts differ from knnbench compare on $1 vs $2:"
    cat "$tmp/diff.txt"
  fi
  kinds+=" $(cut -d' ' -f3- "$tmp/cpp.v" | sort -u | tr '\n' ' ')"
done
for v in SAME FASTER SLOWER; do
  [[ $kinds == *$v* ]] || bad "the committed pairs gave no $v verdict: the agreement check did not cover it"
done

# Skipped and failed versions are marked, never drawn as a value.
"$python" - "$trees" "$tmp/mixed.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc["results"]:
    if r["case"]["id"] == 101 and r["version"] == "v12":
        r["status"], r["reason"], r["stats"]["median_ms"] = "fail", "2 mismatches", None
    if r["case"]["id"] == 102 and r["version"] == "v13":
        r["status"], r["reason"], r["stats"]["median_ms"] = "skip", "made-up reason", None
json.dump(doc, open(sys.argv[2], "w"))
PY
plot "$tmp/mixed.json" -o "$tmp/m.png" --only heatmap,trees >/dev/null || bad "plot.py on skipped and failed results exited $?"
check_figure "$tmp/m" heatmap "FAIL" "skip: v13 (case 102): made-up reason"
check_figure "$tmp/m" trees "FAIL" "skip"
v12=$("$python" -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["results"] if r["case"]["id"]==101 and r["version"]=="v12"][0]; print("%.3g" % r["stats"]["median_ms"])' "$trees")
! grep -qF ">$v12<" "$tmp/m-heatmap.svg" || bad "the heat map still shows the failed v12's median $v12"

# A family where nothing passed (a GPU build on a machine without one) gets no bar chart, and says so.
"$python" - "$res/default.json.gz" "$tmp/nogpu.json" <<'PY'
import gzip, json, sys
doc = json.load(gzip.open(sys.argv[1]))
for r in doc["results"]:
    if r["family"] in ("gpu", "multi-gpu"):
        r["status"], r["reason"], r["stats"]["median_ms"] = "skip", "no CUDA device", None
json.dump(doc, open(sys.argv[2], "w"))
PY
plot "$tmp/nogpu.json" -o "$tmp/n.png" --only heatmap,bars >/dev/null 2>"$tmp/n.err" || bad "plot.py on a run without GPU results exited $?"
check_figure "$tmp/n" heatmap "v14, v15, v17 (all cases): no CUDA device"
check_figure "$tmp/n" bars-cpu "copy floor"
[[ ! -e $tmp/n-bars-gpu.png ]] || bad "bars-gpu drawn though every gpu result was skipped"
grep -qF "no bars-gpu: no gpu version passed (no CUDA device)" "$tmp/n.err" || bad "no message for the missing bars-gpu: $(cat "$tmp/n.err")"

# The markdown report links the figures that exist beside it, and only those.
mkdir "$tmp/md"
cp "$trees" "$tmp/md/run.json"
"$knnbench" report "$tmp/md/run.json" --md "$tmp/md/run.md" >/dev/null
! grep -q "## Plots" "$tmp/md/run.md" || bad "run.md has a Plots section before any plot exists"
plot "$tmp/md/run.json" --only heatmap,trees >/dev/null || bad "plot.py without -o exited $?"
"$knnbench" report "$tmp/md/run.json" --md "$tmp/md/run.md" >/dev/null
for fig in heatmap trees; do
  grep -qF "![run-$fig](run-$fig.png) ([SVG](run-$fig.svg))" "$tmp/md/run.md" || bad "run.md does not link run-$fig.png and .svg"
done
! grep -q "run-bars-tree" "$tmp/md/run.md" || bad "run.md links a figure that was not drawn"

# Usage errors exit 2 with a message naming the problem.
echo '{"schema_version": 99, "results": []}' >"$tmp/bad.json"
expect_usage_error() {
  local want=$1
  shift
  set +e
  plot "$@" >/dev/null 2>"$tmp/err.txt"
  local code=$?
  set -e
  [[ $code -eq 2 ]] && grep -qF -- "$want" "$tmp/err.txt" || bad "plot.py $*: exit $code, stderr: $(cat "$tmp/err.txt"), expected 2 and '$want'"
}
expect_usage_error "bad.json" "$tmp/bad.json" -o "$tmp/bad.png"
expect_usage_error "--highlight v99" "$res/default.json.gz" -o "$tmp/x.png" --highlight v99
expect_usage_error "needs --highlight" "$res/default.json.gz" -o "$tmp/x.png" --only vs-floor
expect_usage_error "--only nonsense" "$res/default.json.gz" -o "$tmp/x.png" --only nonsense

# scripts/plots/plot_sweep.py (it reads results through plot.py's loader): one line per version of the
# committed seed runs (cases of several m), the later file's result winning for a version that both
# hold (v14).
"$python" "$src/scripts/plots/plot_sweep.py" "$res/seeds/seeds-large.json.gz" "$res/seeds/seeds-v15-v17.json.gz" -o "$tmp/sweep.svg" >/dev/null ||
  bad "plot_sweep.py exited $?"
for label in v10 v11 v14 v15 v17 "m (queries)"; do
  grep -qF -- ">$label<" "$tmp/sweep.svg" || bad "plot_sweep.py: the SVG lacks '$label'"
done
grep -qF -- "k=8 n=1000 topk=5 integers" "$tmp/sweep.svg" || bad "plot_sweep.py: the title lacks case 300's shape"

# scripts/plots/plot_waves.py: one line per (k, test) of the committed wave study, and exit 2 on a file
# without a wave trace (v16's results from before the trace).
waves=$src/results/experiments/v16-waves
"$python" "$src/scripts/plots/plot_waves.py" "$waves/waves-box.json.gz" "$waves/waves-median.json.gz" -o "$tmp/waves.svg" >/dev/null ||
  bad "plot_waves.py exited $?"
for label in "d = 5, box test: 42 waves, 7.43 leaves/query" "d = 20, median test: 4096 waves, 4096.00 leaves/query" "active queries"; do
  grep -qF -- ">$label<" "$tmp/waves.svg" || bad "plot_waves.py: the SVG lacks '$label'"
done
set +e
"$python" "$src/scripts/plots/plot_waves.py" "$trees" -o "$tmp/none.svg" >/dev/null 2>&1
code=$?
set -e
[[ $code -eq 2 ]] || bad "plot_waves.py on results without a wave trace exited $code, not 2"

if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "PASS: every figure kind written at 1600 px with its labels; verdicts agree with knnbench compare on 4 committed pairs"
