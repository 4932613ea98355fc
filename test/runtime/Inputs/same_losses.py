"""Fails unless two metrics.jsonl files record the same loss at every step
both logged (a resumed run must match an uninterrupted one exactly), and
each records every step once."""
import collections
import json
import sys

def losses(path):
    records = [e for e in map(json.loads, open(path)) if "loss" in e]
    twice = [s for s, n in collections.Counter(e["step"] for e in records).items() if n > 1]
    if twice:
        sys.exit(f"{path}: steps {sorted(twice)} recorded more than once")
    return {e["step"]: e["loss"] for e in records}

a, b = losses(sys.argv[1]), losses(sys.argv[2])
common = sorted(set(a) & set(b))
if len(common) < 6:
    sys.exit(f"only steps {common} in common")
for step in common:
    if a[step] != b[step]:
        sys.exit(f"step {step}: loss {a[step]} uninterrupted, {b[step]} resumed")
print(f"same losses at steps {common}")
