"""Models the tests share, compiled once per session by lapc (small: a
GPT-2-style model with mixed head kinds and learned positions, a
nanochat-style one with grouped queries, RoPE and learned coefficients, a
ViT on Fashion-MNIST's 28-pixel images)."""

import subprocess

import pytest

import lap
from lap._home import tool

GPT2 = """\
name: py_gpt2
model:
  family: gpt
  layers: 2
  width: 32
  heads: 4
  activation: gelu_tanh
  norm: {type: layernorm, bias: true}
  positions: {type: learned}
  bias: true
  tied_embeddings: true
  vocab: 64
  context: 16
  dropout: 0.1
  init: {distribution: normal, std: 0.2}
attention:
  kinds: [attn, laplacian, attn, laplacian]
train: {regime: lm, batch_size: 4, micro_batch_size: 4, steps: 1}
"""

NANOCHAT = """\
name: py_nanochat
model:
  family: gpt
  layers: 2
  width: 32
  heads: 4
  kv_heads: 2
  activation: relu2
  norm: {type: rmsnorm, weight: false}
  embedding_norm: true
  positions: {type: rope}
  qk_norm: true
  bias: false
  logit_softcap: 15
  vocab: 64
  context: 16
  init: {distribution: uniform, std: fan_in, embedding_std: 1.0, head_std: 0.3}
attention:
  kinds: [attn, laplacian, learnable, learnable]
train: {regime: lm, batch_size: 4, micro_batch_size: 4, steps: 1}
"""

VIT = """\
name: py_vit
model:
  family: vit
  layers: 2
  width: 32
  heads: 4
  mlp_ratio: 2
  activation: gelu
  norm: {type: layernorm, eps: 1.0e-6}
  positions: {type: learned, patches_only: true}
  image_size: 28
  patch: 7
  channels: 1
  classes: 10
  init: {distribution: trunc_normal, std: 0.2, head_std: 0.3}
attention:
  kinds: [attn, laplacian, attn, laplacian]
train:
  regime: supervised
  seed: 3
  batch_size: 8
  steps: 4
  optimizer: {type: adamw, lr: 1.0e-3, weight_decay: 0.0}
  schedule: {warmup_steps: 0, decay: constant}
  data:
    format: idx
    train: /usr/share/datasets/fashion-mnist/train
    val: /usr/share/datasets/fashion-mnist/t10k
  augment: {crop: none, hflip: 0}
  loss: ce
  eval: {every_steps: 4, batches: 1}
  checkpoint: {every_steps: 2}
"""


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """name -> lap.Model of the specs above, compiled into a session
    directory."""
    out = tmp_path_factory.mktemp("models")
    return {name: lap.load(lap.compile(spec, out / f"{name}.so"))
            for name, spec in (("gpt2", GPT2), ("nanochat", NANOCHAT),
                               ("vit", VIT))}


def lapc_run(*args, ok=True):
    """lapc-run with `args`; asserts it succeeded unless not `ok`."""
    done = subprocess.run([str(tool("lapc-run")), *map(str, args)],
                          capture_output=True, text=True)
    if ok:
        assert done.returncode == 0, done.stderr
    return done
