//===- Passes.td - lap dialect passes ----------------------*- tablegen -*-===//

#ifndef LAP_TRANSFORMS_PASSES
#define LAP_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def LapLowerHeadKinds : Pass<"lap-lower-head-kinds"> {
  let summary = "Turn head kinds into per-head (alpha, beta) coefficients";
  let description = [{
    Replaces the `kinds` of every `lap.attention` by the coefficient arrays
    `alpha` and `beta` of O_h = alpha_h P V_h + beta_h V_h, read from the
    table of head kinds, so that one fused kernel serves every head of the
    layer whatever the mix. A layer whose heads are all `attn` becomes plain
    attention (no coefficients), which code generation can treat as such.

    Before:
    ```mlir
    %o = lap.attention %q, %k, %v {causal, scale = 0.125 : f32,
           kinds = ["attn", "laplacian"]} : ...
    %p = lap.attention %q, %k, %v {causal, scale = 0.125 : f32,
           kinds = ["attn", "attn"]} : ...
    ```
    After:
    ```mlir
    %o = lap.attention %q, %k, %v {alpha = array<f32: 1.0, -1.0>,
           beta = array<f32: 0.0, 1.0>, causal, scale = 0.125 : f32} : ...
    %p = lap.attention %q, %k, %v {causal, scale = 0.125 : f32} : ...
    ```
  }];
}

