#!/usr/bin/env python3
"""compile_time.py - lapc's compile time and memory against the layer count.

For GPT specs of 64 ... 4096 layers (width 32, two heads, one Laplacian,
the same everywhere else), times lapc through the MLIR pipeline to the
kernel form (--emit=kernels: front end, autodiff, fusion, memory plan,
kernel form) and, up to --max-so-layers, the whole build of model.so (LLVM
optimisation and linking included), and records each run's peak resident
memory. Prints one JSON document, with each stage's growth from one size to
the next: a ratio near the ratio of the layer counts (2) is linear growth.

usage: bench/compile_time.py [--lapc build/bin/lapc] [--layers 64,128,...]
                             [--max-so-layers 256]
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

SPEC = """name: deep_{layers}
model:
  family: gpt
  layers: {layers}
  width: 32
  heads: 2
  vocab: 256
  context: 16
attention:
  laplacian_heads: 1
"""


def measure(command):
    """Wall seconds and peak resident MiB of one run of `command`."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed ({status})")
    return {"seconds": round(seconds, 3), "peak_mib": round(usage.ru_maxrss / 1024, 1)}


def growth(rows, stage, key):
    """Each size's value over the previous size's: 2 for linear growth."""
    values = [(r["layers"], r[stage][key]) for r in rows if stage in r]
    return [round(b / a, 2) if a else None for (_, a), (_, b) in zip(values, values[1:])]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lapc", default="build/bin/lapc")
    parser.add_argument("--layers", default="64,128,256,512,1024,2048,4096")
    parser.add_argument("--max-so-layers", type=int, default=256)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for layers in map(int, args.layers.split(",")):
            spec = os.path.join(tmp, f"deep_{layers}.yaml")
            with open(spec, "w") as f:
                f.write(SPEC.format(layers=layers))
            row = {"layers": layers,
                   "kernels": measure([args.lapc, spec, "--emit=kernels", "-o", os.devnull])}
            if layers <= args.max_so_layers:
                row["model_so"] = measure([args.lapc, spec, "-o", os.path.join(tmp, "model.so")])
            rows.append(row)
    print(json.dumps({
        "benchmark": "lapc compile time and memory against layers",
        "model": "gpt, width 32, 2 heads (1 laplacian), vocab 256, context 16",
        "stages": {"kernels": "lapc --emit=kernels (the MLIR pipeline)",
                   "model_so": "lapc -o model.so (with LLVM -O3 and the link)"},
        "runs": rows,
        "growth_per_doubling": {
            stage: {key: growth(rows, stage, key) for key in ("seconds", "peak_mib")}
            for stage in ("kernels", "model_so")},
    }, indent=2))


if __name__ == "__main__":
    main()
