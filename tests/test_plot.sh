#!/usr/bin/env bash
# scripts/plot.py on a real smoke run: the PNG exists, is not empty and is a PNG.
# Usage: test_plot.sh <path-to-knnbench> <source-dir>. Exit 77 = skipped (no matplotlib).
set -euo pipefail
knnbench=$1
src=$2

# Debian's python3-matplotlib installs for /usr/bin/python3, which another python3 on PATH may hide.
python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import matplotlib' >/dev/null 2>&1; then
    python=$candidate
    break
  fi
done
if [[ -z $python ]]; then
  echo "SKIP: matplotlib not installed (apt-get install python3-matplotlib)"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$knnbench" --group smoke --json "$tmp/r.json" --quiet --config "$src/configs/default.json" >"$tmp/run.log" 2>&1 || {
  echo "FAIL: knnbench exited $?"
  cat "$tmp/run.log"
  exit 1
}
"$python" "$src/scripts/plot.py" "$tmp/r.json" -o "$tmp/r.png"

if [[ ! -s $tmp/r.png ]]; then
  echo "FAIL: plot.py wrote no PNG (or an empty one)"
  exit 1
fi
magic=$(head -c 8 "$tmp/r.png" | od -An -tx1 | tr -d ' \n')
if [[ $magic != 89504e470d0a1a0a ]]; then
  echo "FAIL: $tmp/r.png does not start with the PNG signature (got $magic)"
  exit 1
fi

# Skipped and failed versions take their own drawing path (markers, never zeros): add some.
"$python" - "$tmp/r.json" "$tmp/mixed.json" <<'PY'
import copy, json, sys
doc = json.load(open(sys.argv[1]))
extra = []
for r in doc["results"]:
    if r["version"] != "v0":
        continue
    for version, status in (("v1", "skip"), ("v2", "fail"), ("v3", "pass")):
        x = copy.deepcopy(r)
        x["version"], x["status"], x["family"] = version, status, "gpu"
        x["stats"]["median_ms"] = r["stats"]["median_ms"] / 7
        extra.append(x)
doc["results"] += extra
json.dump(doc, open(sys.argv[2], "w"))
PY
"$python" "$src/scripts/plot.py" "$tmp/mixed.json" -o "$tmp/mixed.svg" >/dev/null
if ! grep -q "<svg" "$tmp/mixed.svg"; then
  echo "FAIL: plot.py wrote no SVG for results with skipped and failed versions"
  exit 1
fi

# A usage error exits 2 with a message naming the file.
echo '{"schema_version": 99, "results": []}' >"$tmp/bad.json"
set +e
"$python" "$src/scripts/plot.py" "$tmp/bad.json" -o "$tmp/bad.png" 2>"$tmp/err.txt"
code=$?
set -e
if [[ $code -ne 2 ]] || ! grep -q "bad.json" "$tmp/err.txt"; then
  echo "FAIL: plot.py on a wrong schema_version: exit $code, stderr: $(cat "$tmp/err.txt")"
  exit 1
fi
echo "PASS: plot.py wrote a $(stat -c %s "$tmp/r.png")-byte PNG"
