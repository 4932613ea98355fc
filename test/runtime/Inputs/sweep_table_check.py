"""sweep_table_check.py DIR: fails unless DIR/results.csv holds, for every
value of the axes but train.seed, the mean and the sample standard
deviation over the seeds of each metric in the variants' summary.json,
computed here by hand."""
import csv
import json
import math
import os
import sys

out = sys.argv[1]
index = json.load(open(os.path.join(out, "specs", "sweep.json")))["variants"]
groups = {}
for v in index:
    summary = json.load(open(os.path.join(out, "runs", v["name"], "summary.json")))
    key = tuple(v["values"][a] for a in v["axes"] if a != "train.seed")
    groups.setdefault(key, []).append(summary)
rows = list(csv.DictReader(open(os.path.join(out, "results.csv"))))
if len(rows) != len(groups):
    sys.exit(f"{len(rows)} rows for {len(groups)} groups")
checked = 0
for row in rows:
    key = tuple(row[a] for a in row if a not in ("seeds",) and not a.endswith(("_mean", "_std")))
    summaries = groups[key]
    if int(row["seeds"]) != len(summaries):
        sys.exit(f"{key}: {row['seeds']} seeds, {len(summaries)} runs")
    for column in row:
        if not column.endswith("_mean"):
            continue
        metric = column[: -len("_mean")]
        x = [s[metric] for s in summaries]
        mean = sum(x) / len(x)
        std = math.sqrt(sum((v - mean) ** 2 for v in x) / (len(x) - 1)) if len(x) > 1 else 0.0
        for got, want in ((float(row[column]), mean), (float(row[metric + "_std"]), std)):
            if abs(got - want) > 1e-12 * max(1.0, abs(want)):
                sys.exit(f"{key} {metric}: {got} in the table, {want} by hand")
        checked += 1
print(f"{len(rows)} rows, {checked} means and standard deviations as computed by hand")
