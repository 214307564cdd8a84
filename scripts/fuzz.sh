#!/usr/bin/env bash
# Builds the matrix-loader fuzzer (tests/fuzz) with clang in its own build dir and runs it for
# SECONDS (default 60) over a copy of tests/corpus/matrix. Prints the executions and the crashes
# found, grouped by kind, each with its smallest input.
#
#   scripts/fuzz.sh [SECONDS] [extra libFuzzer flags...]
#
# Environment: KNN_FUZZ_JOBS     fuzzing processes (default 1)
#              KNN_FUZZ_BUILD    build dir (default build-fuzz)
#              KNN_FUZZ_WORK     where the corpus copy, crashes and log go (default $KNN_FUZZ_BUILD/run-<time>)
#              KNN_FUZZ_MESSAGES=1  also count a ConfigError that is not one line starting with the file
# Exit: 0 no crash, 1 crashes found, 2 bad usage or the build failed.
#
# The build is tests/fuzz on its own (CC=clang CXX=clang++; no CUDA, OpenMP, CLI11 or kernels): only
# src/matrix.cpp and src/data.cpp go into the fuzzer. In the full project the same target builds
# with CXX=clang++ -DKNN_ENABLE_CUDA=OFF -DKNN_FUZZ=ON.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-60}
[[ $# -gt 0 ]] && shift
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "usage: scripts/fuzz.sh [SECONDS] [libFuzzer flags...]" >&2
  exit 2
fi
jobs=${KNN_FUZZ_JOBS:-1}
build=${KNN_FUZZ_BUILD:-$root/build-fuzz}
work=${KNN_FUZZ_WORK:-$build/run-$(date +%Y%m%d-%H%M%S)}

for tool in clang clang++ cmake; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool not found (scripts/install-deps.sh, or apt-get install clang)" >&2; exit 2; }
done
mkdir -p "$build"
if ! CC=clang CXX=clang++ cmake -S "$root/tests/fuzz" -B "$build" >"$build/configure.log" 2>&1 ||
   ! cmake --build "$build" -j "$(nproc)" --target fuzz_matrix >"$build/build.log" 2>&1; then
  echo "fuzz.sh: building the fuzzer failed; see $build/configure.log and $build/build.log" >&2
  exit 2
fi
fuzzer=$build/fuzz_matrix

mkdir -p "$work/corpus" "$work/crashes"
cp "$root"/tests/corpus/matrix/*.json "$work/corpus/"
seeds=$(ls "$work/corpus" | wc -l)

# Fork mode with ignore_*: a crash ends one job, not the run, so one known crash cannot hide others.
start=$(date +%s)
"$fuzzer" -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -timeout=10 \
  -max_total_time="$seconds" -artifact_prefix="$work/crashes/" "$@" "$work/corpus" >"$work/fuzz.log" 2>&1 || true
elapsed=$(($(date +%s) - start))

execs=$(grep -oE '^#[0-9]+:' "$work/fuzz.log" | tail -1 | tr -dc '0-9')
inputs=$(ls "$work/corpus" | wc -l)
echo "fuzz_matrix: ${elapsed} s, ${execs:-0} executions, $jobs job(s); corpus $seeds seeds -> $inputs inputs"

# Replays one crash input and names its kind: the uncaught exception, the sanitizer report, or the
# libFuzzer verdict, with the first frame in the loader where there is one.
kind_of() {
  local out kind frame
  out=$("$fuzzer" -runs=1 "$1" 2>&1 || true)
  kind=$(grep -m1 -oE "fuzz_matrix: ConfigError message breaks the contract|runtime error: .*|ERROR: AddressSanitizer: [a-z-]+|ERROR: libFuzzer: [a-z -]+" <<<"$out" || true)
  if grep -q "terminate called after throwing" <<<"$out"; then
    kind="uncaught $(grep -m1 -oE "what\(\): +\[[a-z_.0-9]+\][^'\"]{0,40}" <<<"$out" | sed -E 's/what\(\): +//')"
  fi
  frame=$(grep -m1 -oE "in knn::[^ (]+" <<<"$out" || true)
  if [[ -z $frame ]] && grep -q "serializer\.hpp" <<<"$out"; then
    frame="in nlohmann's serializer: json::dump"
  elif [[ -z $frame ]]; then
    frame=$(grep -m1 -oE "^SUMMARY: (AddressSanitizer|UndefinedBehaviorSanitizer): [a-z-]+ [^ ]+" <<<"$out" | awk '{print $NF}' | sed 's|.*/||' || true)
  fi
  echo "${kind:-unknown}${frame:+ ($frame)}"
}

shopt -s nullglob
crashes=("$work"/crashes/*)
if ((${#crashes[@]} == 0)); then
  echo "crashes: 0"
  echo "log: $work/fuzz.log"
  exit 0
fi
echo "crashes: ${#crashes[@]} input(s); by kind (count, kind, smallest input):"
for f in "${crashes[@]}"; do printf '%s\t%s\t%s\n' "$(kind_of "$f")" "$(wc -c <"$f")" "$f"; done |
  sort -t$'\t' -k1,1 -k2,2n |
  awk -F'\t' '{ n[$1]++; if (!($1 in first)) first[$1] = $3 " (" $2 " bytes)" }
              END { for (k in n) printf "  %5d  %s\n         e.g. %s\n", n[k], k, first[k] }'
echo "replay one: $fuzzer FILE    log: $work/fuzz.log"
exit 1
