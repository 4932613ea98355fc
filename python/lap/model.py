"""lap.load: a compiled model library (model.so) through its C ABI.

The library computes in caller-owned buffers (lap/model.h): parameters,
gradients, batches and outputs are the caller's NumPy arrays or torch
tensors, read and written in place. A CPU library takes host memory; a
CUDA library takes device memory of the current GPU (torch CUDA tensors)
and runs on torch's current stream."""

import ctypes
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lap._buffers import address, is_torch
from lap._home import tool
from lap.errors import LapError

ABI_VERSION = 9  # LAP_MODEL_ABI_VERSION


class _Batch(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int64), ("seq", ctypes.c_int64),
                ("count", ctypes.c_int32),
                ("tensors", ctypes.POINTER(ctypes.c_void_p))]


@dataclass(frozen=True)
class Parameter:
    """One tensor of the flat parameter buffer (manifest `parameters`)."""
    name: str
    shape: tuple
    offset: int  # in floats
    elements: int
    trainable: bool = True  # has a gradient (train.lora: the adapters only)


_P = ctypes.c_void_p
_SIGNATURES = {
    "lap_model_abi_version": (ctypes.c_uint32, []),
    "lap_model_manifest": (ctypes.c_char_p, []),
    "lap_model_manifest_error": (ctypes.c_char_p, []),
    "lap_model_last_error": (ctypes.c_char_p, []),
    "lap_model_kernel_isa": (ctypes.c_char_p, []),
    "lap_model_set_stream": (ctypes.c_int, [_P]),
    "lap_model_init_params": (ctypes.c_int, [_P, ctypes.c_uint64]),
    "lap_model_forward": (ctypes.c_int, [_P, ctypes.POINTER(_Batch), _P, _P,
                                         _P]),
    "lap_model_train_step": (ctypes.c_int, [_P, _P, ctypes.POINTER(_Batch),
                                            _P, _P, _P]),
    "lap_model_features": (ctypes.c_int, [_P, ctypes.POINTER(_Batch), _P,
                                          _P]),
    "lap_model_embed": (ctypes.c_int, [_P, ctypes.POINTER(_Batch), _P, _P]),
    "lap_model_decode": (ctypes.c_int, [_P, _P, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, _P,
                                        _P, _P]),
}


def load(path):
    """The model library at `path`, checked as lapc-run checks it (its ABI
    version, manifest and the CPU features its code needs) before any of
    its code runs here."""
    path = Path(path)
    if not path.is_file():
        raise LapError(f"{path}: no such model library")
    checked = subprocess.run([str(tool("lapc-run")), "info", str(path)],
                             capture_output=True, text=True)
    if checked.returncode != 0:
        message = checked.stderr.strip().removeprefix("lapc-run: error: ")
        raise LapError(message or f"{path}: lapc-run info failed")
    return Model(path)


