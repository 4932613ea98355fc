# The GPU benchmark's models and the micro-batch each is timed at: sizes
# that give an H200 work to do, in fp32 (gpt2-124m-bf16: with bf16
# products; gpt2-124m-bf16-model: computing in bf16, against the same
# PyTorch runs as gpt2-124m-bf16, named third: PyTorch's autocast is one
# mode for both). bench/specs/NAME.yaml, timed by every run; and the
# paper's models (the spec's path, less .yaml), timed with fewer iterations
# by `run.sh --paper-models`: in bf16 first (the 561M model's MFU target,
# at nanochat's micro-batch for d20: 32 sequences of 2048), then in fp32,
# whose steps take seconds.
GPU_BENCH_MODELS=(
  "gpt-bench 64"
  "vit-bench 256"
  "gpt2-124m 16"
  "gpt2-124m-bf16 16"
  "gpt2-124m-bf16-model 16 gpt2-124m-bf16"
)
GPU_PAPER_MODELS=(
  "bench/specs/gpt2_561m_5L-bf16 32"
  "bench/specs/vit_b_deit3_12L-bf16 128"
  "specs/gpt2_561m_5L 8"
  "specs/vit_b_deit3_12L 64"
)
