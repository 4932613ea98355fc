#!/usr/bin/env bash
# vit-sweep.sh - the sweep walkthrough: install, build, then train every
# variant of specs/sweeps/vit_tiny.yaml (the tiny ViT with 0, 1, 2 and 4
# Laplacian heads per layer, 3 seeds each) on Fashion-MNIST on the CPU, and
# print the table of test accuracy and loss, mean ± std over the seeds.
# Interrupted (Ctrl-C), the same command continues where it stopped.
#
#   SWEEP_STEPS  optimizer steps per variant (default 150, of 128 images)
#   SWEEP_DIR    where the sweep goes (default: runs/vit-sweep)
#   SWEEP_JOBS   variants trained at once (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh lapc lapc-run
steps=${SWEEP_STEPS:-150}
out=${SWEEP_DIR:-runs/vit-sweep}
echo "== lapc-run sweep specs/sweeps/vit_tiny.yaml --out $out --steps $steps"
build/bin/lapc-run sweep specs/sweeps/vit_tiny.yaml --out "$out" --steps "$steps" \
  --jobs "${SWEEP_JOBS:-1}"
