#!/usr/bin/env bash
# run.sh - the sweep walkthrough: install, build, then train every
# variant of specs/sweeps/vit_tiny.yaml (the tiny ViT with 0, 1, 2 and 4
# Laplacian heads per layer, 3 seeds each) on Fashion-MNIST on the CPU, and
# print the table of test accuracy and loss, mean ± std over the seeds.
# Interrupted (Ctrl-C), the same command continues where it stopped.
#
#   SWEEP_SPEC   the sweep (default specs/sweeps/vit_tiny.yaml; also
#                specs/sweeps/vit_tiny_learned.yaml: learned head kinds)
#   SWEEP_STEPS  optimizer steps per variant (default 150, of 128 images)
#   SWEEP_DIR    where the sweep goes (default: runs/vit-sweep)
#   SWEEP_JOBS   variants trained at once (default 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build.sh lapc lapc-run
steps=${SWEEP_STEPS:-150}
out=${SWEEP_DIR:-runs/vit-sweep}
spec=${SWEEP_SPEC:-specs/sweeps/vit_tiny.yaml}
echo "== lapc-run sweep $spec --out $out --steps $steps"
build/bin/lapc-run sweep "$spec" --out "$out" --steps "$steps" \
  --jobs "${SWEEP_JOBS:-1}"
