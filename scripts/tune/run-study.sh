#!/usr/bin/env bash
# One study on a GPU machine: a version's parameter settings (v15.tc=off, v16.test=median ...; `knnbench
# params` lists them) against each other, in alternating processes, on the study's cases. A study is
# data: configs/studies/STUDY.json holds its cases, configs/studies/STUDY.txt its table of settings (the
# format below).
#
#   scripts/tune/run-study.sh STUDY [-- knnbench args]      one study -> $OUT/STUDY/LABEL[-ROUND].{json,md,log}
#   scripts/tune/run-study.sh --list                         the studies, a line each
#   scripts/tune/run-study.sh --check [STUDY...]             runs nothing: every table (or those named) parsed,
#                          each setting checked against `knnbench params` (its name and values), and each
#                          process's arguments put to `knnbench --list` (cases, groups, versions, flags; a
#                          build without CUDA leaves --version out, and the settings of the versions it
#                          does not register: it registers no GPU version)
#
# $OUT (default results/local/studies); knnbench from $BUILD_DIR (default build-gpu), built there by
# `scripts/gpu/gpu-check.sh build` when absent. STUDY_ROUNDS overrides a table's rounds, STUDY_TESTS=0
# skips its tests, STUDY_LIMIT (seconds, default 600) bounds each process. $OUT/STUDY/runs.txt lists
# every process: label, settings, arguments, exit status. Exit 0 when every process exited 0, else 1;
# 2 for a usage error or a table that does not parse (its file and line named). STUDIES names another
# folder of studies (default configs/studies).
#
# The table, a line each (# starts a comment; the first comment line describes the study):
#   tests FILTER          knn_tests --gtest_filter=FILTER first (the version's own tests)
#   rounds N              consecutive `run` lines alternate, N times (default 1)
#   args ARGS...          knnbench arguments of every process
#   bin testbin           the test binary (test-only versions t1-t20) instead of knnbench
#   limit SECONDS         each process's time limit (default 600)
#   run LABEL [VERSION.NAME=VALUE ...] [-- ARGS...]    one process a round -> LABEL-ROUND.* (LABEL.* for one round)
#   once LABEL [VERSION.NAME=VALUE ...] [-- ARGS...]   one process -> LABEL.*
#   ncu LABEL [VERSION.NAME=VALUE ...] -- NCU_OPTIONS... -- ARGS...   Nsight Compute over one call (when
#                         ncu is installed)                                        -> ncu-LABEL.txt
#   plot SCRIPT OUTPUT LABEL... [-- ARGS...]  scripts/plots/SCRIPT over LABEL.json (of once lines, or run
#                         lines of one round)                                      -> OUTPUT
# A line's settings are parameters: `run x v15.tc=off v15.int8=on -- ARGS` gives that process
# `--param v15.tc=off --param v15.int8=on` (VALUE,VALUE... sweeps inside the process). An old variable
# (KNN_V15_TC=off) is a table error naming the parameter that replaced it.
# Every knnbench process gets --config configs/studies/STUDY.json, then `args`, its settings, its line's ARGS.
set -uo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/../.."
dir=${STUDIES:-configs/studies}
usage() { sed -n '2,/^set -uo/p' "$0" | grep '^#'; }
list() {
  for t in "$dir"/*.txt; do
    printf '  %-18s %s\n' "$(basename "$t" .txt)" "$(sed -n 's/^# *[^:]*: *//p' "$t" | head -n 1)"
  done
}
check=0
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  --list) list; exit 0 ;;
  --check) check=1; shift ;;
  --check-one) check=2; shift ;;  # (internal) one study of --check
  ''|-*) usage >&2; exit 2 ;;
