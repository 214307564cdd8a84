#!/usr/bin/env bash
# The ablations (configs/ablations/*.json, scripts/tune/run-ablation.sh), checked where no GPU is: every
# file is a matrix `knnbench --list` takes (with --params --version V where the build registers its
# version V: a build without CUDA registers no GPU version), run-ablation.sh --list names each and
# --check passes them all; a file sweeping two versions' parameters, or a value its declaration does not
# take, is refused; and the whole command runs end to end on the test-only version t-params (the run,
# the plot when matplotlib is there, a compare per switched value).
#   tests/test_ablations.sh KNNBENCH SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
testbin=$(cd "$(dirname "$bin")" && pwd)/tests/knnbench-testbin
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ablation=$src/scripts/tune/run-ablation.sh

files=("$src"/configs/ablations/*.json)
[ -f "${files[0]}" ] || bad "no configs/ablations/*.json"
full=0
for f in "${files[@]}"; do
  "$bin" --list --config "$f" >/dev/null 2>"$tmp/err" || bad "knnbench --list --config $f: $(cat "$tmp/err")"
  version=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(next(iter(k.split(".")[0] for p in [d.get("params") or {}] + [c.get("params") or {} for c in d["cases"]] for k in p), ""))' "$f")
  [ -n "$version" ] || bad "$f: no \"VERSION.NAME\" parameter found"
  if [ -n "$version" ] && "$bin" params "$version" >/dev/null 2>&1; then
    "$bin" --list --params --version "$version" --config "$f" >/dev/null 2>"$tmp/err" ||
      bad "knnbench --list --params --version $version --config $f: $(cat "$tmp/err")"
    full=$((full + 1))
  fi
done
"$ablation" --list >"$tmp/list" || bad "run-ablation.sh --list exited $?"
[ "$(wc -l <"$tmp/list")" -eq ${#files[@]} ] || bad "run-ablation.sh --list: $(wc -l <"$tmp/list") lines for ${#files[@]} files"
KNNBENCH=$bin "$ablation" --check >"$tmp/check" 2>&1 || bad "run-ablation.sh --check: $(cat "$tmp/check")"

# Refused: two versions in one file; a value the build's declaration does not take (v18 declares v15's
# engine parameters in every build); a name that is no ablation (exit 2).
mkdir -p "$tmp/abl"
case1='"cases": [{"id": 1, "k": 3, "m": 8, "n": 64}]'
printf '{"schema_version": 1, "params": {"v18.tc": ["off", "auto"], "v16.sort": ["off", "on"]}, %s}\n' "$case1" >"$tmp/abl/two.json"
printf '{"schema_version": 1, "params": {"v18.taper": ["off", "1"]}, %s}\n' "$case1" >"$tmp/abl/value.json"
ABLATIONS=$tmp/abl KNNBENCH=$bin "$ablation" --check two >/dev/null 2>"$tmp/err"
code=$?
[ $code -ne 0 ] && grep -q "two.json: its \"params\" name versions v16, v18" "$tmp/err" || bad "two versions: exit $code, stderr: $(cat "$tmp/err")"
ABLATIONS=$tmp/abl KNNBENCH=$bin "$ablation" --check value >/dev/null 2>"$tmp/err"
code=$?
[ $code -ne 0 ] && grep -q "value.json: 'v18.taper=off,1': v18.taper takes on|off, not '1'" "$tmp/err" || bad "a refused value: exit $code, stderr: $(cat "$tmp/err")"
ABLATIONS=$tmp/abl "$ablation" no-such-ablation >/dev/null 2>&1
code=$?
[ $code -eq 2 ] || bad "run-ablation.sh no-such-ablation: exit $code, expected 2"

# End to end on t-params: order swept for every case, block for case 2 only: 2 + 3 x 2 = 8 results, and
# 1 + 2 comparisons (cols against rows over cases 1 and 2; 16 and 32 against 8 on case 2).
e2e="no end-to-end run: no $testbin"
if [ -x "$testbin" ]; then
  printf '{"schema_version": 1, "params": {"t-params.order": ["rows", "cols"]}, "cases": [%s, %s]}\n' \
    '{"id": 1, "k": 3, "m": 16, "n": 512, "topk": 4}' \
    '{"id": 2, "k": 3, "m": 16, "n": 256, "topk": 4, "params": {"t-params.block": [8, 16, 32]}}' >"$tmp/abl/t.json"
  rm "$tmp/abl/two.json" "$tmp/abl/value.json"
  ABLATIONS=$tmp/abl KNNBENCH=$testbin OUT=$tmp/out "$ablation" t -- --max-time 0.05 --quiet >"$tmp/run" 2>&1
  code=$?
  [ $code -eq 0 ] || bad "run-ablation.sh t: exit $code: $(tail -n 5 "$tmp/run")"
  n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["results"]))' "$tmp/out/t.json" 2>&1)
  [ "$n" = 8 ] || bad "run-ablation.sh t: $n results in t.json, expected 8"
  [ -s "$tmp/out/t.md" ] || bad "run-ablation.sh t: no t.md"
  for c in "--case 1,2 --params t-params.order=rows t-params.order=cols" "--case 2 --params t-params.block=8 t-params.block=16" \
    "--case 2 --params t-params.block=8 t-params.block=32"; do
    grep -qF -- "knnbench compare $c -- " "$tmp/out/t-verdicts.txt" || bad "t-verdicts.txt lacks 'compare $c'"
  done
  [ "$(grep -c "^knnbench compare: B against A" "$tmp/out/t-verdicts.txt")" = 3 ] || bad "t-verdicts.txt: not 3 compare reports: $(cat "$tmp/out/t-verdicts.txt")"
  [ "$(grep -c "^  case .* pass " "$tmp/out/t-verdicts.txt")" = 8 ] || bad "t-verdicts.txt: not 8 passing results listed"
  if grep -q "matplotlib missing" "$tmp/run"; then
    e2e="end to end on t-params (no matplotlib: no plot)"
  else
    [ -s "$tmp/out/t-heatmap.png" ] || bad "run-ablation.sh t: no t-heatmap.png: $(grep -A3 "== plot" "$tmp/run")"
    e2e="end to end on t-params with its plot"
  fi
fi

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "ok: ${#files[@]} ablations parsed ($full with their version's parameters); $e2e"
