#!/usr/bin/env bash
# knnbench in one command.
#   ./RUNME.sh | tee screen.log      install missing dependencies where it can, build (Release),
#                                    run the default matrix, write results/local/<host>-<utc>.{json,md}
#                                    and plots (results/local/<host>-<utc>-<figure>.png/.svg)
#   ./RUNME.sh --test                build and run the whole test suite (ctest)
#   ./RUNME.sh --group smoke         any other arguments go to knnbench (see ./build/knnbench --help)
# Build messages go to stderr and build/build.log, so a piped screen log holds only the run.
set -euo pipefail
cd "$(dirname "$0")"
BUILD_DIR=${BUILD_DIR:-build}

# Dependencies: installed when root, otherwise the command is printed.
scripts/setup/install-deps.sh >&2 || echo "RUNME.sh: continuing; the build will say if something is missing" >&2

if [ "${1:-}" = "--test" ]; then
  shift
  exec scripts/test/test.sh "$@"
fi

mkdir -p "$BUILD_DIR"
echo "RUNME.sh: building (Release) in $BUILD_DIR, log: $BUILD_DIR/build.log" >&2
if ! { cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${KNN_CMAKE_ARGS:-} &&
       cmake --build "$BUILD_DIR" -j"$(nproc 2>/dev/null || echo 2)"; } >"$BUILD_DIR/build.log" 2>&1; then
  tail -n 30 "$BUILD_DIR/build.log" >&2
  echo "RUNME.sh: build failed; full log in $BUILD_DIR/build.log" >&2
  exit 2
fi

stem="results/local/$(hostname)-$(date -u +%Y%m%dT%H%M%SZ)"
set +e
"$BUILD_DIR/knnbench" --json "$stem.json" --md "$stem.md" "$@"
rc=$?
set -e
# plot.py finds a Python with matplotlib itself, or says how to install it. The markdown is then
# written again from the JSON so that it links the figures beside it.
if [ -f "$stem.json" ]; then
  if python3 scripts/plots/plot.py "$stem.json" -o "$stem.png" >&2; then
    echo "Plots: $stem-*.png (and .svg)"
    "$BUILD_DIR/knnbench" report "$stem.json" --md "$stem.md" >&2 || echo "RUNME.sh: $stem.md not rewritten with the plot links" >&2
  else
    echo "RUNME.sh: no plot (see the message above)" >&2
  fi
fi
exit $rc