esac
BUILD_DIR=${BUILD_DIR:-build-gpu}
if [ $check = 1 ]; then
  [ $# -gt 0 ] || set -- $(for t in "$dir"/*.txt; do basename "$t" .txt; done)
  rc=0
  for s in "$@"; do "$self" --check-one "$s" || rc=1; done
  [ $rc = 0 ] && echo "run-study.sh: $# studies checked: every process's arguments taken$("$BUILD_DIR/knnbench" --build-info 2>/dev/null | grep -q "no CUDA" && echo " (but not --version, nor the settings of versions it lacks: a build without CUDA registers no GPU version)")"
  exit $rc
fi
study=$1
shift
[ "${1:-}" = -- ] && shift
extra=("$@")
table="$dir/$study.txt"
config="$dir/$study.json"
if [ ! -f "$table" ] || [ ! -f "$config" ]; then
  echo "run-study.sh: no study '$study' ($table and $config); the studies:" >&2
  list >&2
  exit 2
fi

# The table, parsed whole before anything runs: a bad line costs no GPU time.
rounds=1 limit=600 tests='' common=() binary=knnbench
steps=()  # "KIND LINE" (the table's line number, to read its words again)
n=0
bad() { echo "run-study.sh: $table:$n: $*" >&2; exit 2; }
# is_setting WORD: false, with the reason in `why`, when WORD is no setting VERSION.NAME=VALUE[,VALUE...].
is_setting() {
  local x=$1 name
  [[ $x =~ ^[a-z][a-z0-9-]*\.[a-z][a-z0-9_]*=[^=,]+(,[^=,]+)*$ ]] && return 0
  if [[ $x =~ ^KNN_(V[0-9]+|TORCH)_([A-Z0-9_]+)= ]]; then
    name=${BASH_REMATCH[1],,}.${BASH_REMATCH[2],,}
    [ "${BASH_REMATCH[1]}" = TORCH ] && name=p-torch.${BASH_REMATCH[2],,}
    why="'$x': the variables are parameters now: $name=VALUE (0|1 switches are off|on; knnbench params ${name%%.*} lists its values)"
  else
    why="'$x': a setting is a parameter VERSION.NAME=VALUE (knnbench params); knnbench's arguments follow --"
  fi
  return 1
}
while IFS= read -r line || [ -n "$line" ]; do
  n=$((n + 1))
  line=${line%%#*}
  read -ra w <<<"$line"
  [ ${#w[@]} -eq 0 ] && continue
  case "${w[0]}" in
    tests) [ ${#w[@]} -eq 2 ] || bad "tests takes one gtest filter"; tests=${w[1]} ;;
    rounds) [[ ${#w[@]} -eq 2 && ${w[1]} =~ ^[1-9][0-9]*$ ]] || bad "rounds takes a whole number >= 1, not '${w[*]:1}'"; rounds=${w[1]} ;;
    limit) [[ ${#w[@]} -eq 2 && ${w[1]} =~ ^[1-9][0-9]*$ ]] || bad "limit takes seconds, not '${w[*]:1}'"; limit=${w[1]} ;;
    args) common=("${w[@]:1}") ;;
    bin) [ "${w[*]:1}" = testbin ] || bad "bin takes 'testbin', not '${w[*]:1}'"; binary=tests/knnbench-testbin ;;
    run|once|ncu|plot)
      [ ${#w[@]} -ge 2 ] || bad "${w[0]} needs a label"
      if [ "${w[0]}" != plot ]; then
        for x in "${w[@]:2}"; do
          [ "$x" = -- ] && break
          is_setting "$x" || bad "$why"
        done
      fi
      steps+=("${w[0]} $n") ;;
    *) bad "unknown line '${w[0]}' (tests, rounds, args, bin, limit, run, once, ncu, plot)" ;;
  esac
done <"$table"
rounds=${STUDY_ROUNDS:-$rounds}
limit=${STUDY_LIMIT:-$limit}

# words N: the words of the table's line N (its kind and label dropped) into `w`.
words() { read -ra w <<<"$(sed -n "${1}{s/#.*//;p}" "$table")"; w=("${w[@]:2}"); }
# split: `w` -> the settings before -- into `sets` (and as --param arguments into `params`), the words
# after it into `rest`.
split() {
  sets=() params=() rest=()
  while [ ${#w[@]} -gt 0 ] && [ "${w[0]}" != -- ]; do sets+=("${w[0]}"); params+=(--param "${w[0]}"); w=("${w[@]:1}"); done
  [ ${#w[@]} -gt 0 ] && rest=("${w[@]:1}")
}
# ncu_split: `rest` (NCU_OPTIONS -- ARGS) -> `opts` and `rest`.
ncu_split() {
  opts=()
  while [ ${#rest[@]} -gt 0 ] && [ "${rest[0]}" != -- ]; do opts+=("${rest[0]}"); rest=("${rest[@]:1}"); done
  [ ${#rest[@]} -gt 0 ] && rest=("${rest[@]:1}")
}
bin="$BUILD_DIR/$binary"

if [ $check = 2 ]; then
  [ -x "$bin" ] || { echo "run-study.sh: --check needs $bin" >&2; exit 2; }
  # A build without CUDA registers no GPU version: there the versions go unchecked.
  cuda=1
  "$bin" --build-info | grep -q "no CUDA" && cuda=0
  source scripts/tune/param-check.sh  # refused SETTING
  status=0 labels=" "
  for step in "${steps[@]}"; do
    read -r kind n <<<"$step"
    label=$(sed -n "${n}p" "$table" | awk '{print $2}')
    words "$n"; split
    if [ "$kind" = plot ]; then
      [ -f "scripts/plots/$label" ] || { echo "run-study.sh: $table:$n: no scripts/plots/$label" >&2; status=1; }
      for l in "${sets[@]:1}"; do
        [[ $labels == *" $l "* ]] || { echo "run-study.sh: $table:$n: '$l' is no earlier run's label" >&2; status=1; }
      done
      continue
    fi
    [ "$kind" = ncu ] && ncu_split
    labels+="$label "
    taken=()  # the settings of versions the build registers, put to --list with the rest
    for x in "${sets[@]}"; do
      if ! refused "$x"; then
        taken+=(--param "$x")
      elif [ $unknown = 0 ] || [ $cuda = 1 ]; then
        echo "run-study.sh: $table:$n: $why" >&2
        status=1
      fi
    done
    all=("${common[@]}" "${taken[@]}" "${rest[@]}")
    if [ $cuda = 0 ]; then  # --version and its value left out
      skip=0 kept=()
      for a in "${all[@]}"; do
        if [ $skip = 1 ]; then skip=0; continue; fi
        case "$a" in --version) skip=1 ;; --version=*) ;; *) kept+=("$a") ;; esac
      done
      all=("${kept[@]}")
    fi
    if ! err=$("$bin" --config "$config" "${all[@]}" --list 2>&1 >/dev/null); then
      echo "run-study.sh: $table:$n: knnbench refuses it: $err" >&2
      status=1
    fi
  done
  exit $status
fi

OUT=${OUT:-results/local/studies}/$study
mkdir -p "$OUT"
if [ ! -x "$BUILD_DIR/knnbench" ]; then
  echo "run-study.sh: no $BUILD_DIR/knnbench: scripts/gpu/gpu-check.sh build" >&2
  OUT="$OUT/build" BUILD_DIR="$BUILD_DIR" scripts/gpu/gpu-check.sh build || exit 2
fi
status=0
log() { echo "== $study: $*" | tee -a "$OUT/runs.txt"; }
# measure STEM LINE: one process of the table's line LINE, writing STEM.{json,md,log}.
measure() {
  local stem=$1 label rc
  label=$(basename "$stem")
  words "$2"; split
  log "$label: ${sets[*]:+${sets[*]} }${common[*]} ${rest[*]}"
  timeout "$limit" "$bin" --config "$config" "${common[@]}" "${params[@]}" "${rest[@]}" --json "$stem.json" --md "$stem.md" \
    "${extra[@]}" >"$stem.log" 2>&1
  rc=$?
  log "$label: exit $rc$([ $rc = 124 ] && echo " (past $limit s)")"
  [ $rc = 0 ] || status=1
  sed -n '/^Median wall time/,/^$/p' "$stem.log"
}

: >"$OUT/runs.txt"
log "$(git rev-parse --short HEAD 2>/dev/null) $table, $rounds round(s), $bin"
if [ -n "$tests" ] && [ "${STUDY_TESTS:-1}" != 0 ]; then
  log "knn_tests --gtest_filter=$tests"
  "$BUILD_DIR/tests/knn_tests" --gtest_filter="$tests" >"$OUT/tests.log" 2>&1
  rc=$?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]" "$OUT/tests.log" | tee -a "$OUT/runs.txt"
  [ $rc = 0 ] || { status=1; log "knn_tests: exit $rc ($OUT/tests.log)"; }
fi
i=0
while [ $i -lt ${#steps[@]} ]; do
  read -r kind line <<<"${steps[$i]}"
  label=$(sed -n "${line}p" "$table" | awk '{print $2}')
  case "$kind" in
    run)  # this line and the `run` lines right after it: one block, alternating
      block=()
      while [ $i -lt ${#steps[@]} ] && [ "${steps[$i]%% *}" = run ]; do block+=("${steps[$i]#* }"); i=$((i + 1)); done
      for r in $(seq 1 "$rounds"); do
        for line in "${block[@]}"; do
          label=$(sed -n "${line}p" "$table" | awk '{print $2}')
          measure "$OUT/$label$([ "$rounds" -gt 1 ] && echo "-$r")" "$line"
        done
      done
      continue ;;
    once) measure "$OUT/$label" "$line" ;;
    ncu)
      if ! command -v ncu >/dev/null 2>&1; then
        log "ncu-$label: ncu not installed, not run"
      else
        words "$line"; split; ncu_split
        log "ncu-$label: ncu ${opts[*]} knnbench ${params[*]} ${rest[*]}"
        timeout "$limit" ncu "${opts[@]}" "$bin" --config "$config" "${common[@]}" "${params[@]}" "${rest[@]}" --warmup 0 \
          --min-samples 1 --max-samples 1 --min-time 0 --max-noise 0 --no-validate --quiet >"$OUT/ncu-$label.txt" 2>&1 ||
          { log "ncu-$label: exit $?"; status=1; }
      fi ;;
    plot)
      words "$line"; split  # SCRIPT OUTPUT LABEL...: "label" was the script
      script=$label output=${sets[0]:-} files=()
      for l in "${sets[@]:1}"; do files+=("$OUT/$l.json"); done
      log "plot: scripts/plots/$script -> $output"
      python3 "scripts/plots/$script" "${files[@]}" -o "$OUT/$output" "${rest[@]}" >"$OUT/plot-$output.log" 2>&1
      case $? in 0) ;; 3) log "plot: matplotlib missing (scripts/setup/install-deps.sh)" ;; *) status=1; tail -n 3 "$OUT/plot-$output.log" ;; esac ;;
  esac
  i=$((i + 1))
done
log "done, status $status; files in $OUT"
exit $status
