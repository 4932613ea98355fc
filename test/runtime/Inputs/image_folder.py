"""image_folder.py DIR CLASSES PER_CLASS: writes DIR/<class>/<i>.png, 28 x 28
gray images (each class a brightness of its own, with noise), with the
standard library alone."""
import os
import random
import struct
import sys
import zlib


def png(path, pixels, width, height):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))
    rows = b"".join(b"\0" + bytes(pixels[y * width:(y + 1) * width]) for y in range(height))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(rows)))
        f.write(chunk(b"IEND", b""))


out, classes, per_class = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1)
for c in range(classes):
    os.makedirs(os.path.join(out, str(c)), exist_ok=True)
    for i in range(per_class):
        level = 20 + 200 * c // max(1, classes - 1)
        pixels = [max(0, min(255, level + rng.randint(-20, 20))) for _ in range(28 * 28)]
        png(os.path.join(out, str(c), f"{i}.png"), pixels, 28, 28)
