"""torch.save's files read without running their code.

A torch.save file is a zip archive: a pickle (`<name>/data.pkl`) whose
tensors refer to storages stored beside it (`<name>/data/<key>`).
torch.load (1.13) unpickles it with any global the pickle names; with
weights_only it refuses everything but tensors and plain containers,
which rules out checkpoints that keep an argparse.Namespace beside their
weights (DINO's). This reader unpickles with a fixed list of globals
(tensors, their storages, OrderedDict, argparse.Namespace), so a file that
names anything else (os.system, say) is an error before anything runs."""

import argparse
import collections
import io
import pickle
import zipfile

from lap.errors import LapError

_STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64",
    "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
    "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16",
    "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool"}


class _StorageType:
    """What the pickle names for a storage class: its dtype's name."""

    def __init__(self, name):
        self.dtype = _STORAGE_DTYPES[name]


def load(path):
    """The object torch.save wrote to `path`, its tensors on the CPU;
    raises LapError for anything but tensors, containers and
    argparse.Namespace."""
    import torch
    allowed = {("collections", "OrderedDict"): collections.OrderedDict,
               ("argparse", "Namespace"): argparse.Namespace,
               ("torch._utils", "_rebuild_tensor_v2"):
                   torch._utils._rebuild_tensor_v2,
               ("torch._utils", "_rebuild_parameter"):
                   torch._utils._rebuild_parameter,
               ("torch", "Size"): torch.Size}
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise LapError(f"{path}: not a torch.save file (a zip archive; "
                       f"torch's legacy format is not read): {e}") from e
    with archive:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise LapError(f"{path}: no single data.pkl in it")
        prefix = pickles[0][:-len("data.pkl")]

        def persistent_load(saved):
            if not (isinstance(saved, tuple) and saved[0] == "storage"):
                raise LapError(f"{path}: a reference lap does not read")
            storage_type, key = saved[1], saved[2]
            raw = bytearray(archive.read(f"{prefix}data/{key}"))
            dtype = getattr(torch, storage_type.dtype)
            return torch.frombuffer(raw, dtype=dtype).storage() if raw \
                else torch.empty(0, dtype=dtype).storage()

        class Unpickler(pickle.Unpickler):
            def find_class(self, module, name):
                if (module, name) in allowed:
                    return allowed[(module, name)]
                if module == "torch" and name in _STORAGE_DTYPES:
                    return _StorageType(name)
                raise LapError(f"{path}: names {module}.{name}, not "
                               "something a checkpoint of weights holds "
                               "(lap's reader builds tensors and "
                               "containers only)")

        unpickler = Unpickler(io.BytesIO(archive.read(pickles[0])))
        unpickler.persistent_load = persistent_load
        try:
            return unpickler.load()
        except LapError:
            raise
        except Exception as e:
            raise LapError(f"{path}: cannot unpickle it: {e}") from e
