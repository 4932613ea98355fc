#!/usr/bin/env bash
# test.sh - the README's test command: install, build, run every test
# (lit suite, GoogleTest suites, fuzzer smoke run) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --preset "${LAP_PRESET:-default}" "$@"
