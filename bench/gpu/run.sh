#!/bin/bash
# On a machine with an NVIDIA GPU: the CUDA tests, lapc-run training tiny
# models on the GPU and moving a run between CPU and GPU, one training step
# (forward and backward) of each benchmark model, lap against PyTorch eager
# and torch.compile, and attention alone against PyTorch's SDPA and
# FlexAttention, on the same GPU in the same run. Takes what
# bench/gpu/prepare.sh built here (build/gpu-prebuilt.tar.xz: that machine
# has no MLIR, so no lapc); needs nvidia-smi, python3 with torch and
# pyyaml. About 8 minutes on an H200 (estimated); --paper-models also
# times specs/gpt2_561m_5L.yaml and specs/vit_b_deit3_12L.yaml (a few
# minutes more). JSON and logs go to $OUT (or build/gpu-results); a table
# is printed last.
set -uo pipefail
paper_models=
case ${1:-} in
  --paper-models) paper_models=1 ;;
  "") ;;
  *) echo "usage: bench/gpu/run.sh [--paper-models]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/../.."
source bench/gpu/models.sh
out=${OUT:-build/gpu-results}
mkdir -p "$out"
tar -C build -xJf build/gpu-prebuilt.tar.xz || exit 1
pre=$PWD/build/gpu-prebuilt
export LD_LIBRARY_PATH=$pre/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm \
  --format=csv,noheader | tee "$out/gpu.txt"
# NCCL from PyTorch's wheels when the system has none.
if ! ldconfig -p | grep -q 'libnccl\.so\.2 '; then
  nccl=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null)
  [[ -n $nccl ]] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$nccl/lib
