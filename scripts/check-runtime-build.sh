#!/usr/bin/env bash
# check-runtime-build.sh DIR [CMAKE-ARGS...] - what a machine without MLIR
# (a GPU host) builds: configures the runtime alone in DIR
# (LAP_BUILD_COMPILER=OFF, with MLIR and LLVM made unfindable), checks that
# no compile command names their headers, builds everything that
# configuration has (lapc-run, the kernel libraries, model.so's entry
# points, the tests that need no compiler) and runs its quick tests. With
# LAPC set (a lapc built elsewhere), its lapc-run also checks a model.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: check-runtime-build.sh BUILD_DIR [CMAKE-ARGS...]}
shift
cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DLLVM_USE_LINKER=lld -DLAP_BUILD_COMPILER=OFF --no-warn-unused-cli \
  -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON \
  "$@" >/dev/null
if grep -n -E 'llvm-19|/mlir/|/llvm/' "$dir/compile_commands.json"; then
  echo "error: the runtime build compiles against MLIR or LLVM headers" >&2
  exit 1
fi
cmake --build "$dir"
if [ -e "$dir/bin/lapc" ]; then
  echo "error: the runtime build made lapc" >&2
  exit 1
fi
"$dir/bin/lapc-run" --help >/dev/null
if [ -n "${LAPC:-}" ]; then
  "$LAPC" "$src/specs/gpt_tiny.yaml" -o "$dir/gpt_tiny.so"
  "$dir/bin/lapc-run" check "$dir/gpt_tiny.so"
fi
ctest --test-dir "$dir" --output-on-failure \
  -R '^(FileNames|Files|Csv|CheckpointTest)[.]'
