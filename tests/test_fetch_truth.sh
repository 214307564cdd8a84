#!/usr/bin/env bash
# scripts/setup/fetch-data.sh truth and configs/real.json agree: every real case validates against a
# ground truth file that `truth` writes, of m rows and at least the case's topk columns (case 501,
# topk 100, once named the 10-column file and stopped the run at its start after case 500 had run).
# On a small stand-in: configs/real.json with every m and n shrunk (ids, topk, file names, fetch
# commands as shipped), tiny data files of the same names and formats (gzipped IDX, .npy), then the
# real `fetch-data.sh truth` with this build's knnbench; the stand-in matrix must then list (every
# ground truth's shape is checked when a matrix loads) and every real case run and pass against its
# ground truth. Last, the check itself is shown to catch the old mistake (case 501 on the 10-column file).
# Usage: test_fetch_truth.sh KNNBENCH SOURCE_DIR. Exit 77: python3 missing (skipped).
set -euo pipefail
bin=$1 src=$2
command -v python3 >/dev/null 2>&1 || { echo "skipped: python3 not found (fetch-data.sh truth needs it)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/configs" "$tmp/data"
fail() { echo "FAIL: $*" >&2; exit 1; }

# The stand-in: real.json's cases with m = 24 and n = 160 (self-joins: n = 160), and their data files.
python3 - "$src/configs/real.json" "$tmp/configs/real.json" <<'EOF'
import gzip, json, os, random, struct, sys
M, N = 24, 160
m = json.load(open(sys.argv[1]))
here = os.path.dirname(sys.argv[2])
rows = {}
for c in m["cases"]:
    assert c["topk"] < N, c
    c["n"] = N
    if "m" in c:
        c["m"] = M
    if "validate_queries" in c:
        c["validate_queries"] = min(c["validate_queries"], c.get("m", N))
    for key, count in (("queries_file", c.get("m", N)), ("references_file", N)):
        if key in c:
            assert rows.setdefault(c[key], (count, c["k"])) == (count, c["k"]), (key, c)
json.dump(m, open(sys.argv[2], "w"), indent=1)
rnd = random.Random(43)
for name, (count, k) in rows.items():
    path = os.path.normpath(os.path.join(here, name))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if name.endswith("ubyte.gz"):  # IDX of unsigned bytes, 28 x 28 images when k = 784
        dims = [count, 28, 28] if k == 784 else [count, k]
        head = bytes([0, 0, 8, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims)
        with gzip.open(path, "wb") as f:
            f.write(head + bytes(rnd.randrange(256) for _ in range(count * k)))
    elif name.endswith(".npy"):  # float32, C order
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (count, k)
        header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
        with open(path, "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
            f.write(struct.pack("<%df" % (count * k), *(rnd.random() for _ in range(count * k))))
    else:
        sys.exit(f"stand-in: no writer for {name}: teach this test the format")
EOF

KNN_DATA_DIR="$tmp/data" KNN_REAL_MATRIX="$tmp/configs/real.json" bash "$src/scripts/setup/fetch-data.sh" truth "$bin" \
  || fail "fetch-data.sh truth failed on the stand-in"

# Every ground_truth_file of the matrix is a file `truth` wrote (nothing of the stand-in made it).
python3 - "$tmp/configs/real.json" <<'EOF' || exit 1
import json, os, sys
m = json.load(open(sys.argv[1]))
for c in m["cases"]:
    g = c.get("ground_truth_file")
    if g and not os.path.exists(os.path.join(os.path.dirname(sys.argv[1]), g)):
        sys.exit(f"FAIL: case {c['id']}: ground_truth_file {g} was not written by fetch-data.sh truth")
EOF

out=$("$bin" --config "$tmp/configs/real.json" --list 2>&1) || fail "the stand-in matrix with the truth files does not load: $out"

# Every real case runs and passes, validated against its ground truth file too.
"$bin" --config "$tmp/configs/real.json" --group real --version v0 --warmup 0 --min-samples 1 --max-samples 1 --min-time 0 \
  --json "$tmp/run.json" --quiet >"$tmp/run.out" 2>&1 || fail "the real cases on the stand-in: exit $?: $(tail -5 "$tmp/run.out")"
python3 - "$tmp/configs/real.json" "$tmp/run.json" <<'EOF' || exit 1
import json, sys
m = json.load(open(sys.argv[1]))
results = {r["case"]["id"]: r for r in json.load(open(sys.argv[2]))["results"]}
for c in m["cases"]:
    if "real" not in c.get("groups", []):
        continue
    r = results.get(c["id"])
    if r is None or r["status"] != "pass":
        sys.exit(f"FAIL: case {c['id']}: {r and r['status']}: {r and r.get('reason')}")
    said = r["validation"]["ground_truth"]
    if c.get("ground_truth_file") and c["ground_truth_file"] not in said:
        sys.exit(f"FAIL: case {c['id']} was validated against {said!r}, not its ground_truth_file {c['ground_truth_file']}")
print(f"{len(results)} real cases pass against the files fetch-data.sh truth wrote")
EOF

# The check catches the old mistake: case 501 (topk 100) on the 10-column file stops the matrix at load.
python3 - "$tmp/configs/real.json" "$tmp/configs/wrong.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
for c in m["cases"]:
    if c["topk"] == 100:
        c["ground_truth_file"] = c["ground_truth_file"].replace("top100", "top10")
json.dump(m, open(sys.argv[2], "w"))
EOF
set +e
out=$("$bin" --config "$tmp/configs/wrong.json" --list 2>&1)
code=$?
set -e
[ "$code" = 2 ] || fail "case 501 on the 10-column ground truth: --list exit $code, expected 2: $out"
case "$out" in
  *"24 rows of 10 neighbour indices: expected m = 24 rows of at least topk = 100"*) ;;
  *) fail "case 501 on the 10-column ground truth: --list said: $out" ;;
esac
echo "ok: fetch-data.sh truth and configs/real.json agree"
