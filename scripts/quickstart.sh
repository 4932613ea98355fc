#!/usr/bin/env bash
# quickstart.sh - the README's main command: the GPT quickstart of
# examples/gpt-quickstart (install, build, train a tiny GPT and its
# Laplacian twin on the CPU, print their losses and samples).
exec "$(dirname "$0")/../examples/gpt-quickstart/run.sh" "$@"
