#!/usr/bin/env bash
# scripts/setup/cities_to_npy.py on a handful of places whose neighbours are known, then knnbench's
# self-join top-1 over its vectors (--dump-answers): two towns 3 km apart are each other's nearest,
# the poles' nearest places are the ones closest to them whatever their longitude, places on either
# side of the date line (+179.9 and -179.9) are neighbours although their longitudes are 360° apart.
# Usage: test_cities_converter.sh KNNBENCH SOURCE_DIR. Exit 77 (skip) without python3.
set -euo pipefail
knnbench=$1
src=$2
command -v python3 >/dev/null 2>&1 || { echo "skip: python3 not found (the converter needs it)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# row: name                    lat        lng        expected nearest row
cat >"$tmp/cities.json" <<'JSON'
[{"name":"Sion","lat":"46.2331","lng":"7.3606","country":"CH"},
 {"name":"North Pole station","lat":"90","lng":"0","country":"XX"},
 {"name":"Taveuni East","lat":"-16.8","lng":"179.95","country":"FJ"},
 {"name":"Nordpol near","lat":"89.5","lng":"-135","country":"XX"},
 {"name":"Amundsen-Scott","lat":"-90","lng":"0","country":"AQ"},
 {"name":"Pole approach","lat":"-89.2","lng":"120","country":"AQ"},
 {"name":"Vetroz","lat":"46.2167","lng":"7.2833","country":"CH"},
 {"name":"Date line west","lat":"-16.8","lng":"-179.95","country":"XX"},
 {"name":"Quito","lat":"-0.2299","lng":"-78.5249","country":"EC"},
 {"name":"Sion east 40 km","lat":"46.30","lng":"7.88","country":"CH"}]
JSON
python3 "$src/scripts/setup/cities_to_npy.py" "$tmp/cities.json" "$tmp" --queries 3 >/dev/null
cat >"$tmp/m.json" <<'JSON'
{"schema_version": 1, "cases": [{"id": 1, "k": 3, "n": 10, "topk": 1, "self_join": true, "references_file": "cities.npy"}]}
JSON
"$knnbench" --config "$tmp/m.json" --version v0 --warmup 0 --min-samples 1 --max-samples 1 --min-time 0 \
  --dump-answers "$tmp/answers" --json "$tmp/out.json" --quiet >/dev/null
python3 - "$tmp" <<'PY'
import ast, math, struct, sys
tmp = sys.argv[1]

def load_npy(path):
    b = open(path, "rb").read()
    assert b[:6] == b"\x93NUMPY", path
    hl = struct.unpack("<H", b[8:10])[0]
    h = ast.literal_eval(b[10:10 + hl].decode())
    rows, cols = h["shape"]
    fmt = {"<f4": "f", "<i4": "i"}[h["descr"]]
    flat = struct.unpack("<%d%s" % (rows * cols, fmt), b[10 + hl:])
    return [flat[i * cols:(i + 1) * cols] for i in range(rows)]

vectors = load_npy(f"{tmp}/cities.npy")
assert len(vectors) == 10, len(vectors)
for v in vectors:
    assert abs(math.sqrt(sum(c * c for c in v)) - 1) < 1e-6, v  # unit vectors
assert max(abs(c) for c in vectors[1][:2]) < 1e-7 and vectors[1][2] == 1.0, vectors[1]   # the north pole is (0, 0, 1)
assert len(load_npy(f"{tmp}/cities-q.npy")) == 3
nearest = [r[0] for r in load_npy(f"{tmp}/answers/case1-v0-indices.npy")]
expected = {0: 6, 6: 0, 1: 3, 3: 1, 4: 5, 5: 4, 2: 7, 7: 2, 9: 0}
wrong = {i: (nearest[i], e) for i, e in expected.items() if nearest[i] != e}
assert not wrong, f"nearest place (got, expected) by row: {wrong}"
names = open(f"{tmp}/cities-names.tsv", encoding="utf-8").read().splitlines()
assert names[0].split("\t")[:2] == ["row", "name"] and names[7].split("\t")[1] == "Vetroz", names[:8]
print("cities converter: unit vectors; Sion<->Vetroz, the poles, the date line: neighbours as expected")
PY
