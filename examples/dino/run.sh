#!/usr/bin/env bash
# run.sh - the DINO walkthrough: install, build, compile the tiny DINO ViT as
# a baseline and as a Laplacian variant (half of its heads Laplacian), train
# both by self-distillation on Fashion-MNIST on the CPU, print their k-NN
# and linear-probe accuracy next to the same models at initialisation, then
# analyse both side by side: the geometry and spectral decay of their token
# representations, and PCA pictures of their patch features.
#
#   DINO_STEPS  optimizer steps per model (default: the specs' 1,500 of 64
#               images, about 8 minutes each on 2 cores)
#   DINO_DIR    where the models, runs and analysis go (default: runs/dino)
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build.sh lapc lapc-run
lapc=build/bin/lapc
run=build/bin/lapc-run
out=${DINO_DIR:-runs/dino}
mkdir -p "$out"
# The image loader's thread shares the cores with the kernels' threads:
# threads that wait sleep instead of spinning, so neither starves the other.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

models=(dino_tiny dino_tiny_laplacian)
for model in "${models[@]}"; do
  echo
  echo "== lapc specs/$model.yaml -o $out/$model.so"
  "$lapc" "specs/$model.yaml" -o "$out/$model.so"
  steps=()
  [[ -n ${DINO_STEPS:-} ]] && steps=(--steps "$DINO_STEPS")
  echo "== lapc-run train $out/$model.so --run-dir $out/$model ${steps[*]}"
  rm -rf "${out:?}/$model"
  "$run" train "$out/$model.so" --run-dir "$out/$model" "${steps[@]}" --log-every 100
done

# A number from a run's summary.json (flat, one key per line).
value() { sed -n "s/^ *\"$2\": \([-0-9.e+]*\),\{0,1\}$/\1/p" "$out/$1/summary.json"; }

echo
echo "== the teachers' features on 1,024 test images: k-NN (k = 20) against 10,240 training images, and a linear probe"
printf '%-20s %17s %17s %17s\n' model "k-NN top-1" "k-NN top-5" "linear top-1"
printf '%-20s %17s %17s %17s\n' "" "init -> trained" "init -> trained" "init -> trained"
for model in "${models[@]}"; do
  printf '%-20s %8.4f -> %.4f %8.4f -> %.4f %8.4f -> %.4f\n' "$model" \
    "$(value "$model" init_knn_top1)" "$(value "$model" knn_top1)" \
    "$(value "$model" init_knn_top5)" "$(value "$model" knn_top5)" \
    "$(value "$model" init_linear_top1)" "$(value "$model" linear_top1)"
done

echo
echo "== lapc-run analyze $out/dino_tiny.so $out/dino_tiny_laplacian.so --out $out/analysis"
"$run" analyze "$out/dino_tiny.so" "$out/dino_tiny_laplacian.so" \
  --run-dir "$out/dino_tiny" --run-dir "$out/dino_tiny_laplacian" --samples 1000 \
  --out "$out/analysis"
