#!/usr/bin/python3
"""PyTorch baseline of the training-step benchmark.

Builds in PyTorch the model that a resolved lap spec describes (the output of
`lapc SPEC --emit=spec`), op for op as compiler/Frontend/SpecToLap.cpp builds
it, so both sides do the same work, and times one training step on random
data: by default its forward and backward only (--optimizer none); with
--optimizer adamw or muon the full step of lap's training loop (zero grads,
forward, backward, gradient clipping when train.grad_clip > 0, optimizer step),
the optimizer built as runtime/train/Optimizer.h builds it from the spec's
train.optimizer. Prints one JSON object:

    {"framework": "pytorch", "torch": ..., "threads": ..., "blas": ...,
     "isa": ..., "allocator": ..., "model": ..., "batch": ..., "seq": ..., "parameters": ...,
     "optimizer": ..., "ms_per_step": {"median": ..., "min": ..., "max": ...},
     "peak_rss_bytes": ...}

Usage (Debian's PyTorch 1.13 lives in /usr/bin/python3):

    build/bin/lapc bench/specs/gpt-bench.yaml --emit=spec > /tmp/gpt-bench.yaml
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=PASSIVE \\
        /usr/bin/python3 bench/torch_step.py --spec /tmp/gpt-bench.yaml \\
        --batch 8 --seq 256 --threads 2 --warmup 3 --iters 20 [--optimizer adamw]

On a GPU (bench/gpu/run.sh): --device cuda, fp32 without TF32 as lap
computes, PyTorch 2's scaled_dot_product_attention; --compile times
torch.compile(model), compiled during the warm-up. A spec with
train.matmul_precision: bf16 (lap's bf16 products) or train.precision: bf16
(a bf16 model) runs its forward under torch.autocast in bf16, PyTorch's
mixed precision, which users pick for speed: it also runs attention and
keeps activations in bf16, so it does no more work than lap and usually
less.

--batch defaults to train.micro_batch_size and --seq to train.seq_len; an
image model's sequence is fixed by its image size. The script sets the
environment variables that torch's speed depends on itself (see below), so a
plain `/usr/bin/python3 bench/torch_step.py ...` measures the same. Exit status: 0 on success,
2 for a spec setting this baseline does not implement (it refuses rather than
time a different model) or a torch bound to the reference BLAS, 1 when the
model's parameter count differs from the spec's derived.parameters.
"""

import os
import sys

from peer_env import allocator, blas_library, peer_isa, run_at_its_best

run_at_its_best("torch_step")

import argparse
import json
import math
import resource
import statistics
import time

import yaml

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit("torch_step: this Python has no torch; run it with /usr/bin/python3")


def refuse(message):
    print(f"torch_step: unsupported: {message}", file=sys.stderr)
    sys.exit(2)


# --- What this baseline implements ------------------------------------------

MODEL_KEYS = {
    "family", "layers", "width", "heads", "head_dim", "kv_heads", "mlp_ratio",
    "mlp_hidden", "activation", "norm", "embedding_norm", "final_norm",
    "positions", "qk_norm", "bias", "dropout", "init",
    # gpt
    "vocab", "context", "tied_embeddings", "logit_softcap",
    # image
    "image_size", "patch", "channels", "classes", "cls_token", "registers",
    "layer_scale", "drop_path", "pool", "pool_heads",
}
SUB_KEYS = {
    "norm": {"type", "weight", "bias", "eps"},
    "positions": {"type", "rope_base", "patches_only"},
    "init": {"distribution", "std", "embedding_std", "position_std", "head_std",
             "zero_out_proj", "zero_head"},
}
HEAD_KINDS = {"attn": (1.0, 0.0), "laplacian": (-1.0, 1.0)}  # (alpha, beta)


