"""What lapc-run writes, read from Python: a run's metrics, summary and
checkpoints (lap's checksummed safetensors), and an analysis; tensor files
written from Python that lap's own reader accepts."""

import json
import shutil

import numpy as np
import pytest

import lap
from conftest import lapc_run
from test_model import image_batch


@pytest.fixture(scope="module")
def run(models, tmp_path_factory):
    """The ViT trained 4 steps by lapc-run (checkpoints at 2 and 4)."""
    directory = tmp_path_factory.mktemp("run")
    lapc_run("train", models["vit"].path, "--run-dir", directory,
             "--log-every", "1")
    return directory


def test_a_run_reads_as_python_objects(run):
    r = lap.read_run(run)
    assert [step for step, _ in r.losses] == [1, 2, 3, 4]
    assert all(np.isfinite(loss) for _, loss in r.losses)
    assert r.summary is not None
    assert [c.name for c in r.checkpoints] == ["step_000002", "step_000004"]


def test_a_checkpoint_continues_in_python(models, run):
    model = models["vit"]
    tensors, state = lap.read_checkpoint(lap.read_run(run).checkpoints[-1])
    assert state["step"] == 4
    params = model.flat(tensors)
    loss, _ = model.forward(params, image_batch(model))
    assert np.isfinite(loss)
    assert loss != model.forward(model.init_params(3), image_batch(model))[0]


def test_python_writes_what_lap_reads(models, run, tmp_path):
    """A checkpoint's parameters written back by Python carry the same
    checksums as lap's, and lapc-run reads the file: analyze runs on a copy
    of the run whose newest parameters Python wrote."""
    checkpoint = lap.read_run(run).checkpoints[-1]
    tensors, _ = lap.read_safetensors(checkpoint / "model.safetensors")
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    written = copy / "checkpoints" / checkpoint.name / "model.safetensors"
    lap.write_safetensors(written, tensors, {"note": "from python"},
                          overwrite=True)
    again, metadata = lap.read_safetensors(written)
    assert metadata == {"format": "pt", "note": "from python"}
    assert list(again) == list(tensors)
    assert all(np.array_equal(again[k], tensors[k]) for k in tensors)
    assert json.loads(_header(written)["__metadata__"]["lap.xxh3"]) == \
        json.loads(_header(checkpoint / "model.safetensors")
                   ["__metadata__"]["lap.xxh3"])
    analysis = analyze(models["vit"], copy, tmp_path / "analysis")
    assert analysis["analysis"][0]["checkpoint"] == \
        str(copy / "checkpoints" / checkpoint.name)


def analyze(model, run, out):
    lapc_run("analyze", model.path, "--run-dir", run, "--samples", "16",
             "--out", out)
    return lap.read_analysis(out)


def _header(path):
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    return json.loads(raw[8:8 + size])


def test_corruption_and_overwrites_are_refused(run, tmp_path):
    source = lap.read_run(run).checkpoints[-1] / "model.safetensors"
    broken = tmp_path / "broken.safetensors"
    raw = bytearray(source.read_bytes())
    raw[-1] ^= 0x40
    broken.write_bytes(bytes(raw))
    with pytest.raises(lap.LapError, match="does not match its checksum"):
        lap.read_safetensors(broken)
    kept = tmp_path / "kept.safetensors"
    kept.write_bytes(b"mine")
    with pytest.raises(lap.LapError, match="exists"):
        lap.write_safetensors(kept, {"x": np.zeros(2, np.float32)})
    assert kept.read_bytes() == b"mine"
    link = tmp_path / "link.safetensors"
    link.symlink_to(kept)
    with pytest.raises(lap.LapError, match="symbolic link"):
        lap.write_safetensors(link, {"x": np.zeros(2, np.float32)},
                              overwrite=True)
    assert kept.read_bytes() == b"mine"


def test_an_analysis_reads_as_tables(models, run, tmp_path):
    analysis = analyze(models["vit"], run, tmp_path / "analysis")
    (entry,) = analysis["analysis"]  # one model
    assert entry["checkpoint"].endswith("step_000004")
    assert analysis["geometry"] and isinstance(analysis["geometry"][0], dict)
    assert any(isinstance(v, float) for v in analysis["geometry"][0].values())
