"""The package as a user meets it: the walkthrough runs, and `pip install`
into a virtual environment gives an importable package that finds lap."""

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import lap
from lap._home import home

REPOSITORY = Path(__file__).resolve().parents[2]


def test_the_walkthrough_runs(tmp_path):
    done = subprocess.run(
        [sys.executable, str(REPOSITORY / "examples" / "python" /
                             "walkthrough.py"), "--steps", "3", "--out",
         str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "PyTorch loop: 3 steps" in done.stdout
    assert "normalised singular values" in done.stdout
    assert (tmp_path / "spectrum.txt").is_file()
    assert lap.read_run(tmp_path / "run").losses[-1][0] == 3


def test_pip_installs_the_package(tmp_path):
    """pip install (offline, Debian's setuptools) of a copy of the source
    tree (setuptools builds in place); LAP_HOME then names the build."""
    source = tmp_path / "source"
    shutil.copytree(REPOSITORY / "python", source,
                    ignore=shutil.ignore_patterns("tests", "__pycache__"))
    environment = tmp_path / "venv"
    venv.create(environment, system_site_packages=True, with_pip=True)
    python = environment / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                    "--no-index", "--no-build-isolation",
                    str(source)], check=True,
                   capture_output=True, cwd=tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["LAP_HOME"] = str(home())
    done = subprocess.run(
        [str(python), "-c", "import lap, lap.torch; print(lap.__file__);"
         " print(lap._attention.isa())"],
        capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    installed, isa = done.stdout.split()
    assert installed.startswith(str(environment))
    assert isa != "none"
