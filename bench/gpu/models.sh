# The GPU benchmark's models (bench/specs/NAME.yaml) and the micro-batch
# each is timed at: sizes that give an H200 work to do, in fp32.
GPU_BENCH_MODELS=(
  "gpt-bench 64"
  "vit-bench 256"
  "gpt2-124m 16"
)
