"""What the attention benchmarks share: the PyTorch peer (manual attention,
as nanoGPT writes it for torch < 2.0, with lap's head mix and any mask)
and the timing of a forward + backward. Import after peer_env's
run_at_its_best() (it imports torch)."""

import math
import statistics
import time

import torch


def allowed(T, causal, window=0, documents=None):
    """[T, T] bool (or [B, 1, T, T] with documents [B, T], each query's
    document id), True where query t sees key s: causal s <= t, under a
    window t - window < s, in documents the same document."""
    t = torch.arange(T)[:, None]
    s = torch.arange(T)[None, :]
    mask = torch.ones(T, T, dtype=torch.bool)
    if causal:
        mask &= s <= t
    if window:
        mask &= t - s < window
    if documents is not None:
        mask = mask & (documents[:, None, :, None] ==
                       documents[:, None, None, :])
    return mask


def manual(q, k, v, alpha, beta, causal, window=0, documents=None):
    """alpha P V + beta V with P = softmax(Q K^T / sqrt(D)) over the keys the
    mask allows, from matmul and softmax."""
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal or window or documents is not None:
        mask = allowed(q.shape[-2], causal, window, documents)
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
