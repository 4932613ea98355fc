"""lap from Python, start to end: compile a ViT whose heads are half
Laplacian, train it in an ordinary PyTorch loop, compare with lapc-run's
run of the same spec, and look at its features' spectrum.

    PYTHONPATH=build/python python3 examples/python/walkthrough.py

(from the repository, after scripts/build.sh; --steps and --out change the
length and where files go; matplotlib, if installed, draws the plot).
"""

import argparse
import gzip
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

import lap
import lap.torch as lt
from lap._home import tool

REPOSITORY = Path(__file__).resolve().parents[2]
SPEC = REPOSITORY / "specs" / "vit_tiny_laplacian.yaml"
DATA = Path("/usr/share/datasets/fashion-mnist")  # Debian: dataset-fashion-mnist


def fashion_mnist(split):
    """(images [N, 1, 28, 28] normalised as lapc-run does, labels [N])."""
    with gzip.open(DATA / f"{split}-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16)
    with gzip.open(DATA / f"{split}-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    images = images.reshape(-1, 1, 28, 28).astype(np.float32) / 255
    return (images - 0.5) / 0.5, labels.astype(np.int64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("walkthrough"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    # 1. Compile: the library's path; its manifest as a dict.
    model = lap.load(lap.compile(SPEC, args.out / "vit.so"))
    print(f"compiled {model.name}: {model.parameter_elements} parameters, "
          f"kernels {model.kernel_isa}")

    # 2. Train in a PyTorch loop: lap's loss and gradients, torch's AdamW.
    module = lt.Module(model, seed=1)
    optimizer = torch.optim.AdamW(module.parameters(), lr=1e-3,
                                  weight_decay=0.05)
    images, labels = fashion_mnist("train")
    batch = model.max_batch
    rng = np.random.default_rng(1)
    python_losses = []
    began = time.time()
    for step in range(args.steps):
        pick = rng.integers(0, len(images), batch)
        targets = np.eye(10, dtype=np.float32)[labels[pick]]
        optimizer.zero_grad()
        loss = module(torch.from_numpy(images[pick]),
                      torch.from_numpy(targets))
        loss.backward()
        optimizer.step()
        python_losses.append(loss.item())
    print(f"PyTorch loop: {args.steps} steps in {time.time() - began:.1f} s")

    # 3. The same spec trained by lapc-run (its own data order, augmentation
    #    and schedule), read back as Python objects.
    run_dir = args.out / "run"
    subprocess.run([str(tool("lapc-run")), "train", str(model.path),
                    "--run-dir", str(run_dir), "--steps", str(args.steps),
                    "--log-every", "1", "--resume-if-any"], check=True,
                   stdout=subprocess.DEVNULL)
    run = lap.read_run(run_dir)
    lapc_losses = dict(run.losses)
    print(f"{'step':>6} {'PyTorch loop':>13} {'lapc-run':>9}")
    for step in sorted({1, args.steps // 2, args.steps} - {0}):
        print(f"{step:>6} {python_losses[step - 1]:>13.4f} "
              f"{lapc_losses.get(step, float('nan')):>9.4f}")

    # 4. The features: the residual stream after each block, and the
    #    spectrum of the last one over a test batch.
    test_images, _ = fashion_mnist("t10k")
    module.eval()
    with torch.no_grad():
        features = module.features(torch.from_numpy(test_images[:batch]),
                                   torch.zeros(batch, 10))
    last = features[-1].reshape(-1, features.shape[-1]).double()
    spectrum = torch.linalg.svdvals(last - last.mean(0))
    spectrum = (spectrum / spectrum[0]).numpy()
    print("last layer's normalised singular values:",
          " ".join(f"{s:.3f}" for s in spectrum[:8]))
    np.savetxt(args.out / "spectrum.txt", spectrum)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"spectrum in {args.out / 'spectrum.txt'} (matplotlib draws "
              "it when installed)")
        return 0
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.plot(range(1, args.steps + 1), python_losses, label="PyTorch loop")
    left.plot(*zip(*run.losses), label="lapc-run")
    left.set(xlabel="step", ylabel="loss", title=model.name)
    left.legend()
    right.semilogy(spectrum)
    right.set(xlabel="component", ylabel="singular value / largest",
              title="last layer's features")
    fig.tight_layout()
    fig.savefig(args.out / "walkthrough.png", dpi=120)
    print(f"plot: {args.out / 'walkthrough.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
