#!/usr/bin/env bash
# Data files under mpirun (issue 47): v18 on 2 and 3 ranks (CPU engine: no GPU is made visible),
# each rank reading only its rows of the references from .npy, .fvecs, raw float32, CSV (with a
# header) and gzipped IDX files, and the queries whole (a self-join: its rows). Every good case
# passes validation, with the checksums and the answers (.npy, byte for byte) of v0 in one process.
# A case whose file fails on one rank only (a NaN in rank 1's rows of a .bin; a CSV cut in the
# middle of its last number, read by the last rank) fails its result naming that rank and the file,
# and the case after it still runs and passes: mpirun exits 1 (a failed result), never hangs. So do
# ranks that see different files at one path (each rank's checksum of its rows against rank 0's).
# Every rank's engine sees the value traits of the whole data (test-only t20 checks them).
# Usage: test_datafiles_mpi.sh KNNBENCH SOURCE_DIR. Skips (77) without mpirun or an MPI build.
set -uo pipefail
bin=$1
source "$(dirname "$0")/mpi/preamble.sh"
fast=(--warmup 0 --min-samples 1 --max-samples 2 --min-time 0 --max-noise 0 --quiet)
# Under a sanitizer build, leak detection off: Open MPI's own allocations that live until exit read
# as leaks and turn a clean exit into 23 (knnbench's own code is checked by the other tests).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

# The data: n = 53 references of k = 5 (random floats; bytes for IDX), m = 11 queries.
python3 - "$work" <<'PY'
import gzip, json, random, struct, sys
d = sys.argv[1]
rnd = random.Random(47)
n, m, k = 53, 11, 5
def floats(rows): return [[round(rnd.uniform(-9, 9), 3) for _ in range(k)] for _ in range(rows)]
def f32(rows): return b"".join(struct.pack("<%df" % k, *r) for r in rows)
def npy(rows):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (len(rows), k)
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + f32(rows)
def idx(rows): return struct.pack(">BBBBIII", 0, 0, 8, 3, len(rows), 1, k) + bytes(v for r in rows for v in r)
def csv(rows): return ("x0,x1,x2,x3,x4\n" + "".join(",".join(repr(v) for v in r) + "\n" for r in rows)).encode()
refs, queries = floats(n), floats(m)
byte_refs = [[rnd.randrange(256) for _ in range(k)] for _ in range(n)]
byte_queries = [[rnd.randrange(256) for _ in range(k)] for _ in range(m)]
files = {"r.npy": npy(refs), "q.npy": npy(queries), "r.fvecs": b"".join(struct.pack("<i", k) + f32([r]) for r in refs),
         "r.bin": f32(refs), "q.csv": csv(queries), "r.csv": csv(refs)}
bad = [list(r) for r in refs]
bad[30][2] = float("nan")          # row 30: rank 1's rows on 2 ranks (26-52) and on 3 (17-34)
files["bad.bin"] = f32(bad)
cut = csv(refs).decode().rstrip("\n")
files["cut.csv"] = (cut[:cut.rfind(",") + 1] + "2e").encode()   # the last number cut after "2e"
for name, data in files.items(): open(f"{d}/{name}", "wb").write(data)
open(f"{d}/r-idx3-ubyte.gz", "wb").write(gzip.compress(idx(byte_refs)))
open(f"{d}/q-idx3-ubyte.gz", "wb").write(gzip.compress(idx(byte_queries)))
case = lambda i, **kw: dict(dict(id=i, k=k, m=m, n=n, topk=4), **kw)
cases = [case(1, queries_file="q.npy", references_file="r.npy"),
         case(2, references_file="r.fvecs"),
         case(3, queries_file="q.csv", references_file="r.bin"),
         dict(id=4, k=k, n=n, topk=6, self_join=True, references_file="r.csv"),
         case(5, queries_file="q-idx3-ubyte.gz", references_file="r-idx3-ubyte.gz"),
         case(6, queries_file="q.npy", references_file="bad.bin"),
         case(7, queries_file="q.npy", references_file="r.npy", topk=52),
         case(8, queries_file="q.npy", references_file="cut.csv"),
         dict(id=9, k=k, n=n, topk=3, self_join=True, references_file="r-idx3-ubyte.gz")]
json.dump({"schema_version": 1, "cases": cases}, open(f"{d}/m.json", "w"))
# The value traits: whole numbers in [0, 100] but for one value of the last rank's rows, 255.5.
traits = [[float(rnd.randrange(101)) for _ in range(k)] for _ in range(n)]
traits[50][1] = 255.5
open(f"{d}/t.npy", "wb").write(npy(traits))
json.dump({"schema_version": 1, "cases": [case(20, queries_file="q-idx3-ubyte.gz", references_file="t.npy"),
                                          dict(id=21, k=k, n=n, topk=3, self_join=True, references_file="t.npy")]},
          open(f"{d}/traits.json", "w"))
