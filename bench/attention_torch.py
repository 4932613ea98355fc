"""lap.torch.attention against PyTorch 1.13's manual attention (Debian's
torch has no fused attention on the CPU), forward + backward, in one run.

Three blocks' attention: a ViT-S/16's (B 8, H 6, T 197, D 64, full),
bench/specs/vit-bench.yaml's (B 64, H 3, T 65, D 64, full: 32 x 32
images in 4 x 4 patches) and a GPT's (B 4, H 12, T 256, D 64, causal). Each runs as softmax heads (attn)
and as Laplacian heads (alpha -1, beta 1) with learned coefficients
(gradients of alpha and beta too); the PyTorch peer computes the same
alpha P V + beta V with matmul and softmax. Rounds alternate between the
two frameworks; medians of `--iters` timed steps after warm-up. Prints one
JSON document.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/attention_torch.py
       [--iters N] [--rounds N] [--threads N]
(the script sets up the peer's environment as BENCHMARKING.md asks; the
peer needs an optimized BLAS: apt-get install libopenblas0-pthread
libtcmalloc-minimal4, as bench/run.sh installs them.)
"""

from peer_env import blas_library, run_at_its_best

run_at_its_best("attention_torch")

import argparse
import json

import torch

import lap.torch as lt
from attention_peer import (KINDS, best_rounds, host, manual,
                            projection_inputs, step_time)

BLOCKS = {
    "vit_s16": dict(B=8, H=6, T=197, D=64, causal=False),
    "vit_bench": dict(B=64, H=3, T=65, D=64, causal=False),
    "gpt": dict(B=4, H=12, T=256, D=64, causal=True),
}


def measure(iters, rounds):
    """{block: {kind: {framework: times}}}: the best round's median of
    each, the framework at its quietest. Rounds interleave every block,
    kind and framework, so that the host's noise hits them all."""
    runs = {}
    for _ in range(rounds):
        for name, block in BLOCKS.items():
            for kind in KINDS:
                qkv, alpha, beta, dout = projection_inputs(
                    *(block[k] for k in ("B", "H", "T", "D")), kind)
                leaves = (qkv, alpha, beta)

                def views():
                    return [x.transpose(1, 2) for x in qkv.unbind(2)]

                frameworks = {
                    "lap": lambda: lt.attention(*views(), alpha, beta,
                                                causal=block["causal"]),
                    "pytorch": lambda: manual(*views(), alpha, beta,
                                              block["causal"]),
                }
                for framework, function in frameworks.items():
                    runs.setdefault(name, {}).setdefault(kind, {}).setdefault(
                        framework, []).append(
                            step_time(function, leaves, dout, iters))
    return best_rounds(runs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    blas = blas_library("attention_torch")
    results = measure(args.iters, args.rounds)
    for name, block in BLOCKS.items():
        r = results[name]
        r["shape"] = block
        for kind in KINDS:
            r[kind]["speedup_over_pytorch"] = (
                r[kind]["pytorch"]["median_ms"] / r[kind]["lap"]["median_ms"])
        r["laplacian_over_attn"] = (r["laplacian"]["lap"]["median_ms"] /
                                    r["attn"]["lap"]["median_ms"])
    print(json.dumps({
        "benchmark": "attention forward + backward, lap.torch.attention "
                     "against PyTorch's manual attention",
        **host(blas, args.threads),
        "iters": args.iters, "rounds": args.rounds,
        "blocks": results,
    }, indent=1))


if __name__ == "__main__":
    main()
