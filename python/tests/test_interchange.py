"""lapc-run import and export against independent PyTorch references.

No hub is reachable here, so each test makes a checkpoint in the source
framework's layout with random weights (a Hugging Face GPT-2, a timm ViT
and DeiT-3), imports it, compiles the derived spec, and compares lap's
logits with a plain float64 PyTorch implementation that reads the
source's names (within 1e-4 of the largest logit: lap computes in
float32); exporting the imported parameters gives back every source
tensor bit for bit. Mismatches are errors naming the tensor."""

import json
import math
import struct

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lap
from conftest import lapc_run

GPT2_CONFIG = {"model_type": "gpt2", "n_layer": 2, "n_embd": 32, "n_head": 4,
               "n_positions": 16, "vocab_size": 61,
               "activation_function": "gelu_new",
               "layer_norm_epsilon": 1e-5}


def write_plain_safetensors(path, tensors):
    """A safetensors file as transformers and timm write it (no lap
    checksums)."""
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name, array in tensors.items():
        array = np.ascontiguousarray(array, dtype=np.float32)
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
        blobs.append(array.tobytes())
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def hf_gpt2(config, seed=0, prefix="transformer."):
    """Random GPT-2 weights by transformers' names: Conv1D weights
    [in, out], the causal-mask buffers, a tied lm_head."""
    rng = np.random.default_rng(seed)
    C, L, V, P = (config[k] for k in ("n_embd", "n_layer", "vocab_size",
                                      "n_positions"))

    def w(*shape, scale=0.2):
        return (rng.standard_normal(shape) * scale).astype(np.float32)
    sd = {"wte.weight": w(V, C), "wpe.weight": w(P, C)}
    for i in range(L):
        p = f"h.{i}."
        sd.update({p + "ln_1.weight": 1 + w(C), p + "ln_1.bias": w(C),
                   p + "attn.c_attn.weight": w(C, 3 * C),
                   p + "attn.c_attn.bias": w(3 * C),
                   p + "attn.c_proj.weight": w(C, C),
                   p + "attn.c_proj.bias": w(C),
                   p + "ln_2.weight": 1 + w(C), p + "ln_2.bias": w(C),
                   p + "mlp.c_fc.weight": w(C, 4 * C),
                   p + "mlp.c_fc.bias": w(4 * C),
                   p + "mlp.c_proj.weight": w(4 * C, C),
                   p + "mlp.c_proj.bias": w(C),
                   p + "attn.bias": np.tril(np.ones((P, P), np.float32))[
                       None, None]})
    sd.update({"ln_f.weight": 1 + w(C), "ln_f.bias": w(C)})
    stored = {prefix + k: v for k, v in sd.items()}
    stored["lm_head.weight"] = sd["wte.weight"]
    return sd, stored


