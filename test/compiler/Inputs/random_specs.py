#!/usr/bin/env python3
"""Property test: random valid specs over the whole option space compile
through the front end and the production pipeline (lapc --emit=lowered)
to verified IR. Settings the compiler does not build yet must be refused
with exit code 2 and a located error; anything else is a failure.

    random_specs.py LAPC COUNT SEED SCRATCH_DIR
"""
import os
import random
import subprocess
import sys

UNSUPPORTED = ("attentive pooling is not compiled yet", "a dino model with a classifier")


def random_spec(rng):
    family = rng.choice(["gpt", "vit", "dino"])
    heads = rng.choice([1, 2, 3, 4, 6])
    kv_heads = rng.choice([d for d in range(1, heads + 1) if heads % d == 0])
    head_dim = rng.choice([4, 8, 16])
    layers = rng.randint(1, 3)
    lines = ["model:", f"  family: {family}", f"  layers: {layers}",
             f"  width: {heads * head_dim}", f"  heads: {heads}", f"  kv_heads: {kv_heads}",
             f"  mlp_ratio: {rng.choice([1, 2, 4])}",
             f"  activation: {rng.choice(['gelu_tanh', 'gelu', 'relu2'])}",
             f"  qk_norm: {rng.choice(['true', 'false'])}",
             f"  bias: {rng.choice(['true', 'false'])}",
             f"  final_norm: {rng.choice(['true', 'false'])}",
             f"  embedding_norm: {rng.choice(['true', 'false'])}",
             f"  dropout: {rng.choice([0, 0, 0.1])}"]
    norm = rng.choice(["layernorm", "rmsnorm"])
    lines += ["  norm:", f"    type: {norm}", f"    weight: {rng.choice(['true', 'false'])}"]
    if norm == "layernorm":
        lines.append(f"    bias: {rng.choice(['true', 'false'])}")
    if family == "gpt":
        lines += [f"  vocab: {rng.choice([17, 64, 100])}", "  context: 16",
                  f"  tied_embeddings: {rng.choice(['true', 'false'])}",
                  f"  logit_softcap: {rng.choice([0, 15])}",
                  f"  positions: {{type: {rng.choice(['learned', 'rope', 'none'])}}}"]
    else:
        cls = rng.choice(["true", "false"])
        pool = rng.choice(["mean", "attentive"] + (["cls"] * 3 if cls == "true" else []))
        lines += ["  image_size: 8", f"  patch: {rng.choice([2, 4])}",
                  f"  channels: {rng.choice([1, 3])}",
                  f"  cls_token: {cls}", f"  registers: {rng.choice([0, 0, 2])}",
                  f"  layer_scale: {rng.choice([0, 0.1])}",
                  f"  drop_path: {rng.choice([0, 0.2])}", f"  pool: {pool}",
                  f"  positions: {{type: {rng.choice(['learned', 'none'])}, "
                  f"patches_only: {rng.choice(['true', 'false'])}}}"]
        if family == "vit":
            lines.append(f"  classes: {rng.choice([3, 10])}")
        else:
            lines += [f"  classes: {rng.choice([0, 0, 0, 5])}",
                      f"  dino_head: {{layers: {rng.randint(1, 3)}, hidden: 16, "
                      f"bottleneck: 8, prototypes: 32}}"]
    if rng.random() < 0.5:
        kinds = [rng.choice(["attn", "laplacian"]) for _ in range(heads)]
        lines += ["attention:", f"  kinds: [{', '.join(kinds)}]"]
    else:
        lines += ["attention:", f"  laplacian_heads: {rng.randint(0, heads)}"]
    return "\n".join(lines) + "\n"


def main():
    lapc, count, seed, scratch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    os.makedirs(scratch, exist_ok=True)
    rng = random.Random(seed)
    compiled = refused = 0
    for i in range(count):
        path = os.path.join(scratch, f"spec{i}.yaml")
        with open(path, "w") as f:
            f.write(random_spec(rng))
        run = subprocess.run([lapc, path, "--emit=lowered", "-o", os.devnull],
                             capture_output=True, text=True)
        if run.returncode == 0:
            compiled += 1
        elif run.returncode == 2 and any(u in run.stderr for u in UNSUPPORTED):
            refused += 1
        else:
            print(f"FAIL {path} (exit {run.returncode}):\n{open(path).read()}{run.stderr}")
            sys.exit(1)
    print(f"compiled {compiled}, refused as not yet supported {refused}")


if __name__ == "__main__":
    main()
