"""close_losses.py A B RTOL: fails unless two metrics.jsonl files record the
same steps, each once, with losses equal to a relative RTOL (0: bit for
bit); prints the two loss columns side by side."""
import collections
import json
import sys

def losses(path):
    records = [e for e in map(json.loads, open(path)) if "loss" in e]
    twice = [s for s, n in collections.Counter(e["step"] for e in records).items() if n > 1]
    if twice:
        sys.exit(f"{path}: steps {sorted(twice)} recorded more than once")
    return {e["step"]: e["loss"] for e in records}

a, b, rtol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
if sorted(a) != sorted(b):
    sys.exit(f"steps differ: {sorted(a)} and {sorted(b)}")
worst = 0.0
print("step  loss A              loss B              relative difference")
for step in sorted(a):
    diff = abs(a[step] - b[step]) / max(abs(a[step]), 1e-30)
    worst = max(worst, diff)
    print(f"{step:4d}  {a[step]:.15f}  {b[step]:.15f}  {diff:.1e}")
if worst > rtol:
    sys.exit(f"losses differ by {worst:.2e} (relative), more than {rtol:g}")
print(f"{len(a)} steps, largest relative difference {worst:.1e} (tolerance {rtol:g})")
