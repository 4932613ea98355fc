#!/usr/bin/env bash
# quickstart.sh - the README's main command: install, build, and compile the
# shipped specs through the front end, printing what lapc resolved for each
# (parameters, head kinds, FLOPs) and the full resolved form of one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
lapc=build/bin/lapc

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
