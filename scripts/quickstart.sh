#!/usr/bin/env bash
# quickstart.sh - the README's main command: install, build, compile the
# shipped specs through the front end, printing what lapc resolved for each
# (parameters, head kinds, FLOPs) and the full resolved form of one; compile
# the tiny GPT and ViT into model libraries and run a training step of each
# on the CPU; compile the 561M model through the pipeline and its memory plan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
lapc=build/bin/lapc
run=build/bin/lapc-run
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo
echo "== lapc specs/gpt_tiny_laplacian.yaml --emit=spec"
"$lapc" specs/gpt_tiny_laplacian.yaml --emit=spec

echo
printf '%-22s %7s %15s %8s %10s %16s\n' spec family parameters attn laplacian "train FLOPs/unit"
for spec in specs/*.yaml; do
  "$lapc" "$spec" --emit=spec | awk -v name="$(basename "$spec" .yaml)" '
    /^  family:/          { family = $2 }
    /^  parameters:/      { params = $2 }
    /^    attn:/          { attn = $2 }
    /^    laplacian:/     { lap = $2 }
    /^  flops_per_/       { unit = substr($1, 11, length($1) - 11) }
    /^    train_step:/    { flops = $2 }
    END { printf "%-22s %7s %15s %8s %10s %10s/%s\n", name, family, params, attn, lap, flops, unit }'
done

for model in gpt_tiny_laplacian vit_tiny_laplacian; do
  echo
  echo "== lapc specs/$model.yaml -o $model.so && lapc-run check $model.so"
  start=$(date +%s.%N)
  "$lapc" "specs/$model.yaml" -o "$out/$model.so"
  awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "compiled in %.2f s\n", e - s }'
  "$run" info "$out/$model.so" | sed -n '1,6p;/^memory/,$p'
  "$run" check "$out/$model.so"
done

echo
echo "== lapc specs/gpt2_561m_5L.yaml --emit=lowered   (the 561M model through the pass pipeline)"
ir="$out/gpt2_561m_5L.mlir"
start=$(date +%s.%N)
"$lapc" specs/gpt2_561m_5L.yaml --emit=lowered -o "$ir"
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v g="$(grep -o '"grad\.' "$ir" | wc -l)" \
  'BEGIN { printf "compiled in %.2f s; @train_step returns the loss and %d gradients; ops:\n", e - s, g }'
sed -n '/func.func @train_step/,$p' "$ir" | grep -o 'lap\.[a-z_0-9]*' | grep -v 'lap\.name\|lap\.parameter' |
  sort | uniq -c | sort -rn | awk '{printf "  %6d %s\n", $1, $2}'

echo
echo "== lapc specs/gpt2_561m_5L.yaml --emit=memory-plan --max-batch 8 --max-seq 2048   (summary)"
"$lapc" specs/gpt2_561m_5L.yaml --emit=memory-plan --max-batch 8 --max-seq 2048 |
  grep -E '^(memory plan|workspace|parameters|peak)'