PY
[ $? = 0 ] || { echo "FAIL: could not write the data"; exit 1; }

field() { python3 - "$@" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r = {x["case"]["id"]: x for x in j["results"]}
print(eval(sys.argv[2], {"j": j, "r": r}))
PY
}
expect() {  # expect FILE EXPR VALUE
  local got
  got=$(field "$1" "$2")
  [ "$got" = "$3" ] || { echo "FAIL: $2 = '$got', expected '$3' ($1)"; exit 1; }
}

good=1,2,3,4,5,7,9
"$bin" --config "$work/m.json" --case $good --version v0 "${fast[@]}" --json "$work/one.json" --dump-answers "$work/one" >"$work/one.log" 2>&1 ||
  { cat "$work/one.log"; echo "FAIL: v0 in one process"; exit 1; }
launch=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
for np in 2 3; do
  timeout 120 "${launch[@]}" -np $np "$bin" --config "$work/m.json" --version v18 "${fast[@]}" --json "$work/np$np.json" \
    --dump-answers "$work/np$np" >"$work/np$np.log" 2>&1
  rc=$?
  [ $rc = 124 ] && { cat "$work/np$np.log"; echo "FAIL: mpirun -np $np hung"; exit 1; }
  [ $rc = 1 ] || { cat "$work/np$np.log"; echo "FAIL: mpirun -np $np exited $rc, expected 1 (two failed results)"; exit 1; }
  f=$work/np$np.json
  expect "$f" 'sorted(r)' "[1, 2, 3, 4, 5, 6, 7, 8, 9]"
  for id in ${good//,/ }; do
    expect "$f" "r[$id]['status']" pass
    expect "$f" "r[$id]['validation']['status']" pass
    expect "$f" "r[$id]['validation']['queries_checked'] == r[$id]['case']['m']" True
    expect "$f" "r[$id]['case']['checksums']" "$(field "$work/one.json" "r[$id]['case']['checksums']")"
    for part in indices distances; do
      cmp -s "$work/np$np/case$id-v18-$part.npy" "$work/one/case$id-v0-$part.npy" || { echo "FAIL: -np $np case $id: v18's $part differ from v0's"; exit 1; }
    done
  done
  expect "$f" "r[6]['status']" fail
  expect "$f" "r[6]['reason'].startswith('rank 1: ') and 'case 6: references_file: ' in r[6]['reason'] and 'bad.bin: NaN at byte ' in r[6]['reason'] and '(row 30, coordinate 2)' in r[6]['reason']" True
  last=$((np - 1))
  expect "$f" "r[8]['status']" fail
  expect "$f" "r[8]['reason'].startswith('rank $last: ') and 'cut.csv:54:' in r[8]['reason'] and '\"2e\" (row 52, coordinate 4): expected a number' in r[8]['reason']" True
  expect "$f" "r[1]['path'].startswith('$np ranks')" True
  echo "ok: -np $np: 7 file-backed cases pass = v0; $(field "$f" "r[6]['reason']")"
  echo "    $(field "$f" "r[8]['reason']")"
done

# A ground-truth file: validation reads the true distances of its indices from rank 0's stream of the
# references, as it does the reference's (it read them from rank 0's shard, which holds only its
# rows: wrong distances on 2 ranks, a read past the shard and a crash on 3 or more).
python3 - "$work" <<'PY'
import json, sys
d = sys.argv[1]
m = json.load(open(f"{d}/m.json"))
c = dict(next(x for x in m["cases"] if x["id"] == 1), id=10, ground_truth_file="one/case1-v0-indices.npy")
json.dump({"schema_version": 1, "cases": [c]}, open(f"{d}/gt.json", "w"))
PY
for np in 2 3 4; do
  timeout 120 "${launch[@]}" -np $np "$bin" --config "$work/gt.json" --version v18 "${fast[@]}" --json "$work/gt$np.json" >"$work/gt$np.log" 2>&1
  rc=$?
  [ $rc = 0 ] || { cat "$work/gt$np.log"; echo "FAIL: mpirun -np $np with a ground-truth file exited $rc"; exit 1; }
  expect "$work/gt$np.json" "r[10]['validation']['status']" pass
  expect "$work/gt$np.json" "r[10]['validation']['ground_truth'].endswith('case1-v0-indices.npy')" True
done
echo "ok: a ground-truth file validates v18 on 2, 3 and 4 ranks"

# Ranks that see different files at one path (here: each rank started in its own folder, as hosts
# with their own copies would be): rank 0 compares each rank's checksum of what it read with its
# own reading, and the case fails naming the rank, the rows and the file; a case whose files agree
# passes after it.
python3 - "$work" <<'PY'
import json, os, struct, sys
d = sys.argv[1]
k, n, m = 5, 53, 11
def npy(rows):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (len(rows), k)
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + b"".join(struct.pack("<%df" % k, *r) for r in rows)
refs = [[float((i * 7 + j) % 13) for j in range(k)] for i in range(n)]
queries = [[float((i * 5 + j) % 11) for j in range(k)] for i in range(m)]
for side in "ab":
    os.makedirs(f"{d}/{side}", exist_ok=True)
    other = [list(r) for r in refs]
    other_q = [list(q) for q in queries]
    if side == "b":
        other[40][0] += 0.5   # rank 1's rows
        other_q[3][1] += 0.5
    open(f"{d}/{side}/r.npy", "wb").write(npy(other))
    open(f"{d}/{side}/qd.npy", "wb").write(npy(other_q))
    open(f"{d}/{side}/q.npy", "wb").write(npy(queries))
    cases = [dict(id=30, k=k, m=m, n=n, topk=4, queries_file="q.npy", references_file="r.npy"),
             dict(id=31, k=k, m=m, n=n, topk=4, queries_file="qd.npy", references_file="../r.npy"),
             dict(id=32, k=k, m=m, n=n, topk=4, queries_file="q.npy", references_file="../r.npy")]
    json.dump({"schema_version": 1, "cases": cases}, open(f"{d}/{side}/m.json", "w"))
open(f"{d}/r.npy", "wb").write(npy(refs))
PY
timeout 60 "${launch[@]}" -np 1 --wdir "$work/a" "$bin" --config m.json --version v18 "${fast[@]}" --json "$work/two.json" : \
  -np 1 --wdir "$work/b" "$bin" --config m.json --version v18 "${fast[@]}" --json "$work/two.json" >"$work/two.log" 2>&1
rc=$?
[ $rc = 124 ] && { cat "$work/two.log"; echo "FAIL: ranks in two folders: mpirun hung"; exit 1; }
[ $rc = 1 ] || { cat "$work/two.log"; echo "FAIL: ranks in two folders: mpirun exited $rc, expected 1 (failed results)"; exit 1; }
expect "$work/two.json" "r[30]['status'], r[31]['status'], r[32]['status']" "('fail', 'fail', 'pass')"
expect "$work/two.json" "'case 30: references_file: r.npy: rank 1 read its rows [26, 53) as checksum ' in r[30]['reason'] and r[30]['reason'].endswith('the ranks see different files at this path')" True
expect "$work/two.json" "'case 31: queries_file: qd.npy: rank 1 read it as checksum ' in r[31]['reason'] and r[31]['reason'].endswith('the ranks see different files at this path')" True
echo "ok: ranks that see different files fail the case: $(field "$work/two.json" "r[30]['reason']")"

# Every rank's engine sees the value traits of the whole data (whole numbers, lowest, highest), as
# one process does: t20 (test-only, knnbench-testbin) fails on a rank that sees others.
testbin=$(dirname "$bin")/tests/knnbench-testbin
[ -x "$testbin" ] || { echo "no $testbin: the value traits under mpirun not checked"; exit 1; }
for spec in "--config $work/traits.json" "--k 4 --m 9 --n 70 --topk 3 --distribution integers" "--k 3 --n 40 --topk 2 --self-join"; do
  "$testbin" $spec --version t20 "${fast[@]}" --json "$work/t1.json" >"$work/t1.log" 2>&1 || { cat "$work/t1.log"; echo "FAIL: t20 in one process ($spec)"; exit 1; }
  for id in $(field "$work/t1.json" "' '.join(str(i) for i in r)"); do
    want=$(field "$work/t1.json" "r[$id]['path'].split('values [')[1].split(']')[0]")
    case "$want" in known\ true*) ;; *) echo "FAIL: no value traits in one process's path ($spec case $id): $want"; exit 1 ;; esac
    for np in 2 3; do
      KNN_T20_VALUES=$want timeout 60 "${launch[@]}" -np $np -x KNN_T20_VALUES "$testbin" $spec --case $id --version t20 "${fast[@]}" \
        --json "$work/t.json" >"$work/t.log" 2>&1
      rc=$?
      [ $rc = 124 ] && { cat "$work/t.log"; echo "FAIL: t20 -np $np hung"; exit 1; }
      [ -s "$work/t.json" ] || { cat "$work/t.log"; echo "FAIL: t20 -np $np ($spec case $id) exited $rc, wrote no results"; exit 1; }
      expect "$work/t.json" "(r[$id]['status'], r[$id].get('reason'))" "('pass', None)"
      [ $rc = 0 ] || { cat "$work/t.log"; echo "FAIL: t20 -np $np ($spec case $id) exited $rc"; exit 1; }
    done
    echo "ok: every rank of 2 and 3 saw the values one process sees: $want ($spec, case $id)"
  done
done
