#!/usr/bin/env bash
# run.sh - the chat walkthrough: pretrain the tiny GPT and its Laplacian
# twin on the fortunes, fine-tune each on arithmetic conversations that
# call the calculator, wholly and with LoRA adapters, and score them before
# and after on new problems in GSM8K's layout (greedy answers, the
# calculator on); then talk to one and merge a LoRA model's adapters.
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
  for tune in sft lora; do
    echo "== fine-tune ${tune}_$model from it"
    "$lapc" "examples/chat/${tune}_$model.yaml" -o "$out/${tune}_$model.so"
    rm -rf "${out:?}/${tune}_$model"
    "$run" train "$out/${tune}_$model.so" --run-dir "$out/${tune}_$model" \
      --init-from "$out/$model" --log-every 50 | grep -v '^wrote'
  done
done

# pass@1 from an eval's last line.
score() { sed -n 's/^gsm8k: pass@1 \([0-9.]*\) (\([0-9]*\) of .*/\1 (\2 of 100)/p'; }
echo
echo "== GSM8K-style test, 100 new problems: pass@1 (greedy, the calculator on)"
gsm8k() { # model.so run-dir: its pass@1, its answers in run-dir/gsm8k.json
  "$run" eval "$1" --run-dir "$2" --task gsm8k --data "$out/data/test.jsonl" \
    --max-tokens 48 --results "$2/gsm8k.json" | score
}
printf '%-20s %18s %18s %18s\n' model pretrained fine-tuned "LoRA"
for model in "${models[@]}"; do
  printf '%-20s %18s %18s %18s\n' "$model" \
    "$(gsm8k "$out/$model.so" "$out/$model")" \
    "$(gsm8k "$out/sft_$model.so" "$out/sft_$model")" \
    "$(gsm8k "$out/lora_$model.so" "$out/lora_$model")"
done

echo
question=$(sed -n '1s/.*"question": "\([^"]*\)".*/\1/p' "$out/data/test.jsonl")
echo "== lapc-run chat $out/sft_gpt_tiny.so --prompt \"$question\" --temperature 0"
"$run" chat "$out/sft_gpt_tiny.so" --run-dir "$out/sft_gpt_tiny" --prompt "$question" \
  --temperature 0 --max-tokens 48
echo
echo "== lapc-run merge $out/lora_gpt_tiny.so: the adapters folded into the weights"
rm -rf "${out:?}/merged_gpt_tiny"
"$run" merge "$out/lora_gpt_tiny.so" --run-dir "$out/lora_gpt_tiny" \
  --out "$out/merged_gpt_tiny" | grep -v '^next'
echo
echo "each answer: $out/<run>/gsm8k.json"
