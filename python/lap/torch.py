"""lap in PyTorch: lap's attention for every head kind as a differentiable
function, and a compiled model as a torch.nn.Module."""

import math

import torch

from lap import _attention
from lap.errors import LapError
from lap.model import Model, load

__all__ = ["attention", "Module"]


def _stream(device):
    if device.type == "cuda":
        return torch.cuda.current_stream(device).cuda_stream
    return None


def _shape(q, k, causal, window, scale):
    B, H, T, D = q.shape
    return _attention.Shape(B, T, k.shape[2], H, k.shape[1], D, scale,
                            1 if causal else 0, window)


class _Attention(torch.autograd.Function):
    """The kernels read [batch, tokens, heads, head_dim]: SDPA's layout
    transposed. Saved for backward: the transposed inputs, O and lse."""

    @staticmethod
    def forward(ctx, q, k, v, coefficients, starts, lengths, causal, window,
                scale):
        qt, kt, vt = (x.transpose(1, 2).contiguous() for x in (q, k, v))
        o = torch.empty_like(qt)
        B, H, T, _ = q.shape
        lse = torch.empty((B, H, T), dtype=torch.float32, device=q.device)
        shape = _shape(q, k, causal, window, scale)
        _attention.call(q.device.type, "forward", shape, o.data_ptr(),
                        lse.data_ptr(), qt.data_ptr(), kt.data_ptr(),
                        vt.data_ptr(), coefficients.data_ptr(),
                        _pointer(starts), _pointer(lengths), _stream(q.device))
        ctx.save_for_backward(qt, kt, vt, o, lse, coefficients, starts,
                              lengths)
        ctx.shape = shape
        return o.transpose(1, 2)

    @staticmethod
    def backward(ctx, dout):
        qt, kt, vt, o, lse, coefficients, starts, lengths = ctx.saved_tensors
        dout = dout.transpose(1, 2).contiguous()
        dq, dk, dv = (torch.empty_like(x) for x in (qt, kt, vt))
        dcoefficients = (torch.empty_like(coefficients)
                         if ctx.needs_input_grad[3] else None)
        _attention.call(qt.device.type, "backward", ctx.shape, dq.data_ptr(),
                        dk.data_ptr(), dv.data_ptr(),
                        dcoefficients.data_ptr() if dcoefficients is not None
                        else None, dout.data_ptr(), qt.data_ptr(),
                        kt.data_ptr(), vt.data_ptr(), o.data_ptr(),
                        lse.data_ptr(), coefficients.data_ptr(),
                        _pointer(starts), _pointer(lengths),
                        _stream(qt.device))
        return (dq.transpose(1, 2), dk.transpose(1, 2), dv.transpose(1, 2),
                dcoefficients, None, None, None, None, None)


def _pointer(tensor):
    return tensor.data_ptr() if tensor is not None else None


def _document_starts(documents, B, T, like):
    """[B, T] int32: where each query's run of equal document ids starts,
    the kernels' document_starts."""
    documents = torch.as_tensor(documents, device=like.device)
    if tuple(documents.shape) != (B, T) or documents.is_floating_point() \
            or documents.is_complex():
        raise LapError(f"documents: {documents.dtype} of shape "
                       f"{list(documents.shape)}; expected integer document "
                       f"ids [{B}, {T}] (batch, queries)")
    new = torch.ones((B, T), dtype=torch.bool, device=like.device)
    new[:, 1:] = documents[:, 1:] != documents[:, :-1]
    positions = torch.arange(T, device=like.device).expand(B, T)
    return torch.where(new, positions, torch.zeros_like(positions)).cummax(
        dim=1).values.to(torch.int32).contiguous()


