"""lap.compile and lap.load: a library's calls on NumPy arrays and torch
tensors, checked against each other and against what the library's
outputs imply; and every refusal an exception with lap's message."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import lap
from conftest import GPT2, NANOCHAT


def lm_batch(model, rows=3, seq=12, seed=0):
    rng = np.random.default_rng(seed)
    vocab = model.manifest["limits"]["vocab"]
    tokens = rng.integers(0, vocab, (rows, seq), dtype=np.int32)
    targets = rng.integers(0, vocab, (rows, seq), dtype=np.int32)
    return {"tokens": tokens, "targets": targets}


def image_batch(model, rows=4, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((rows, 1, 28, 28), dtype=np.float32)
    targets = np.eye(10, dtype=np.float32)[rng.integers(0, 10, rows)]
    return {"images": images, "targets": targets}


def cross_entropy(logits, targets):
    """Mean cross-entropy of logits [..., classes] against integer targets,
    in float64."""
    logits = logits.astype(np.float64).reshape(-1, logits.shape[-1])
    targets = targets.reshape(-1)
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(targets)), targets].mean()


def test_the_manifest_and_parameter_table(models):
    model = models["nanochat"]
    assert model.family == "gpt" and model.device == "cpu"
    assert (model.max_batch, model.max_seq) == (4, 16)
    assert sum(p.elements for p in model.parameters) <= \
        model.parameter_elements
    assert model.parameters[0].name == "wte.weight"
    assert model.parameters[0].shape == (64, 32)
    assert model.kernel_isa in model.manifest["target"]["kernel_features"] \
        or model.kernel_isa in ("avx512", "avx2", "generic")


def test_initial_parameters_depend_on_the_seed_alone(models):
    model = models["gpt2"]
    a, b = model.init_params(7), model.init_params(7)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, model.init_params(8))
    into = torch.empty(model.parameter_elements)
    model.init_params(7, out=into)
    assert np.array_equal(into.numpy(), a)


def test_forward_loss_is_the_cross_entropy_of_its_logits(models):
    model = models["nanochat"]
    params = model.init_params(1)
    batch = lm_batch(model)
    loss, logits = model.forward(params, batch)
    assert logits.shape == (3, 12, 64)
    assert loss == pytest.approx(cross_entropy(logits, batch["targets"]),
                                 rel=1e-5)


def test_numpy_and_torch_give_the_same_bits(models):
    model = models["gpt2"]
    params = model.init_params(2)
    batch = lm_batch(model)
    loss, grads = model.train_step(params, batch, seed=5)
    as_torch = {k: torch.from_numpy(v) for k, v in batch.items()}
    torch_grads = torch.empty(model.parameter_elements)
    torch_loss, _ = model.train_step(torch.from_numpy(params), as_torch,
                                     seed=5, grads=torch_grads)
    assert torch_loss == loss
    assert np.array_equal(torch_grads.numpy(), grads)
    # Dropout (0.1 here) draws from the seed: another seed, another loss.
    assert model.train_step(params, batch, seed=6)[0] != loss


def test_gradients_match_finite_differences_of_the_loss(models):
    """The derivative of the forward loss along a random unit direction,
    by central differences of the float32 loss (step 1e-2): within 1% of
    the gradient's projection (a model without dropout)."""
    model = models["nanochat"]
    params = model.init_params(3)
    batch = lm_batch(model, seed=4)
    loss, grads = model.train_step(params, batch)
    assert loss == pytest.approx(model.forward(params, batch)[0], rel=1e-6)
    direction = np.random.default_rng(5).standard_normal(params.shape)
    direction = (direction / np.linalg.norm(direction)).astype(np.float32)
    eps = 1e-2
    up = model.forward(params + eps * direction, batch)[0]
    down = model.forward(params - eps * direction, batch)[0]
    numeric = (up - down) / (2 * eps)
    analytic = float(np.dot(grads.astype(np.float64), direction))
    assert numeric == pytest.approx(analytic, rel=1e-2)


