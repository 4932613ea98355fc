#!/usr/bin/env bash
# run.sh - the chat walkthrough: pretrain the tiny GPT and its Laplacian
# twin on the fortunes, fine-tune each on arithmetic conversations that
# call the calculator, and score both before and after on new problems in
# GSM8K's layout (greedy answers, the calculator on); then talk to one.
#
#   CHAT_PRETRAIN_STEPS  pretraining steps per model (default 200)
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build.sh lapc lapc-run
lapc=build/bin/lapc
run=build/bin/lapc-run
steps=${CHAT_PRETRAIN_STEPS:-200}
out=runs/chat   # the fine-tuning specs name their files under it
mkdir -p "$out"

python3 examples/chat/make_problems.py "$out/data"
models=(gpt_tiny gpt_tiny_laplacian)
for model in "${models[@]}"; do
  echo
  echo "== pretrain $model for $steps steps"
  "$lapc" "specs/$model.yaml" -o "$out/$model.so"
  rm -rf "${out:?}/$model"
  "$run" train "$out/$model.so" --run-dir "$out/$model" --steps "$steps" \
    --log-every 100 | tail -2
  echo "== fine-tune sft_$model from it"
  "$lapc" "examples/chat/sft_$model.yaml" -o "$out/sft_$model.so"
  rm -rf "${out:?}/sft_$model"
  "$run" train "$out/sft_$model.so" --run-dir "$out/sft_$model" \
    --init-from "$out/$model" --log-every 50 | grep -v '^wrote'
done

# pass@1 from an eval's last line.
score() { sed -n 's/^gsm8k: pass@1 \([0-9.]*\) (\([0-9]*\) of .*/\1 (\2 of 100)/p'; }
echo
echo "== GSM8K-style test, 100 new problems: pass@1 (greedy, the calculator on)"
printf '%-20s %18s %18s\n' model pretrained fine-tuned
for model in "${models[@]}"; do
  before=$("$run" eval "$out/$model.so" --run-dir "$out/$model" --task gsm8k \
    --data "$out/data/test.jsonl" --max-tokens 48 | score)
  after=$("$run" eval "$out/sft_$model.so" --run-dir "$out/sft_$model" \
    --task gsm8k --data "$out/data/test.jsonl" --max-tokens 48 \
    --results "$out/sft_$model/gsm8k.json" | score)
  printf '%-20s %18s %18s\n' "$model" "$before" "$after"
done

echo
question=$(sed -n '1s/.*"question": "\([^"]*\)".*/\1/p' "$out/data/test.jsonl")
echo "== lapc-run chat $out/sft_gpt_tiny.so --prompt \"$question\" --temperature 0"
"$run" chat "$out/sft_gpt_tiny.so" --run-dir "$out/sft_gpt_tiny" --prompt "$question" \
  --temperature 0 --max-tokens 48
echo
echo "each answer: $out/sft_<model>/gsm8k.json"
