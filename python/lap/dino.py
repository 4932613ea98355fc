"""facebookresearch/dino's checkpoints as lap imports them.

DINO saves pickles: a state dict (a teacher's or student's, `backbone.`
and `head.` names, DDP's `module.` in front for the student) or its full
training checkpoint (a dict whose "teacher" and "student" are such state
dicts, with argparse's Namespace and the optimizer beside them).
`lapc-run import dino-vit FILE --out OUT` runs

    python3 -m lap.dino FILE CONVERTED

which writes CONVERTED/model.safetensors (the teacher's, or the state
dict's, tensors as float32: the backbone by timm's names, the DINO head
as `head.*`) and CONVERTED/config.json (what was read), and then maps
those onto lap's names (runtime/interchange/Dino.cpp).

The pickle is read by lap._pickles, which builds tensors, containers and
argparse.Namespace and nothing else, so a checkpoint cannot run code."""

import json
import sys
from pathlib import Path

from lap import _convert, _pickles, safetensors
from lap.errors import LapError


def convert(source, out):
    """Converts the DINO checkpoint file `source` into the directory
    `out`."""
    import torch
    source, out = Path(source), Path(out)
    loaded = _pickles.load(source)
    which = "state dict"
    if isinstance(loaded, dict) and "teacher" in loaded:
        loaded, which = loaded["teacher"], "teacher"
    if not isinstance(loaded, dict):
        raise LapError(f"{source}: holds no state dict")
    tensors = {}
    for name, value in loaded.items():
        if not isinstance(value, torch.Tensor):
            raise LapError(f"{source}: '{name}' is not a tensor")
        for prefix in ("module.", "backbone."):
            name = name.removeprefix(prefix)
        tensors[name] = value.detach().float().contiguous().numpy()
    (out / "config.json").write_text(json.dumps(
        {"source": str(source), "read": which}, indent=1) + "\n")
    safetensors.write(out / "model.safetensors", tensors)


if __name__ == "__main__":
    sys.exit(_convert.main(sys.argv, convert,
                           "python3 -m lap.dino CHECKPOINT OUT_DIR"))
