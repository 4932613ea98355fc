"""The walkthrough's table: each regime's baseline and Laplacian models,
every metric as mean ± std over the seeds, in the shape of the paper's
(task metrics, then the geometry of the last layer's token
representations). Usage: table.py OUT (run.sh's PAPER_DIR); prints the
table as Markdown and writes OUT/table.md and OUT/table.json."""

import json
import statistics
import sys
from pathlib import Path

import lap

REGIMES = [  # directory, what it is
    ("supervised", "supervised ViT, Fashion-MNIST"),
    ("dino", "DINO ViT, Fashion-MNIST (mIoU: shapes)"),
    ("lm", "GPT, fortunes"),
]
COLUMNS = [  # key, heading
    ("accuracy", "accuracy"),
    ("loss", "val. loss"),
    ("knn", "k-NN"),
    ("linear", "linear"),
    ("miou", "mIoU"),
    ("within_sequence", "within-seq. var."),
    ("between_classes", "between-class var."),
    ("components_99", "PCs@99%"),
]


def variant_metrics(sweep, name, run):
    """The table's numbers for one trained variant of a sweep."""
    summary = lap.read_run(run).summary
    if summary is None:
        raise SystemExit(f"{run}: not finished; run examples/paper/run.sh")
    # The geometry of the last layer's tokens (for DINO: the teacher's).
    last = lap.read_analysis(sweep / "analysis" / name)["analysis"][0][
        "layers"][-1]
    m = {k: last[k] for k in ("within_sequence", "between_classes",
                              "components_99")}
    m["loss"] = summary.get("val_loss")
    m["accuracy"] = summary.get("top1")
    m["knn"] = summary.get("knn_top1")
    m["linear"] = summary.get("linear_top1")
    segmentation = sweep / "segmentation" / name / "segmentation.json"
    if segmentation.is_file():
        m["miou"] = json.loads(segmentation.read_text())["mIoU"]
    return {k: v for k, v in m.items() if v is not None}


def rows(out):
    """One row per regime and head count: each metric's samples."""
    for regime, title in REGIMES:
        sweep = out / regime
        runs = {v["name"]: v["run"] for v in json.loads(
            (sweep / "models" / "variants.json").read_text())}
        groups = {}
        for v in json.loads((sweep / "specs" / "sweep.json").read_text())[
                "variants"]:
            heads = int(v["values"]["attention.laplacian_heads"])
            group = groups.setdefault(heads, {"seeds": [], "samples": {}})
            group["seeds"].append(int(v["values"]["train.seed"]))
            for k, x in variant_metrics(sweep, v["name"],
                                        runs[v["name"]]).items():
                group["samples"].setdefault(k, []).append(x)
        for heads in sorted(groups):
            yield {"regime": regime, "title": title,
                   "laplacian_heads": heads, **groups[heads]}


def cell(samples):
    if not samples:
        return "—"
    mean = statistics.fmean(samples)
    std = statistics.stdev(samples) if len(samples) > 1 else 0.0
    digits = 1 if abs(mean) >= 10 else 3
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def markdown(table):
    lines = ["| regime | Laplacian heads | seeds | " +
             " | ".join(h for _, h in COLUMNS) + " |",
             "|---|---|---|" + "---|" * len(COLUMNS)]
    for r in table:
        lines.append(
            f"| {r['title']} | {r['laplacian_heads']} of 4 | "
            f"{len(r['seeds'])} | " +
            " | ".join(cell(r["samples"].get(k, [])) for k, _ in COLUMNS) +
            " |")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: table.py OUT")
    out = Path(sys.argv[1])
    table = list(rows(out))
    text = markdown(table)
    print(text, end="")
    (out / "table.md").write_text(text)
    (out / "table.json").write_text(json.dumps(table, indent=2) + "\n")


if __name__ == "__main__":
    main()
