#!/bin/bash
# On a machine with an NVIDIA GPU: the CUDA tests, lapc-run training tiny
# models on the GPU and moving a run between CPU and GPU, attention alone
# against PyTorch's SDPA and FlexAttention, and one training step (forward
# and backward) of each benchmark model, lap against PyTorch eager and
# torch.compile, on the same GPU in the same run. Takes what
# bench/gpu/prepare.sh built here (build/gpu-prebuilt.tar.xz: that machine
# has no MLIR, so no lapc); needs nvidia-smi, python3 with torch and
# pyyaml. Stages run in that order within a deadline (LAP_GPU_SECONDS, 540
# by default); a stage with no time left is skipped and says so.
# Last, Nsight Compute times every kernel of a bf16 GPT-2 step (where the
# step's time goes). --paper-models also times the paper's models,
# specs/gpt2_561m_5L.yaml and specs/vit_b_deit3_12L.yaml, in bf16 and in
# fp32 (give it a few more minutes); --quick runs the
# tests, lap's bf16 attention at sequences of 4096, lap's bf16 GPT-2 124M
# step and the kernel profile alone.
#
# Everything the run writes goes to build/gpu-results; $OUT (or
# build/gpu-results-out) gets two files, refreshed after every stage so
# that a run stopped early still leaves them: summary.txt (what is printed)
# and gpu-results.tgz (all JSON and logs). With the device tool:
#   run(command="bench/gpu/run.sh", carry=["build/gpu-prebuilt.tar.xz"],
#       timeout_s=600)
set -uo pipefail
paper_models= quick=
case ${1:-} in
  --paper-models) paper_models=1 ;;
  --quick) quick=1 ;;
  "") ;;
  *) echo "usage: bench/gpu/run.sh [--paper-models | --quick]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/../.."
source bench/gpu/models.sh
deadline=$((SECONDS + ${LAP_GPU_SECONDS:-540}))
work=$PWD/build/gpu-results
out=${OUT:-$PWD/build/gpu-results-out}
mkdir -p "$work" "$out"
: >"$out/summary.txt"

# say ...: prints and keeps in the summary (on the script's own output,
# also where a command's output goes to a log).
exec 3>&1
say() { echo "$@" | tee -a "$out/summary.txt" >&3; }
# summarise: the same for a command's output.
summarise() { tee -a "$out/summary.txt"; }
# save: the archive of everything written so far.
save() { tar -C "$work" -czf "$out/gpu-results.tgz" . 2>/dev/null; }
# timed SECONDS COMMAND...: COMMAND under a timeout of SECONDS or the time
# left, whichever is less; skipped (status 124) when under 5 s are left.
timed() {
  local limit=$1 left=$((deadline - SECONDS))
  shift
  ((left < limit)) && limit=$left
  if ((limit < 5)); then
    local what
    for what; do [[ $what == env || $what == *=* ]] || break; done
    say "skipped (out of time): ${what##*/}"
    return 124
  fi
  timeout "$limit" "$@"
}

tar -C build -xJf build/gpu-prebuilt.tar.xz 2>/dev/null ||
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    build/gpu-prebuilt.tar.xz build || exit 1
pre=$PWD/build/gpu-prebuilt

# The lap binaries' libraries (only theirs: PyTorch keeps its own): what
# prepare.sh carried, then CUDA's from the toolkit or from PyTorch's wheels
# (cuBLAS, NCCL) where the system has none.
wheels=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null)/nvidia
libs=$pre/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib
for lib in "$wheels"/cu13/lib "$wheels"/nccl/lib; do
  [[ -d $lib ]] && libs+=:$lib
