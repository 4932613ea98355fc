"""What the attention benchmarks share: their inputs, the PyTorch peer
(manual attention, as nanoGPT writes it for torch < 2.0, with lap's head
mix and any mask), the timing of a forward + backward, the best of the
rounds, and the host they ran on. Import after peer_env's
run_at_its_best() (it imports torch)."""

import math
import platform
import statistics
import time

import torch

from lap import _attention
from peer_env import allocator

KINDS = {"attn": (1.0, 0.0), "laplacian": (-1.0, 1.0)}


def projection_inputs(B, H, T, D, kind):
    """What a transformer block hands attention: q, k and v as views of one
    projection's output [B, T, 3, H, D] (so neither framework gets dense
    [B, H, T, D] tensors for free), the heads' coefficients of `kind`,
    learned, and the upstream gradient [B, H, T, D]."""
    g = torch.Generator().manual_seed(0)
    qkv = torch.randn(B, T, 3, H, D, generator=g).requires_grad_()
    a, b = KINDS[kind]
    alpha = torch.full((H,), a, requires_grad=True)
    beta = torch.full((H,), b, requires_grad=True)
    dout = torch.randn(B, H, T, D, generator=g)
    return qkv, alpha, beta, dout


def allowed(T, causal, window=0, documents=None, length=0):
    """[T, T] bool (or [B, 1, T, T] with documents [B, T], each query's
    document id), True where query t sees key s: causal s <= t, under a
    window t - window < s, in documents the same document, with keys
    padded from `length` on (0: none) s < length."""
    t = torch.arange(T)[:, None]
    s = torch.arange(T)[None, :]
    mask = torch.ones(T, T, dtype=torch.bool)
    if causal:
        mask &= s <= t
    if window:
        mask &= t - s < window
    if length:
        mask &= s < length
    if documents is not None:
        mask = mask & (documents[:, None, :, None] ==
                       documents[:, None, None, :])
    return mask


def manual(q, k, v, alpha, beta, causal, window=0, documents=None,
           length=0):
    """alpha P V + beta V with P = softmax(Q K^T / sqrt(D)) over the keys the
    mask allows, from matmul and softmax."""
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal or window or documents is not None or length:
        mask = allowed(q.shape[-2], causal, window, documents, length)
        scores = scores.masked_fill(~mask, float("-inf"))
    p = scores.softmax(dim=-1)
    return alpha[:, None, None] * (p @ v) + beta[:, None, None] * v


def step_time(function, leaves, dout, iters, warmup=3):
    """Milliseconds per forward + backward: (median, min, max)."""
    times = []
    for i in range(warmup + iters):
        for x in leaves:
            x.grad = None
        began = time.perf_counter()
        out = function()
        out.backward(dout)
        if i >= warmup:
            times.append((time.perf_counter() - began) * 1e3)
    return statistics.median(times), min(times), max(times)


def best_rounds(runs):
    """{case: {kind: {framework: [(median, min, max) per round]}}} ->
    the round with the lowest median of each, as a dict: the framework at
    its quietest."""
    return {case: {kind: {f: dict(zip(("median_ms", "min_ms", "max_ms"),
                                      min(r, key=lambda t: t[0])))
                          for f, r in by_framework.items()}
                   for kind, by_framework in by_kind.items()}
            for case, by_kind in runs.items()}


def host(blas, threads):
    """The JSON fields naming where a benchmark ran."""
    return {"threads": threads, "torch": torch.__version__, "blas": blas,
            "allocator": allocator(), "lap_isa": _attention.isa("cpu"),
            "cpu": platform.processor() or platform.machine()}
