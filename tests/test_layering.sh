#!/usr/bin/env bash
# The house rules that a reader can check by grep (docs/ARCHITECTURE.md):
#   - the harness (src/) never includes anything from kernels/;
#   - src/core/ includes only itself and system/library headers (never the harness, never kernels/);
#   - kernels/device/ (what several engines share) includes only itself, src/core and system/library
#     headers, never an engine's folder; kernels/common/ (the old flat folder) does not come back;
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

# kernels/device/ sits below every engine: it may include itself and the core, nothing else of ours.
device_bad=$(grep -rn '#include "' kernels/device | grep -v -e '#include "core/' -e '#include "kernels/device/' || true)
if [[ -n $device_bad ]]; then
  echo "FAIL: kernels/device includes an engine's folder (or the harness):"; echo "$device_bad"; fail=1
fi
if [[ ! -d kernels/device ]]; then
  echo "FAIL: kernels/device is missing"; fail=1
fi
if [[ -e kernels/common ]]; then
  echo "FAIL: kernels/common exists: shared code lives in kernels/device, an engine's in its own folder"; fail=1
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
  echo "layering: src/ includes nothing from kernels/, src/core and kernels/device stand alone, no kernels/common," \
    "every file <= 400 lines"
fi
exit $fail