def test_decoding_gives_the_forward_logits(models):
    model = models["nanochat"]
    params = model.init_params(4)
    batch = lm_batch(model, rows=2, seq=10)
    _, logits = model.forward(params, batch)
    cache = model.new_cache(2)
    tokens = batch["tokens"]
    prompt = model.decode(params, np.ascontiguousarray(tokens[:, :7]), 0,
                          cache)
    step = model.decode(params, np.ascontiguousarray(tokens[:, 7:8]), 7,
                        cache)
    scale = np.abs(logits).max()
    assert np.abs(prompt - logits[:, :7]).max() <= 1e-5 * scale
    assert np.abs(step[:, 0] - logits[:, 7]).max() <= 1e-5 * scale


def test_features_and_embeddings(models):
    gpt, vit = models["gpt2"], models["vit"]
    features = gpt.features(gpt.init_params(1), lm_batch(gpt, seq=9))
    assert features.shape == (3, 3, 9, 32)  # embedding + 2 blocks
    vit_params = vit.init_params(1)
    batch = image_batch(vit)
    # 16 patches and the class token.
    assert vit.features(vit_params, batch).shape == (3, 4, 17, 32)
    assert vit.embed(vit_params, batch).shape == (4, 32)
    loss, logits = vit.forward(vit_params, batch)
    assert logits.shape == (4, 10) and np.isfinite(loss)


def test_parameters_by_name_round_trip(models):
    model = models["gpt2"]
    params = model.init_params(9)
    tensors = model.tensors(params)
    assert tensors["wte.weight"].shape == (64, 32)
    tensors["wte.weight"][0, 0] = 42.0  # a view: writes through
    assert params[model.parameters[0].offset] == 42.0
    copied = {k: v.copy() for k, v in tensors.items()}
    assert np.array_equal(model.flat(copied), params)
    with pytest.raises(lap.LapError, match="'wpe.weight' missing"):
        model.flat({k: v for k, v in copied.items() if k != "wpe.weight"})
    with pytest.raises(lap.LapError, match=r"shape \[2, 2\]"):
        model.flat({**copied, "wte.weight": np.zeros((2, 2), np.float32)})


@pytest.mark.parametrize("change,message", [
    (lambda b: {**b, "tokens": b["tokens"].astype(np.int64)},
     "dtype int64; lap reads int32"),
    (lambda b: {**b, "targets": b["targets"][:, :5].copy()},
     r"shape \[3, 5\]; expected \[3, 12\]"),
    (lambda b: {**b, "tokens": np.asfortranarray(b["tokens"])},
     "not contiguous"),
    (lambda b: {"tokens": b["tokens"]}, r"\['targets'\] missing"),
    (lambda b: {**b, "labels": b["tokens"]}, "no tensor named"),
    (lambda b: {k: np.zeros((5, 12), np.int32) for k in b},
     "batch size 5"),
    (lambda b: {**b, "tokens": np.full((3, 12), 64, np.int32)},
     "outside the vocabulary"),
])
def test_bad_batches_are_errors(models, change, message):
    model = models["nanochat"]
    params = model.init_params(1)
    with pytest.raises(lap.LapError, match=message):
        model.forward(params, change(lm_batch(model)))


def test_wrong_parameters_are_errors(models):
    model = models["gpt2"]
    with pytest.raises(lap.LapError, match="params: shape"):
        model.forward(np.zeros(10, np.float32), lm_batch(model))
    with pytest.raises(lap.LapError, match="read-only"):
        params = model.init_params(1)
        params.flags.writeable = False
        model.init_params(1, out=params)


