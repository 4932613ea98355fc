"""Where lap's build is: bin/lapc, bin/lapc-run and lib/ beside them.

In order: the LAP_HOME environment variable; the build this package was
copied from (the build writes _build.py beside it); lapc on PATH."""

import os
import shutil
from pathlib import Path

from lap.errors import LapError


def home():
    """The directory holding bin/lapc-run and lib/."""
    candidates = []
    if os.environ.get("LAP_HOME"):
        candidates.append(("LAP_HOME", Path(os.environ["LAP_HOME"])))
    try:
        from lap._build import BUILD_DIR
        candidates.append(("the build", Path(BUILD_DIR)))
    except ImportError:
        pass
    on_path = shutil.which("lapc-run")
    if on_path:
        candidates.append(("PATH", Path(on_path).resolve().parent.parent))
    for _, directory in candidates:
        if (directory / "bin" / "lapc-run").is_file():
            return Path(os.path.abspath(directory))
    tried = ", ".join(f"{where}: {d}" for where, d in candidates) or "none"
    raise LapError(
        "cannot find lap's build (bin/lapc-run and lib/); set LAP_HOME to the "
        f"build directory (tried {tried})")


def tool(name):
    """The path of bin/<name>."""
    path = home() / "bin" / name
    if not path.is_file():
        raise LapError(f"{path}: not found (this build of lap has no {name})")
    return path


def library(name):
    """The path of lib/<name>."""
    path = home() / "lib" / name
    if not path.is_file():
        raise LapError(f"{path}: not found (this build of lap has no {name})")
    return path
