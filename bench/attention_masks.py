"""Causal attention under the masks packed and padded training uses —
sliding windows, documents packed into a sequence, keys padded past a
sequence's length — timed against the mask: forward +
backward of lap.torch.attention next to PyTorch 1.13's manual attention
with the same mask (Debian's torch has no fused attention on the CPU), in
one run.

A GPT layer's attention at T = 2048 (B 1, H 4, D 64; q, k, v views of one
projection's output, as a block hands them over): full causal, windows of
1024 ... 64 keys, documents of 64 ... 512 tokens on average (lengths
drawn uniformly from 1 to twice the mean, the same for both frameworks),
and a sequence of 1024 or 512 tokens padded to T (its padding queries
still see its keys, as in a padded batch),
as softmax heads (attn) and as Laplacian heads (alpha -1, beta 1), both
with learned coefficients. For each mask the JSON gives both frameworks'
medians, lap's speed-up over its own full causal attention next to the
ratio of the areas the masks allow (the most that skipping blocks can
give), and the Laplacian heads' time over attn's. Rounds alternate
between the frameworks; medians of `--iters` timed steps after warm-up,
the best round's.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/attention_masks.py
       [--iters N] [--rounds N] [--threads N] [--tokens N]
"""

from peer_env import blas_library, run_at_its_best

run_at_its_best("attention_masks")

import argparse
import json

import torch

import lap.torch as lt
from attention_peer import (KINDS, allowed, best_rounds, host, manual,
                            projection_inputs, step_time)
HEADS, HEAD_DIM = 4, 64
# (name, window, mean document length, keys before the padding); 0: none.
MASKS = ([("causal", 0, 0, 0)] +
         [(f"window {w}", w, 0, 0) for w in (1024, 512, 256, 128, 64)] +
         [(f"documents {m}", 0, m, 0) for m in (512, 256, 128, 64)] +
         [(f"padded {n}", 0, 0, n) for n in (1024, 512)])


def document_ids(T, mean):
    """[1, T] document ids, lengths uniform in [1, 2 mean], seeded."""
    g = torch.Generator().manual_seed(mean)
    ids, document = [], 0
    while len(ids) < T:
        length = int(torch.randint(1, 2 * mean + 1, (1,), generator=g))
        ids += [document] * length
        document += 1
    return torch.tensor(ids[:T])[None, :]


def measure(T, iters, rounds):
    """{mask: {kind: {framework: best round's (median, min, max)}}}."""
    runs = {}
    for _ in range(rounds):
        for name, window, mean, length in MASKS:
            documents = document_ids(T, mean) if mean else None
            lengths = [length] if length else None
            for kind in KINDS:
                qkv, alpha, beta, dout = projection_inputs(1, HEADS, T,
                                                           HEAD_DIM, kind)

                def views():
                    return [x.transpose(1, 2) for x in qkv.unbind(2)]

                frameworks = {
                    "lap": lambda: lt.attention(
                        *views(), alpha, beta, causal=True, window=window,
                        documents=documents, lengths=lengths),
                    "pytorch": lambda: manual(*views(), alpha, beta, True,
                                              window, documents, length),
                }
                for framework, function in frameworks.items():
                    runs.setdefault(name, {}).setdefault(
                        kind, {}).setdefault(framework, []).append(
                            step_time(function, (qkv, alpha, beta), dout,
                                      iters))
    return best_rounds(runs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=2048)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    blas = blas_library("attention_masks")
    T = args.tokens
    results = measure(T, args.iters, args.rounds)
    full_area = int(allowed(T, True).sum())
    rows = []
    for name, window, mean, length in MASKS:
        r = results[name]
        documents = document_ids(T, mean) if mean else None
        area = int(allowed(T, True, window, documents, length).sum())
        row = {"mask": name, "window": window, "mean_document": mean,
               "keys": length or T, "allowed_pairs": area,
               "area_ratio_to_causal": full_area / area}
        for kind in KINDS:
            lap_ms = r[kind]["lap"]["median_ms"]
            row[kind] = r[kind]
            row[kind]["speedup_over_causal"] = (
                results["causal"][kind]["lap"]["median_ms"] / lap_ms)
            row[kind]["speedup_over_pytorch"] = (
                r[kind]["pytorch"]["median_ms"] / lap_ms)
        row["laplacian_over_attn"] = (r["laplacian"]["lap"]["median_ms"] /
                                      r["attn"]["lap"]["median_ms"])
        rows.append(row)
    print(json.dumps({
        "benchmark": "causal attention forward + backward under sliding "
                     "windows, packed documents and padded keys, "
                     "lap.torch.attention "
                     "against PyTorch's manual masked attention",
        "shape": {"B": 1, "H": HEADS, "T": T, "D": HEAD_DIM},
        **host(blas, args.threads),
        "iters": args.iters, "rounds": args.rounds,
        "masks": rows,
    }, indent=1))


if __name__ == "__main__":
    main()
