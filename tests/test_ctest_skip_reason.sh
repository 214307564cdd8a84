#!/usr/bin/env bash
# ctest lists a skipped test as "Skipped" without its message: after the tests it must say why the
# GPU tests skip (CTestCustom.cmake). Runs one GPU suite (gpu.GpuMemory) through ctest in the build folder.
# Usage: test_ctest_skip_reason.sh <path-to-knnbench> <source-dir>. Exit 77 = skipped (a GPU is here).
set -uo pipefail
build=$(dirname "$1")
out=$(ctest --test-dir "$build" -R '^gpu\.GpuMemory$' 2>&1)
if ! grep -q "(Skipped)" <<<"$out"; then
  echo "SKIP: the GPU test ran here (a GPU is present): nothing to explain"
  exit 77
fi
if grep -q "GPU tests (ctest -L gpu) are skipped on this machine: no CUDA device (" <<<"$out"; then
  echo "ok: ctest says why the GPU tests skip"
  exit 0
fi
echo "FAIL: ctest shows the GPU test as Skipped without the reason:"
echo "$out"
exit 1
