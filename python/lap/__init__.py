"""lap from Python.

    import lap
    path = lap.compile("specs/gpt_tiny_laplacian.yaml", max_batch=4)
    model = lap.load(path)
    params = model.init_params(seed=1)
    loss, grads = model.train_step(params, {"tokens": x, "targets": y})

lap.torch (needs PyTorch) has lap's attention as a PyTorch function and
a compiled model as a torch.nn.Module."""

from lap.compiler import compile
from lap.errors import LapError, SpecError
from lap.model import Model, Parameter, load
from lap.runs import Run, read_analysis, read_checkpoint, read_run
from lap.safetensors import read as read_safetensors
from lap.safetensors import write as write_safetensors

__all__ = ["compile", "load", "Model", "Parameter", "LapError", "SpecError",
           "Run", "read_run", "read_checkpoint", "read_analysis",
           "read_safetensors", "write_safetensors"]