def gpt2_reference(sd, config, tokens):
    """GPT-2's forward as transformers computes it, in float64."""
    t = {k: torch.from_numpy(v).double() for k, v in sd.items()}
    C, H = config["n_embd"], config["n_head"]
    eps = config["layer_norm_epsilon"]
    B, T = tokens.shape
    x = t["wte.weight"][torch.from_numpy(tokens).long()] + t["wpe.weight"][:T]
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    for i in range(config["n_layer"]):
        p = f"h.{i}."
        h = F.layer_norm(x, (C,), t[p + "ln_1.weight"], t[p + "ln_1.bias"], eps)
        q, k, v = (h @ t[p + "attn.c_attn.weight"] +
                   t[p + "attn.c_attn.bias"]).split(C, dim=-1)
        q, k, v = (z.view(B, T, H, C // H).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-1, -2) / math.sqrt(C // H)).masked_fill(
            mask, -math.inf)
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ t[p + "attn.c_proj.weight"] + t[p + "attn.c_proj.bias"]
        h = F.layer_norm(x, (C,), t[p + "ln_2.weight"], t[p + "ln_2.bias"], eps)
        h = F.gelu(h @ t[p + "mlp.c_fc.weight"] + t[p + "mlp.c_fc.bias"],
                   approximate="tanh")
        x = x + h @ t[p + "mlp.c_proj.weight"] + t[p + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (C,), t["ln_f.weight"], t["ln_f.bias"], eps)
    return (x @ t["wte.weight"].T).numpy()


def vit_block(p, w, C):
    """A ViT block's tensors by timm's (and DINO's) names under prefix `p`,
    drawn by `w(*shape)`."""
    return {p + "norm1.weight": 1 + w(C), p + "norm1.bias": w(C),
            p + "attn.qkv.weight": w(3 * C, C), p + "attn.qkv.bias": w(3 * C),
            p + "attn.proj.weight": w(C, C), p + "attn.proj.bias": w(C),
            p + "norm2.weight": 1 + w(C), p + "norm2.bias": w(C),
            p + "mlp.fc1.weight": w(4 * C, C), p + "mlp.fc1.bias": w(4 * C),
            p + "mlp.fc2.weight": w(C, 4 * C), p + "mlp.fc2.bias": w(C)}


def timm_vit(seed, deit3, C=32, L=2, classes=7, channels=3, patch=4, side=3):
    """Random weights by timm's names: a ViT with the class token's
    position, or a DeiT-3 (positions for the patches only, LayerScale)."""
    rng = np.random.default_rng(seed)

    def w(*shape, scale=0.2):
        return (rng.standard_normal(shape) * scale).astype(np.float32)
    N = side * side + (0 if deit3 else 1)
    sd = {"patch_embed.proj.weight": w(C, channels, patch, patch),
          "patch_embed.proj.bias": w(C), "cls_token": w(1, 1, C),
          "pos_embed": w(1, N, C)}
    for i in range(L):
        p = f"blocks.{i}."
        sd.update(vit_block(p, w, C))
        if deit3:
            sd.update({p + "ls1.gamma": w(C), p + "ls2.gamma": w(C)})
    sd.update({"norm.weight": 1 + w(C), "norm.bias": w(C),
               "head.weight": w(classes, C), "head.bias": w(classes)})
    config = {"architecture": ("deit3_small_patch4_12" if deit3 else
                               "vit_small_patch4_12"),
              "num_classes": classes, "global_pool": "token",
              "model_args": {"num_heads": 4, "img_size": side * patch,
                             "no_embed_class": deit3}}
    return sd, config


def vit_reference(sd, images, heads, deit3):
    """timm's VisionTransformer.forward, in float64."""
    t = {k: torch.from_numpy(v).double() for k, v in sd.items()}
    x = F.conv2d(torch.from_numpy(images).double(),
                 t["patch_embed.proj.weight"], t["patch_embed.proj.bias"],
                 stride=t["patch_embed.proj.weight"].shape[-1])
    x = x.flatten(2).transpose(1, 2)
    B, _, C = x.shape
    cls = t["cls_token"].expand(B, -1, -1)
    if deit3:
        x = torch.cat([cls, x + t["pos_embed"]], dim=1)
    else:
        x = torch.cat([cls, x], dim=1) + t["pos_embed"]
    i = 0
    while f"blocks.{i}.norm1.weight" in t:
        p = f"blocks.{i}."
        one = torch.ones(C, dtype=torch.float64)
        h = F.layer_norm(x, (C,), t[p + "norm1.weight"], t[p + "norm1.bias"],
                         1e-6)
        q, k, v = (h @ t[p + "attn.qkv.weight"].T +
                   t[p + "attn.qkv.bias"]).split(C, dim=-1)
        T = x.shape[1]
        q, k, v = (z.view(B, T, heads, C // heads).transpose(1, 2)
                   for z in (q, k, v))
        y = ((q @ k.transpose(-1, -2) / math.sqrt(C // heads)).softmax(-1)
             @ v).transpose(1, 2).reshape(B, T, C)
        y = y @ t[p + "attn.proj.weight"].T + t[p + "attn.proj.bias"]
        x = x + t.get(p + "ls1.gamma", one) * y
        h = F.layer_norm(x, (C,), t[p + "norm2.weight"], t[p + "norm2.bias"],
                         1e-6)
        h = F.gelu(h @ t[p + "mlp.fc1.weight"].T + t[p + "mlp.fc1.bias"])
        h = h @ t[p + "mlp.fc2.weight"].T + t[p + "mlp.fc2.bias"]
        x = x + t.get(p + "ls2.gamma", one) * h
        i += 1
    x = F.layer_norm(x, (C,), t["norm.weight"], t["norm.bias"], 1e-6)
    return (x[:, 0] @ t["head.weight"].T + t["head.bias"]).numpy()


def source_dir(path, config, stored):
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config))
    write_plain_safetensors(path / "model.safetensors", stored)
    return path


def imported_model(tmp_path, format, source):
    out = tmp_path / "imported"
    printed = lapc_run("import", format, source, "--out", out).stdout
    assert "spec.yaml" in printed
    model = lap.load(lap.compile(out / "spec.yaml", tmp_path / "m.so",
                                 max_batch=4))
    tensors, _ = lap.read_safetensors(out / "model.safetensors")
    return model, model.flat(tensors), out


def assert_close(got, want):
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


@pytest.mark.parametrize("prefix", ["transformer.", ""])
def test_a_gpt2_imports_and_computes_its_logits(tmp_path, prefix):
    sd, stored = hf_gpt2(GPT2_CONFIG, prefix=prefix)
    source = source_dir(tmp_path / "gpt2", GPT2_CONFIG, stored)
    model, params, out = imported_model(tmp_path, "hf-gpt2", source)
    spec = (out / "spec.yaml").read_text()
    assert "vocab: 61" in spec and "tied_embeddings: true" in spec
    tokens = np.random.default_rng(1).integers(0, 61, (2, 11), dtype=np.int32)
    _, logits = model.forward(params, {"tokens": tokens, "targets": tokens})
    assert_close(logits, gpt2_reference(sd, GPT2_CONFIG, tokens))


@pytest.mark.parametrize("deit3", [False, True])
def test_a_timm_vit_imports_and_computes_its_logits(tmp_path, deit3):
    sd, config = timm_vit(2, deit3)
    source = source_dir(tmp_path / "vit", config, sd)
    model, params, out = imported_model(tmp_path, "timm-vit", source)
    spec = (out / "spec.yaml").read_text()
    assert f"patches_only: {'true' if deit3 else 'false'}" in spec
    images = np.random.default_rng(3).standard_normal(
        (2, 3, 12, 12)).astype(np.float32)
    targets = np.eye(7, dtype=np.float32)[[1, 4]]
    _, logits = model.forward(params, {"images": images, "targets": targets})
    assert_close(logits, vit_reference(sd, images, 4, deit3))


def exported(tmp_path, format, model_path, imported_dir, *flags, ok=True):
    out = tmp_path / "exported"
    done = lapc_run("export", format, model_path, "--checkpoint",
                    imported_dir, "--out", out, *flags, ok=ok)
    return done, out


@pytest.mark.parametrize("format,make", [
    ("hf-gpt2", lambda: (hf_gpt2(GPT2_CONFIG, prefix="")[0], GPT2_CONFIG)),
    ("timm-vit", lambda: timm_vit(4, True)),
])
def test_export_gives_back_every_source_tensor(tmp_path, format, make):
    sd, config = make()
    source = source_dir(tmp_path / "source", config, sd)
    model, _, imported_dir = imported_model(tmp_path, format, source)
    _, out = exported(tmp_path, format, model.path, imported_dir)
    back, _ = lap.read_safetensors(out / "model.safetensors")
    kept = {k: v for k, v in sd.items() if not k.endswith(".attn.bias")}
    assert sorted(back) == sorted(kept)
    for name, value in kept.items():
        assert back[name].shape == value.shape, name
        assert np.array_equal(back[name], value), name
    config_back = json.loads((out / "config.json").read_text())
    if format == "hf-gpt2":
        for key in ("n_layer", "n_embd", "n_head", "vocab_size"):
            assert config_back[key] == config[key]
    else:
        assert config_back["model_args"]["num_heads"] == 4


def test_switched_heads_start_from_the_imported_weights(tmp_path):
    """The derived spec with two heads of every layer made Laplacian (and
    one learned) compiles with the same tensors; exporting it needs
    --with-head-kinds, which records the kinds."""
    sd, stored = hf_gpt2(GPT2_CONFIG)
    source = source_dir(tmp_path / "gpt2", GPT2_CONFIG, stored)
    out = tmp_path / "imported"
    lapc_run("import", "hf-gpt2", source, "--out", out)
    spec = (out / "spec.yaml").read_text() + \
        "attention:\n  kinds: [attn, laplacian, laplacian, learnable]\n"
    switched = lap.load(lap.compile(spec, tmp_path / "switched.so"))
    tensors, _ = lap.read_safetensors(out / "model.safetensors")
    assert not any("coefficients" in name for name in tensors)
    # Learned coefficients keep their init, the rest is the import's.
    done, export_dir = exported(tmp_path, "hf-gpt2", switched.path, out,
                                ok=False)
    assert done.returncode == 2
    assert "layer 0 has laplacian" in done.stderr
    assert "--with-head-kinds" in done.stderr
    done, export_dir = exported(tmp_path, "hf-gpt2", switched.path, out,
                                "--with-head-kinds")
    config = json.loads((export_dir / "config.json").read_text())
    assert config["lap_head_kinds"][1] == ["attn", "laplacian", "laplacian",
                                           "learnable"]
    assert config["lap_head_coefficients"]["blocks.0.attn.coefficients"] == \
        [[1.0], [0.0]]


@pytest.mark.parametrize("change,message", [
    (lambda sd, c: sd.pop("h.1.mlp.c_fc.bias"),
     "tensor 'h.1.mlp.c_fc.bias' is missing"),
    (lambda sd, c: sd.__setitem__("h.0.ln_1.weight", np.ones(5, np.float32)),
     "tensor 'h.0.ln_1.weight' has shape [5]"),
    (lambda sd, c: sd.__setitem__("h.0.attn.rotary", np.ones(4, np.float32)),
     "tensor 'h.0.attn.rotary' ([4]) has no place"),
    (lambda sd, c: c.__setitem__("activation_function", "relu"),
     "activation_function 'relu' is none lap computes"),
    (lambda sd, c: c.__setitem__("scale_attn_by_inverse_layer_idx", True),
     "'scale_attn_by_inverse_layer_idx' is true"),
    (lambda sd, c: c.pop("n_head"), "'n_head' is missing"),
])
def test_mismatches_are_errors_naming_the_tensor(tmp_path, change, message):
    sd, _ = hf_gpt2(GPT2_CONFIG, prefix="")
    config = dict(GPT2_CONFIG)
    change(sd, config)
    source = source_dir(tmp_path / "gpt2", config, sd)
    done = lapc_run("import", "hf-gpt2", source, "--out", tmp_path / "out",
                    ok=False)
    assert done.returncode == 2
    assert message in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_nothing_of_the_users_is_replaced(tmp_path):
    sd, stored = hf_gpt2(GPT2_CONFIG)
    source = source_dir(tmp_path / "gpt2", GPT2_CONFIG, stored)
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    done = lapc_run("import", "hf-gpt2", source, "--out", occupied, ok=False)
    assert "exists and is not an empty directory" in done.stderr
    assert (occupied / "notes.txt").read_text() == "mine"
    done = lapc_run("import", "onnx", source, "--out", tmp_path / "x",
                    ok=False)
    assert "no format 'onnx' (formats: hf-gpt2, timm-vit, nanochat, " \
        "dino-vit)" in done.stderr


def imported_fashion_deit3(tmp_path):
    """A DeiT-3 of Fashion-MNIST's shape in timm's layout, imported: its
    tensors and the import's directory."""
    sd, config = timm_vit(5, True, channels=1, patch=7, side=4, classes=10)
    source = source_dir(tmp_path / "vit", config, sd)
    out = tmp_path / "imported"
    lapc_run("import", "timm-vit", source, "--out", out)
    return sd, out


def fashion_training(steps, lr, more=""):
    """A train section on Fashion-MNIST: AdamW at a constant `lr`, `more`
    lines added."""
    return f"""\
train:
  regime: supervised
  batch_size: 8
  steps: {steps}
  optimizer: {{type: adamw, lr: {lr}, weight_decay: 0.0}}
  schedule: {{warmup_steps: 0, decay: constant}}
  data:
    format: idx
    train: /usr/share/datasets/fashion-mnist/train
    val: /usr/share/datasets/fashion-mnist/t10k
  augment: {{crop: none, hflip: 0}}
{more}"""


def test_training_starts_from_the_imported_parameters(tmp_path):
    """lapc-run train --init-from: with a learning rate of 0 the first
    checkpoint holds the imported tensors exactly."""
    _, out = imported_fashion_deit3(tmp_path)
    spec = (out / "spec.yaml").read_text() + fashion_training(
        1, 0.0, "  eval: {every_steps: 1, batches: 1}\n")
    model = lap.load(lap.compile(spec, tmp_path / "vit.so"))
    run = tmp_path / "run"
    printed = lapc_run("train", model.path, "--run-dir", run, "--init-from",
                       out).stdout
    assert f"parameters from {out}/model.safetensors" in printed
    trained = lap.read_run(run).parameters()
    imported, _ = lap.read_safetensors(out / "model.safetensors")
    assert sorted(trained) == sorted(imported)
    assert all(np.array_equal(trained[k], imported[k]) for k in imported)

    done = lapc_run("train", model.path, "--run-dir", tmp_path / "again",
                    "--init-from", out, "--resume", ok=False)
    assert done.returncode == 2 and "excludes" in done.stderr
    other = lap.compile(spec.replace("layers: 2", "layers: 1"),
                        tmp_path / "other.so")
    done = lapc_run("train", other, "--run-dir", tmp_path / "other",
                    "--init-from", out, ok=False)
    assert done.returncode == 2
    assert "tensor 'blocks.1.norm1.weight' with shape [32] is not a " \
        "parameter of the model" in done.stderr


NANOCHAT_CONFIG = {"sequence_len": 16, "vocab_size": 50, "n_layer": 2,
                   "n_head": 4, "n_kv_head": 2, "n_embd": 32}


def nanochat_checkpoint(directory, config, seed=0):
    """A nanochat checkpoint directory as its checkpoint manager writes it
    (a torch.compile'd model's names, bf16 tensors): the weights, as
    float64 tensors by nanochat's names."""
    g = torch.Generator().manual_seed(seed)
    C, L, V = config["n_embd"], config["n_layer"], config["vocab_size"]
    D = C // config["n_head"]
    KV = config["n_kv_head"] * D

    def w(*shape):
        return (torch.randn(*shape, generator=g) * 0.3).bfloat16()
    sd = {"transformer.wte.weight": w(V, C), "lm_head.weight": w(V, C)}
    for i in range(L):
        p = f"transformer.h.{i}."
        sd.update({p + "attn.c_q.weight": w(C, C), p + "attn.c_k.weight":
                   w(KV, C), p + "attn.c_v.weight": w(KV, C),
                   p + "attn.c_proj.weight": w(C, C),
                   p + "mlp.c_fc.weight": w(4 * C, C),
                   p + "mlp.c_proj.weight": w(C, 4 * C)})
    directory.mkdir()
    torch.save({"_orig_mod." + k: v for k, v in sd.items()},
               directory / "model_000300.pt")
    (directory / "meta_000300.json").write_text(
        json.dumps({"step": 300, "model_config": config}))
    return {k: v.double() for k, v in sd.items()}


def apply_rotary_emb(x, cos, sin):
    """nanochat's rotation: by -theta (lap's turns by +theta)."""
    d = x.shape[3] // 2
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos + x2 * sin, x1 * (-sin) + x2 * cos], 3)