class Model:
    """A loaded model library: its manifest, parameter table and calls.

    Calls take the parameters as one flat float32 array (`init_params`
    makes one) and a batch as a dict by manifest name or a sequence in
    manifest order; they return NumPy arrays for a CPU library, torch
    tensors for a CUDA one. One Model's calls run one at a time (they
    share its workspace)."""

    def __init__(self, path):
        self.path = Path(path)
        self._lib = ctypes.CDLL(os.path.abspath(path), mode=ctypes.RTLD_LOCAL)
        for name, (restype, argtypes) in _SIGNATURES.items():
            function = getattr(self._lib, name)
            function.restype, function.argtypes = restype, argtypes
        version = self._lib.lap_model_abi_version()
        if version != ABI_VERSION:
            raise LapError(f"{path}: model ABI {version}; this package speaks "
                           f"{ABI_VERSION} (recompile it with this lapc)")
        error = self._lib.lap_model_manifest_error()
        if error:
            raise LapError(f"{path}: {error.decode()}")
        self.manifest = json.loads(self._lib.lap_model_manifest())
        m = self.manifest
        self.name, self.family = m["name"], m["family"]
        self.device = m["target"]["device"]
        self.max_batch, self.max_seq = m["limits"]["batch"], m["limits"]["seq"]
        self.parameter_elements = m["parameters"]["elements"]
        # Gradients cover the trainable parameters, a suffix of the buffer.
        trainable = m["parameters"]["trainable"]
        self.gradient_offset = trainable["offset"]
        self.gradient_elements = trainable["elements"]
        self.parameters = [Parameter(t["name"], tuple(t["shape"]), t["offset"],
                                     t["elements"], t["trainable"])
                           for t in m["parameters"]["tensors"]]
        self._workspace = None

    def __repr__(self):
        return (f"<lap.Model {self.name} ({self.family}, {self.device}): "
                f"{self.parameter_elements} parameters, {self.path}>")

    @property
    def kernel_isa(self):
        """The instruction set (or GPU architecture) its kernels run."""
        return self._lib.lap_model_kernel_isa().decode()

    # --- memory ------------------------------------------------------------

    def _memory(self):
        """'cpu' or 'cuda': where the library's pointers live."""
        return "cuda" if self.device == "cuda" else "cpu"

    def zeros(self, shape, dtype="float32"):
        """A zero-filled array where the library computes: NumPy on the CPU,
        a torch CUDA tensor for a CUDA library."""
        if self.device == "cuda":
            import torch
            if not torch.cuda.is_available():
                raise LapError(f"{self.path}: a CUDA library computes in GPU "
                               "memory, which it takes as torch CUDA "
                               "tensors; this PyTorch sees no GPU")
            return torch.zeros(shape, dtype=getattr(torch, dtype),
                               device="cuda")
        return np.zeros(shape, dtype=dtype)

    def _check(self, status):
        if status != 0:
            raise LapError(f"{self.path}: "
                           f"{self._lib.lap_model_last_error().decode()}")

    def _bind_stream(self):
        if self.device == "cuda":
            import torch
            self._check(self._lib.lap_model_set_stream(
                torch.cuda.current_stream().cuda_stream))

    def _workspace_address(self):
        if self._workspace is None:
            size = self.manifest["memory"]["workspace_bytes"]
            # 64-byte aligned, as the ABI asks: the first aligned byte.
            raw = self.zeros((size + 64,), "uint8")
            start = address(raw, "uint8", device=self._memory())
            self._workspace = (raw, start + (-start) % 64)
        return self._workspace[1]

    def _params(self, params, writable=False):
        return address(params, "float32", (self.parameter_elements,),
                       self._memory(), "params", writable)

    # --- batches -----------------------------------------------------------

    def _batch(self, batch):
        """The lap_batch of `batch` and the pointers it holds, after each
        tensor's dtype and shape are checked against the manifest."""
        layout = self.manifest["batch"]
        if isinstance(batch, dict):
            unknown = set(batch) - {t["name"] for t in layout}
            if unknown:
                raise LapError(f"batch: no tensor named {sorted(unknown)} "
                               f"(the library reads "
                               f"{[t['name'] for t in layout]})")
            missing = [t["name"] for t in layout if t["name"] not in batch]
            if missing:
                raise LapError(f"batch: {missing} missing")
            tensors = [batch[t["name"]] for t in layout]
        else:
            tensors = list(batch)
            if len(tensors) != len(layout):
                raise LapError(f"batch: {len(tensors)} tensors; the library "
                               f"reads {len(layout)} "
                               f"({[t['name'] for t in layout]})")
        first = tuple(tensors[0].shape)
        if not first:
            raise LapError(f"batch: '{layout[0]['name']}' has no batch "
                           "dimension")
        rows = first[0]
        seq, side = self._sequence(first)
        pointers = []
        for t, x in zip(layout, tensors):
            shape = [rows if i == 0 else d for i, d in enumerate(t["shape"])]
            if self.family == "gpt" and len(shape) > 1:  # not lengths [B]
                shape[1] = seq
            elif len(shape) == 4:
                shape[2] = shape[3] = side
            pointers.append(address(x, t["dtype"], tuple(shape),
                                    self._memory(), f"batch '{t['name']}'"))
        array = (ctypes.c_void_p * len(pointers))(*pointers)
        return _Batch(rows, seq, len(pointers), array), array

    def _sequence(self, first):
        """(seq, image side) of a batch whose first tensor has `first` as
        its shape: a language model's sequence length, an image model's
        token count for the image's size."""
        if self.family == "gpt":
            if len(first) != 2:
                raise LapError(f"batch 'tokens': shape {list(first)}; "
                               "expected [batch, seq]")
            return first[1], 0
        images = self.manifest["images"]
        if len(first) != 4 or first[2] != first[3]:
            raise LapError(f"batch 'images': shape {list(first)}; expected "
                           "[batch, channels, size, size]")
        if first[2] not in images["sizes"]:
            raise LapError(f"batch 'images': {first[2]} x {first[3]} pixels; "
                           f"the library runs sizes {images['sizes']}")
        return images["tokens"][images["sizes"].index(first[2])], first[2]

    # --- calls -------------------------------------------------------------

    def init_params(self, seed=0, out=None):
        """The initial parameters of `seed` (a function of the seed alone,
        on every machine), in `out` or a new flat array."""
        params = self.zeros((self.parameter_elements,)) if out is None else out
        self._bind_stream()
        self._check(self._lib.lap_model_init_params(
            self._params(params, True), seed))
        return params

    def _logits_shape(self, rows, seq):
        shape = self.manifest["outputs"][1]["shape"]
        return tuple(rows if i == 0 else seq if (i == 1 and d == -1) else d
                     for i, d in enumerate(shape))

    def forward(self, params, batch):
        """Evaluation forward (no dropout): (mean loss, logits)."""
        b, _pointers = self._batch(batch)
        loss = self.zeros((1,))
        logits = self.zeros(self._logits_shape(b.batch, b.seq))
        self._bind_stream()
        self._check(self._lib.lap_model_forward(
            self._params(params), ctypes.byref(b), self._workspace_address(),
            address(loss, "float32", device=self._memory()),
            address(logits, "float32", device=self._memory())))
        return float(loss[0]), logits

    def train_step(self, params, batch, seed=0, grads=None):
        """A training step's forward and backward: (mean loss, gradients of
        the trainable parameters, in `grads` or a new flat array of
        gradient_elements floats: parameter p's at p.offset -
        gradient_offset). `seed` draws the dropout and drop-path masks."""
        b, _pointers = self._batch(batch)
        if grads is None:
            grads = self.zeros((self.gradient_elements,))
        loss = self.zeros((1,))
        if not 0 <= seed < 2**63:
            raise LapError(f"seed {seed}: outside 0 .. 2^63 - 1")
        # Where the library reads it when the step runs (torch has no
        # uint64: a non-negative int64 has the same bits).
        step_seed = self.zeros((1,), "int64")
        step_seed[0] = seed
        self._bind_stream()
        self._check(self._lib.lap_model_train_step(
            self._params(params),
            address(grads, "float32", (self.gradient_elements,),
                    self._memory(), "grads", True),
            ctypes.byref(b),
            address(step_seed, "int64", device=self._memory()),
            self._workspace_address(),
            address(loss, "float32", device=self._memory())))
        return float(loss[0]), grads

    def features(self, params, batch):
        """The residual stream after the embedding and after each block
        (evaluation mode): [layers, batch, seq, width]."""
        b, _pointers = self._batch(batch)
        f = self.manifest["features"]
        out = self.zeros((f["layers"], b.batch, b.seq, f["width"]))
        self._bind_stream()
        self._check(self._lib.lap_model_features(
            self._params(params), ctypes.byref(b), self._workspace_address(),
            address(out, "float32", device=self._memory())))
        return out

    def embed(self, params, batch):
        """An image model's pooled embedding: [batch, width]."""
        b, _pointers = self._batch(batch)
        out = self.zeros((b.batch, self.manifest["features"]["width"]))
        self._bind_stream()
        self._check(self._lib.lap_model_embed(
            self._params(params), ctypes.byref(b), self._workspace_address(),
            address(out, "float32", device=self._memory())))
        return out

    def new_cache(self, batch=1):
        """A language model's key/value cache for `batch` sequences."""
        decode = self.manifest["decode"]
        if not decode:
            raise LapError(f"{self.path}: an image model has no decoding")
        return self.zeros((batch * decode["cache_floats_per_sequence"],))

    def decode(self, params, tokens, first, cache):
        """The logits [batch, count, vocab] of `tokens` [batch, count] at
        positions first .. first + count - 1, their keys and values added
        to `cache` (new_cache) after the `first` already there."""
        if len(tokens.shape) != 2:
            raise LapError(f"tokens: shape {list(tokens.shape)}; expected "
                           "[batch, count]")
        rows, count = tokens.shape
        decode = self.manifest["decode"]
        if not decode:
            raise LapError(f"{self.path}: an image model has no decoding")
        vocab = self.manifest["limits"]["vocab"]
        logits = self.zeros((rows, count, vocab))
        self._bind_stream()
        self._check(self._lib.lap_model_decode(
            self._params(params),
            address(tokens, "int32", (rows, count), self._memory(), "tokens"),
            rows, count, first,
            address(cache, "float32",
                    (rows * decode["cache_floats_per_sequence"],),
                    self._memory(), "cache", True),
            self._workspace_address(),
            address(logits, "float32", device=self._memory())))
        return logits

    # --- parameters by name ------------------------------------------------

    def tensors(self, params):
        """Every parameter of the flat `params` by name, as views (NumPy or
        torch, as `params` is) in PyTorch layouts."""
        return {p.name: params[p.offset:p.offset + p.elements].reshape(p.shape)
                for p in self.parameters}

    def flat(self, tensors, out=None):
        """The flat parameter array of `tensors` (a dict by name, NumPy or
        torch: a checkpoint's, for instance), every tensor checked."""
        params = self.zeros((self.parameter_elements,)) if out is None else out
        names = {p.name for p in self.parameters}
        unknown = sorted(set(tensors) - names)
        if unknown:
            raise LapError(f"{unknown[:3]}: not parameters of {self.name}")
        for p in self.parameters:
            if p.name not in tensors:
                raise LapError(f"'{p.name}' missing (a parameter of "
                               f"{self.name})")
            value = tensors[p.name]
            if tuple(value.shape) != p.shape:
                raise LapError(f"'{p.name}': shape {list(value.shape)}; "
                               f"{self.name} has {list(p.shape)}")
            target = params[p.offset:p.offset + p.elements]
            if is_torch(target):
                import torch
                target.copy_(torch.as_tensor(value).reshape(-1))
            else:
                target[:] = np.asarray(value, dtype=np.float32).reshape(-1)
        return params
