#!/usr/bin/env bash
# build.sh - install what is missing, configure and build lap (CMake preset
# "default": clang-19 + lld against Debian's MLIR 19; CUDA when present).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
preset=${LAP_PRESET:-default}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