def _key_lengths(lengths, B, like):
    """[B] int32: each sequence's keys that are not padding."""
    lengths = torch.as_tensor(lengths, device=like.device)
    if tuple(lengths.shape) != (B,) or lengths.is_floating_point() \
            or lengths.is_complex():
        raise LapError(f"lengths: {lengths.dtype} of shape "
                       f"{list(lengths.shape)}; expected integer key counts "
                       f"[{B}] (one per sequence)")
    return lengths.to(torch.int32).contiguous()


def _per_head(x, heads, name, like):
    x = torch.as_tensor(x, dtype=torch.float32, device=like.device)
    if x.dim() == 0:
        x = x.expand(heads)
    if tuple(x.shape) != (heads,):
        raise LapError(f"{name}: shape {list(x.shape)}; expected a number or "
                       f"[{heads}] (one per query head)")
    return x


def attention(q, k, v, alpha=1.0, beta=0.0, causal=False, window=0,
              documents=None, lengths=None, scale=None):
    """O_h = alpha[h] * softmax(scale * Q_h K_g^T) V_g + beta[h] * V_g on
    lap's fused kernels, differentiable in q, k, v, alpha and beta.

    In PyTorch SDPA's layout: q [B, H, T, D]; k, v [B, KV, S, D], KV
    dividing H (query head h reads key/value head h // (H // KV)); alpha
    and beta numbers or [H] tensors. alpha 1, beta 0 is softmax attention;
    alpha -1, beta 1 a Laplacian head, (I - P) V. causal lets query t see
    keys s <= t and, like any nonzero beta, needs S == T; a window w > 0
    (causal only) narrows that to t - w < s <= t, P normalised over those
    keys, at a cost that falls with w; `documents` [B, T] (integer ids,
    causal only), sequences packed from documents: each query sees only the
    keys of its own run of equal ids; `lengths` [B] (integers in 0 .. S),
    variable-length sequences padded to S: sequence b's keys are its first
    lengths[b], and no query sees the others (a query left with no key
    outputs beta V and passes no gradient through P). scale defaults to
    1 / sqrt(D). float32 on the CPU (any tensor) or a CUDA GPU; returns
    [B, H, T, D], a transposed view of [B, T, H, D] memory (so that
    .transpose(1, 2).reshape(B, T, H * D) copies nothing)."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor) or x.dim() != 4:
            raise LapError(f"{name}: a 4-dimensional tensor [batch, heads, "
                           "tokens, head_dim]")
        if x.dtype != torch.float32:
            raise LapError(f"{name}: dtype {x.dtype}; lap's attention "
                           "computes in float32 (.float() converts)")
        if x.device != q.device:
            raise LapError(f"{name}: on {x.device}, q on {q.device}")
    B, H, T, D = q.shape
    if k.shape != v.shape:
        raise LapError(f"k {list(k.shape)} and v {list(v.shape)} differ")
    if k.shape[0] != B or k.shape[3] != D:
        raise LapError(f"k: shape {list(k.shape)}; expected [{B}, kv_heads, "
                       f"keys, {D}] for q {list(q.shape)}")
    alpha = _per_head(alpha, H, "alpha", q)
    beta = _per_head(beta, H, "beta", q)
    if beta.requires_grad and k.shape[2] != T:
        raise LapError(f"beta: {k.shape[2]} keys for {T} queries add no "
                       "own values, so beta stays 0: a learned beta needs "
                       "as many keys as queries")
    if scale is None:
        scale = 1.0 / math.sqrt(D)
    coefficients = torch.stack([alpha, beta]).contiguous()
    if isinstance(window, bool) or not isinstance(window, int) or \
            window < 0:
        raise LapError(f"window: {window!r}; expected 0 (none) or a "
                       "positive number of keys")
    starts = None if documents is None else _document_starts(
        documents, B, T, q)
    lengths = None if lengths is None else _key_lengths(lengths, B, q)
    return _Attention.apply(q, k, v, coefficients, starts, lengths,
                            bool(causal), window, float(scale))


class _Loss(torch.autograd.Function):
    """A lap training step as autograd sees it: the loss, with lap's
    gradients (computed in the same call) as its backward."""

    @staticmethod
    def forward(ctx, module, batch, seed, *params):
        module._check_parameters()
        grads = module._flat.new_empty(module.model.gradient_elements)
        loss, _ = module.model.train_step(module._flat, batch, seed, grads)
        ctx.grads = grads
        ctx.views = module._views
        ctx.gradient_offset = module.model.gradient_offset
        return torch.tensor(loss, dtype=torch.float32)

    @staticmethod
    def backward(ctx, grad_loss):
        grads = ctx.grads if bool(grad_loss == 1) else ctx.grads * grad_loss
        first = ctx.gradient_offset
        return (None, None, None,
                *(grads[o - first:o - first + n].view(shape)
                  if o >= first else None for o, n, shape in ctx.views))


class Module(torch.nn.Module):
    """A lap model as a torch.nn.Module.

    Its parameters are torch tensors with lap's names (named_parameters(),
    state_dict()), views of one flat buffer that the library reads in
    place, so a torch optimizer's updates are what the next step computes
    with. forward(*batch) returns the mean loss: in training mode lap's
    training step (dropout drawn from a seed that advances every call),
    whose backward hands autograd lap's gradients; in eval mode the
    library's evaluation forward, not differentiable. model: a lap.Model
    or a library's path; seed: the parameters' initialisation."""

    def __init__(self, model, seed=0):
        super().__init__()
        self.model = model if isinstance(model, Model) else load(model)
        device = "cuda" if self.model.device == "cuda" else "cpu"
        self._flat = torch.zeros(self.model.parameter_elements,
                                 dtype=torch.float32, device=device)
        self.model.init_params(seed, out=self._flat)
        self._views = []
        for p in self.model.parameters:
            view = self._flat[p.offset:p.offset + p.elements].view(p.shape)
            *path, leaf = p.name.split(".")
            owner = self
            for part in path:
                if not hasattr(owner, part):
                    owner.add_module(part, torch.nn.Module())
                owner = getattr(owner, part)
            owner.register_parameter(
                leaf, torch.nn.Parameter(view, requires_grad=p.trainable))
            self._views.append((p.offset, p.elements, p.shape))
        self._parameters_in_order = [self.get_parameter(p.name)
                                     for p in self.model.parameters]
        self.step_seed = seed

    def _check_parameters(self):
        base = self._flat.data_ptr()
        for p, (offset, _, _) in zip(self._parameters_in_order, self._views):
            if p.data_ptr() != base + 4 * offset:
                raise LapError(
                    "a parameter no longer lives in the buffer lap reads "
                    "(moved by .to(), .double() or a new .data?); update "
                    "it in place, or load values with load_state_dict")

    def forward(self, *batch):
        """The mean loss of `batch` (its tensors in manifest order, or one
        dict by name)."""
        if len(batch) == 1 and isinstance(batch[0], dict):
            batch = batch[0]
        if not self.training:
            self._check_parameters()
            loss, _ = self.model.forward(self._flat, batch)
            return torch.tensor(loss, dtype=torch.float32)
        seed = self.step_seed
        self.step_seed += 1
        return _Loss.apply(self, batch, seed, *self._parameters_in_order)

    @property
    def flat(self):
        """The flat parameter buffer lap reads (model.tensors names it)."""
        return self._flat

    def features(self, *batch):
        """The residual streams [layers, batch, seq, width] (no grad)."""
        self._check_parameters()
        return _as_tensor(self.model.features(self._flat, _one(batch)))

    def embed(self, *batch):
        """An image model's pooled embedding [batch, width] (no grad)."""
        self._check_parameters()
        return _as_tensor(self.model.embed(self._flat, _one(batch)))


def _one(batch):
    return batch[0] if len(batch) == 1 and isinstance(batch[0], dict) \
        else batch


def _as_tensor(x):
    return x if isinstance(x, torch.Tensor) else torch.from_numpy(x)