fi
for binary in "$pre"/bin/* "$pre"/lib/libLap*.so; do
  if ldd "$binary" | grep -q 'not found'; then
    echo "$binary: missing libraries:"; ldd "$binary" | grep 'not found'
  fi
done

# Tests: every CUDA kernel against its CPU twin, whole models against the
# CPU library of the same spec.
timeout 240 "$pre/bin/lap-cuda-kernel-tests" \
  --gtest_output="json:$out/kernel-tests.json" >"$out/kernel-tests.log" 2>&1
echo "kernel tests: exit $?"
grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/kernel-tests.log" | head -40
timeout 60 "$pre/bin/lap-cuda-train-device-tests" \
  --gtest_output="json:$out/train-device-tests.json" >"$out/train-device-tests.log" 2>&1
echo "train device tests: exit $?"
grep -E '^\[  (PASSED|FAILED|SKIPPED) |Failure' "$out/train-device-tests.log" | head -20
LAP_PREBUILT_MODELS=$pre/models timeout 180 "$pre/bin/lap-cuda-model-tests" \
  --gtest_output="json:$out/model-tests.json" >"$out/model-tests.log" 2>&1
echo "model tests: exit $?"
grep -E '^\[  (PASSED|FAILED|SKIPPED) |Failure|error' "$out/model-tests.log" | head -20

# lapc-run: a run on the GPU alone, one the CPU starts (steps 1-2), the GPU
# continues (3-4) and the CPU finishes, one on the CPU, and one on the GPU
# with ZeRO-1 (NCCL): the same losses.
# The GPU's run evaluated and sampled on the GPU, evaluated on the CPU and
# analysed on the GPU. DINO on the GPU and on the CPU (the same losses),
# evaluated and analysed on the GPU.
# Each command runs whatever the others did; the failures are listed.
(
  cd "$pre/train"
  failed=0
  run() { timeout 120 "$pre/bin/lapc-run" "$@" || { echo "FAILED: lapc-run $*"; failed=$((failed + 1)); }; }
  gpu=$pre/models/tiny_lm.cuda.so cpu=$pre/models/tiny_lm.cpu.so
  run train "$gpu" --run-dir gpu --log-every 1
  run train "$cpu" --run-dir mixed --stop-at 2 --log-every 1
  run train "$gpu" --run-dir mixed --resume --stop-at 4 --log-every 1
  run train "$cpu" --run-dir mixed --resume --log-every 1
  run train "$cpu" --run-dir cpu --log-every 1
  run train "$gpu" --run-dir gpu-zero --zero 1 --log-every 1
  run eval "$gpu" --run-dir gpu
  run eval "$cpu" --run-dir gpu
  run sample "$gpu" --run-dir gpu --tokens 20
  run analyze "$gpu" --run-dir gpu --samples 16 --out gpu-analysis
  dino_gpu=$pre/models/tiny_dino.cuda.so dino_cpu=$pre/models/tiny_dino.cpu.so
  run train "$dino_gpu" --run-dir dino-gpu --log-every 1
  run train "$dino_cpu" --run-dir dino-cpu --log-every 1
  run eval "$dino_gpu" --run-dir dino-gpu
  run analyze "$dino_gpu" --run-dir dino-gpu --samples 32 --out dino-analysis
  # The same losses: GPU and CPU within 1e-3 (fp32 summed in other
  # orders), ZeRO-1 over NCCL exactly the GPU's.
  losses=$OLDPWD/test/runtime/Inputs/close_losses.py
  for pair in "cpu gpu 1e-3" "cpu mixed 1e-3" "gpu gpu-zero 0" \
              "dino-cpu dino-gpu 1e-3"; do
    read -r a b tolerance <<<"$pair"
    echo "losses of $a and $b:"
    python3 "$losses" "$a/metrics.jsonl" "$b/metrics.jsonl" "$tolerance" ||
      failed=$((failed + 1))
  done
  exit $failed
) >"$out/lapc-run.log" 2>&1
echo "lapc-run on the GPU: $? failures"
grep -E 'FAILED|^losses|largest relative|differ|summary|val_|knn|error' "$out/lapc-run.log"

# A training step: lap (graph replay and plain), PyTorch eager, compiled.
# time_step NAME BATCH WARMUP ITERS
time_step() {
  local name=$1 batch=$2 warmup=$3 iters=$4
  timeout 150 "$pre/bin/lap-gpu-step-bench" "$pre/models/$name.cuda.so" \
    --batch "$batch" --warmup "$warmup" --iters "$iters" >"$out/$name.lap.json" \
    2>"$out/$name.lap.err" || cat "$out/$name.lap.err"
  timeout 120 python3 bench/torch_step.py --spec "$pre/specs/$name.yaml" \
    --device cuda --batch "$batch" --warmup "$warmup" --iters "$iters" \
    >"$out/$name.torch.json" 2>"$out/$name.torch.err" || tail -3 "$out/$name.torch.err"
  timeout 240 python3 bench/torch_step.py --spec "$pre/specs/$name.yaml" \
    --device cuda --compile --batch "$batch" --warmup $((warmup + 2)) \
    --iters "$iters" >"$out/$name.torch-compile.json" \
    2>"$out/$name.torch-compile.err" || tail -3 "$out/$name.torch-compile.err"
}
timed=()
for entry in "${GPU_BENCH_MODELS[@]}"; do
  read -r name batch <<<"$entry"
  time_step "$name" "$batch" 3 20
  timed+=("$name")
done
if [[ $paper_models ]]; then
  for entry in "${GPU_PAPER_MODELS[@]}"; do
    read -r name batch <<<"$entry"
    time_step "$name" "$batch" 1 3
    timed+=("$name")
  done
fi

# Attention alone: lap's fused kernel and PyTorch's SDPA and FlexAttention
# on the same shapes, all-`attn` and half Laplacian.
timeout 150 "$pre/bin/lap-gpu-attention-bench" >"$out/attention.lap.jsonl" \
  2>"$out/attention.lap.err" || cat "$out/attention.lap.err"
timeout 300 python3 bench/gpu/torch_attention.py >"$out/attention.torch.jsonl" \
  2>"$out/attention.torch.err" || tail -3 "$out/attention.torch.err"
python3 bench/gpu/attention_table.py "$out/attention.lap.jsonl" \
  "$out/attention.torch.jsonl"

python3 - "$out" "${timed[@]}" <<'PY'
import json, sys
out, models = sys.argv[1], sys.argv[2:]
def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None
print(f"\n{'model':<15} {'lap ms':>8} {'(no graph)':>10} {'TFLOP/s':>8} "
      f"{'of fp32 GEMM':>12} {'MFU (bf16)':>10} {'torch ms':>9} {'compiled':>9} "
      f"{'speed-up':>9}")
for m in models:
    lap, eager, compiled = (load(f"{out}/{m}.{k}.json")
                            for k in ("lap", "torch", "torch-compile"))
    ms = lambda r: r["ms_per_step"]["median"] if r else float("nan")
    best = min(ms(eager), ms(compiled))
    print(f"{m:<15} {ms(lap):8.2f} "
          f"{lap['ms_per_step_without_graph']['median'] if lap else float('nan'):10.2f} "
          f"{lap['tflops'] if lap else float('nan'):8.1f} "
          f"{lap['fraction_of_fp32_gemm'] if lap else float('nan'):12.2f} "
          f"{(lap['fraction_of_bf16_gemm'] or float('nan')) if lap else float('nan'):10.3f} "
          f"{ms(eager):9.2f} {ms(compiled):9.2f} {best / ms(lap):8.2f}x")
PY
