# Sourced by run-study.sh and run-ablation.sh: a setting VERSION.NAME=VALUE[,VALUE...] checked against
# `$bin params VERSION` (its name and values) before any GPU time is spent. `knnbench --list` checks
# cases, groups, versions and flags, not the parameters' values.
#   refused SETTING   true, with the reason in `why`, when the build declares no such parameter or not
#                     these values; `unknown` is 1 when the build registers no such version (a build
#                     without CUDA registers no GPU version), else 0
declare -A declared=()  # VERSION -> `$bin params VERSION`, a line a parameter ("-": not registered)
integer_range='an integer in \[(-?[0-9]+), (-?[0-9]+)\]'
refused() {
  local v=${1%%.*} rest=${1#*.} line kind allowed x range
  local name=${rest%%=*} values=${rest#*=}
  unknown=0
  [ -n "${declared[$v]+x}" ] || declared[$v]=$("$bin" params "$v" 2>/dev/null || echo -)
  if [ "${declared[$v]}" = - ]; then
    unknown=1 why="'$1': this build registers no version $v"
    return 0
  fi
  line=$(awk -v p="$v.$name" '$1 == p' <<<"${declared[$v]}")
  [ -n "$line" ] || { why="'$1': $v has no parameter '$name' (knnbench params $v)"; return 0; }
  read -r _ kind allowed _ <<<"$line"
  for x in ${values//,/ }; do
    if [ "$kind" = integer ]; then
      # LO..HI (older builds: "an integer in [LO, HI]")
      [[ $allowed =~ ^(-?[0-9]+)\.\.(-?[0-9]+)$ ]] || [[ $line =~ $integer_range ]] ||
        { why="'$1': $v.$name: no range in '$line'"; return 0; }
      range=("${BASH_REMATCH[@]: -2}")
      [[ $x =~ ^-?[0-9]+$ ]] && [ "$x" -ge "${range[0]}" ] && [ "$x" -le "${range[1]}" ] ||
        { why="'$1': $v.$name takes an integer in ${range[0]}..${range[1]}, not '$x'"; return 0; }
    elif [[ "|$allowed|" != *"|$x|"* ]]; then
      why="'$1': $v.$name takes $allowed, not '$x'"
      return 0
    fi
  done
  return 1
}
