"""lapc-run eval --task segmentation end to end: a synthetic set in
ADE20K's layout (lap.synthetic), a ViT's run, the probe's JSON and picture;
and the set's files read as ADE20K lays them out, bad ones refused."""

import json

import numpy as np
import pytest

from conftest import lapc_run
from lap import synthetic


@pytest.fixture(scope="module")
def vit_run(models, tmp_path_factory):
    """The session's ViT (28 px, 1 channel, 4 x 4 patches) trained 2 steps."""
    run = tmp_path_factory.mktemp("segmentation-run")
    lapc_run("train", models["vit"].path, "--run-dir", run, "--steps", "2")
    return run


def test_the_probe_runs_on_a_synthetic_set(models, vit_run, tmp_path):
    data = tmp_path / "shapes"
    synthetic.segmentation_set(data, images=(12, 6), size=28, classes=4,
                               channels=1)
    out = tmp_path / "eval"
    printed = lapc_run("eval", models["vit"].path, "--run-dir", vit_run,
                       "--task", "segmentation", "--data", data,
                       "--classes", "4", "--out", out).stdout
    assert "mIoU" in printed
    result = json.loads((out / "segmentation.json").read_text())
    assert result["train_images"] == 12 and result["validation_images"] == 6
    assert result["patch_grid"] == 4 and len(result["iou"]) == 4
    assert 0 <= result["mIoU"] <= 1 and 0 <= result["pixel_accuracy"] <= 1
    picture = (out / "segmentation.png").read_bytes()
    assert picture[:8] == b"\x89PNG\r\n\x1a\n"
    # Deterministic for a seed.
    again = tmp_path / "again"
    lapc_run("eval", models["vit"].path, "--run-dir", vit_run, "--task",
             "segmentation", "--data", data, "--classes", "4", "--out", again)
    assert json.loads((again / "segmentation.json").read_text())["mIoU"] == \
        result["mIoU"]
    # The last two blocks' tokens side by side: another probe, other scores.
    both = tmp_path / "both"
    lapc_run("eval", models["vit"].path, "--run-dir", vit_run, "--task",
             "segmentation", "--data", data, "--classes", "4", "--layers", "2",
             "--out", both)
    two = json.loads((both / "segmentation.json").read_text())
    assert two["layers"] == 2 and two["features"] == \
        "the last 2 blocks' patch tokens"
    assert two["train_mIoU"] != result["train_mIoU"]
    # No more blocks than the model has.
    done = lapc_run("eval", models["vit"].path, "--run-dir", vit_run, "--task",
                    "segmentation", "--data", data, "--classes", "4",
                    "--layers", "99", "--out", tmp_path / "many", ok=False)
    assert done.returncode != 0 and "--layers 99" in done.stderr


@pytest.mark.parametrize("looks", ["class", "image"])
def test_the_synthetic_set_is_in_ades_layout(tmp_path, looks):
    synthetic.segmentation_set(tmp_path, images=(2, 1), size=16, classes=3,
                               looks=looks, image_folder=True)
    label = (tmp_path / "annotations" / "training" /
             "training_00000.png").read_bytes()
    assert label[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "images" / "validation" /
            "validation_00000.png").is_file()
    assert len(list((tmp_path / "folder" / "training").glob("*/*.png"))) == 2
    with pytest.raises(ValueError, match="looks"):
        synthetic.segmentation_set(tmp_path, looks="texture")


@pytest.mark.parametrize("damage,message", [
    (lambda root: (root / "annotations" / "validation" /
                   "validation_00000.png").unlink(),
     "has no label map"),
    (lambda root: synthetic.write_png(
        root / "annotations" / "training" / "training_00000.png",
        np.full((28, 28), 9, np.uint8)),
     "label 9 at (0, 0) is beyond the 4 classes"),
    (lambda root: (root / "images" / "training" / "training_00001.png")
     .write_bytes(b"not an image"),
     "training_00001.png"),
])
def test_bad_files_are_errors_naming_them(models, vit_run, tmp_path, damage,
                                          message):
    data = tmp_path / "shapes"
    synthetic.segmentation_set(data, images=(3, 2), size=28, classes=4,
                               channels=1)
    damage(data)
    done = lapc_run("eval", models["vit"].path, "--run-dir", vit_run,
                    "--task", "segmentation", "--data", data, "--classes",
                    "4", "--out", tmp_path / "eval", ok=False)
    assert done.returncode == 2
    assert message in done.stderr, done.stderr


def test_segmentation_options_need_the_task(models, vit_run, tmp_path):
    done = lapc_run("eval", models["vit"].path, "--run-dir", vit_run,
                    "--data", tmp_path, ok=False)
    assert done.returncode == 2 and "--task" in done.stderr
