"""same_tensors.py A B: prints, for each tensor of safetensors file A, whether
file B holds the same bytes under its name ("same", "differs" or "absent").
"""
import json
import struct
import sys


def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return {name: data[t["data_offsets"][0]:t["data_offsets"][1]]
            for name, t in header.items() if name != "__metadata__"}


a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
for name in sorted(a):
    print(name, "absent" if name not in b else
          "same" if a[name] == b[name] else "differs")
