"""lap.torch.Module: a compiled model trained by a torch optimizer in an
ordinary PyTorch loop computes, bit for bit, what the same loop written
on the library's calls computes."""

import numpy as np
import pytest
import torch

import lap
import lap.torch as lt
from test_model import image_batch, lm_batch


def test_parameters_are_named_views_of_the_buffer_lap_reads(models):
    model = models["gpt2"]
    module = lt.Module(model, seed=3)
    names = [name for name, _ in module.named_parameters()]
    assert names == [p.name for p in model.parameters]
    assert np.array_equal(module.flat.numpy(), model.init_params(3))
    with torch.no_grad():
        module.get_parameter("wte.weight")[0, 0] = 7.0
    assert module.flat[model.parameters[0].offset].item() == 7.0
    assert set(module.state_dict()) == set(names)


def test_backward_hands_autograd_the_librarys_gradients(models):
    model = models["gpt2"]
    module = lt.Module(model, seed=1)
    batch = lm_batch(model)
    loss = module(batch)
    want_loss, want_grads = model.train_step(model.init_params(1), batch,
                                             seed=1)
    assert loss.item() == want_loss
    (2 * loss).backward()
    for p, info in zip(module.parameters(), model.parameters):
        want = want_grads[info.offset:info.offset + info.elements]
        assert np.array_equal(p.grad.numpy().reshape(-1), 2 * want), info.name


def test_a_torch_optimizer_trains_it_as_the_librarys_calls_would(models):
    model = models["vit"]
    module = lt.Module(model, seed=2)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)
    params = torch.from_numpy(model.init_params(2))
    velocity = None
    losses = []
    for step in range(4):
        batch = image_batch(model)  # one batch, learned by heart
        optimizer.zero_grad()
        loss = module(*(torch.from_numpy(batch[k])
                        for k in ("images", "targets")))
        loss.backward()
        optimizer.step()
        # The same step on the library's calls, with torch.optim.SGD's
        # arithmetic on one flat tensor.
        want, grads = model.train_step(params, batch, seed=2 + step)
        grads = torch.from_numpy(grads)
        if velocity is None:
            velocity = grads.clone()
        else:
            velocity.mul_(0.9).add_(grads, alpha=1)
        params.add_(velocity, alpha=-0.05)
        assert loss.item() == want
        losses.append(want)
    assert torch.equal(module.flat, params)
    assert losses[-1] < losses[0]


def test_eval_mode_runs_the_evaluation_forward(models):
    model = models["gpt2"]
    module = lt.Module(model, seed=4).eval()
    batch = lm_batch(model)
    loss = module(batch)
    assert loss.grad_fn is None
    assert loss.item() == model.forward(model.init_params(4), batch)[0]
    assert module.features(batch).shape == (3, 3, 12, 32)


def test_moved_parameters_are_an_error(models):
    module = lt.Module(models["gpt2"]).double()
    with pytest.raises(lap.LapError, match="no longer lives in the buffer"):
        module(lm_batch(models["gpt2"]))


def test_under_lora_only_the_adapters_and_named_modules_learn(tmp_path):
    from conftest import VIT
    spec = VIT.replace("  loss: ce\n", "  loss: ce\n  lora: {rank: 2, alpha: 4, "
                       "targets: [qkv, fc1], train: [head]}\n")
    model = lap.load(lap.compile(spec, tmp_path / "lora.so"))
    module = lt.Module(model, seed=2)
    learning = {n for n, p in module.named_parameters() if p.requires_grad}
    assert learning == {p.name for p in model.parameters if p.trainable}
    assert {"head.weight", "blocks.1.mlp.fc1.lora_B.weight"} <= learning
    assert "blocks.0.attn.qkv.weight" not in learning
    batch = image_batch(model)
    loss = module(*(torch.from_numpy(batch[k])
                    for k in ("images", "targets")))
    loss.backward()
    _, grads = model.train_step(model.init_params(2), batch, seed=2)
    assert grads.shape == (model.gradient_elements,)
    for info in model.parameters:
        p = module.get_parameter(info.name)
        if not info.trainable:
            assert p.grad is None, info.name
            continue
        first = info.offset - model.gradient_offset
        want = grads[first:first + info.elements]
        assert np.array_equal(p.grad.numpy().reshape(-1), want), info.name
