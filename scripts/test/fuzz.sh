#!/usr/bin/env bash
# Builds a libFuzzer target (tests/fuzz) with clang in its own build dir and runs it for SECONDS
# (default 60) over a seed corpus. Prints the executions and the crashes found, grouped by kind,
# each with its smallest input.
#
#   scripts/test/fuzz.sh [SECONDS] [extra libFuzzer flags...]
#
# Targets (KNN_FUZZ_TARGET):
#   matrix    (default) fuzz_matrix: knn::parse_matrix, over a copy of tests/corpus/matrix;
#   datafile  fuzz_datafile: knn::inspect_data_file + knn::read_data_file, over small valid files
#             of each format generated here (.npy 1.0/2.0/3.0, .fvecs, raw float32 with k = 1, 3, 4,
#             CSV), each behind its format byte (see tests/fuzz/fuzz_datafile.cpp), with a
#             dictionary of .npy and CSV tokens.
#
# Environment: KNN_FUZZ_TARGET   matrix or datafile (default matrix)
#              KNN_FUZZ_JOBS     fuzzing processes (default 1)
#              KNN_FUZZ_BUILD    build dir (default build-fuzz)
#              KNN_FUZZ_WORK     where the corpus, crashes and log go (default $KNN_FUZZ_BUILD/run-<time>,
#                                run-datafile-<time> for datafile)
#              KNN_FUZZ_MESSAGES=1  also count a ConfigError that is not one line starting with the file
#                                (datafile: or that says the file changed)
# datafile: the inputs are written to files in a folder made here (under /dev/shm where there is
# one, else TMPDIR or /tmp) and passed as KNN_FUZZ_TMP; it is removed when the script ends.
# Exit: 0 no crash, 1 crashes found, 2 bad usage or the build failed.
#
# The build is tests/fuzz on its own (CC=clang CXX=clang++; no CUDA, OpenMP, CLI11 or kernels): only
# src/matrix.cpp, src/data.cpp and src/datafile.cpp go into fuzz_matrix, only src/datafile.cpp into
# fuzz_datafile. In the full project the same targets build with CXX=clang++ -DKNN_ENABLE_CUDA=OFF
# -DKNN_FUZZ=ON.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
seconds=${1:-60}
[[ $# -gt 0 ]] && shift
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "usage: scripts/test/fuzz.sh [SECONDS] [libFuzzer flags...]" >&2
  exit 2
fi
target=${KNN_FUZZ_TARGET:-matrix}
if [[ $target != matrix && $target != datafile ]]; then
  echo "fuzz.sh: KNN_FUZZ_TARGET=$target: expected matrix or datafile" >&2
  exit 2
fi
jobs=${KNN_FUZZ_JOBS:-1}
build=${KNN_FUZZ_BUILD:-$root/build-fuzz}
if [[ $target == matrix ]]; then
  work=${KNN_FUZZ_WORK:-$build/run-$(date +%Y%m%d-%H%M%S)}
else
  work=${KNN_FUZZ_WORK:-$build/run-$target-$(date +%Y%m%d-%H%M%S)}
fi

for tool in clang clang++ cmake; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool not found (scripts/setup/install-deps.sh, or apt-get install clang)" >&2; exit 2; }
done
mkdir -p "$build"
if ! CC=clang CXX=clang++ cmake -S "$root/tests/fuzz" -B "$build" >"$build/configure.log" 2>&1 ||
   ! cmake --build "$build" -j "$(nproc)" --target "fuzz_$target" >"$build/build.log" 2>&1; then
  echo "fuzz.sh: building the fuzzer failed; see $build/configure.log and $build/build.log" >&2
  exit 2
fi
fuzzer=$build/fuzz_$target

# Seeds for fuzz_datafile: one file per call, its first byte the format selector (byte % 4: 0 .npy,
# 1 .fvecs, 2 raw float32 with k = byte / 4 + 1, 3 CSV), then the file's bytes.
f1='\x00\x00\x80\x3f' f2='\x00\x00\x00\x40' fm='\x00\x00\x00\xbf' f3='\x00\x00\x60\x40'  # 1, 2, -0.5, 3.5
seed() { printf "$2" >"$work/corpus/$1"; }  # $2: printf format text, \xHH escapes, no %
# An .npy preamble (major version $1) and header dict $2, padded to a multiple of 64 bytes as NumPy
# writes it; printed as printf format text for seed.
npy_head() {
  local pre=$(($1 == 1 ? 10 : 12)) dict=$2 len
  while (((pre + ${#dict} + 1) % 64 != 0)); do dict+=' '; done
  len=$((${#dict} + 1))
  printf '\x93NUMPY\\x%02x\\x00\\x%02x\\x%02x' "$1" $((len & 255)) $((len >> 8))
  (($1 == 1)) || printf '\\x00\\x00'
  printf '%s\\n' "$dict"
}
datafile_seeds() {
  seed npy_v1_2x3 "\x00$(npy_head 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }")$f1$f2$fm$f3$f1$f2"
  seed npy_v2_1x1 "\x00$(npy_head 2 "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), }")$f3"
  seed npy_v3_py2_2x1 "\x00$(npy_head 3 "{\"descr\":\"<f4\",\"shape\":(2L,1L),\"fortran_order\":False}")$f1$fm"
  seed fvecs_dim3_2 "\x01\x03\x00\x00\x00$f1$f2$fm\x03\x00\x00\x00$f3$f1$f2"
  seed fvecs_dim1_1 "\x01\x01\x00\x00\x00$f3"
  seed raw_k1_3 "\x02$f1$f2$fm"
  seed raw_k3_2 "\x0a$f1$f2$fm$f3$f1$f2"
  seed raw_k4_1 "\x0e$f1$f2$fm$f3"
  seed csv_plain "\x031,2,3\n4.5,-6,7e3\n"
  seed csv_header_crlf "\x03x,y\r\n+1.25, -2\r\n.5,1e-50"
  seed csv_trailing_blank "\x03-0,3.5e+2\n  \n\n"
  # libFuzzer dictionary: .npy header tokens, NaN and +Inf as float32, CSV spellings.
  cat >"$work/datafile.dict" <<'EOF'
"\x93NUMPY"
"'descr'"
"'<f4'"
"'>f4'"
"'fortran_order'"
"'shape'"
"True"
"False"
"L"
"\x00\x00\xc0\x7f"
"\x00\x00\x80\x7f"
"nan"
"inf"
"-Infinity"
"1e39"
"1e-400"
"\x0d\x0a"
EOF
}

mkdir -p "$work/corpus" "$work/crashes"
if [[ $target == matrix ]]; then
  cp "$root"/tests/corpus/matrix/*.json "$work/corpus/"
else
  datafile_seeds
  set -- -dict="$work/datafile.dict" "$@"
  # The target writes each input to a file: in a folder of ours (RAM where there is /dev/shm),
  # removed at the end with whatever crashed processes left there.
  shm=/dev/shm
  [[ -d $shm && -w $shm ]] || shm=${TMPDIR:-/tmp}
  KNN_FUZZ_TMP=$(mktemp -d "$shm/knn_fuzz.XXXXXX")
  export KNN_FUZZ_TMP
  trap 'rm -rf "$KNN_FUZZ_TMP"' EXIT
fi
seeds=$(ls "$work/corpus" | wc -l)

# Fork mode with ignore_*: a crash ends one job, not the run, so one known crash cannot hide others.
start=$(date +%s)
"$fuzzer" -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -timeout=10 \
  -max_total_time="$seconds" -artifact_prefix="$work/crashes/" "$@" "$work/corpus" >"$work/fuzz.log" 2>&1 || true
elapsed=$(($(date +%s) - start))

execs=$(grep -oE '^#[0-9]+:' "$work/fuzz.log" | tail -1 | tr -dc '0-9')
inputs=$(ls "$work/corpus" | wc -l)
echo "fuzz_$target: ${elapsed} s, ${execs:-0} executions, $jobs job(s); corpus $seeds seeds -> $inputs inputs"

# Replays one crash input and names its kind: the uncaught exception, the sanitizer report, or the
# libFuzzer verdict, with the first frame in the loader where there is one.
# Functions of the data-file readers live in an anonymous namespace: name them past it.
frame_re='in knn::[^ (]+'
[[ $target == datafile ]] && frame_re='in knn::(\(anonymous namespace\)::)?[^ (]+'
kind_of() {
  local out kind frame
  out=$("$fuzzer" -runs=1 "$1" 2>&1 || true)
  kind=$(grep -m1 -oE "fuzz_$target: ConfigError message breaks the contract|fuzz_$target: ConfigError says the file changed, but nothing changed it|fuzz_$target: read_data_file [a-z -]+|runtime error: .*|ERROR: AddressSanitizer: [a-z-]+|ERROR: libFuzzer: [a-z -]+" <<<"$out" || true)
  if grep -q "terminate called after throwing" <<<"$out"; then
    kind="uncaught $(grep -m1 -oE "what\(\): +\[[a-z_.0-9]+\][^'\"]{0,40}" <<<"$out" | sed -E 's/what\(\): +//')"
  fi
  frame=$(grep -m1 -oE "$frame_re" <<<"$out" || true)
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
