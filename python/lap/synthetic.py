"""Synthetic data with exact answers, made without a download.

segmentation_set writes a segmentation set in ADE20K's layout
(images/<split>/NAME.png, annotations/<split>/NAME.png; label k stored as
k + 1, 0 unlabelled) whose images are textured shapes on a textured
background: class 0 the background, classes 1.. the shapes (discs,
squares, triangles, stripes of a colour and texture of their own), and
whose label maps are exact. lapc-run eval --task segmentation reads it."""

import struct
import zlib
from pathlib import Path

import numpy as np


def write_png(path, pixels):
    """An 8-bit PNG of `pixels` ([H, W] grey or [H, W, 3] RGB, uint8)."""
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    height, width = pixels.shape[:2]
    colour = 2 if pixels.ndim == 3 else 0
    rows = pixels.reshape(height, -1)
    raw = b"".join(b"\x00" + row.tobytes() for row in rows)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + \
            struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    Path(path).write_bytes(
        b"\x89PNG\r\n\x1a\n" +
        chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour, 0,
                                   0, 0)) +
        chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _shape_mask(kind, size, rng):
    """A random disc, square, triangle or band of a size x size image."""
    y, x = np.mgrid[0:size, 0:size].astype(np.float64) + 0.5
    cy, cx = rng.uniform(0.25, 0.75, 2) * size
    r = rng.uniform(0.15, 0.3) * size
    if kind == 0:
        return (y - cy) ** 2 + (x - cx) ** 2 <= r * r
    if kind == 1:
        return (np.abs(y - cy) <= r) & (np.abs(x - cx) <= r)
    if kind == 2:
        return (y >= cy - r) & (np.abs(x - cx) <= (y - (cy - r)) / 2)
    angle = rng.uniform(0, np.pi)
    return np.abs((x - cx) * np.sin(angle) - (y - cy) * np.cos(angle)) <= r / 2


def segmentation_set(root, images=(40, 20), size=32, classes=5, seed=0,
                     channels=3, image_folder=False, looks="class"):
    """Writes the set under `root`: images[0] training and images[1]
    validation images of size x size pixels with `classes` classes (the
    background and classes - 1 shapes), `channels` 1 (grey) or 3. With
    `image_folder`, the same images also as an ImageFolder for training
    on them (ROOT/folder/<split>/class_<c>/NAME.png, c the class covering
    the most pixels after the background). `looks`: "class", each class
    has its own colour and texture (a pixel's look tells its class);
    "image", every region of every image draws its own (only the shapes
    tell the classes apart)."""
    if looks not in ("class", "image"):
        raise ValueError(f"looks: 'class' or 'image', not {looks!r}")
    rng = np.random.default_rng(seed)
    palette = rng.uniform(40, 215, (classes, 3))
    frequency = rng.uniform(0.2, 1.2, classes)
    y, x = np.mgrid[0:size, 0:size].astype(np.float64)
    for split, count in zip(("training", "validation"), images):
        (Path(root) / "images" / split).mkdir(parents=True, exist_ok=True)
        (Path(root) / "annotations" / split).mkdir(parents=True,
                                                  exist_ok=True)
        for i in range(count):
            labels = np.zeros((size, size), np.int64)
            for c in rng.permutation(np.arange(1, classes))[:rng.integers(
                    1, classes)]:
                labels[_shape_mask(int(c) % 4, size, rng)] = c
            # Each class's (or region's) colour, modulated by its stripes,
            # plus noise.
            colours, stripes = palette, frequency
            if looks == "image":
                colours = rng.uniform(40, 215, (classes, 3))
                stripes = rng.uniform(0.2, 1.2, classes)
            texture = np.sin(stripes[labels] * (x + y)) * 25
            rgb = colours[labels] + texture[..., None] + \
                rng.normal(0, 8, (size, size, 3))
            rgb = np.clip(rgb, 0, 255).astype(np.uint8)
            name = f"{split}_{i:05d}.png"
            image = rgb if channels == 3 else rgb.mean(axis=2).astype(np.uint8)
            write_png(Path(root) / "images" / split / name, image)
            write_png(Path(root) / "annotations" / split / name,
                      (labels + 1).astype(np.uint8))
            if image_folder:
                counts = np.bincount(labels.ravel(), minlength=classes)
                folder = Path(root) / "folder" / split / \
                    f"class_{int(np.argmax(counts[1:])) + 1}"
                folder.mkdir(parents=True, exist_ok=True)
                write_png(folder / name, image)
