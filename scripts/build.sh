#!/usr/bin/env bash
# build.sh [TARGET...] - install what is missing, configure and build lap
# (CMake preset "default": clang-19 + lld against Debian's MLIR 19; CUDA when
# present): everything, or only the given targets and what they need.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
preset=${LAP_PRESET:-default}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" ${1:+--target "$@"}
