#!/usr/bin/env bash
# data_parallel.sh - one process against N ranks of one MPI job on this
# machine: specs/gpt_tiny.yaml with its global batch of 16 sequences as 2
# micro-batches of 8, trained STEPS steps by `lapc-run train` and by
# `mpirun -np N lapc-run train` (plain and ZeRO-1). Prints one JSON
# document: tokens/s of each (from summary.json), the largest relative
# difference of their losses, and the optimizer state per rank.
#
# usage: bench/data_parallel.sh [STEPS] [RANKS]   (needs a build: scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-40}
ranks=${2:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
sed 's/^  batch_size: 16$/  batch_size: 16\n  micro_batch_size: 8/; s/^name: gpt_tiny$/name: gpt_tiny_dp/' \
  specs/gpt_tiny.yaml > "$out/gpt_tiny_dp.yaml"
build/bin/lapc "$out/gpt_tiny_dp.yaml" -o "$out/model.so" --max-batch 8 >&2
flags=(--steps "$steps" --log-every 1 --eval-every 100000 --checkpoint-every 100000)
build/bin/lapc-run train "$out/model.so" --run-dir "$out/one" "${flags[@]}" > /dev/null
mpirun -np "$ranks" --oversubscribe build/bin/lapc-run train "$out/model.so" \
  --run-dir "$out/dp" "${flags[@]}" > /dev/null
mpirun -np "$ranks" --oversubscribe build/bin/lapc-run train "$out/model.so" \
  --run-dir "$out/zero" "${flags[@]}" --zero 1 > /dev/null
python3 - "$out" "$ranks" "$steps" <<'PY'
import json, os, sys
out, ranks, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def run(name):
    summary = json.load(open(os.path.join(out, name, "summary.json")))
    losses = [e["loss"] for e in map(json.loads, open(os.path.join(out, name, "metrics.jsonl"))) if "loss" in e]
    return summary, losses
one, one_losses = run("one")
result = {"model": "gpt_tiny (batch 16 x 256 tokens, 2 micro-batches of 8)",
          "steps": steps, "cores": os.cpu_count(), "runs": []}
for name, label in (("one", "1 process"), ("dp", f"{ranks} ranks"), ("zero", f"{ranks} ranks, ZeRO-1")):
    s, losses = run(name)
    result["runs"].append({
        "run": label,
        "tokens_per_s": round(s["tokens_per_s"]),
        "final_loss": s["train_loss"],
        "max_relative_loss_difference_to_1_process":
            max(abs(a - b) / abs(a) for a, b in zip(one_losses, losses)),
        "optimizer_state_bytes_per_rank": s["optimizer_state_bytes_per_rank"]})
print(json.dumps(result, indent=2))
PY
