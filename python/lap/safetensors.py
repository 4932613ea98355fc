"""lap's tensor files: safetensors (Hugging Face's format) with every
tensor's XXH3 checksum in the metadata ("lap.xxh3"), as lapc-run writes
them and requires of checkpoints. Reading verifies the checksums when the
file has them; writing always adds them."""

import json
import os
import struct
import tempfile
from pathlib import Path

import numpy as np

from lap.errors import LapError

_CHECKSUMS = "lap.xxh3"
_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64,
           "I32": np.int32, "U8": np.uint8, "F16": np.float16}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}


def _xxh3(data):
    try:
        import xxhash
    except ImportError as e:
        raise LapError("lap's checksums need the xxhash module (Debian: "
                       "python3-xxhash)") from e
    return xxhash.xxh3_64_hexdigest(data)


def read(path):
    """(tensors by name as NumPy arrays, metadata) of the file `path`,
    every checksum verified."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise LapError(f"{path}: cannot read: {e.strerror}") from e
    if len(raw) < 8:
        raise LapError(f"{path}: too short for a safetensors file")
    (size,) = struct.unpack("<Q", raw[:8])
    if 8 + size > len(raw):
        raise LapError(f"{path}: the header runs past the end of the file")
    try:
        header = json.loads(raw[8:8 + size])
    except ValueError as e:
        raise LapError(f"{path}: the header is not JSON: {e}") from e
    metadata = header.pop("__metadata__", {}) or {}
    checksums = json.loads(metadata.pop(_CHECKSUMS, "null"))
    data = memoryview(raw)[8 + size:]
    tensors = {}
    for name, entry in header.items():
        if entry.get("dtype") not in _DTYPES:
            raise LapError(f"{path}: tensor '{name}' has dtype "
                           f"{entry.get('dtype')}, which lap does not read")
        begin, end = entry["data_offsets"]
        if not 0 <= begin <= end <= len(data):
            raise LapError(f"{path}: tensor '{name}' lies outside the file")
        chunk = data[begin:end]
        if checksums is not None:
            if checksums.get(name) != _xxh3(chunk):
                raise LapError(f"{path}: tensor '{name}' does not match its "
                               "checksum: the file is corrupt")
        array = np.frombuffer(chunk, dtype=_DTYPES[entry["dtype"]]).copy()
        try:
            tensors[name] = array.reshape(entry["shape"])
        except ValueError as e:
            raise LapError(f"{path}: tensor '{name}' has {array.size} "
                           f"elements, not shape {entry['shape']}") from e
    return tensors, metadata


def write(path, tensors, metadata=None, overwrite=False):
    """Writes `tensors` (a dict by name of NumPy arrays or torch tensors,
    kept in order) to `path`, atomically: the file appears whole or not at
    all. An existing file is kept unless `overwrite`; a symbolic link is
    never written through."""
    path = Path(path)
    if path.is_symlink():
        raise LapError(f"{path}: a symbolic link; lap writes only files")
    if path.exists() and not overwrite:
        raise LapError(f"{path}: exists (overwrite=True replaces it)")
    arrays, checksums = {}, {}
    for name, value in tensors.items():
        if hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        array = np.ascontiguousarray(value)
        if array.dtype not in _NAMES:
            raise LapError(f"tensor '{name}': dtype {array.dtype} has no "
                           "safetensors name lap writes")
        arrays[name] = array
        checksums[name] = _xxh3(array.tobytes())
    meta = {"format": "pt", **(metadata or {}), _CHECKSUMS:
            json.dumps(checksums, separators=(",", ":"))}
    header, offset = {"__metadata__": meta}, 0
    for name, array in arrays.items():
        header[name] = {"dtype": _NAMES[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    directory = path.parent if str(path.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(struct.pack("<Q", len(text)) + text)
            for array in arrays.values():
                out.write(array.tobytes())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
