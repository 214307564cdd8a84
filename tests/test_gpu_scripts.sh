#!/usr/bin/env bash
# The scripts of a GPU machine, checked where none is: every script parses (bash -n); gpu-check.sh's
# help names every step it takes and an unknown step is a usage error; every study of
# scripts/tune/run-study.sh has its config and table, and each of its processes' arguments is taken by
# `knnbench --list` (cases, groups, versions, flags) and each setting to `knnbench params` (names,
# values); a broken table is refused with its file and line.
#   tests/test_gpu_scripts.sh KNNBENCH SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
build=$(cd "$(dirname "$bin")" && pwd)
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

while IFS= read -r f; do
  bash -n "$f" 2>"$tmp/err" || bad "bash -n $f: $(cat "$tmp/err")"
done < <(find "$src/scripts" "$src/RUNME.sh" "$src/.ci/run" -type f \( -name '*.sh' -o -name RUNME.sh -o -name run \))

gpu_check=$src/scripts/gpu/gpu-check.sh
"$gpu_check" --help >"$tmp/help" || bad "gpu-check.sh --help exited $?"
steps=$(sed -n 's/^    \([a-z|-]*\)) steps+=("\$1") ;;$/\1/p' "$gpu_check" | tr '|' ' ')
[ -n "$steps" ] || bad "gpu-check.sh: its list of steps was not found"
for s in $steps; do
  grep -qE "^#   $s( |$)" "$tmp/help" || bad "gpu-check.sh --help does not describe step '$s'"
done
"$gpu_check" no-such-step >/dev/null 2>"$tmp/err"
code=$?
[ $code -eq 2 ] && grep -q "unknown step 'no-such-step'" "$tmp/err" || bad "gpu-check.sh no-such-step: exit $code, stderr: $(cat "$tmp/err")"

study=$src/scripts/tune/run-study.sh
for t in "$src"/configs/studies/*.txt; do [ -f "${t%.txt}.json" ] || bad "$t has no config ${t%.txt}.json"; done
for c in "$src"/configs/studies/*.json; do [ -f "${c%.json}.txt" ] || bad "$c has no table ${c%.json}.txt"; done
"$study" --list >"$tmp/list" || bad "run-study.sh --list exited $?"
n_tables=$(ls "$src"/configs/studies/*.txt | wc -l)
[ "$(wc -l <"$tmp/list")" -eq "$n_tables" ] || bad "run-study.sh --list: $(wc -l <"$tmp/list") lines for $n_tables studies"
BUILD_DIR=$build "$study" --check >"$tmp/check" 2>&1 || bad "run-study.sh --check: $(cat "$tmp/check")"
"$study" no-such-study >/dev/null 2>&1
code=$?
[ $code -eq 2 ] || bad "run-study.sh no-such-study: exit $code, expected 2"

# A table with an unknown line, and one whose process names a group its config lacks.
mkdir -p "$tmp/studies"
cp "$src/configs/studies/v15-taper.json" "$tmp/studies/a.json"
cp "$src/configs/studies/v15-taper.json" "$tmp/studies/b.json"
printf '# a: broken\nrun x v15.taper=on -- --version v15\nrepeat 3\n' >"$tmp/studies/a.txt"
printf '# b: a group that is not there\nonce x -- --group nowhere --version v15\n' >"$tmp/studies/b.txt"
STUDIES="$tmp/studies" BUILD_DIR=$build "$study" --check a >/dev/null 2>"$tmp/err"
code=$?
[ $code -ne 0 ] && grep -q "a.txt:3: unknown line 'repeat'" "$tmp/err" || bad "a table with 'repeat': exit $code, stderr: $(cat "$tmp/err")"
STUDIES="$tmp/studies" BUILD_DIR=$build "$study" --check b >/dev/null 2>"$tmp/err"
code=$?
[ $code -ne 0 ] && grep -q "b.txt:2: knnbench refuses it:.*nowhere" "$tmp/err" || bad "a table with --group nowhere: exit $code, stderr: $(cat "$tmp/err")"
printf '# a: settings after --\nrun x --version v15\n' >"$tmp/studies/a.txt"
STUDIES="$tmp/studies" "$study" a >/dev/null 2>"$tmp/err"
code=$?
[ $code -eq 2 ] && grep -q "a.txt:2: '--version': a setting is a parameter VERSION.NAME=VALUE" "$tmp/err" || bad "a knnbench flag among the settings: exit $code, stderr: $(cat "$tmp/err")"
# A retired variable names the parameter that replaced it; a value the build's declaration does not
# take is refused by --check (v18 declares v15's engine parameters in every build).
printf '# a: an old variable\nrun x KNN_V15_TAPER=1 -- --version v15\n' >"$tmp/studies/a.txt"
STUDIES="$tmp/studies" "$study" a >/dev/null 2>"$tmp/err"
code=$?
[ $code -eq 2 ] && grep -q "a.txt:2: 'KNN_V15_TAPER=1': the variables are parameters now: v15.taper=VALUE" "$tmp/err" ||
  bad "a retired variable among the settings: exit $code, stderr: $(cat "$tmp/err")"
printf '# a: values out of range\nrun x v18.min_groups=4 v18.taper=1 -- --version v18\nrun y v18.min_groups=0,2000000 -- --version v18\n' >"$tmp/studies/a.txt"
STUDIES="$tmp/studies" BUILD_DIR=$build "$study" --check a >/dev/null 2>"$tmp/err"
code=$?
[ $code -ne 0 ] && grep -q "a.txt:2: 'v18.taper=1': v18.taper takes on|off, not '1'" "$tmp/err" && ! grep -q "a.txt:2: .*min_groups" "$tmp/err" &&
  grep -q "a.txt:3: 'v18.min_groups=0,2000000': v18.min_groups takes an integer in 0..1048576, not '2000000'" "$tmp/err" ||
  bad "a setting's value the declaration refuses: exit $code, stderr: $(cat "$tmp/err")"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "ok: scripts parse, gpu-check.sh describes its $(wc -w <<<"$steps") steps; $(cat "$tmp/check")"
