"""lap.torch.attention against PyTorch's own math in float64.

Every head kind (softmax: alpha 1, beta 0; Laplacian: -1, 1; learned:
any alpha, beta; all mixed across heads), causal and not, grouped queries,
cross attention (more or fewer keys than queries), odd sizes. Values and
the gradients of q, k, v, alpha and beta against the float64 reference's
(autograd), within 2e-5 of the larger of the reference's largest magnitude
and 1 (lap computes in float32; inputs are standard normal). Run once per instruction set (LAP_CPU_ISA, by ctest)."""

import math
import os

import pytest
import torch

import lap
import lap.torch as lt
from lap import _attention

ISA = os.environ.get("LAP_CPU_ISA")


@pytest.fixture(scope="module", autouse=True)
def chosen_isa():
    """Runs on the instruction set LAP_CPU_ISA names, or the process stops
    with ctest's skip status when this CPU lacks it."""
    isa = _attention.isa("cpu")
    if ISA and isa != ISA:
        q = torch.zeros(1, 1, 1, 1)
        try:
            lt.attention(q, q, q)
        except lap.LapError as e:
            pytest.exit(f"LAP_CPU_ISA={ISA}: {e}", returncode=77)
        pytest.fail(f"LAP_CPU_ISA={ISA} but the kernels run {isa}")
    return isa


def reference(q, k, v, alpha, beta, causal, scale, window=0, documents=None,
              lengths=None):
    """The definition, in float64: O_h = alpha_h P_h V_g + beta_h V_g, P
    over the keys s <= t (causal), t - window < s (a window), of the
    query's document (documents [B, T], ids) and s < lengths[b] (padding);
    P = 0 for a query that sees no key."""
    q, k, v, alpha, beta = (x.double() for x in (q, k, v, alpha, beta))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = q @ k.transpose(-1, -2) * scale
    B, _, T, S = scores.shape
    seen = torch.ones(B, 1, T, S, dtype=torch.bool)
    if causal:
        seen &= torch.ones(T, S, dtype=torch.bool).tril()
    if window:
        seen &= ~torch.ones(T, S, dtype=torch.bool).tril(-window)
    if documents is not None:
        seen &= documents[:, None, :, None] == documents[:, None, None, :]
    if lengths is not None:
        seen &= torch.arange(S) < torch.as_tensor(lengths)[:, None, None, None]
    # Rows without keys: a softmax of zeros, then no weight at all.
    some = seen.any(-1, keepdim=True)
    scores = scores.masked_fill(~seen, -math.inf)
    p = torch.where(some, scores, torch.zeros_like(scores)).softmax(-1)
    p = p * seen
    out = alpha[None, :, None, None] * (p @ v)
    if q.shape[2] == k.shape[2]:
        out = out + beta[None, :, None, None] * v
    return out


def coefficients(kind, heads, generator):
    if kind == "attn":
        return torch.ones(heads), torch.zeros(heads)
    if kind == "laplacian":
        return -torch.ones(heads), torch.ones(heads)
    alpha = torch.randn(heads, generator=generator)
    beta = torch.randn(heads, generator=generator)
    if kind == "mixed":  # attn, laplacian, then learned ones
        alpha[0], beta[0] = 1, 0
        alpha[1], beta[1] = -1, 1
    return alpha, beta


def check(B, H, KV, T, S, D, kind, causal, window=0, documents=None,
          lengths=None):
    generator = torch.Generator().manual_seed(B * 1000 + H * 100 + T + S + D)
    q = torch.randn(B, H, T, D, generator=generator)
    k = torch.randn(B, KV, S, D, generator=generator)
    v = torch.randn(B, KV, S, D, generator=generator)
    alpha, beta = coefficients(kind, H, generator)
    inputs = [x.clone().requires_grad_() for x in (q, k, v, alpha)]
    names = ["dq", "dk", "dv", "dalpha"]
    if S == T:
        inputs.append(beta.clone().requires_grad_())
        names.append("dbeta")
    else:  # no own values to add: beta is 0 and has no gradient
        beta = torch.zeros(H)
    scale = 1 / math.sqrt(D)
    got = lt.attention(*inputs[:4], inputs[4] if S == T else beta,
                       causal=causal, window=window, documents=documents,
                       lengths=lengths)
    want = reference(*inputs[:4], inputs[4] if S == T else beta, causal,
                     scale, window, documents, lengths)
    bound = 2e-5 * max(want.abs().max().item(), 1.0)
    assert (got.double() - want).abs().max().item() <= bound

    dout = torch.randn(B, H, T, D, generator=generator)
    got_grads = torch.autograd.grad(got, inputs, dout)
    want_grads = torch.autograd.grad(want, inputs, dout.double())
    for name, g, w in zip(names, got_grads, want_grads):
        bound = 2e-5 * max(w.abs().max().item(), 1.0)
        error = (g.double() - w).abs().max().item()
        assert error <= bound, f"{name}: {error} > {bound}"


@pytest.mark.parametrize("kind", ["attn", "laplacian", "learned", "mixed"])
@pytest.mark.parametrize("causal", [False, True])
def test_every_kind(kind, causal):
    check(B=2, H=4, KV=4, T=33, S=33, D=16, kind=kind, causal=causal)


