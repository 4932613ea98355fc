#!/usr/bin/env bash
# run.sh - DINO's dense evaluation on data made here: a synthetic
# segmentation set of textured shapes with exact label maps
# (lap.synthetic), the tiny DINO ViT and its Laplacian twin trained by
# self-distillation on its images, and the linear segmentation probe
# (lapc-run eval --task segmentation) on each teacher after one step (its
# initialisation, all but) and after training.
#
#   SEG_STEPS  optimizer steps per model (default 1,500, the spec's)
#   SEG_DIR    where everything goes (default: runs/segmentation)
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build.sh lapc lapc-run
lapc=build/bin/lapc
run=build/bin/lapc-run
steps=${SEG_STEPS:-1500}
out=${SEG_DIR:-runs/segmentation}
rm -rf "${out:?}"
mkdir -p "$out"
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

# Every region of every image draws its own grey level and stripes, so
# only the shapes tell the classes apart: DINO's augmentations teach its
# features to ignore intensity and texture.
echo "== a synthetic set: 2,000 training and 200 validation images of 28 pixels, 5 classes"
PYTHONPATH=build/python /usr/bin/python3 -c "
from lap import synthetic
synthetic.segmentation_set('$out/shapes', images=(2000, 200), size=28,
                           classes=5, channels=1, image_folder=True,
                           looks='image')"

models=(dino_tiny dino_tiny_laplacian)
for model in "${models[@]}"; do
  # The spec, trained on the synthetic images instead of Fashion-MNIST.
  cat > "$out/$model.yaml" <<YAML
extends: $PWD/specs/$model.yaml
name: ${model}_shapes
train:
  steps: $steps
  schedule: {warmup_steps: $((steps / 10))}
  data:
    format: imagefolder
    train: $PWD/$out/shapes/folder/training
    val: $PWD/$out/shapes/folder/validation
  eval: {batches: 2}
YAML
  echo
  echo "== $model: train $steps steps on the shapes, probing after step 1 and at the end"
  "$lapc" "$out/$model.yaml" -o "$out/$model.so"
  "$run" train "$out/$model.so" --run-dir "$out/$model" --stop-at 1 > /dev/null
  "$run" eval "$out/$model.so" --run-dir "$out/$model" --task segmentation \
    --data "$out/shapes" --classes 5 --images 400 --out "$out/$model/step1"
  "$run" train "$out/$model.so" --run-dir "$out/$model" --resume --log-every 100
  "$run" eval "$out/$model.so" --run-dir "$out/$model" --task segmentation \
    --data "$out/shapes" --classes 5 --images 400 --out "$out/$model/trained"
done

value() {
  /usr/bin/python3 -c "import json; print(f\"{json.load(open('$1'))['$2']:.4f}\")"
}
echo
echo "== linear segmentation probe: 400 training and 200 validation images, mIoU (pixel accuracy)"
printf '%-22s %22s %22s\n' model "after step 1" "after $steps steps"
for model in "${models[@]}"; do
  printf '%-22s %13s (%6s) %13s (%6s)\n' "$model" \
    "$(value "$out/$model/step1/segmentation.json" mIoU)" \
    "$(value "$out/$model/step1/segmentation.json" pixel_accuracy)" \
    "$(value "$out/$model/trained/segmentation.json" mIoU)" \
    "$(value "$out/$model/trained/segmentation.json" pixel_accuracy)"
done
echo
echo "pictures: $out/<model>/{step1,trained}/segmentation.png (image, truth, prediction)"