def LapAutodiff : Pass<"lap-autodiff", "::mlir::ModuleOp"> {
  let summary = "Build @train_step (loss and parameter gradients) from @forward";
  let description = [{
    Reverse-mode differentiation of `func.func @forward`, whose first result
    is the scalar loss and whose arguments marked `lap.parameter` are the
    parameters. `@train_step` takes the same arguments and returns the loss
    and the gradient of every parameter, in argument order. Each op on the
    path from the parameters to the loss builds its own adjoint through
    `DifferentiableOp`; gradients of values used more than once are summed.
    An op without an adjoint is an error at its (spec) location.

    Before:
    ```mlir
    func.func @forward(%w: tensor<8x4xf32> {lap.parameter}, %x: tensor<?x4xf32>,
                       %t: tensor<?xi32>) -> (tensor<f32>, tensor<?x8xf32>) {
      %y = lap.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x8xf32>
      %l = lap.cross_entropy %y, %t : tensor<?x8xf32>, tensor<?xi32> -> tensor<f32>
      return %l, %y : tensor<f32>, tensor<?x8xf32>
    }
    ```
    After (added next to @forward):
    ```mlir
    func.func @train_step(%w: tensor<8x4xf32> {lap.parameter}, %x: tensor<?x4xf32>,
                          %t: tensor<?xi32>) -> (tensor<f32>, tensor<8x4xf32>) {
      %y = lap.linear %x, %w : ...
      %l = lap.cross_entropy %y, %t : ...
      %one = arith.constant dense<1.0> : tensor<f32>
      %dy = lap.cross_entropy_grad %one, %y, %t : ...
      %dx, %dw, %db = lap.linear_grad %dy, %x, %w : ...
      return %l, %dw : tensor<f32>, tensor<8x4xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def LapFuse : Pass<"lap-fuse"> {
  let summary = "Fuse op chains whose intermediates are not worth materialising";
  let description = [{
    Patterns, each for a chain that costs memory traffic or memory:

    - `lap.softcap` feeding only cross-entropy (and its gradient) becomes the
      `softcap` attribute of those ops, so the capped [B, T, V] logits are
      never stored (in @train_step, where the logits are not returned; for a
      65,536-token vocabulary that is the largest tensor of the step).

    - In a training step, the output layer whose logits only feed
      cross-entropy, `lap.linear` (no bias) -> `lap.cross_entropy` with
      `lap.cross_entropy_grad` -> `lap.linear_grad`, becomes one
      `lap.linear_cross_entropy` (loss and both gradients) at the place of
      the linear_grad: its kernel makes the logits a chunk of rows at a
      time, so neither [B, T, V] logits nor their gradient are stored.

    - The fused query/key/value projection and its split into heads,
      `lap.split_heads(lap.linear(x, W, b))`, becomes one
      `lap.linear_heads` whose GEMMs write q, k and v (W read as its three
      row blocks), and its gradient,
      `lap.linear_grad(lap.split_heads_grad(dq, dk, dv), x, W)`, one
      `lap.linear_heads_grad`: the [B, T, (H + 2 KV) D] projection and its
      gradient are neither stored nor copied.

    - A residual branch `lap.add(x, lap.drop_path(lap.layer_scale(y, g)))`
      (or with only one of drop path and LayerScale) becomes one
      `lap.residual_add`: one pass over the activations instead of three.
      Run after `--lap-autodiff`: the backward ops keep their own chain.

    Before:
    ```mlir
    %s = lap.layer_scale %y, %g : tensor<?x50x64xf32>, tensor<64xf32>
    %d = lap.drop_path %s {key = 3 : i64, rate = 0.1 : f32} : tensor<?x50x64xf32>
    %r = lap.add %x, %d : tensor<?x50x64xf32>
    %c = lap.softcap %l {cap = 15.0 : f32} : tensor<?x?x65536xf32>
    %loss = lap.cross_entropy %c, %t : ...
    %dc = lap.cross_entropy_grad %one, %c, %t {label_smoothing = 0.0 : f32} : ...
    %dl = lap.softcap_grad %dc, %l {cap = 15.0 : f32} : ...
    ```
    After:
    ```mlir
    %r = lap.residual_add %x, %y gamma %g {drop_rate = 0.1 : f32, key = 3 : i64} : tensor<?x50x64xf32>, tensor<64xf32>
    %loss = lap.cross_entropy %l, %t {softcap = 15.0 : f32} : ...
    %dl = lap.cross_entropy_grad %one, %l, %t {label_smoothing = 0.0 : f32, softcap = 15.0 : f32} : ...
    ```
  }];
}

def LapRematerialize : Pass<"lap-rematerialize"> {
  let summary = "Recompute cheap values for their late readers instead of keeping them";
  let description = [{
    A training step keeps every activation its backward reads, from the
    forward to the gradient op far behind. For values that are cheap to
    compute again from operands kept anyway — activations (`lap.relu2`,
    `lap.gelu`, `lap.gelu_tanh`) and norms (`lap.rms_norm`,
    `lap.layer_norm`) — each reader after the first gets its own copy of
    the op right before it, when every operand is still live there (a
    function argument, or read again later). The forward's value then dies
    at its first reader: the memory plan reuses its bytes, at the cost of
    one more elementwise pass per copy. The copies compute the same bits.
    Run last (after CSE, which would merge the copies back).

    Before:
    ```mlir
    %a = lap.relu2 %h : tensor<?x?x128xf32>
    %y = lap.linear %a, %w : ...
    ...
    %dx, %dw, %db = lap.linear_grad %dy, %a, %w : ...
    %dh = lap.activation_grad %dx, %h {activation = "relu2"} : ...
    ```
    After:
    ```mlir
    %a = lap.relu2 %h : tensor<?x?x128xf32>
    %y = lap.linear %a, %w : ...
    ...
    %a2 = lap.relu2 %h : tensor<?x?x128xf32>
    %dx, %dw, %db = lap.linear_grad %dy, %a2, %w : ...
    %dh = lap.activation_grad %dx, %h {activation = "relu2"} : ...
    ```
  }];
}

def LapFuseEpilogues : Pass<"lap-fuse-epilogues"> {
  let summary = "Fuse a tanh GELU and its gradient into the GEMMs around it";
  let description = [{
    A GEMM can apply a tanh GELU to what it writes, and the GELU's
    derivative (cuBLASLt's GELU_AUX_BIAS and DGELU_BGRAD epilogues; the
    CPU's kernels do the same in one pass over the GEMM's output):
    - `lap.linear` whose first reader is `lap.gelu_tanh` becomes one
      `lap.linear_gelu`, which yields both (the pre-activation is kept only
      if something else reads it);
    - `lap.activation_grad` of `gelu_tanh` over the input gradient of a
      `lap.linear_grad` (read by nothing else) becomes `lap.gelu_linear_grad`,
      whose column sum replaces the bias gradient of every `lap.linear_grad`
      of the result (the layer that made the pre-activation), and the
      `lap.linear_grad` no longer makes its input gradient.
    Run after `--lap-rematerialize` (which copies the GELU for the backward
    from the pre-activation, a value this keeps) and before
    `--lap-fuse-loops`.

    Before:
    ```mlir
    %h = lap.linear %x, %w1, %b1 : ...
    %a = lap.gelu_tanh %h : tensor<?x?x128xf32>
    ...
    %da, %dw2, %db2 = lap.linear_grad %dy, %a2, %w2 : ...
    %dh = lap.activation_grad %da, %h {activation = "gelu_tanh"} : ...
    %dx, %dw1, %db1 = lap.linear_grad %dh, %x, %w1 : ...
    ```
    After:
    ```mlir
    %h, %a = lap.linear_gelu %x, %w1, %b1 : ...
    ...
    %da, %dw2, %db2 = lap.linear_grad %dy, %a2, %w2 : ...
    %dh, %db1 = lap.gelu_linear_grad %dy, %w2, %h : ...
    %dx, %dw1, %unused = lap.linear_grad %dh, %x, %w1 : ...
    ```

    A bf16 model's layers fuse into the kernels' `_bf16` forms, unless
    `bf16=false` (a target whose generated GELU loops cost less than the
    kernels' epilogue passes: the CPU's, where the loops run at the host's
    vector width).
  }];
  let options = [
    Option<"bf16", "bf16", "bool", "true",
           "Fuse a bf16 model's layers too (the `_bf16` kernels)">,
  ];
}

def LapWidenKernels : Pass<"lap-widen-kernels"> {
  let summary = "Compute in f32 the ops of a bf16 model whose kernels take f32 only";
  let description = [{
    Code generation computes in bf16 where it generates the code (loops:
    elementwise ops, norms, conversions, layout copies), and most library
    kernels have a bf16 variant (`hasBF16Kernel`: attention, linear layers,
    losses, embeddings, rotations, tokens, norm gradients, dropout). Each
    other op that becomes a library call and has bf16 tensors (the l2
    normalisation of DINO's head) gets f32 copies of its bf16 operands
    (`lap.convert`), computes in f32, and its used results are converted
    back to bf16 for their readers. Does nothing to an f32 model. Run after
    `--lap-fuse-epilogues` and before `--lap-fuse-loops`, which fuses the
    conversions into the loops beside them.

    Before:
    ```mlir
    %y = lap.l2_normalize %x {eps = 1.0e-12 : f32} : tensor<?x?x4x64xbf16>
    ```
    After:
    ```mlir
    %x32 = lap.convert %x : tensor<?x?x4x64xbf16> to tensor<?x?x4x64xf32>
    %y32 = lap.l2_normalize %x32 {eps = 1.0e-12 : f32} : tensor<?x?x4x64xf32>
    %y = lap.convert %y32 : tensor<?x?x4x64xf32> to tensor<?x?x4x64xbf16>
    ```
  }];
}

def LapFuseLoops : Pass<"lap-fuse-loops"> {
  let summary = "Group elementwise ops and the norms they feed into one loop nest";
  let description = [{
    Producer-consumer fusion of the ops code generation turns into loops
    (elementwise ops, and the forward norms: `isLoopFusible`): walking the
    function in order, each such op joins the group of every operand's
    producer of the same shape, when the group can move to the consumer's
    place (nothing else reads its values before, and its inputs are live
    there anyway, so no value lives longer). A norm takes in only cheap
    producers (adds, LayerScale, ReLU²): their values are computed again
    in each pass the norm makes over a row. Each group of two or more ops
    becomes one `lap.fusion`, yielding the values read outside it; the
    rest never reach memory. First, a `lap.linear` with a bias whose
    output such an op reads loses its bias to a `lap.add_bias` placed
    before its first reader: the bias is then added in the loop that reads
    the GEMM's output anyway (a GEMM epilogue in generated code), not in a
    pass of its own; and a `lap.linear_grad` whose dY a loop-fusible op
    makes gets its bias gradient from a `lap.column_sum` of dY placed
    right after that op, which joins its loop (the kernel's own sum is
    left unused). Run after `--lap-rematerialize`, before the memory
    plan.

    Before:
    ```mlir
    %h = lap.add %x, %p : tensor<?x?x64xf32>
    %n = lap.rms_norm %h {eps = 1.0e-06 : f32} : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
    %s1 = lap.add %d1, %d2 : tensor<?x?x64xf32>
    %s2 = lap.add %s1, %d3 : tensor<?x?x64xf32>
    %u = lap.linear %z, %w, %b : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
    %a = lap.gelu %u : tensor<?x?x256xf32>
    ```
    After:
    ```mlir
    %h2, %n2 = lap.fusion %x, %p : (...) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
    ^bb0(%a: tensor<?x?x64xf32>, %b: tensor<?x?x64xf32>):
      %h = lap.add %a, %b : tensor<?x?x64xf32>
      %n = lap.rms_norm %h {eps = 1.0e-06 : f32} : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
      lap.yield %h, %n : tensor<?x?x64xf32>, tensor<?x?x64xf32>
    }
    %s = lap.fusion %d1, %d2, %d3 : (...) -> tensor<?x?x64xf32> {
    ^bb0(%a: tensor<?x?x64xf32>, %b: tensor<?x?x64xf32>, %c: tensor<?x?x64xf32>):
      %s1 = lap.add %a, %b : tensor<?x?x64xf32>
      %s2 = lap.add %s1, %c : tensor<?x?x64xf32>
      lap.yield %s2 : tensor<?x?x64xf32>
    }
    %v = lap.linear %z, %w : (tensor<?x?x64xf32>, tensor<256x64xf32>) -> tensor<?x?x256xf32>
    %a2 = lap.fusion %v, %b : (...) -> tensor<?x?x256xf32> {
    ^bb0(%p: tensor<?x?x256xf32>, %q: tensor<256xf32>):
      %u = lap.add_bias %p, %q : tensor<?x?x256xf32>, tensor<256xf32>
      %a = lap.gelu %u : tensor<?x?x256xf32>
      lap.yield %a : tensor<?x?x256xf32>
    }
    ```

    With `biases-in-loops=false` the linear layers keep their biases and
    bias gradients (a target whose GEMMs add them better than its loops:
    CUDA's, where cuBLASLt's epilogues do, and a loop with column sums
    would run each chunk of rows as one thread).
  }];
  let options = [
    Option<"biasesInLoops", "biases-in-loops", "bool", "true",
           "Move linear layers' biases and bias gradients into the loops "
           "around them">,
  ];
}

#endif // LAP_TRANSFORMS_PASSES
