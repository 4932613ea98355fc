"""compare_runs.py lr-ratio|losses-differ A B: compares two metrics.jsonl.

lr-ratio: prints the one ratio of B's learning rate to A's at every step
(fails if it is not the same at all steps). losses-differ: fails unless the
runs agree at step 1 (a schedule's start changes nothing) and differ after.
"""
import json
import sys

def records(path):
    return {e["step"]: e for e in map(json.loads, open(path)) if "loss" in e}

mode, a, b = sys.argv[1], records(sys.argv[2]), records(sys.argv[3])
steps = sorted(set(a) & set(b))
if mode == "lr-ratio":
    ratios = {round(b[s]["lr"] / a[s]["lr"], 9) for s in steps if a[s]["lr"] > 0}
    if len(ratios) != 1:
        sys.exit(f"lr ratios {sorted(ratios)} differ across steps")
    print(f"lr x {ratios.pop():g} at steps {steps}")
else:
    if a[1]["loss"] != b[1]["loss"]:
        sys.exit(f"step 1: losses {a[1]['loss']} and {b[1]['loss']} differ")
    different = [s for s in steps if a[s]["loss"] != b[s]["loss"]]
    if not different:
        sys.exit("the losses never differ")
    print(f"same loss at step 1, then different at steps {different}")