def nanochat_reference(t, config, tokens):
    """nanochat's GPT.forward (its gpt.py), in float64."""
    C, H = config["n_embd"], config["n_head"]
    KV, D = config["n_kv_head"], C // config["n_head"]
    B, T = tokens.shape

    def norm(x):
        return F.rms_norm(x, (x.shape[-1],)) if hasattr(F, "rms_norm") else \
            x / torch.sqrt((x * x).mean(-1, keepdim=True) +
                           torch.finfo(torch.float32).eps)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, D, 2).double() / D))
    angles = torch.outer(torch.arange(T).double(), inv_freq)
    cos, sin = angles.cos()[None, :, None, :], angles.sin()[None, :, None, :]
    x = norm(t["transformer.wte.weight"][torch.from_numpy(tokens).long()])
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    for i in range(config["n_layer"]):
        p = f"transformer.h.{i}."
        h = norm(x)
        q = (h @ t[p + "attn.c_q.weight"].T).view(B, T, H, D)
        k = (h @ t[p + "attn.c_k.weight"].T).view(B, T, KV, D)
        v = (h @ t[p + "attn.c_v.weight"].T).view(B, T, KV, D)
        q, k = apply_rotary_emb(q, cos, sin), apply_rotary_emb(k, cos, sin)
        q, k = norm(q), norm(k)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        k, v = (z.repeat_interleave(H // KV, 1) for z in (k, v))
        scores = (q @ k.transpose(-1, -2) / math.sqrt(D)).masked_fill(
            mask, -math.inf)
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ t[p + "attn.c_proj.weight"].T
        h = F.relu(norm(x) @ t[p + "mlp.c_fc.weight"].T).square()
        x = x + h @ t[p + "mlp.c_proj.weight"].T
    logits = norm(x) @ t["lm_head.weight"].T
    return (15 * torch.tanh(logits / 15)).numpy()


def test_nanochats_rotation_is_the_opposite_of_laps():
    """On a known vector: nanochat turns (1, 0) at position 1 by -1 radian
    (lap by +1), the reason its q and k rows change sign on import."""
    x = torch.tensor([1.0, 0.0]).view(1, 1, 1, 2).double()
    y = apply_rotary_emb(x, torch.tensor(1.0).cos(), torch.tensor(1.0).sin())
    assert torch.allclose(y.flatten(), torch.tensor([math.cos(1),
                                                     -math.sin(1)]).double())


def test_a_nanochat_checkpoint_imports_and_computes_its_logits(tmp_path):
    t = nanochat_checkpoint(tmp_path / "nanochat", NANOCHAT_CONFIG)
    model, params, out = imported_model(tmp_path, "nanochat",
                                        tmp_path / "nanochat")
    spec = (out / "spec.yaml").read_text()
    assert "kv_heads: 2" in spec and "type: rope" in spec
    tokens = np.random.default_rng(5).integers(0, 50, (2, 13), dtype=np.int32)
    _, logits = model.forward(params, {"tokens": tokens, "targets": tokens})
    assert_close(logits, nanochat_reference(t, NANOCHAT_CONFIG, tokens))
    done = lapc_run("export", "nanochat", model.path, "--checkpoint", out,
                    "--out", tmp_path / "back", ok=False)
    assert "does not export them" in done.stderr


def test_a_broken_nanochat_checkpoint_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    done = lapc_run("import", "nanochat", tmp_path / "empty", "--out",
                    tmp_path / "out", ok=False)
    assert done.returncode == 2
    assert "no model_<step>.pt" in done.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model_000001.pt").write_bytes(b"not a pickle")
    (broken / "meta_000001.json").write_text('{"model_config": {}}')
    done = lapc_run("import", "nanochat", broken, "--out", tmp_path / "out",
                    ok=False)
    assert "not a state dict torch.load reads" in done.stderr


def dino_state(seed, C=64, L=2, patch=4, side=2, hidden=32, bottleneck=16,
               prototypes=24):
    """Random DINO weights by its names: the ViT (DeiT's, the class token
    with a position) and the projection head (head.mlp.0/2/4, the
    weight-normed last layer)."""
    g = torch.Generator().manual_seed(seed)

    def w(*shape):
        return torch.randn(*shape, generator=g) * 0.2
    sd = {"backbone.cls_token": w(1, 1, C),
          "backbone.pos_embed": w(1, side * side + 1, C),
          "backbone.patch_embed.proj.weight": w(C, 3, patch, patch),
          "backbone.patch_embed.proj.bias": w(C)}
    for i in range(L):
        sd.update(vit_block(f"backbone.blocks.{i}.", w, C))
    sd.update({"backbone.norm.weight": 1 + w(C), "backbone.norm.bias": w(C),
               "head.mlp.0.weight": w(hidden, C), "head.mlp.0.bias": w(hidden),
               "head.mlp.2.weight": w(hidden, hidden),
               "head.mlp.2.bias": w(hidden),
               "head.mlp.4.weight": w(bottleneck, hidden),
               "head.mlp.4.bias": w(bottleneck),
               "head.last_layer.weight_g": torch.ones(prototypes, 1),
               "head.last_layer.weight_v": w(prototypes, bottleneck)})
    return sd


def dino_reference(sd, images):
    """DINO's ViT then its head (vision_transformer.py's DINOHead), in
    float64: (the class token's features, the head's logits)."""
    backbone = {k.removeprefix("backbone."): v.numpy()
                for k, v in sd.items() if k.startswith("backbone.")}
    t = {k: v.double() for k, v in sd.items()}
    heads = backbone["patch_embed.proj.weight"].shape[0] // 64
    x = torch.from_numpy(vit_features(backbone, images, heads))
    for i in (0, 2, 4):
        x = x @ t[f"head.mlp.{i}.weight"].T + t[f"head.mlp.{i}.bias"]
        if i < 4:
            x = F.gelu(x)
    x = F.normalize(x, dim=-1)
    v, g = t["head.last_layer.weight_v"], t["head.last_layer.weight_g"]
    return vit_features(backbone, images, heads), \
        (x @ (g * v / v.norm(dim=1, keepdim=True)).T).numpy()


def vit_features(sd, images, heads):
    """The class token after the final norm (timm's ViT without a
    classifier: DINO's backbone)."""
    C = sd["norm.weight"].shape[0]
    sd = dict(sd, **{"head.weight": np.eye(C, dtype=np.float32),
                     "head.bias": np.zeros(C, np.float32)})
    return vit_reference(sd, images, heads, deit3=False)


def test_a_dino_checkpoint_imports_and_computes_its_head(tmp_path):
    import argparse
    teacher = dino_state(6)
    student = {"module." + k: v for k, v in dino_state(7).items()}
    path = tmp_path / "checkpoint.pth"
    torch.save({"teacher": teacher, "student": student, "epoch": 3,
                "args": argparse.Namespace(arch="vit_small", patch_size=4)},
               path)
    model, params, out = imported_model(tmp_path, "dino-vit", path)
    spec = (out / "spec.yaml").read_text()
    assert "family: dino" in spec and "prototypes: 24" in spec
    images = np.random.default_rng(8).standard_normal(
        (2, 3, 8, 8)).astype(np.float32)
    teacher_probs = np.full((2, 24), 1 / 24, np.float32)
    features, logits = dino_reference(teacher, images)
    assert_close(model.embed(params, {"images": images,
                                      "teacher": teacher_probs}), features)
    _, got = model.forward(params, {"images": images,
                                    "teacher": teacher_probs})
    assert_close(got, logits)


def test_a_pickle_that_runs_code_is_refused(tmp_path):
    import os

    class Payload:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "ran"),))
    path = tmp_path / "evil.pth"
    torch.save({"teacher": Payload()}, path)
    done = lapc_run("import", "dino-vit", path, "--out", tmp_path / "out",
                    ok=False)
    assert done.returncode == 2
    assert "names posix.system, not something a checkpoint" in done.stderr
    assert not (tmp_path / "ran").exists()


