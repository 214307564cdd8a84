#!/usr/bin/env bash
# Builds knnbench and runs the whole test suite through ctest (the README's test command is
# ./RUNME.sh --test, which calls this). GPU tests skip with a message where no device exists.
#   BUILD_DIR (default build) selects the build folder; extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
start=$SECONDS
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${KNN_CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j"$jobs"
echo "test.sh: configured and built in $((SECONDS - start)) s ($jobs jobs)"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$jobs" "$@"
