#!/usr/bin/env bash
# run.sh - the paper's three regimes in small, on the data this machine
# has: supervised ViT and DINO on Fashion-MNIST, the GPT on the fortunes,
# each as a baseline and with 2 of its 4 heads Laplacian, 3 seeds each
# (lapc-run sweep); the geometry of every model's token representations
# (lapc-run analyze); the DINO teachers' linear segmentation probe on a
# synthetic set of shapes (lapc-run eval --task segmentation); then one
# table, mean ± std over the seeds (table.py). Interrupted, the same
# command continues where it stopped.
#
#   PAPER_DIR         where everything goes (default: runs/paper)
#   SUPERVISED_STEPS  optimizer steps per supervised model (default 300)
#   DINO_STEPS        per DINO model (default 300)
#   LM_STEPS          per language model (default 200)
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build.sh lapc lapc-run
run=build/bin/lapc-run
python=(env PYTHONPATH=build/python /usr/bin/python3)
out=${PAPER_DIR:-runs/paper}
mkdir -p "$out"
# The image loader's thread shares the cores with the kernels' threads:
# threads that wait sleep instead of spinning, so neither starves the other.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

regime() {  # NAME STEPS: train the sweep's 6 variants, analyse each
  echo
  echo "== lapc-run sweep examples/paper/$1.yaml --out $out/$1 --steps $2"
  "$run" sweep "examples/paper/$1.yaml" --out "$out/$1" --steps "$2"
  echo "== lapc-run analyze $out/$1 --samples 1000"
  "$run" analyze "$out/$1" --samples 1000 > "$out/$1/analyze.log"
}
regime supervised "${SUPERVISED_STEPS:-300}"
regime dino "${DINO_STEPS:-300}"
regime lm "${LM_STEPS:-200}"

# As the paper probes its ImageNet-trained teachers on ADE20K: the
# teachers trained on Fashion-MNIST, probed on another set of 28-pixel
# grey images, whose regions draw their grey level and stripes per image
# so that only the shapes tell the 5 classes apart.
shapes=$out/shapes
if [[ ! -d $shapes ]]; then
  rm -rf "$shapes.partial"
  echo
  echo "== a synthetic segmentation set: 2,000 training and 200 validation images, 5 classes"
  "${python[@]}" -c "
from lap import synthetic
synthetic.segmentation_set('$shapes.partial', images=(2000, 200), size=28,
                           classes=5, channels=1, looks='image')"
  mv "$shapes.partial" "$shapes"
fi
echo
echo "== lapc-run eval --task segmentation: each DINO teacher, 400 training and 200 validation images"
"${python[@]}" -c "
import json
for v in json.load(open('$out/dino/models/variants.json')):
    print(v['library'], v['run'], v['name'])" |
  while read -r library rundir name; do
    result=$out/dino/segmentation/$name
    [[ -f $result/segmentation.json ]] && continue
    rm -rf "$result.partial"
    mkdir -p "$out/dino/segmentation"
    "$run" eval "$library" --run-dir "$rundir" --task segmentation \
      --data "$shapes" --classes 5 --images 400 --out "$result.partial" \
      > /dev/null
    mv "$result.partial" "$result"
    echo "$name: mIoU $("${python[@]}" -c "import json; print(round(json.load(open('$result/segmentation.json'))['mIoU'], 4))")"
  done

echo
echo "== the table: mean ± std over the seeds; geometry of the last layer's tokens"
"${python[@]}" examples/paper/table.py "$out"
