#!/usr/bin/env python3
"""Where a step's GPU time goes: Nsight Compute's CSV of every launch
(gpu__time_duration.sum) summed by kernel and divided by the steps it
covers. Prints the total, the time of each family of kernels (generated
loops, cuBLAS GEMMs, each of the kernel library's namespaces), and the
kernels that take the most, one line each.

    kernel_table.py KERNELS.csv STEPS [ROWS]
"""
import csv
import re
import sys
from collections import defaultdict

SECONDS = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6,
           "ms": 1e-3, "msecond": 1e-3, "s": 1.0, "second": 1.0}


def launches(path):
    """(kernel name, seconds) of each timed launch in ncu's CSV."""
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        yield row["Kernel Name"], value * SECONDS[row["Metric Unit"]]


def short(name, width=96):
    """The kernel's name without its parameter list, cut to `width`."""
    name = re.sub(r"^void ", "", name)
    depth = 0
    for i in range(len(name) - 1, -1, -1):  # the last balanced (...)
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0 and name[i] == "(":
            name = name[:i]
            break
    return name if len(name) <= width else name[:width - 3] + "..."


def family(name):
    """The part of the step a kernel belongs to: lapc's generated loops,
    cuBLAS(Lt)'s GEMMs, or the kernel library's namespace."""
    if name.startswith("lap_gen_"):
        return "generated loops"
    if re.search(r"nvjet|cublas|gemm|xmma|splitK", name, re.IGNORECASE):
        return "cuBLAS GEMMs"
    path = re.sub(r"^void |<unnamed>::|\(anonymous namespace\)::", "", name)
    parts = path.split("(")[0].split("<")[0].split("::")
    if parts[:2] == ["lap", "cuda"]:  # lap::cuda::tensorcore::..., hopper, ...
        return parts[2] if len(parts) > 3 else "lap::cuda"
    return parts[0] if len(parts) > 1 else "other"


def main():
    path, steps = sys.argv[1], int(sys.argv[2])
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    total, count = defaultdict(float), defaultdict(int)
    for name, seconds in launches(path):
        total[name] += seconds
        count[name] += 1
    if not total:
        print(f"{path}: no timed launches")
        return 1
    step = sum(total.values()) / steps
    print(f"\nGPU time per step {step * 1e3:.2f} ms in "
          f"{sum(count.values()) / steps:.0f} launches of {len(total)} kernels "
          f"({path.rsplit('/', 1)[-1]})")
    families, launched = defaultdict(float), defaultdict(int)
    for name in total:
        families[family(name)] += total[name]
        launched[family(name)] += count[name]
    print(f"{'ms/step':>8} {'%':>5} {'launches':>8}  family")
    for f in sorted(families, key=families.get, reverse=True):
        ms = families[f] / steps * 1e3
        print(f"{ms:8.3f} {100 * ms / (step * 1e3):5.1f} "
              f"{launched[f] / steps:8.1f}  {f}")
    print(f"\n{'ms/step':>8} {'%':>5} {'launches':>8} {'us each':>8}  kernel")
    for name in sorted(total, key=total.get, reverse=True)[:rows]:
        ms = total[name] / steps * 1e3
        print(f"{ms:8.3f} {100 * ms / (step * 1e3):5.1f} "
              f"{count[name] / steps:8.1f} {total[name] / count[name] * 1e6:8.1f}"
              f"  {short(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