def test_compile_takes_a_path_or_a_string(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(GPT2)
    from_path = lap.load(lap.compile(path, tmp_path / "a.so"))
    from_string = lap.load(lap.compile(GPT2, tmp_path / "b.so"))
    assert from_path.manifest["model_hash"] == \
        from_string.manifest["model_hash"]
    # Every flag does something: here the compiled maxima.
    small = lap.load(lap.compile(GPT2, tmp_path / "c.so", max_batch=2,
                                 max_seq=8))
    assert (small.max_batch, small.max_seq) == (2, 8)


def test_a_dict_spec_compiles():
    spec = {"name": "py_dict", "model": {
        "family": "gpt", "layers": 1, "width": 16, "heads": 2, "vocab": 32,
        "context": 8}, "train": {"regime": "lm", "batch_size": 2,
                                 "steps": 1}}
    model = lap.load(lap.compile(spec))
    assert model.name == "py_dict" and model.max_seq == 8


def test_a_padded_model_takes_each_sequences_length(tmp_path):
    spec = {"name": "py_padded", "model": {
        "family": "gpt", "layers": 1, "width": 16, "heads": 2, "vocab": 32,
        "context": 8}, "train": {"regime": "lm", "batch_size": 2,
                                 "steps": 1, "data": {
                                     "format": "shards", "train": "unused",
                                     "packing": "padded"}}}
    model = lap.load(lap.compile(spec, tmp_path / "padded.so"))
    assert [t["name"] for t in model.manifest["batch"]] == \
        ["tokens", "targets", "lengths"]
    params = model.init_params(seed=1)
    batch = lm_batch(model, rows=2, seq=8)
    batch["lengths"] = np.array([8, 3], dtype=np.int32)
    loss, logits = model.forward(params, batch)
    # What lies past a length changes nothing; the loss counts the rest.
    batch["tokens"][1, 3:] = 0
    batch["targets"][1, 3:] = 5
    again, logits_again = model.forward(params, batch)
    assert loss == again
    assert np.array_equal(logits[1, :3], logits_again[1, :3])
    counted = np.concatenate([batch["targets"][0], batch["targets"][1, :3]])
    rows = np.concatenate([logits[0], logits[1, :3]])
    assert abs(cross_entropy(rows, counted) - loss) < 1e-5
    batch["lengths"] = np.array([8, 9], dtype=np.int32)
    with pytest.raises(lap.LapError, match="'lengths' holds 9 at .1., "
                                           "outside the sequence 0..8"):
        model.forward(params, batch)


def test_spec_errors_are_located(tmp_path):
    bad = NANOCHAT.replace("  width: 32\n", "  widht: 32\n")
    with pytest.raises(lap.SpecError) as caught:
        lap.compile(bad, tmp_path / "bad.so")
    error = caught.value
    unknown = [e for e in error.errors if "widht" in e[3]]
    assert unknown and unknown[0][:3] == ("<string>", 5, 3)
    assert "did you mean 'width'?" in unknown[0][3]
    assert "^" in error.text  # the line and a caret
    assert not (tmp_path / "bad.so").exists()
    path = tmp_path / "bad.yaml"
    path.write_text(bad)
    with pytest.raises(lap.SpecError) as caught:
        lap.compile(path, tmp_path / "bad.so")
    assert caught.value.file == str(path)


def test_compiler_refusals_are_errors(tmp_path):
    with pytest.raises(lap.LapError, match="no such spec file"):
        lap.compile(tmp_path / "missing.yaml")
    with pytest.raises(lap.LapError, match="Unknown command line argument"):
        lap.compile(GPT2, tmp_path / "x.so", max_batches=2)
    with pytest.raises(TypeError):
        lap.compile(42)


def test_a_library_of_another_abi_is_refused(tmp_path):
    source = tmp_path / "old.c"
    source.write_text("unsigned lap_model_abi_version(void) { return 6; }\n"
                      "const char *lap_model_manifest(void) { return \"{}\"; }\n")
    library = tmp_path / "old.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library),
                    str(source)], check=True)
    with pytest.raises(lap.LapError, match="ABI"):
        lap.load(library)
    with pytest.raises(lap.LapError, match="no such model library"):
        lap.load(tmp_path / "none.so")


def test_a_library_for_another_cpu_is_refused_before_it_runs(tmp_path):
    """Code for a CPU with AMX (Granite Rapids), which no CPU of these
    machines has: lapc-run's check names the missing features, and the
    library is never loaded."""
    path = lap.compile(GPT2, tmp_path / "amx.so", cpu="graniterapids")
    with pytest.raises(lap.LapError, match="amx"):
        lap.load(path)


def test_an_unknown_instruction_set_is_an_error_not_a_crash(models, tmp_path):
    script = tmp_path / "isa.py"
    script.write_text(
        "import numpy as np, lap\n"
        f"m = lap.load({str(models['gpt2'].path)!r})\n"
        "try:\n"
        "    m.init_params(1)\n"
        "    m.forward(m.init_params(1), {'tokens': np.zeros((1, 4), np.int32),"
        " 'targets': np.zeros((1, 4), np.int32)})\n"
        "except lap.LapError as e:\n"
        "    print('LapError:', e)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True,
                          text=True, env={**os.environ,
                                          "LAP_CPU_ISA": "avx1024"})
    assert done.returncode == 0, done.stderr
    assert "LapError:" in done.stdout and "avx1024" in done.stdout
