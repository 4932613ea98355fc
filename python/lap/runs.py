"""What lapc-run writes, as Python objects: a run directory (metrics,
summary, checkpoints) and the outputs of `lapc-run analyze`."""

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from lap import safetensors
from lap.errors import LapError


def _json(path):
    try:
        return json.loads(Path(path).read_text())
    except OSError as e:
        raise LapError(f"{path}: cannot read: {e.strerror}") from e
    except ValueError as e:
        raise LapError(f"{path}: not JSON: {e}") from e


@dataclass
class Run:
    """A training run's directory."""
    path: Path
    metrics: list = field(default_factory=list)  # metrics.jsonl's records
    summary: dict = None  # summary.json, once the run ended

    @property
    def losses(self):
        """(step, loss) of every logged training step."""
        return [(m["step"], m["loss"]) for m in self.metrics if "loss" in m]

    @property
    def checkpoints(self):
        """The complete checkpoint directories, oldest first."""
        found = []
        for d in (self.path / "checkpoints").glob("step_*"):
            if re.fullmatch(r"step_\d+", d.name) and all(
                    (d / f).is_file() for f in
                    ("model.safetensors", "optimizer.safetensors",
                     "state.json")):
                found.append(d)
        return sorted(found)

    def parameters(self, checkpoint=None):
        """The parameters of `checkpoint` (default: the newest) by name."""
        if checkpoint is None:
            if not self.checkpoints:
                raise LapError(f"{self.path}: no checkpoint")
            checkpoint = self.checkpoints[-1]
        return read_checkpoint(checkpoint)[0]


def read_run(path):
    """The run directory `path` (lapc-run train --run-dir)."""
    path = Path(path)
    if not path.is_dir():
        raise LapError(f"{path}: no such run directory")
    run = Run(path)
    metrics = path / "metrics.jsonl"
    if metrics.is_file():
        for number, line in enumerate(metrics.read_text().splitlines(), 1):
            if line.strip():
                try:
                    run.metrics.append(json.loads(line))
                except ValueError as e:
                    raise LapError(f"{metrics}:{number}: not JSON: {e}") \
                        from e
    if (path / "summary.json").is_file():
        run.summary = _json(path / "summary.json")
    return run


def read_checkpoint(path):
    """(parameters by name, state.json) of a checkpoint directory."""
    path = Path(path)
    tensors, _ = safetensors.read(path / "model.safetensors")
    return tensors, _json(path / "state.json")


def read_analysis(path):
    """What `lapc-run analyze` wrote to the directory `path`: analysis.json
    as a dict, and geometry.csv and spectrum.csv as lists of rows (dicts,
    numbers converted)."""
    path = Path(path)
    out = {"analysis": _json(path / "analysis.json")}
    for name in ("geometry", "spectrum"):
        table = path / f"{name}.csv"
        if table.is_file():
            with open(table, newline="") as f:
                out[name] = [{k: _number(v) for k, v in row.items()}
                             for row in csv.DictReader(f)]
    return out


def _number(text):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text