done
libs+=${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
lap=(env "LD_LIBRARY_PATH=$libs")

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm \
  --format=csv,noheader | summarise
for binary in "$pre"/bin/* "$pre"/lib/libLap*.so "$pre"/models/*.so; do
  missing=$("${lap[@]}" ldd "$binary" | grep 'not found')
  [[ -n $missing ]] && say "$binary: missing libraries: $missing"
done

# Tests: the toolchain (nvcc, cuBLASLt, NCCL) and the NCCL communicator,
# every CUDA kernel against its CPU twin, the trainer's GPU arithmetic
# against the host's, whole models against the CPU library of the same
# spec. A suite that crashes names the test it was in.
failing=()
for suite in cuda nccl-comm cuda-kernel cuda-train-device cuda-model; do
  log=$work/$suite-tests.log
  LAP_PREBUILT_MODELS=$pre/models timed 120 "${lap[@]}" \
    "$pre/bin/lap-$suite-tests" --gtest_output="json:$work/$suite-tests.json" \
    >"$log" 2>&1
  status=$?
  say "$suite tests: exit $status"
  # The counts, and each failure (not each skipped test).
  grep -E '^\[  (PASSED  |SKIPPED |FAILED  )\] |Failure' "$log" |
    grep -v '^\[  SKIPPED \] [A-Za-z]' | head -30 | summarise
  if ((status > 1)); then
    grep '^\[ RUN      \]' "$log" | tail -1 | summarise
    tail -4 "$log" | summarise
  fi
  if [[ $suite == cuda-kernel ]]; then
    mapfile -t failing < <(sed -n \
      's/^\[  FAILED  \] \([^ ]*\.[^ ]*\).*/\1/p' "$log" | sort -u | head -3)
    ((status > 1)) && failing+=("$(sed -n 's/^\[ RUN      \] //p' "$log" | tail -1)")
  fi
  save
done

# The first failing kernel tests again under compute-sanitizer's memcheck:
# the kernel and address of a bad access.
if ((${#failing[@]})); then
  filter=$(IFS=:; echo "${failing[*]}")
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  timed 90 "${lap[@]}" "$sanitizer" --tool memcheck --print-limit 10 \
    "$pre/bin/lap-cuda-kernel-tests" --gtest_filter="$filter" \
    >"$work/sanitizer.log" 2>&1
  say "compute-sanitizer on $filter: exit $?"
  grep -E '^========= (Invalid|Program hit|    at|ERROR SUMMARY)|Address' \
    "$work/sanitizer.log" | head -24 | summarise
  save
fi

# Where a step's time goes: Nsight Compute times every launch of the two
# plain steps of lap-gpu-step-bench's profiler range (not the ceilings'
# GEMMs, not the graph replays), at the card's own clocks; kernel_table.py
# sums them by kernel.
profile_kernels() {
  local name=gpt2-124m-bf16-model batch=16 ncu
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  if [[ -z $ncu ]]; then
    say "no Nsight Compute (ncu): no kernel profile"
    return
  fi
  timed 150 "$ncu" --profile-from-start off --clock-control none \
    --metrics gpu__time_duration.sum --csv "${lap[@]}" \
    "$pre/bin/lap-gpu-step-bench" "$pre/models/$name.cuda.so" \
    --batch "$batch" --warmup 1 --iters 1 >"$work/$name.kernels.csv" \
    2>"$work/$name.ncu.err" || tail -3 "$work/$name.ncu.err" | summarise
  python3 bench/gpu/kernel_table.py "$work/$name.kernels.csv" 2 | summarise
  save
}
if [[ $quick ]]; then
  timed 60 "${lap[@]}" "$pre/bin/lap-gpu-attention-bench" --iters 5 \
    --seq 4096 --fp32 0 >"$work/attention.lap.jsonl" \
    2>"$work/attention.lap.err" || tail -3 "$work/attention.lap.err" | summarise
  python3 bench/gpu/attention_table.py "$work/attention.lap.jsonl" \
    /dev/null | summarise
  # lap's bf16 GPT-2 124M step alone (PyTorch's are in RESULTS.md).
  timed 60 "${lap[@]}" "$pre/bin/lap-gpu-step-bench" \
    "$pre/models/gpt2-124m-bf16-model.cuda.so" --batch 16 --warmup 3 \
    --iters 10 >"$work/gpt2-124m-bf16-model.lap.json" \
    2>"$work/gpt2-124m-bf16-model.lap.err" ||
    tail -3 "$work/gpt2-124m-bf16-model.lap.err" | summarise
  python3 - "$work/gpt2-124m-bf16-model.lap.json" <<'PY' | summarise
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    sys.exit(0)
print(f"gpt2-124m-bf16-model, 16 x 1024: {r['ms_per_step']['median']:.2f} ms "
      f"a step ({r['ms_per_step_without_graph']['median']:.2f} without the "
      f"graph), {r['tflops']:.1f} TFLOP/s, MFU {r['fraction_of_bf16_gemm']:.3f}")
PY
  save
  profile_kernels
  say "run.sh --quick: done in $SECONDS s"
  exit
fi

# lapc-run: a run on the GPU alone, one the CPU starts (steps 1-2), the GPU
# continues (3-4) and the CPU finishes, one on the CPU, and one on the GPU
# with ZeRO-1 (NCCL): the same losses. The GPU's run evaluated and sampled
# on the GPU, evaluated on the CPU and analysed on the GPU. DINO on the GPU
# and on the CPU (the same losses), evaluated and analysed on the GPU.
# Each command runs whatever the others did; the failures are listed; after
# a command that outlasts its timeout the rest are skipped.
(
  cd "$pre/train"
  failed=0 hung=
  run() {
    if [[ $hung ]]; then
      echo "SKIPPED after a timeout: lapc-run $*"
      failed=$((failed + 1))
      return
    fi
    timed 60 "${lap[@]}" "$pre/bin/lapc-run" "$@"
    local status=$?
    ((status == 124)) && hung=1
    ((status != 0)) && { echo "FAILED ($status): lapc-run $*"; failed=$((failed + 1)); }
  }
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
  # orders), ZeRO-1 over NCCL the GPU's to 1e-6 (the same sums, sharded).
  losses=$OLDPWD/test/runtime/Inputs/close_losses.py
  for pair in "cpu gpu 1e-3" "cpu mixed 1e-3" "gpu gpu-zero 1e-6" \
              "dino-cpu dino-gpu 1e-3"; do
    read -r a b tolerance <<<"$pair"
    echo "losses of $a and $b:"
    python3 "$losses" "$a/metrics.jsonl" "$b/metrics.jsonl" "$tolerance" ||
      failed=$((failed + 1))
  done
  exit $failed
) >"$work/lapc-run.log" 2>&1
say "lapc-run on the GPU: $? failures"
grep -E 'FAILED|SKIPPED|^losses|largest relative|differ|summary|val_|knn|error' \
  "$work/lapc-run.log" | summarise
save

# Attention alone: lap's fused kernel and PyTorch's SDPA and FlexAttention
# on the same shapes, all-`attn` and half Laplacian.
timed 150 "${lap[@]}" "$pre/bin/lap-gpu-attention-bench" --iters 5 \
  >"$work/attention.lap.jsonl" 2>"$work/attention.lap.err" ||
  tail -3 "$work/attention.lap.err" | summarise
timed 180 python3 bench/gpu/torch_attention.py --iters 5 \
  >"$work/attention.torch.jsonl" 2>"$work/attention.torch.err" ||
  tail -3 "$work/attention.torch.err" | summarise
python3 bench/gpu/attention_table.py "$work/attention.lap.jsonl" \
  "$work/attention.torch.jsonl" | summarise
save

# A training step: lap (graph replay and plain), PyTorch eager, compiled.
# time_step NAME BATCH WARMUP ITERS [SAME]: SAME names a model timed before
# whose PyTorch runs are this one's (PyTorch has one bf16 mode for both).
time_step() {
  local name=$1 batch=$2 warmup=$3 iters=$4 same=${5:-}
  timed 100 "${lap[@]}" "$pre/bin/lap-gpu-step-bench" "$pre/models/$name.cuda.so" \
    --batch "$batch" --warmup "$warmup" --iters "$iters" >"$work/$name.lap.json" \
    2>"$work/$name.lap.err" || tail -3 "$work/$name.lap.err" | summarise
  if [[ $same ]]; then
    cp "$work/$same.torch.json" "$work/$name.torch.json" 2>/dev/null
    cp "$work/$same.torch-compile.json" "$work/$name.torch-compile.json" 2>/dev/null
    return
  fi
  timed 90 python3 bench/torch_step.py --spec "$pre/specs/$name.yaml" \
    --device cuda --batch "$batch" --warmup "$warmup" --iters "$iters" \
    >"$work/$name.torch.json" 2>"$work/$name.torch.err" ||
    tail -3 "$work/$name.torch.err" | summarise
  timed 150 python3 bench/torch_step.py --spec "$pre/specs/$name.yaml" \
    --device cuda --compile --batch "$batch" --warmup $((warmup + 2)) \
    --iters "$iters" >"$work/$name.torch-compile.json" \
    2>"$work/$name.torch-compile.err" ||
    tail -3 "$work/$name.torch-compile.err" | summarise
}
timed_models=()
for entry in "${GPU_BENCH_MODELS[@]}"; do
  read -r name batch same <<<"$entry"
  time_step "$name" "$batch" 3 20 "$same"
  timed_models+=("$name")
  save
done
if [[ $paper_models ]]; then
  for entry in "${GPU_PAPER_MODELS[@]}"; do
    read -r spec batch <<<"$entry"
    name=$(basename "$spec")
    time_step "$name" "$batch" 1 3
    timed_models+=("$name")
    save
  done
fi

python3 - "$work" "${timed_models[@]}" <<'PY' | summarise
import json, math, sys
out, models = sys.argv[1], sys.argv[2:]
def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None
nan = float("nan")
print(f"\n{'model':<21} {'lap ms':>8} {'(no graph)':>10} {'TFLOP/s':>8} "
      f"{'of fp32 GEMM':>12} {'MFU (bf16)':>10} {'torch ms':>9} {'compiled':>9} "
      f"{'speed-up':>9}")
for m in models:
    lap, eager, compiled = (load(f"{out}/{m}.{k}.json")
                            for k in ("lap", "torch", "torch-compile"))
    ms = lambda r: r["ms_per_step"]["median"] if r else nan
    torch_ms = [t for t in (ms(eager), ms(compiled)) if not math.isnan(t)]
    best = min(torch_ms) if torch_ms else nan
    print(f"{m:<21} {ms(lap):8.2f} "
          f"{lap['ms_per_step_without_graph']['median'] if lap else nan:10.2f} "
          f"{lap['tflops'] if lap else nan:8.1f} "
          f"{lap['fraction_of_fp32_gemm'] if lap else nan:12.2f} "
          f"{(lap['fraction_of_bf16_gemm'] or nan) if lap else nan:10.3f} "
          f"{ms(eager):9.2f} {ms(compiled):9.2f} {best / ms(lap):8.2f}x")
PY
profile_kernels
say "run.sh: done in $SECONDS s"
save
