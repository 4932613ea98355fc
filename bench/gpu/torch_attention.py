#!/usr/bin/python3
"""PyTorch baseline of the attention benchmark (bench/gpu/AttentionBench.cpp).

On the shapes lap-gpu-attention-bench times (head dims 64 and 128, sequence
lengths 512 ... 8192, causal and not, every head `attn` or half of them
Laplacian; --tokens per batch, --width / head dim heads), times PyTorch's
attention forward and forward + backward with CUDA events:

  sdpa-flash, sdpa-cudnn  scaled_dot_product_attention's FlashAttention and
                          cuDNN backends, bf16 (they take no fp32)
  sdpa-efficient          its memory-efficient backend, fp32 (lap's precision)
  flex                    FlexAttention (torch.compile'd), bf16, at head dim
                          128 and the sequence lengths of --flex-seqs (each
                          shape compiles, for forward and for backward)

A Laplacian head's output is V - PV; PyTorch computes PV and subtracts it in
a second pass (FlexAttention's score_mod changes scores, not the output).
FLOPs as FlashAttention counts them (4·B·H·N²·D forward, half of it causal,
backward 2.5 times the forward). Prints one JSON object per shape and
implementation; a failing implementation prints its error instead.

    python3 bench/gpu/torch_attention.py [--tokens 16384] [--width 2048]
"""

import argparse
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

SDPA = {
    "sdpa-flash": (SDPBackend.FLASH_ATTENTION, torch.bfloat16),
    "sdpa-cudnn": (SDPBackend.CUDNN_ATTENTION, torch.bfloat16),
    "sdpa-efficient": (SDPBackend.EFFICIENT_ATTENTION, torch.float32),
}


def median_ms(fn, warmup, iters):
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(warmup + iters):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        if i >= warmup:
            times.append(start.elapsed_time(stop))
    return sorted(times)[len(times) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=16384)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--flex-seqs", default="4096",
                        help="sequence lengths FlexAttention is timed at")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_attention: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    flex = torch.compile(flex_attention)
    flex_seqs = {int(n) for n in args.flex_seqs.split(",") if n}
    device = torch.cuda.get_device_name()

    for d in (64, 128):
        for n in (512, 1024, 2048, 4096, 8192):
            for causal in (False, True):
                for mixed in (False, True):
                    b, h = max(1, args.tokens // n), args.width // d
                    # Laplacian heads: the odd ones when mixed.
                    laplacian = (torch.arange(h, device="cuda") % 2 == 1) & mixed
                    laplacian = laplacian[None, :, None, None]
                    block_mask = None
                    impls = dict(SDPA)
                    if d == 128 and n in flex_seqs:
                        impls["flex"] = (None, torch.bfloat16)
                        if causal:
                            block_mask = create_block_mask(
                                lambda b_, h_, q, kv: q >= kv, None, None, n, n,
                                device="cuda")
                    for name, (backend, dtype) in impls.items():
                        shape = (b, h, n, d)
                        q, k, v = (torch.randn(shape, device="cuda", dtype=dtype,
                                               requires_grad=True)
                                   for _ in range(3))
                        dout = torch.randn(shape, device="cuda", dtype=dtype)

                        def forward():
                            if backend is None:
                                o = flex(q, k, v, block_mask=block_mask)
                            else:
                                with sdpa_kernel(backend):
                                    o = F.scaled_dot_product_attention(
                                        q, k, v, is_causal=causal)
                            return torch.where(laplacian, v - o, o) if mixed else o

                        def both():
                            q.grad = k.grad = v.grad = None
                            forward().backward(dout)

                        flops = 4.0 * b * h * n * n * d * (0.5 if causal else 1.0)
                        record = {"framework": "pytorch", "torch": torch.__version__,
                                  "kernel": name, "device": device,
                                  "precision": "bf16" if dtype == torch.bfloat16 else "fp32",
                                  "head_dim": d, "seq": n, "batch": b, "heads": h,
                                  "causal": causal, "kinds": "mixed" if mixed else "attn"}
                        try:
                            with torch.no_grad():
                                forward_ms = median_ms(forward, args.warmup, args.iters)
                            both_ms = median_ms(both, args.warmup, args.iters)
                            record.update(
                                forward_ms=forward_ms,
                                forward_tflops=flops / (forward_ms * 1e-3) / 1e12,
                                forward_backward_ms=both_ms,
                                forward_backward_tflops=3.5 * flops / (both_ms * 1e-3) / 1e12)
                        except Exception as e:  # a backend that refuses the shape
                            record["error"] = f"{type(e).__name__}: {e}".splitlines()[0]
                        print(json.dumps(record), flush=True)
                        del q, k, v, dout
                        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
