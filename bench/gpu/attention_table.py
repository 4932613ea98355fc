#!/usr/bin/python3
"""attention_table.py LAP.jsonl TORCH.jsonl: the attention benchmark's table.

One row per shape (head dim, sequence length, causal, head kinds): lap's
forward and forward + backward TFLOP/s in bf16 and in fp32, PyTorch's best
bf16 SDPA backend, its fp32 one and FlexAttention; then what half the heads
Laplacian cost each of them (time with mixed kinds over time with all
`attn`, in %). lap's bf16 is its kernels for the GPU: Hopper's where it
timed them, and then the mma.sync ones (tensorcore) get a column of their
own.
"""
import json
import sys


def load(path):
    try:
        return [json.loads(line) for line in open(path) if line.strip()]
    except OSError:
        return []


def key(r):
    return (r["head_dim"], r["seq"], r["causal"], r["kinds"])


lap, mma_sync = {}, {}
runs = load(sys.argv[1])
hopper = any(r.get("kernels") == "hopper" for r in runs)
for r in runs:
    if hopper and r.get("kernels") == "tensorcore":
        mma_sync[key(r)] = r
    else:
        lap.setdefault(key(r), {})[r["precision"]] = r
torch = {}
for r in load(sys.argv[2]):
    if "error" not in r:
        torch.setdefault(key(r), {})[r["kernel"]] = r


def best_bf16(runs, what):
    values = [r[what] for k, r in runs.items() if k in ("sdpa-flash", "sdpa-cudnn")]
    return max(values) if values else float("nan")


def get(r, what):
    return r[what] if r else float("nan")


if hopper:
    print(f"\nlap bf16: Hopper's kernels (wgmma); mma.sync: the other GPUs' kernels")
print(f"\n{'D':>4} {'N':>5} {'causal':>6} {'kinds':>5} | {'lap bf16':>8} {'fwd+bwd':>7} | "
      + (f"{'mma.sync':>8} {'fwd+bwd':>7} | " if hopper else "")
      + f"{'lap fp32':>8} {'fwd+bwd':>7} | "
      f"{'sdpa bf16':>9} {'fwd+bwd':>7} | {'sdpa fp32':>9} {'fwd+bwd':>7} | "
      f"{'flex':>6} {'fwd+bwd':>7}   (TFLOP/s)")
for k in sorted(set(lap) | set(torch)):
    l, t = lap.get(k, {}), torch.get(k, {})
    print(f"{k[0]:4d} {k[1]:5d} {str(k[2]):>6} {k[3]:>5} | "
          f"{get(l.get('bf16'), 'forward_tflops'):8.1f} "
          f"{get(l.get('bf16'), 'forward_backward_tflops'):7.1f} | "
          + (f"{get(mma_sync.get(k), 'forward_tflops'):8.1f} "
             f"{get(mma_sync.get(k), 'forward_backward_tflops'):7.1f} | "
             if hopper else "")
          + f"{get(l.get('fp32'), 'forward_tflops'):8.1f} "
          f"{get(l.get('fp32'), 'forward_backward_tflops'):7.1f} | "
          f"{best_bf16(t, 'forward_tflops'):9.1f} {best_bf16(t, 'forward_backward_tflops'):7.1f} | "
          f"{get(t.get('sdpa-efficient'), 'forward_tflops'):9.1f} "
          f"{get(t.get('sdpa-efficient'), 'forward_backward_tflops'):7.1f} | "
          f"{get(t.get('flex'), 'forward_tflops'):6.1f} "
          f"{get(t.get('flex'), 'forward_backward_tflops'):7.1f}")

print("\nhalf the heads Laplacian: extra forward + backward time, %")
print(f"{'D':>4} {'N':>5} {'causal':>6} | {'lap bf16':>8} {'lap fp32':>8} "
      f"{'sdpa-flash':>10} {'sdpa-efficient':>14} {'flex':>6}")
for k in sorted(k for k in lap if k[3] == "attn"):
    mixed = (k[0], k[1], k[2], "mixed")

    def extra(a, b):
        if not a or not b:
            return float("nan")
        return 100 * (b["forward_backward_ms"] / a["forward_backward_ms"] - 1)

    row = [extra(lap[k].get(p), lap.get(mixed, {}).get(p)) for p in ("bf16", "fp32")]
    for name in ("sdpa-flash", "sdpa-efficient", "flex"):
        row.append(extra(torch.get(k, {}).get(name), torch.get(mixed, {}).get(name)))
    print(f"{k[0]:4d} {k[1]:5d} {str(k[2]):>6} | {row[0]:8.1f} {row[1]:8.1f} "
          f"{row[2]:10.1f} {row[3]:14.1f} {row[4]:6.1f}")
