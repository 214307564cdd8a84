#!/usr/bin/env bash
# The house rules that a reader can check by grep (docs/ARCHITECTURE.md):
#   - the harness (src/) never includes anything from kernels/;
#   - src/core/ includes only itself and system/library headers (never the harness, never kernels/);
#   - no file in src/ or kernels/ is over 400 lines;
#   - no file in src/ names a version id (v0..v99) in code outside comments and strings about ids.
# Usage: test_layering.sh <path-to-knnbench> <source-dir>
set -uo pipefail
src=$2
cd "$src" || exit 2
fail=0

up=$(grep -rn '#include' src | grep 'kernels/' || true)
if [[ -n $up ]]; then
  echo "FAIL: the harness includes from kernels/:"; echo "$up"; fail=1
fi

core_bad=$(grep -rhn '#include "' src/core | grep -v '#include "core/' || true)
if [[ -n $core_bad ]]; then
  echo "FAIL: src/core includes something outside src/core:"; grep -rn '#include "' src/core | grep -v '#include "core/'; fail=1
fi

long=$(find src kernels -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) -print0 |
  xargs -0 wc -l | awk '$2 != "total" && $1 > 400 {print $2 " (" $1 " lines)"}')
if [[ -n $long ]]; then
  echo "FAIL: files over 400 lines:"; echo "$long"; fail=1
fi

# The registry decides which versions exist; the harness never names one in code.
named=$(grep -rnE '"v[0-9]+"' src --include='*.cpp' --include='*.hpp' --include='*.cu' | grep -v '//' || true)
if [[ -n $named ]]; then
  echo "FAIL: the harness names a version:"; echo "$named"; fail=1
fi

if [[ $fail -eq 0 ]]; then
  echo "layering: src/ includes nothing from kernels/, src/core stands alone, every file <= 400 lines"
fi
exit $fail