def test_a_lora_vit_exports_with_its_adapters_merged(tmp_path):
    """A timm DeiT-3 fine-tuned from its import with LoRA adapters (and its
    head): the export folds them into the weights, and in timm's layout
    (the reference) computes what lap's adapted model computes."""
    sd, out = imported_fashion_deit3(tmp_path)
    spec = (out / "spec.yaml").read_text() + fashion_training(
        3, 0.05,
        "  lora: {rank: 2, alpha: 4, targets: [qkv, fc2], train: [head]}\n")
    model = lap.load(lap.compile(spec, tmp_path / "lora.so"))
    run = tmp_path / "run"
    lapc_run("train", model.path, "--run-dir", run, "--init-from", out)
    tensors, _ = lap.read_checkpoint(lap.read_run(run).checkpoints[-1])
    assert np.abs(tensors["blocks.0.attn.qkv.lora_B.weight"]).max() > 0
    assert np.array_equal(tensors["blocks.0.attn.qkv.weight"],
                          sd["blocks.0.attn.qkv.weight"])
    printed = lapc_run("export", "timm-vit", model.path, "--run-dir", run,
                       "--out", tmp_path / "exported").stdout
    assert "the LoRA adapters merged" in printed
    back, _ = lap.read_safetensors(tmp_path / "exported" / "model.safetensors")
    assert sorted(back) == sorted(k for k in sd if not k.endswith(".attn.bias"))
    assert not np.array_equal(back["blocks.0.attn.qkv.weight"],
                              sd["blocks.0.attn.qkv.weight"])
    images = np.random.default_rng(3).standard_normal(
        (2, 1, 28, 28)).astype(np.float32)
    targets = np.eye(10, dtype=np.float32)[[1, 4]]
    _, logits = model.forward(model.flat(tensors),
                              {"images": images, "targets": targets})
    assert_close(logits, vit_reference(back, images, 4, True))
