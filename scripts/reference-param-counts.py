#!/usr/bin/env python3
"""Counts the parameters of the shipped paper models as PyTorch modules built
the way their reference code builds them (nanochat's GPT, timm's DeiT-3 ViT
with QK-norm, DINO's vit_small + DINOHead), independently of lap's own
arithmetic, and compares with `lapc --emit=spec`.

    /usr/bin/python3 scripts/reference-param-counts.py build/bin/lapc

Needs Debian's python3-torch; not part of the test suite (the counts it
confirms are pinned in test/unit/dsl).
"""
import re
import subprocess
import sys

import torch
import torch.nn as nn
from torch.nn.utils import weight_norm


def nanochat_d20():
    d, layers, vocab = 1280, 20, 65536
    def block():
        attn = nn.ModuleDict(dict(c_q=nn.Linear(d, d, bias=False), c_k=nn.Linear(d, d, bias=False),
                                  c_v=nn.Linear(d, d, bias=False), c_proj=nn.Linear(d, d, bias=False)))
        mlp = nn.ModuleDict(dict(c_fc=nn.Linear(d, 4 * d, bias=False), c_proj=nn.Linear(4 * d, d, bias=False)))
        return nn.ModuleDict(dict(attn=attn, mlp=mlp))  # norms are parameter-free
    return nn.ModuleDict(dict(wte=nn.Embedding(vocab, d), h=nn.ModuleList(block() for _ in range(layers)),
                              lm_head=nn.Linear(d, vocab, bias=False)))


class ViT(nn.Module):
    def __init__(self, img, patch, d, layers, heads, classes, qk_norm, layer_scale, pos_on_cls):
        super().__init__()
        n = (img // patch) ** 2
        self.patch_embed = nn.Conv2d(3, d, patch, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embed = nn.Parameter(torch.zeros(1, n + (1 if pos_on_cls else 0), d))
        hd = d // heads
        def block():
            m = nn.ModuleDict(dict(norm1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d),
                                   norm2=nn.LayerNorm(d), fc1=nn.Linear(d, 4 * d), fc2=nn.Linear(4 * d, d)))
            if qk_norm:
                m['q_norm'], m['k_norm'] = nn.LayerNorm(hd), nn.LayerNorm(hd)
            if layer_scale:
                m['ls1'], m['ls2'] = nn.Linear(1, d, bias=False), nn.Linear(1, d, bias=False)  # d gammas each
            return m
        self.blocks = nn.ModuleList(block() for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes) if classes else nn.Identity()


def dino_head(d, prototypes):
    mlp = nn.Sequential(nn.Linear(d, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(), nn.Linear(2048, 256))
    return nn.ModuleDict(dict(mlp=mlp, last_layer=weight_norm(nn.Linear(256, prototypes, bias=False))))


def count(module):
    return sum(p.numel() for p in module.parameters())


def lapc_count(lapc, spec):
    text = subprocess.run([lapc, spec, "--emit=spec"], check=True, capture_output=True, text=True).stdout
    return int(re.search(r"^  parameters: (\d+)", text, re.M).group(1))


def main():
    lapc = sys.argv[1] if len(sys.argv) > 1 else "build/bin/lapc"
    vit_b = ViT(192, 16, 768, 12, 12, 1000, qk_norm=True, layer_scale=True, pos_on_cls=False)
    vit_s = ViT(224, 16, 384, 12, 6, 0, qk_norm=False, layer_scale=False, pos_on_cls=True)
    references = {
        "gpt2_561m_0L": count(nanochat_d20()),
        "vit_b_deit3_0L": count(vit_b),
        "vit_s_dino_0L": count(vit_s) + count(dino_head(384, 65536)),
    }
    ok = True
    for name, expected in references.items():
        for variant in {"gpt2_561m_0L": ["0L", "5L", "10L"], "vit_b_deit3_0L": ["0L", "12L"],
                        "vit_s_dino_0L": ["0L", "5L"]}[name]:
            spec = f"specs/{name.rsplit('_', 1)[0]}_{variant}.yaml"
            got = lapc_count(lapc, spec)
            print(f"{spec:32s} reference {expected:>12,}  lapc {got:>12,}  {'ok' if got == expected else 'MISMATCH'}")
            ok &= got == expected
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
