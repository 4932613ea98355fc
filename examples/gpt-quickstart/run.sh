#!/usr/bin/env bash
# run.sh - the main job (scripts/quickstart.sh): install, build, compile the tiny
# GPT as a baseline (softmax heads) and as a Laplacian variant (half of its
# heads Laplacian), train both on the CPU on the text of Debian's `fortunes`
# package, then print their validation loss and bits per byte next to the
# corpus's unigram entropy, and a sample from each.
#
#   QUICKSTART_STEPS  optimizer steps per model (default 200: under two
#                     minutes each on 2 cores)
#   QUICKSTART_DIR    where the models and runs go (default: runs/quickstart)
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build.sh lapc lapc-run
lapc=build/bin/lapc
run=build/bin/lapc-run
steps=${QUICKSTART_STEPS:-200}
out=${QUICKSTART_DIR:-runs/quickstart}
mkdir -p "$out"

models=(gpt_tiny gpt_tiny_laplacian)
for model in "${models[@]}"; do
  echo
  echo "== lapc specs/$model.yaml -o $out/$model.so"
  "$lapc" "specs/$model.yaml" -o "$out/$model.so"
  echo "== lapc-run train $out/$model.so --run-dir $out/$model --steps $steps"
  rm -rf "${out:?}/$model"
  "$run" train "$out/$model.so" --run-dir "$out/$model" --steps "$steps" --log-every 25
done

# A number from a run's summary.json (flat, one key per line).
value() { sed -n "s/^ *\"$2\": \([-0-9.e+]*\),\{0,1\}$/\1/p" "$out/$1/summary.json"; }

echo
echo "== results after $steps steps on the fortunes (validation: the last 5% of the text)"
printf '%-20s %12s %10s %10s %10s\n' model "train loss" "val loss" "val bpb" "tokens/s"
for model in "${models[@]}"; do
  printf '%-20s %12.4f %10.4f %10.4f %10.0f\n' "$model" "$(value "$model" train_loss)" \
    "$(value "$model" val_loss)" "$(value "$model" val_bpb)" "$(value "$model" tokens_per_s)"
done
printf 'unigram entropy of the training tokens: %.4f nats per token (a model without context)\n' \
  "$(value "${models[0]}" unigram_entropy)"

for model in "${models[@]}"; do
  echo
  echo "== lapc-run sample $out/$model.so --run-dir $out/$model --tokens 80"
  "$run" sample "$out/$model.so" --run-dir "$out/$model" --tokens 80
done
echo
echo "loss curves: $out/<model>/loss.png; metrics: $out/<model>/metrics.jsonl"
