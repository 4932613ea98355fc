"""CUDA libraries from Python. Without a GPU (and a PyTorch built with
CUDA) only what needs none runs: a CUDA library compiles, loads and
describes itself, and its calls say why they cannot run; the rest skips,
saying so."""

import math
import os

import numpy as np
import pytest
import torch

import lap
import lap.torch as lt
from lap import _attention
from conftest import GPT2
from test_attention import reference

GPU = torch.cuda.is_available()
CUDA_BUILD = os.environ.get("LAP_HAVE_CUDA") == "1"
needs_gpu = pytest.mark.skipif(
    not (GPU and CUDA_BUILD),
    reason="no GPU that this PyTorch can use (Debian's torch is built "
    "without CUDA), or a build of lap without CUDA")


@pytest.fixture(scope="module")
def cuda_model(tmp_path_factory):
    if not CUDA_BUILD:
        pytest.skip("this build of lap has no CUDA toolkit: lapc compiles "
                    "no CUDA libraries")
    path = tmp_path_factory.mktemp("cuda") / "gpt2.so"
    return lap.load(lap.compile(GPT2, path, target="cuda"))


def test_a_cuda_library_loads_anywhere(cuda_model):
    assert cuda_model.device == "cuda"
    assert cuda_model.manifest["target"]["arch"] == "sm_90"


@pytest.mark.skipif(GPU, reason="a GPU is here: the calls run")
def test_its_calls_say_why_they_cannot_run(cuda_model):
    with pytest.raises(lap.LapError, match="sees no GPU"):
        cuda_model.init_params(1)


@pytest.mark.skipif(GPU, reason="a GPU is here: the attention runs")
def test_the_cuda_attention_library_says_why_it_cannot_run():
    if not CUDA_BUILD:
        pytest.skip("this build of lap has no CUDA toolkit: no "
                    "libLapAttentionCUDA.so")
    assert _attention.isa("cuda") == "none"
    with pytest.raises(lap.LapError, match="runs on NVIDIA GPUs"):
        _attention.call("cuda", "forward",
                        _attention.Shape(1, 1, 1, 1, 1, 1, 1.0, 0),
                        *[None] * 9)


@needs_gpu
def test_attention_on_the_gpu():
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 4, 40, 32, generator=g) for _ in range(3))
    alpha, beta = torch.tensor([1., -1., .5, 2.]), torch.tensor([0., 1., .3, -1.])
    got = lt.attention(*(x.cuda() for x in (q, k, v, alpha, beta)),
                       causal=True)
    want = reference(q, k, v, alpha, beta, True, 1 / math.sqrt(32))
    assert (got.cpu().double() - want).abs().max() <= \
        2e-5 * max(want.abs().max().item(), 1.0)


@needs_gpu
def test_a_cuda_library_computes_what_the_cpu_library_does(models,
                                                           cuda_model):
    cpu = models["gpt2"]
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 64, (3, 12), dtype=np.int32)
    batch = {"tokens": tokens, "targets": tokens}
    want, _ = cpu.forward(cpu.init_params(1), batch)
    params = cuda_model.init_params(1)
    got, _ = cuda_model.forward(params, {k: torch.from_numpy(v).cuda()
                                         for k, v in batch.items()})
    assert got == pytest.approx(want, rel=1e-4)
