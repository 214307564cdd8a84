#!/usr/bin/env bash
# results/ stays small and every file in it is cited (results/README.md):
#   - the files under results/ that git tracks (and new ones it does not ignore; without .git: every
#     file but results/local/ and raw logs) total at most 5 MB (5 000 000 bytes);
#   - each of them is named by a doc: its path relative to results/ appears in README.md,
#     results/README.md, docs/*.md or a kernels/**/README.md, or one of those docs names its folder
#     (relative to results/, with the trailing slash) and its file name;
#   - every path into results/ that README.md, docs/*.md or results/README.md gives (markdown links,
#     `results/...` in the text; in results/README.md also `h100/...`-style paths relative to it)
#     resolves to an existing file or folder (braces and * are expanded).
# Usage: test_results_tree.sh <path-to-knnbench> <source-dir>
set -uo pipefail
src=$2
cd "$src" || exit 2
limit=5000000
fail=0

if [[ ! -d results ]]; then
  echo "FAIL: no results/ folder in $src"
  exit 1
fi

# The files: what git tracks or would add; without git metadata, what .gitignore would leave.
files=()
if [[ -e .git ]] && git rev-parse --git-dir >/dev/null 2>&1; then
  while IFS= read -r -d '' f; do
    [[ -f $f ]] && files+=("$f")
  done < <(git ls-files -z --cached --others --exclude-standard -- results | sort -zu)
  how="git ls-files"
else
  while IFS= read -r -d '' f; do
    files+=("$f")
  done < <(find results -type f ! -path 'results/local/*' ! -name '*.log' ! -path '*/logs/*' -print0 | sort -z)
  how="find"
fi
if [[ ${#files[@]} -eq 0 ]]; then
  echo "FAIL: no file under results/ ($how): the checks below would prove nothing"
  exit 1
fi

# 1. Size (apparent bytes, as du --apparent-size counts them).
total=0
for f in "${files[@]}"; do
  total=$((total + $(stat -c %s "$f")))
done
if ((total > limit)); then
  echo "FAIL: results/ holds $total bytes in ${#files[@]} files ($how), over the limit of $limit (5 MB). Largest:"
  for f in "${files[@]}"; do printf '%10d %s\n' "$(stat -c %s "$f")" "$f"; done | sort -rn | head -10
  fail=1
fi

# 2. Every file is named by a doc.
docs=(README.md results/README.md)
for d in docs/*.md; do [[ -f $d ]] && docs+=("$d"); done
while IFS= read -r -d '' d; do docs+=("$d"); done < <(find kernels -name README.md -print0 2>/dev/null)
existing_docs=()
for d in "${docs[@]}"; do [[ -f $d ]] && existing_docs+=("$d"); done

# One awk pass: a name counts as a whole token only, not glued to more of a file name (so
# default.json is not named by default.json.gz); a path may follow a / (results/h100/...), a bare
# file name may not.
mapfile -t unnamed < <(printf '%s\n' "${files[@]}" | awk -v ndocs="${#existing_docs[@]}" '
  function tok(text, name, slash_ok,    pos, at, before, after, next2) {
    pos = 1
    while ((at = index(substr(text, pos), name)) > 0) {
      at += pos - 1
      before = at > 1 ? substr(text, at - 1, 1) : ""
      after = substr(text, at + length(name), 1)
      next2 = substr(text, at + length(name) + 1, 1)
      if ((before == "" || before !~ /[A-Za-z0-9_.-]/) && (slash_ok || before != "/") &&
          (name ~ /\/$/ || after == "" || after !~ /[A-Za-z0-9_.\/-]/ ||
           (after == "." && (next2 == "" || next2 !~ /[A-Za-z0-9_]/))))
        return 1
      pos = at + 1
    }
    return 0
  }
  FILENAME != "-" { doc[FILENAME] = doc[FILENAME] $0 "\n"; next }
  {
    rel = substr($0, 9)  # after "results/"
    if (rel == "README.md") next
    named = 0
    for (d in doc) if (tok(doc[d], rel, 1)) { named = 1; break }
    if (!named && index(rel, "/") > 0) {
      dir = rel; sub(/[^\/]*$/, "", dir)
      base = substr(rel, length(dir) + 1)
      for (d in doc) if (tok(doc[d], dir, 1) && tok(doc[d], base, 0)) { named = 1; break }
    }
    if (!named) print $0
  }' "${existing_docs[@]}" -)
if [[ ${#unnamed[@]} -gt 0 ]]; then
  echo "FAIL: ${#unnamed[@]} file(s) under results/ named by no doc (README.md, results/README.md, docs/*.md, kernels/**/README.md):"
  printf '  %s\n' "${unnamed[@]}"
  fail=1
fi

# 3. Every path into results/ that a doc gives exists.
# resolves <path relative to the repository root>: brace and * patterns need one match per expansion.
resolves() {
  local p=$1 item
  [[ $p =~ ^[A-Za-z0-9_./{},*-]+$ ]] || return 0  # placeholders such as <host> are not paths
  local expanded=()
  eval "expanded=($p)"  # brace expansion only: the pattern holds no quote, $, ; or space
  for item in "${expanded[@]}"; do
    if [[ $item == *\** ]]; then
      compgen -G "$item" >/dev/null || return 1
    else
      [[ -e $item ]] || return 1
    fi
  done
  return 0
}
broken=()
link_docs=(README.md results/README.md)
for d in docs/*.md; do [[ -f $d ]] && link_docs+=("$d"); done
for d in "${link_docs[@]}"; do
  [[ -f $d ]] || continue
  dir=$(dirname "$d")
  # markdown links: [text](target), relative to the doc
  while IFS= read -r t; do
    t=${t%%#*}
    [[ -z $t || $t == *://* ]] && continue
    p=$(realpath -m --relative-to=. "$dir/$t")
    [[ $p == results || $p == results/* ]] || continue
    [[ $p == results/local || $p == results/local/* ]] && continue
    resolves "$p" || broken+=("$d: ($t)")
  done < <(grep -oE '\]\([^) ]+\)' "$d" | sed -E 's/^\]\((.*)\)$/\1/')
  # results/... in the text, relative to the repository root
  while IFS= read -r t; do
    while [[ $t == *[.,:\;] ]]; do t=${t%?}; done
    [[ $t == results/local || $t == results/local/* ]] && continue
    resolves "$t" || broken+=("$d: $t")
  done < <(grep -oE '(^|[^A-Za-z0-9_./-])results/[A-Za-z0-9_./{},*-]*' "$d" | sed -E 's/^[^r]//')
done
# results/README.md's own paths (`h100/default.md`): relative to results/ (or to the root: configs/...)
while IFS= read -r t; do
  [[ $t == local/* ]] && continue
  (cd results && resolves "$t") || resolves "$t" || broken+=("results/README.md: \`$t\`")
done < <(grep -oE '`[A-Za-z0-9_.{},*-]+/[A-Za-z0-9_./{},*-]*`' results/README.md | tr -d '`' | grep -vE '^(results|\.\.)/')
if [[ ${#broken[@]} -gt 0 ]]; then
  echo "FAIL: ${#broken[@]} path(s) into results/ that do not resolve:"
  printf '  %s\n' "${broken[@]}" | sort -u
  fail=1
fi

if ((fail)); then exit 1; fi
echo "PASS: results/ holds ${#files[@]} files, $total bytes (limit $limit), each named by a doc; every path into it resolves"
