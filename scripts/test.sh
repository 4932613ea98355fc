#!/usr/bin/env bash
# test.sh - the README's test command: install, build, run every test
# (lit suite, GoogleTest suites, fuzzer smoke run) through ctest, two at a
# time (LAP_TEST_JOBS).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
# Two tests at a time (lit runs its own two workers inside one of them).
ctest --preset "${LAP_PRESET:-default}" -j "${LAP_TEST_JOBS:-2}" "$@"
