#!/usr/bin/env bash
# run.sh - the training-step benchmark: lap against PyTorch, same models,
# same shapes, same head kinds, 2 threads, in one run.
#
# For gpt-bench and vit-bench (with Laplacian heads) and their all-attn
# twins: compile with lapc, time lap_model_train_step (forward + backward, no
# optimizer) with lap-step-bench, then the same model's forward + backward in
# PyTorch (Debian's python3-torch at its best: see BENCHMARKS below), and
# print one JSON document with both, the speed-up and the cost of the
# Laplacian heads over the all-attn model.
#
# With OPTIMIZER (adamw or muon) both sides time a full training step
# instead: forward, backward, clipping and the optimizer's update.
#
# usage: bench/run.sh [ITERS] [OPTIMIZER]      (needs a build: scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${1:-20}
optimizer=${2:+--optimizer $2}

# PyTorch from Debian (the peer users would pick here), at its best: with
# OpenBLAS (without it Debian's torch falls back to the reference BLAS) and
# tcmalloc (as PyTorch's own CPU launcher uses).
need=()
for p in python3-torch python3-yaml libopenblas0-pthread libtcmalloc-minimal4; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
  apt-get install -y --no-install-recommends "${need[@]}" >&2
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
declare -A batch=([gpt]=8 [vit]=64)
declare -A seq=([gpt]="--seq 256" [vit]="")   # an image model's sequence is fixed

for model in gpt-bench gpt-bench-attn vit-bench vit-bench-attn; do
  family=${model%%-*}
  build/bin/lapc "bench/specs/$model.yaml" -o "$out/$model.so" --max-batch "${batch[$family]}"
  build/bin/lapc "bench/specs/$model.yaml" --emit=spec -o "$out/$model.yaml"
  # Interleave the two frameworks so that machine noise hits both.
  for round in 1 2 3; do
    OMP_NUM_THREADS=2 build/bin/lap-step-bench "$out/$model.so" \
      --batch "${batch[$family]}" ${seq[$family]} --iters "$iters" $optimizer \
      > "$out/$model.lap.$round.json"
    # PASSIVE: libgomp threads must not spin against torch's own threads.
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=PASSIVE \
      /usr/bin/python3 bench/torch_step.py --spec "$out/$model.yaml" \
      --batch "${batch[$family]}" ${seq[$family]} --threads 2 --iters "$iters" $optimizer \
      > "$out/$model.torch.$round.json"
  done
done

python3 - "$out" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
def best(model, framework):
    runs = [json.load(open(f)) for f in sorted(glob.glob(f"{out}/{model}.{framework}.*.json"))]
    return min(runs, key=lambda r: r["ms_per_step"]["median"])
results = {}
for model in ["gpt-bench", "gpt-bench-attn", "vit-bench", "vit-bench-attn"]:
    lap, torch = best(model, "lap"), best(model, "torch")
    results[model] = {
        "lap": lap, "pytorch": torch,
        "speedup_over_pytorch": torch["ms_per_step"]["median"] / lap["ms_per_step"]["median"],
    }
overhead = {
    family: results[f"{family}-bench"]["lap"]["ms_per_step"]["median"]
            / results[f"{family}-bench-attn"]["lap"]["ms_per_step"]["median"] - 1
    for family in ["gpt", "vit"]
}
print(json.dumps({"peak_gflops": 540, "threads": 2, "results": results,
                  "laplacian_overhead": overhead}, indent=2))
PY
