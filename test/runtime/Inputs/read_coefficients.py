"""Prints each learned-coefficient tensor of a tiny_lm_learned checkpoint
(safetensors) with its shape, and whether every value left its start."""
import json
import struct
import sys

STARTS = {
    "blocks.0.attn.coefficients": [1.0, -1.0, 0.0, 1.0],
    "blocks.1.attn.coefficients": [1.0, 0.0],
}

with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    data = f.read()
for name in sorted(k for k in header if k.endswith(".attn.coefficients")):
    entry = header[name]
    begin, end = entry["data_offsets"]
    values = list(struct.unpack("<%df" % ((end - begin) // 4), data[begin:end]))
    start = STARTS[name]
    moved = all(abs(v - s) > 1e-4 for v, s in zip(values, start))
    print(name, entry["shape"], ("moved from " if moved else "kept ") + str(start))
