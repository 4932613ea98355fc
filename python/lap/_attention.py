"""lap/attention.h through ctypes: the fused attention kernels without a
model library (lib/libLapAttention.so, lib/libLapAttentionCUDA.so)."""

import ctypes
import functools

from lap._home import library
from lap.errors import LapError

ABI_VERSION = 3  # LAP_ATTENTION_ABI_VERSION


class Shape(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int64), ("queries", ctypes.c_int64),
                ("keys", ctypes.c_int64), ("heads", ctypes.c_int64),
                ("kv_heads", ctypes.c_int64), ("head_dim", ctypes.c_int64),
                ("scale", ctypes.c_float), ("causal", ctypes.c_int32),
                ("window", ctypes.c_int64)]


_P = ctypes.c_void_p


@functools.lru_cache(maxsize=None)
def kernels(device):
    """The attention library of `device` ("cpu", "cuda"), loaded once."""
    name = {"cpu": "libLapAttention.so", "cuda": "libLapAttentionCUDA.so"}
    if device not in name:
        raise LapError(f"lap's attention runs on the CPU or a CUDA GPU, not "
                       f"on {device}")
    path = library(name[device])
    lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
    lib.lap_attention_abi_version.restype = ctypes.c_uint32
    for text in ("device", "isa", "last_error"):
        getattr(lib, "lap_attention_" + text).restype = ctypes.c_char_p
    lib.lap_attention_forward.argtypes = [ctypes.POINTER(Shape)] + [_P] * 9
    lib.lap_attention_backward.argtypes = [ctypes.POINTER(Shape)] + [_P] * 14
    for call in (lib.lap_attention_forward, lib.lap_attention_backward):
        call.restype = ctypes.c_int
    version = lib.lap_attention_abi_version()
    if version != ABI_VERSION:
        raise LapError(f"{path}: attention ABI {version}; this package "
                       f"speaks {ABI_VERSION} (rebuild lap and the package "
                       "together)")
    return lib


def isa(device="cpu"):
    """The instruction set the kernels of `device` run with ("none": they
    cannot run here)."""
    return kernels(device).lap_attention_isa().decode()


def call(device, name, shape, *pointers):
    """lap_attention_<name>(shape, pointers...), raising LapError with the
    library's message on failure."""
    lib = kernels(device)
    status = getattr(lib, "lap_attention_" + name)(ctypes.byref(shape),
                                                   *pointers)
    if status != 0:
        raise LapError(lib.lap_attention_last_error().decode())
