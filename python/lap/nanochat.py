"""nanochat's checkpoints as lap imports them.

nanochat saves a directory of model_<step>.pt (its GPT's state dict,
pickled by torch.save) and meta_<step>.json (with its model_config). lap
reads no pickles in C++: `lapc-run import nanochat DIR --out OUT` runs

    python3 -m lap.nanochat DIR CONVERTED

which writes CONVERTED/config.json (the model_config) and
CONVERTED/model.safetensors (every tensor as float32, by nanochat's names
without torch.compile's "_orig_mod."), and then maps those onto lap's
names (runtime/interchange/Nanochat.cpp)."""

import json
import re
import sys
from pathlib import Path

from lap import _convert, safetensors
from lap.errors import LapError


def newest_step(directory):
    """The step of the newest model_<step>.pt in `directory`, as written."""
    steps = [m.group(1) for p in directory.glob("model_*.pt")
             if (m := re.fullmatch(r"model_(\d+)\.pt", p.name))]
    if not steps:
        raise LapError(f"{directory}: no model_<step>.pt (a nanochat "
                       "checkpoint directory)")
    return max(steps, key=int)


def convert(source, out):
    """Converts the nanochat checkpoint directory `source` into `out`."""
    import torch
    source, out = Path(source), Path(out)
    step = newest_step(source)
    meta_path = source / f"meta_{step}.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as e:
        raise LapError(f"{meta_path}: cannot read it: {e}") from e
    config = meta.get("model_config")
    if not isinstance(config, dict):
        raise LapError(f"{meta_path}: no model_config")
    model_path = source / f"model_{step}.pt"
    try:
        state = torch.load(model_path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many kinds for a bad pickle
        raise LapError(f"{model_path}: not a state dict torch.load reads: "
                       f"{e}") from e
    tensors = {}
    for name, value in state.items():
        if not isinstance(value, torch.Tensor) or \
                not torch.is_floating_point(value):
            raise LapError(f"{model_path}: '{name}' is not a float tensor")
        tensors[name.removeprefix("_orig_mod.")] = \
            value.detach().float().contiguous().numpy()
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    safetensors.write(out / "model.safetensors", tensors,
                      {"nanochat_step": step})


if __name__ == "__main__":
    sys.exit(_convert.main(sys.argv, convert,
                           "python3 -m lap.nanochat SOURCE_DIR OUT_DIR"))
