#!/usr/bin/env bash
# run.sh - the second walkthrough: install, build,
# compile the tiny ViT as a baseline and as a Laplacian variant (half of its
# heads Laplacian), train both on Fashion-MNIST (Debian's
# dataset-fashion-mnist) on the CPU, then analyse both side by side:
# accuracy, and the geometry of their token representations layer by layer.
#
#   VIT_STEPS  optimizer steps per model (default 470: one epoch of 128 images
#              a step; the specs' own run is 3 epochs)
#   VIT_DIR    where the models, runs and analysis go (default: runs/vit)
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build.sh lapc lapc-run
lapc=build/bin/lapc
run=build/bin/lapc-run
steps=${VIT_STEPS:-470}
out=${VIT_DIR:-runs/vit}
mkdir -p "$out"

models=(vit_tiny vit_tiny_laplacian)
for model in "${models[@]}"; do
  echo
  echo "== lapc specs/$model.yaml -o $out/$model.so"
  "$lapc" "specs/$model.yaml" -o "$out/$model.so"
  echo "== lapc-run train $out/$model.so --run-dir $out/$model --steps $steps"
  rm -rf "${out:?}/$model"
  "$run" train "$out/$model.so" --run-dir "$out/$model" --steps "$steps" --log-every 50 \
    --eval-every "$steps"
done

echo
echo "== lapc-run analyze $out/vit_tiny.so $out/vit_tiny_laplacian.so --out $out/analysis"
"$run" analyze "$out/vit_tiny.so" "$out/vit_tiny_laplacian.so" \
  --run-dir "$out/vit_tiny" --run-dir "$out/vit_tiny_laplacian" --samples 1000 \
  --out "$out/analysis"