@pytest.mark.parametrize("KV", [1, 2])
@pytest.mark.parametrize("causal", [False, True])
def test_grouped_queries(KV, causal):
    check(B=2, H=4, KV=KV, T=40, S=40, D=32, kind="mixed", causal=causal)


@pytest.mark.parametrize("T,S", [(9, 70), (70, 9)])
def test_cross_attention(T, S):
    check(B=1, H=2, KV=1, T=T, S=S, D=8, kind="learned", causal=False)


@pytest.mark.parametrize("T,D", [(1, 1), (7, 3), (65, 40), (130, 64)])
def test_odd_sizes(T, D):
    check(B=3, H=3, KV=3, T=T, S=T, D=D, kind="mixed", causal=True)


@pytest.mark.parametrize("window", [1, 5, 64, 200])
def test_sliding_windows(window):
    check(B=2, H=4, KV=2, T=130, S=130, D=16, kind="mixed", causal=True,
          window=window)


@pytest.mark.parametrize("mean,window", [(3, 0), (30, 0), (30, 20)])
def test_packed_documents(mean, window):
    generator = torch.Generator().manual_seed(mean + window)
    lengths = torch.randint(1, 2 * mean + 1, (2, 130), generator=generator)
    # Each row's document ids, from random lengths (any integers do).
    documents = torch.stack([
        torch.repeat_interleave(torch.arange(130) * 7, row)[:130]
        for row in lengths])
    check(B=2, H=4, KV=2, T=130, S=130, D=16, kind="mixed", causal=True,
          window=window, documents=documents)


@pytest.mark.parametrize("causal,window", [(False, 0), (True, 0), (True, 5)])
def test_padded_keys(causal, window):
    # Every key, some, none: under the window, queries past a sequence's
    # keys see none either, output beta V and pass no gradient through P.
    check(B=3, H=4, KV=2, T=130, S=130, D=16, kind="mixed", causal=causal,
          window=window, lengths=torch.tensor([130, 66, 0]))


def test_padded_keys_of_cross_attention():
    check(B=2, H=2, KV=1, T=9, S=70, D=8, kind="learned", causal=False,
          lengths=[70, 13])


def test_alpha_and_beta_may_be_numbers_or_fixed():
    q = torch.randn(1, 2, 5, 4, requires_grad=True)
    out = lt.attention(q, q, q, -1.0, 1.0)
    want = reference(q, q, q, -torch.ones(2), torch.ones(2), False, 0.5)
    assert (out.double() - want).abs().max().item() < 1e-5
    out.sum().backward()  # no gradient asked of the coefficients
    assert q.grad is not None


def test_the_output_is_a_view_of_token_major_memory():
    q = torch.randn(2, 4, 6, 8)
    out = lt.attention(q, q, q)
    assert out.shape == (2, 4, 6, 8)
    assert out.transpose(1, 2).is_contiguous()


@pytest.mark.parametrize("bad,message", [
    (lambda q, k: lt.attention(q, k[:, :, :5], k[:, :, :5], -1.0, 1.0),
     "needs as many keys as queries"),
    (lambda q, k: lt.attention(q, k[:, :, :5], k[:, :, :5], causal=True),
     "causal attention needs as many keys as queries"),
    (lambda q, k: lt.attention(q, k[:, :3], k[:, :3]),
     "cannot share 3 key/value heads"),
    (lambda q, k: lt.attention(q.double(), k, k), "computes in float32"),
    (lambda q, k: lt.attention(q[0], k, k), "4-dimensional"),
    (lambda q, k: lt.attention(q, k, k, window=4),
     "window is 4; it must be 0 .none., or positive with causal"),
    (lambda q, k: lt.attention(q, k, k, causal=True, window=-1),
     "window: -1; expected 0"),
    (lambda q, k: lt.attention(q, k, k,
                               documents=torch.zeros(1, 6, dtype=int)),
     "document starts need causal attention"),
    (lambda q, k: lt.attention(q, k, k, causal=True,
                               documents=torch.zeros(1, 5)),
     "expected integer document ids .1, 6."),
    (lambda q, k: lt.attention(q, k, k, lengths=torch.tensor([6, 6])),
     "expected integer key counts .1."),
    (lambda q, k: lt.attention(q, k, k, lengths=[7]),
     "key length 7 of sequence 0 is not in 0..6"),
    (lambda q, k: lt.attention(q, k, k[..., :4]), "differ"),
    (lambda q, k: lt.attention(q, k, k, torch.ones(3)), "alpha: shape [3]"),
    (lambda q, k: lt.attention(q, k[:, :, :5], k[:, :, :5],
                               beta=torch.zeros(4, requires_grad=True)),
     "a learned beta needs as many keys as queries"),
])
def test_bad_input_is_an_error(bad, message):
    q, k = torch.randn(1, 4, 6, 8), torch.randn(1, 4, 6, 8)
    with pytest.raises(lap.LapError, match=message.replace("[", r"\[")):
        bad(q, k)