def check_spec(spec):
    """Refuses any setting the model below does not build. Schedule, data,
    evaluation and checkpoint settings do not change a step's work, so only
    the loss-related train keys are read here (and train.optimizer and
    train.grad_clip by make_optimizer when --optimizer times the full step)."""
    if not isinstance(spec.get("derived"), dict) or "parameters" not in spec["derived"]:
        refuse("not a resolved spec (no derived.parameters); pass `lapc SPEC --emit=spec` output")
    for key in spec:
        if key not in ("name", "description", "model", "attention", "train", "derived"):
            refuse(f"top-level key '{key}'")
    m = spec["model"]
    for key in m:
        if key not in MODEL_KEYS:
            refuse(f"model.{key}")
        for sub in m[key] if key in SUB_KEYS else ():
            if sub not in SUB_KEYS[key]:
                refuse(f"model.{key}.{sub}")
    if m["family"] not in ("gpt", "vit"):
        refuse(f"model.family: {m['family']} (gpt and vit only)")
    if m["activation"] not in ("relu2", "gelu_tanh", "gelu"):
        refuse(f"model.activation: {m['activation']}")
    if m["norm"]["type"] not in ("layernorm", "rmsnorm"):
        refuse(f"model.norm.type: {m['norm']['type']}")
    pos = m["positions"]["type"]
    if pos not in ({"learned", "rope", "none"} if m["family"] == "gpt" else {"learned", "none"}):
        refuse(f"model.positions.type: {pos} for family {m['family']}")
    if m["family"] == "vit":
        if m["pool"] not in ("cls", "mean"):
            refuse(f"model.pool: {m['pool']} (cls and mean only)")
        if m["classes"] < 1:
            refuse("model.classes: 0 (a vit needs a classifier)")
    init = m["init"]
    if init["distribution"] not in ("normal", "trunc_normal", "uniform"):
        refuse(f"model.init.distribution: {init['distribution']}")
    att = spec.get("attention", {})
    for key in att:
        if key not in ("kinds", "pool"):
            refuse(f"attention.{key} (resolve the spec: kinds must be one list per layer)")
    if att.get("pool"):
        refuse("attention.pool (attentive pooling)")
    kinds = att.get("kinds")
    if (not isinstance(kinds, list) or len(kinds) != m["layers"]
            or any(not isinstance(row, list) or len(row) != m["heads"] for row in kinds)):
        refuse("attention.kinds must be one list of model.heads kinds per layer (resolved spec)")
    for row in kinds:
        for kind in row:
            if kind not in HEAD_KINDS:
                refuse(f"head kind '{kind}'")
    train = spec.get("train") or {}
    regime = train.get("regime", "lm" if m["family"] == "gpt" else "supervised")
    if regime != ("lm" if m["family"] == "gpt" else "supervised"):
        refuse(f"train.regime: {regime}")
    if train.get("loss", "ce") not in ("ce", "bce"):
        refuse(f"train.loss: {train['loss']}")


# --- Model --------------------------------------------------------------------

class Norm(nn.Module):
    """LayerNorm or RMSNorm over the last dimension; weight and bias optional
    (nanochat's RMSNorm has neither; F.rms_norm is not in torch 1.13)."""

    def __init__(self, n, cfg):
        super().__init__()
        self.n, self.eps, self.rms = n, cfg["eps"], cfg["type"] == "rmsnorm"
        self.weight = nn.Parameter(torch.ones(n)) if cfg["weight"] else None
        use_bias = cfg["bias"] and not self.rms
        self.bias = nn.Parameter(torch.zeros(n)) if use_bias else None

    def forward(self, x):
        if not self.rms:
            return F.layer_norm(x, (self.n,), self.weight, self.bias, self.eps)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * self.weight if self.weight is not None else x


def rope(x, cos, sin):
    """Rotates channel pairs (i, i + D/2) of x [B, T, H, D] by t * base^(-2i/D)."""
    d = x.shape[-1] // 2
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def drop_path(x, rate, training):
    """Stochastic depth: drops the whole branch per sample (timm)."""
    if rate == 0 or not training:
        return x
    keep = x.new_empty((x.shape[0],) + (1,) * (x.dim() - 1)).bernoulli_(1 - rate)
    return x * keep / (1 - rate)


