"""lap.compile: a spec to a model library, by lapc."""

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from lap._home import tool
from lap.errors import LapError, SpecError

# lapc's located errors: "FILE:LINE:COL: error: MESSAGE".
_LOCATED = re.compile(r"^(.*?):(\d+):(\d+): error: (.*)$", re.MULTILINE)

# Libraries compiled without an `out`, kept until the interpreter exits.
_scratch = []


def _flag(name, value):
    option = "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return f"{option}={'true' if value else 'false'}"
    return f"{option}={value}"


def _spec_error(stderr, shown_as):
    """The SpecError of lapc's report, its file shown as `shown_as` (when
    lapc read a file this module wrote)."""
    found = [(m.group(1), int(m.group(2)), int(m.group(3)), m.group(4))
             for m in _LOCATED.finditer(stderr)]
    if not found:
        return None
    text = stderr
    if shown_as:
        text = text.replace("spec.yaml:", f"{shown_as}:")
        found = [(shown_as if f == "spec.yaml" else f, l, c, m)
                 for f, l, c, m in found]
    file, line, column, message = found[0]
    error = SpecError(file, line, column, message, text)
    error.errors = found
    return error


def compile(spec, out=None, target="cpu", **flags):
    """Compiles `spec` with lapc and returns the library's path.

    spec: a path to a YAML file, a YAML document (a string with a newline),
    or a dict (written as JSON, which is YAML). out: where to write the
    library; None: a temporary directory kept until the interpreter exits.
    target: "cpu" or "cuda". flags: lapc's options by name, underscores for
    dashes (max_batch=8, max_seq=128, cpu="x86-64-v3", gpu="sm_80",
    fuse_loops=False, profile=True).

    Raises SpecError (file, line, column, message) when lapc refuses the
    spec, LapError for anything else lapc reports."""
    with tempfile.TemporaryDirectory(prefix="lap-spec-") as scratch:
        shown_as = None
        if isinstance(spec, dict):
            path, shown_as = Path(scratch) / "spec.yaml", "<dict>"
            path.write_text(json.dumps(spec, indent=1) + "\n")
        elif isinstance(spec, str) and "\n" in spec:
            path, shown_as = Path(scratch) / "spec.yaml", "<string>"
            path.write_text(spec)
        elif isinstance(spec, (str, os.PathLike)):
            path = Path(spec)
            if not path.is_file():
                raise LapError(f"{path}: no such spec file")
        else:
            raise TypeError("spec: a path, a YAML string or a dict, "
                            f"not {type(spec).__name__}")
        if out is None:
            directory = tempfile.TemporaryDirectory(prefix="lap-model-")
            _scratch.append(directory)
            out = Path(directory.name) / "model.so"
        out = Path(os.path.abspath(out))
        command = [str(tool("lapc")), f"--target={target}", "-o", str(out)]
        command += [_flag(k, v) for k, v in flags.items()]
        # A spec lap wrote is read by its plain name, which lapc then shows.
        command.append("spec.yaml" if shown_as else str(path))
        done = subprocess.run(command, cwd=scratch if shown_as else None,
                              capture_output=True, text=True)
    if done.returncode != 0:
        error = _spec_error(done.stderr, shown_as)
        raise error or LapError(done.stderr.strip() or
                                f"lapc failed with status {done.returncode}")
    return out
