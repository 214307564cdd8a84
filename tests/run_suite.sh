#!/usr/bin/env bash
# Runs one test suite of knn_tests as one ctest entry (tests/suites.cmake registers them). Exits 77 (ctest: Skipped)
# when the suite ran cleanly and every test of it skipped, e.g. GPU tests on a machine without a device; otherwise
# with the binary's own status (non-zero when a test failed). The binary's output passes through whole.
# Usage: run_suite.sh <knn_tests> <gtest filter>
set -uo pipefail
if [[ $# -ne 2 || ! -x $1 ]]; then
  echo "usage: run_suite.sh <knn_tests> <gtest filter> (got: $*)" >&2
  exit 2
fi
log=$(mktemp "${TMPDIR:-/tmp}/knn-suite.XXXXXX") || exit 2
trap 'rm -f "$log"' EXIT
"$1" --gtest_filter="$2" >"$log" 2>&1
rc=$?
cat "$log"
if ((rc == 0)) && grep -qE '^\[  SKIPPED \] [0-9]+ tests?, listed below' "$log" && ! grep -qE '^\[       OK \] ' "$log"; then
  echo "run_suite.sh: every test of $2 skipped"
  exit 77
fi
exit "$rc"