class Attention(nn.Module):
    def __init__(self, m, kinds):
        super().__init__()
        self.h, self.kv, self.d = m["heads"], m["kv_heads"], m["head_dim"]
        self.dropout = m["dropout"]
        self.qkv = nn.Linear(m["width"], (self.h + 2 * self.kv) * self.d, bias=m["bias"])
        if m["qk_norm"]:
            self.q_norm, self.k_norm = Norm(self.d, m["norm"]), Norm(self.d, m["norm"])
        else:
            self.q_norm = self.k_norm = None
        self.proj = nn.Linear(self.h * self.d, m["width"], bias=m["bias"])
        # Per-head kinds O_h = alpha_h P V_h + beta_h V_h; an all-attn layer is
        # plain attention, as a PyTorch user would write it.
        coeffs = [HEAD_KINDS[k] for k in kinds]
        self.mixed = any(c != HEAD_KINDS["attn"] for c in coeffs)
        if self.mixed:
            self.register_buffer("alpha", torch.tensor([a for a, _ in coeffs]).view(1, -1, 1, 1))
            self.register_buffer("beta", torch.tensor([b for _, b in coeffs]).view(1, -1, 1, 1))

    def forward(self, x, rope_cs=None, mask=None):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).split([self.h * self.d, self.kv * self.d, self.kv * self.d], dim=-1)
        q = q.view(B, T, self.h, self.d)
        k, v = k.view(B, T, self.kv, self.d), v.view(B, T, self.kv, self.d)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        if rope_cs is not None:
            q, k = rope(q, *rope_cs), rope(k, *rope_cs)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, H, T, D]
        if self.kv != self.h:  # grouped-query: query head h reads kv head h // (H / KV)
            k = k.repeat_interleave(self.h // self.kv, dim=1)
            v = v.repeat_interleave(self.h // self.kv, dim=1)
        if hasattr(F, "scaled_dot_product_attention"):
            # PyTorch 2's fused attention (flash, memory-efficient or cuDNN)
            # where it exists: PyTorch at its best. The mask is causal.
            o = F.scaled_dot_product_attention(q, k, v, is_causal=mask is not None)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d))
            if mask is not None:
                att = att.masked_fill(mask, float("-inf"))
            o = F.softmax(att, dim=-1) @ v
        if self.mixed:
            o = self.alpha * o + self.beta * v
        o = o.transpose(1, 2).reshape(B, T, self.h * self.d)
        return F.dropout(self.proj(o), self.dropout, self.training)


