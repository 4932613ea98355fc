#!/usr/bin/env bash
# run.sh - fine-tune a pretrained GPT-2 with half of its heads switched to
# Laplacian, starting from weights in Hugging Face's layout:
#   1. pretrain gpt2_fortunes.yaml on Debian's `fortunes` (softmax heads),
#   2. export it as a Hugging Face GPT-2 (config.json, model.safetensors),
#   3. import that back: a lap spec and parameters,
#   4. switch heads 2 and 3 of every layer to Laplacian in the spec and
#      fine-tune from the imported weights (lapc-run train --init-from),
#   5. export the result back to Hugging Face's layout, its head kinds in
#      config.json.
# It prints the losses before and after.
#
#   FINETUNE_STEPS  fine-tuning steps (default 150); pretraining takes the
#                   spec's 300
#   FINETUNE_DIR    where everything goes (default: runs/finetune-laplacian)
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/build.sh lapc lapc-run
lapc=build/bin/lapc
run=build/bin/lapc-run
steps=${FINETUNE_STEPS:-150}
out=${FINETUNE_DIR:-runs/finetune-laplacian}
here=examples/finetune-laplacian
rm -rf "${out:?}"
mkdir -p "$out"

echo "== 1. pretrain $here/gpt2_fortunes.yaml (softmax heads)"
"$lapc" "$here/gpt2_fortunes.yaml" -o "$out/pretrain.so"
"$run" train "$out/pretrain.so" --run-dir "$out/pretrain" --log-every 50

echo "== 2. export it as a Hugging Face GPT-2"
"$run" export hf-gpt2 "$out/pretrain.so" --run-dir "$out/pretrain" --out "$out/hf"

echo "== 3. import it back"
"$run" import hf-gpt2 "$out/hf" --out "$out/imported" --name gpt2_fortunes_imported

# The imported spec, with the pretraining's data and a fine-tuning schedule
# of $1 steps at a learning rate of $2.
train_section() {
  cat <<YAML
train:
  regime: lm
  seed: 2
  batch_size: 16
  steps: $1
  grad_clip: 1.0
  optimizer: {type: adamw, lr: $2, weight_decay: 0.0}
  schedule: {warmup_steps: $(( $1 < 10 ? 0 : 10 )), decay: cosine, min_lr: 0.0}
  data:
    format: text
    train: /usr/share/games/fortunes
    val_fraction: 0.05
    tokenizer: train
  eval: {every_steps: $1, batches: 10}
YAML
}
# As imported: one step at a learning rate of 0, which changes nothing.
{ cat "$out/imported/spec.yaml"; train_section 1 0.0; } > "$out/as_imported.yaml"
{ cat "$out/imported/spec.yaml"
  echo "attention:"
  echo "  kinds: [attn, attn, laplacian, laplacian]"
  train_section "$steps" 1.0e-3; } > "$out/laplacian.yaml"

echo "== 4. the imported model as it is (a step at lr 0), then with heads 2-3 Laplacian, fine-tuned"
"$lapc" "$out/as_imported.yaml" -o "$out/as_imported.so"
"$run" train "$out/as_imported.so" --init-from "$out/imported" --run-dir "$out/as_imported"
"$lapc" "$out/laplacian.yaml" -o "$out/laplacian.so"
"$run" train "$out/laplacian.so" --init-from "$out/imported" --run-dir "$out/laplacian" \
  --log-every 25

echo "== 5. export the fine-tuned model (its head kinds in config.json)"
"$run" export hf-gpt2 "$out/laplacian.so" --run-dir "$out/laplacian" --out "$out/hf-laplacian" \
  --with-head-kinds

# A number from a run: the loss logged at step $2 ("first", "last") or a
# summary.json key.
loss_at() {
  /usr/bin/python3 - "$out/$1" "$2" <<'PY'
import json, sys
run, which = sys.argv[1], sys.argv[2]
losses = [json.loads(l) for l in open(run + "/metrics.jsonl")]
losses = [m for m in losses if "loss" in m]
if which in ("first", "last"):
    print(f"{losses[0 if which == 'first' else -1]['loss']:.4f}")
else:
    print(f"{json.load(open(run + '/summary.json'))[which]:.4f}")
PY
}
echo
echo "== losses (train loss of a step's batch; validation: the last 5% of the text)"
printf '%-44s %10s %10s\n' "" "train" "val"
printf '%-44s %10s %10s\n' "pretraining, step 1 (random weights)" "$(loss_at pretrain first)" ""
printf '%-44s %10s %10s\n' "pretrained (step 300, softmax heads)" "$(loss_at pretrain last)" "$(loss_at pretrain val_loss)"
printf '%-44s %10s %10s\n' "imported back, as it is" "$(loss_at as_imported first)" "$(loss_at as_imported val_loss)"
printf '%-44s %10s %10s\n' "heads 2-3 Laplacian, before fine-tuning" "$(loss_at laplacian first)" ""
printf '%-44s %10s %10s\n' "heads 2-3 Laplacian, fine-tuned ($steps steps)" "$(loss_at laplacian last)" "$(loss_at laplacian val_loss)"
echo
echo "exported: $out/hf-laplacian/config.json (lap_head_kinds), $out/hf-laplacian/model.safetensors"
