"""Addresses of the caller's arrays, without copies.

NumPy arrays, torch tensors, anything with __array_interface__ and CPU
objects with __dlpack__. lap reads and writes them in place, so each must
be dense (C-contiguous) and of the dtype the call names."""

import numpy as np

from lap.errors import LapError

def is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _describe(x):
    return f"{type(x).__module__}.{type(x).__name__}"


def address(x, dtype, shape=None, device="cpu", what="array", writable=False):
    """The address of x's first element, after checking it: dtype (a NumPy
    name), shape (a tuple, or None), the device it lives on ("cpu",
    "cuda"), dense layout; `what` names it in errors."""
    if is_torch(x):
        got_dtype = str(x.dtype).replace("torch.", "")
        got_shape, dense = tuple(x.shape), x.is_contiguous()
        got_device = x.device.type
        pointer = x.data_ptr()
    else:
        if not isinstance(x, np.ndarray):
            if hasattr(x, "__array_interface__"):
                x = np.asarray(x)
            elif hasattr(x, "__dlpack__"):
                x = np.from_dlpack(x)
            else:
                raise TypeError(f"{what}: a NumPy array or torch tensor, not "
                                f"{_describe(x)}")
        got_dtype, got_shape = x.dtype.name, x.shape
        dense, got_device = x.flags.c_contiguous, "cpu"
        if writable and not x.flags.writeable:
            raise LapError(f"{what}: the array is read-only; lap writes it")
        pointer = x.ctypes.data
    if got_dtype != dtype:
        raise LapError(f"{what}: dtype {got_dtype}; lap reads {dtype} "
                       f"(convert it first: .astype(np.{dtype}) or .to(torch.{dtype}))")
    if shape is not None and tuple(got_shape) != tuple(shape):
        raise LapError(f"{what}: shape {list(got_shape)}; expected {list(shape)}")
    if not dense:
        raise LapError(f"{what}: not contiguous; lap reads dense row-major "
                       "arrays (np.ascontiguousarray or .contiguous())")
    if got_device != device:
        raise LapError(f"{what}: in {got_device} memory; this library's "
                       f"tensors live in {device} memory")
    return pointer