class MLP(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.fc1 = nn.Linear(m["width"], m["mlp_hidden"], bias=m["bias"])
        self.fc2 = nn.Linear(m["mlp_hidden"], m["width"], bias=m["bias"])
        self.activation, self.dropout = m["activation"], m["dropout"]

    def forward(self, x):
        x = self.fc1(x)
        if self.activation == "relu2":
            x = F.relu(x).square()
        else:
            x = F.gelu(x, approximate="tanh" if self.activation == "gelu_tanh" else "none")
        return F.dropout(self.fc2(x), self.dropout, self.training)


class Block(nn.Module):
    """Pre-norm: x + attn(norm1(x)), then x + mlp(norm2(x)), each branch with
    optional LayerScale and stochastic depth."""

    def __init__(self, m, kinds, drop_path_rate):
        super().__init__()
        self.norm1, self.attn = Norm(m["width"], m["norm"]), Attention(m, kinds)
        self.norm2, self.mlp = Norm(m["width"], m["norm"]), MLP(m)
        scale = m.get("layer_scale", 0)
        self.ls1 = nn.Parameter(torch.full((m["width"],), float(scale))) if scale > 0 else None
        self.ls2 = nn.Parameter(torch.full((m["width"],), float(scale))) if scale > 0 else None
        self.drop_path = drop_path_rate

    def branch(self, y, gamma):
        if gamma is not None:
            y = y * gamma
        return drop_path(y, self.drop_path, self.training)

    def forward(self, x, rope_cs=None, mask=None):
        x = x + self.branch(self.attn(self.norm1(x), rope_cs, mask), self.ls1)
        return x + self.branch(self.mlp(self.norm2(x)), self.ls2)


def make_blocks(m, kinds):
    L, top = m["layers"], m.get("drop_path", 0)
    # Stochastic depth grows linearly from 0 to drop_path at the last layer.
    rates = [top * l / (L - 1) if L > 1 else 0.0 for l in range(L)]
    return nn.ModuleList(Block(m, kinds[l], rates[l]) for l in range(L))


class GPT(nn.Module):
    def __init__(self, m, kinds):
        super().__init__()
        self.m = m
        self.wte = nn.Embedding(m["vocab"], m["width"])
        pos = m["positions"]["type"]
        self.wpe = nn.Embedding(m["context"], m["width"]) if pos == "learned" else None
        self.embedding_norm = Norm(m["width"], m["norm"]) if m["embedding_norm"] else None
        self.blocks = make_blocks(m, kinds)  # causal through the mask below
        self.norm = Norm(m["width"], m["norm"]) if m["final_norm"] else None
        self.lm_head = (None if m["tied_embeddings"]
                        else nn.Linear(m["width"], m["vocab"], bias=False))
        # Tables built once, sliced per call: RoPE's cos/sin [T, 1, D/2] and
        # the causal mask (True above the diagonal = masked).
        T, D = m["context"], m["head_dim"]
        if pos == "rope":
            i = torch.arange(D // 2, dtype=torch.float64)
            inv_freq = m["positions"]["rope_base"] ** (-2 * i / D)
            angle = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq
            self.register_buffer("cos", angle.cos().float()[:, None, :])
            self.register_buffer("sin", angle.sin().float()[:, None, :])
        self.rope = pos == "rope"
        self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).triu(1))

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        x = self.wte(tokens)
        if self.wpe is not None:
            x = x + self.wpe.weight[:T]
        x = F.dropout(x, self.m["dropout"], self.training)
        if self.embedding_norm is not None:
            x = self.embedding_norm(x)
        rope_cs = (self.cos[:T], self.sin[:T]) if self.rope else None
        mask = self.mask[:T, :T]
        for block in self.blocks:
            x = block(x, rope_cs, mask)
        if self.norm is not None:
            x = self.norm(x)
        logits = self.lm_head(x) if self.lm_head is not None else F.linear(x, self.wte.weight)
        c = self.m["logit_softcap"]
        if c > 0:
            logits = c * torch.tanh(logits / c)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


class ViT(nn.Module):
    def __init__(self, m, kinds, loss, label_smoothing):
        super().__init__()
        self.m, self.loss, self.label_smoothing = m, loss, label_smoothing
        W, p = m["width"], m["patch"]
        patches = (m["image_size"] // p) ** 2
        self.patch_embed = nn.Conv2d(m["channels"], W, kernel_size=p, stride=p)
        self.cls_token = nn.Parameter(torch.zeros(1, W)) if m["cls_token"] else None
        self.registers = nn.Parameter(torch.zeros(m["registers"], W)) if m["registers"] else None
        self.patches_only = m["positions"].get("patches_only", False)
        if m["positions"]["type"] == "learned":
            n = patches + (1 if m["cls_token"] and not self.patches_only else 0)
            self.pos_embed = nn.Parameter(torch.zeros(n, W))
        else:
            self.pos_embed = None
        self.embedding_norm = Norm(W, m["norm"]) if m["embedding_norm"] else None
        self.blocks = make_blocks(m, kinds)
        self.norm = Norm(W, m["norm"]) if m["final_norm"] else None
        self.head = nn.Linear(W, m["classes"], bias=True)
        self.sequence = patches + (1 if m["cls_token"] else 0) + m["registers"]

    def forward(self, images, targets):
        x = self.patch_embed(images).flatten(2).transpose(1, 2)  # [B, N, W]
        B = x.shape[0]
        # Token order [registers, CLS, patches]; registers never get positions.
        if self.pos_embed is not None and self.patches_only:
            x = x + self.pos_embed
        if self.cls_token is not None:
            x = torch.cat([self.cls_token.expand(B, -1, -1), x], dim=1)
        if self.pos_embed is not None and not self.patches_only:
            x = x + self.pos_embed
        if self.registers is not None:
            x = torch.cat([self.registers.expand(B, -1, -1), x], dim=1)
        x = F.dropout(x, self.m["dropout"], self.training)
        if self.embedding_norm is not None:
            x = self.embedding_norm(x)
        for block in self.blocks:
            x = block(x)
        if self.norm is not None:
            x = self.norm(x)
        r = self.m["registers"]
        x = x[:, r] if self.m["pool"] == "cls" else x[:, r + (self.cls_token is not None):].mean(1)
        logits = self.head(x)
        if self.loss == "bce":
            return F.binary_cross_entropy_with_logits(logits, targets)
        if targets.dim() == 2:  # soft targets, already smoothed
            return F.cross_entropy(logits, targets)
        return F.cross_entropy(logits, targets, label_smoothing=self.label_smoothing)


def init_parameters(model, m):
    """The spec's init (dsl/ParameterTable.cpp), by parameter name."""
    init = m["init"]

    def random(p, std):
        if std == 0:
            return p.zero_()
        if init["distribution"] == "normal":
            return p.normal_(0, std)
        if init["distribution"] == "trunc_normal":
            return nn.init.trunc_normal_(p, 0, std, -2 * std, 2 * std)
        a = math.sqrt(3) * std
        return p.uniform_(-a, a)

    def matrix(p):
        fan_in = p[0].numel()
        return random(p, fan_in ** -0.5 if init["std"] == "fan_in" else init["std"])

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in ("wte.weight", "patch_embed.weight"):
                random(p, init["embedding_std"])
            elif name in ("wpe.weight", "cls_token", "registers", "pos_embed"):
                random(p, init["position_std"])
            elif name in ("lm_head.weight", "head.weight"):
                p.zero_() if init["zero_head"] else random(p, init["head_std"])
            elif name.endswith(("attn.proj.weight", "mlp.fc2.weight")):
                p.zero_() if init["zero_out_proj"] else matrix(p)
            elif name.endswith((".qkv.weight", ".fc1.weight")):
                matrix(p)
            # Biases (0), norm weights (1) and LayerScale were set at creation.


# --- Optimizer (runtime/train/Optimizer.h) -----------------------------------

def orthogonalize(g, steps):
    """Muon's Newton-Schulz orthogonalisation (Keller Jordan's
    zeropower_via_newtonschulz5), fp32 as lap's: X = G / (||G||_F + 1e-7),
    transposed when rows > cols, then `steps` quintic iterations
    X <- aX + (bA + cA^2)X with A = XX^T."""
    a, b, c = 3.4445, -4.7750, 2.0315
    x = g.float()
    x = x / (x.norm() + 1e-7)
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.t()
    for _ in range(steps):
        gram = x @ x.t()
        poly = torch.addmm(gram, gram, gram, beta=b, alpha=c)  # bA + cA^2
        x = torch.addmm(x, poly, x, beta=a)                    # aX + poly X
    return x.t() if tall else x


class Muon(torch.optim.Optimizer):
    """nanochat's Muon as lap's muonStep: momentum buffer lerp, Nesterov,
    Newton-Schulz, decoupled weight decay, lr * max(1, rows/cols)^1/2."""

    def __init__(self, params, lr, momentum=0.95, nesterov=True, ns_steps=5, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, momentum=momentum, nesterov=nesterov,
                                      ns_steps=ns_steps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            lr, mom, wd = group["lr"], group["momentum"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p)
                buf = state["momentum_buffer"]
                buf.lerp_(g, 1 - mom)
                u = g.lerp(buf, mom) if group["nesterov"] else buf
                o = orthogonalize(u, group["ns_steps"])
                rows, cols = p.shape
                if wd != 0:
                    p.mul_(1 - lr * wd)
                p.add_(o, alpha=-lr * max(1.0, rows / cols) ** 0.5)


def matches_parameter_group(name, group):
    """Whether `name` is in the no_decay group `group` (matchesParameterGroup)."""
    parts = name.split(".")
    if group == "bias":
        return parts[-1] == "bias"
    if group == "norm":
        return parts[-1] == "weight_g" or any("norm" in part for part in parts)
    if group == "layer_scale":
        return parts[-1] in ("ls1", "ls2")
    if group == "embedding":
        return name.startswith(("wte.", "patch_embed."))
    if group == "positions":
        return name.startswith("wpe.") or parts[0] == "pos_embed"
    if group == "tokens":
        return parts[0] in ("cls_token", "registers") or name == "pool.query"
    if group == "head":
        return name.startswith(("lm_head.", "head.", "dino_head."))
    return group in name


def make_optimizer(kind, model, spec):
    """The optimizers of lap's assignGroups: under adamw one AdamW over every
    parameter; under muon Muon for the blocks' 2-D weights and AdamW for the
    embedding (embedding_lr), lm_head (unembedding_lr) and the rest
    (scalar_lr), the AdamW lrs x (width/768)^-1/2 with scale_lr_by_width.
    Weight decay everywhere but the no_decay groups. Returns a list."""
    o = (spec.get("train") or {}).get("optimizer") or {}
    if o.get("type", "adamw") != kind:
        print(f"torch_step: the spec's optimizer is {o.get('type', 'adamw')}; timing {kind} "
              f"with its settings and {kind}'s defaults", file=sys.stderr)
    lr, wd, no_decay = o.get("lr", 1e-3), o.get("weight_decay", 0.0), o.get("no_decay") or []
    betas, eps = tuple(o.get("betas", (0.9, 0.999))), o.get("eps", 1e-8)
    # Group order as assignGroups: the groups, then their no_decay parts.
    if kind == "muon":
        scale = (spec["model"]["width"] / 768) ** -0.5 if o.get("scale_lr_by_width", True) else 1.0
        names = ["matrix", "embedding", "unembedding", "scalar"]
        lrs = {"matrix": lr, "embedding": o.get("embedding_lr", 0.2) * scale,
               "unembedding": o.get("unembedding_lr", 0.004) * scale,
               "scalar": o.get("scalar_lr", 0.5) * scale}
    else:
        names, lrs = ["decay"], {"decay": lr}
    members = {(n, e): [] for e in (False, True) for n in names}
    for name, p in model.named_parameters():
        group = "decay"
        if kind == "muon":
            if name.startswith("blocks.") and name.endswith(".weight") and p.dim() == 2:
                group = "matrix"
            elif name == "wte.weight":
                group = "embedding"
            elif name == "lm_head.weight":
                group = "unembedding"
            else:
                group = "scalar"
        exempt = any(matches_parameter_group(name, d) for d in no_decay)
        members[(group, exempt)].append(p)
    groups = [(n, {"params": ps, "lr": lrs[n], "weight_decay": 0.0 if e else wd})
              for (n, e), ps in members.items() if ps]
    adamw = [g for n, g in groups if n != "matrix"]
    muon = [g for n, g in groups if n == "matrix"]
    optimizers = []
    if adamw:
        # torch 1.13's defaults: the single-tensor loop (foreach=None -> False).
        optimizers.append(torch.optim.AdamW(adamw, lr=lr, betas=betas, eps=eps, weight_decay=wd))
    if muon:
        optimizers.append(Muon(muon, lr=lr, momentum=o.get("momentum", 0.95),
                               nesterov=o.get("nesterov", True),
                               ns_steps=o.get("ns_steps", 5), weight_decay=wd))
    return optimizers


# --- Benchmark ----------------------------------------------------------------

def make_batch(m, train, batch, seq):
    if m["family"] == "gpt":
        tokens = torch.randint(0, m["vocab"], (batch, seq))
        return tokens, torch.randint(0, m["vocab"], (batch, seq))
    images = torch.randn(batch, m["channels"], m["image_size"], m["image_size"])
    labels = torch.randint(0, m["classes"], (batch,))
    augment = train.get("augment") or {}
    mixing = augment.get("mixup", 0) > 0 or augment.get("cutmix", 0) > 0
    if train.get("loss", "ce") == "ce" and not mixing:
        return images, labels
    # Soft targets: mixup/cutmix blend two labels; BCE reads per-class targets.
    targets = F.one_hot(labels, m["classes"]).float()
    if mixing:
        lam = 0.7
        targets = lam * targets + (1 - lam) * targets.flip(0)
    smoothing = train.get("label_smoothing", 0.0)
    return images, targets * (1 - smoothing) + smoothing / m["classes"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True, help="resolved spec (lapc SPEC --emit=spec)")
    parser.add_argument("--batch", type=int, help="default: train.micro_batch_size")
    parser.add_argument("--seq", type=int, help="gpt: default train.seq_len")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--compile", action="store_true",
                        help="time torch.compile(model) (compiled during the warm-up)")
    parser.add_argument("--optimizer", choices=("none", "adamw", "muon"), default="none",
                        help="none: time forward and backward only; adamw or muon: the full "
                             "step (zero grads, forward, backward, clipping, optimizer step)")
    args = parser.parse_args()

    with open(args.spec) as f:
        spec = yaml.safe_load(f)
    check_spec(spec)
    cuda = args.device == "cuda"
    blas = "cublas" if cuda else blas_library("torch_step")
    if cuda:
        # lap computes in fp32 without TF32: so does this baseline.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    m, train = spec["model"], spec.get("train") or {}
    kinds = spec["attention"]["kinds"]
    torch.set_num_threads(args.threads)
    torch.manual_seed(train.get("seed", 0))

    batch = args.batch or train.get("micro_batch_size") or train.get("batch_size")
    if not batch:
        refuse("no --batch and no train.micro_batch_size")
    if m["family"] == "gpt":
        seq = args.seq or train.get("seq_len") or m["context"]
        if seq > m["context"]:
            refuse(f"--seq {seq} exceeds model.context {m['context']}")
        model = GPT(m, kinds)
    else:
        model = ViT(m, kinds, train.get("loss", "ce"), train.get("label_smoothing", 0.0))
        seq = model.sequence
        if args.seq and args.seq != seq:
            refuse(f"--seq {args.seq}: this image model's sequence is {seq} tokens")
    init_parameters(model, m)
    model.train()

    parameters = sum(p.numel() for p in model.parameters())
    if parameters != spec["derived"]["parameters"]:
        print(f"torch_step: model has {parameters} parameters, the spec "
              f"{spec['derived']['parameters']}", file=sys.stderr)
        sys.exit(1)

    model.to(args.device)
    optimizers = [] if args.optimizer == "none" else make_optimizer(args.optimizer, model, spec)
    grad_clip = train.get("grad_clip", 0.0) if optimizers else 0.0

    inputs, targets = (t.to(args.device) for t in make_batch(m, train, batch, seq))
    step = torch.compile(model) if args.compile else model
    bf16 = "bf16" in (train.get("matmul_precision"), train.get("precision"))
    autocast = torch.autocast(args.device, dtype=torch.bfloat16, enabled=bf16)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    times = []
    for i in range(args.warmup + args.iters):
        if not optimizers:
            model.zero_grad(set_to_none=True)
        sync()
        start = time.perf_counter()
        if optimizers:  # lap's training loop: the whole step is timed
            for opt in optimizers:
                opt.zero_grad(set_to_none=True)
        with autocast:
            loss = step(inputs, targets)
        loss.backward()
        if optimizers:
            if grad_clip > 0:
                nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            for opt in optimizers:
                opt.step()
        sync()
        elapsed = time.perf_counter() - start
        if not math.isfinite(loss.item()):
            sys.exit(f"torch_step: loss is {loss.item()}")
        if i >= args.warmup:
            times.append(elapsed * 1e3)

    print(json.dumps({
        "framework": "pytorch",
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "compiled": args.compile,
        "threads": torch.get_num_threads(),
        "blas": blas,
        # What LAP_PEER_ISA asked for (avx2: as an AVX2-only CPU runs).
        "isa": peer_isa(),
        "allocator": allocator(),
        "model": spec["name"],
        "batch": batch,
        "seq": seq,
        "parameters": parameters,
        "optimizer": args.optimizer,
        "autocast_bf16": bf16,
        "ms_per_step": {"median": round(statistics.median(times), 3),
                        "min": round(min(times), 3), "max": round(max(times), 3)},
        # ru_maxrss is in KiB on Linux.
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "peak_device_bytes": torch.cuda.max_memory_allocated() if cuda else 0,
    }))


if __name__ == "__main__":
    main()
