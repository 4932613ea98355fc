//===- LapOps.td - lap dialect ops -------------------------*- tablegen -*-===//
//
// Tensors: batch B and sequence T are dynamic (bounded by the compiled
// maxima at run time); widths are static. Every op verifies its shapes, and
// its element types (Lap_ElementTypes): one precision per op, f32 or bf16.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_OPS
#define LAP_OPS

include "LapDialect.td"
include "LapInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"

// Floating-point tensors are f32 or bf16; Lap_ElementTypes (on every op)
// says how they may mix.
def Lap_FloatTensor : RankedTensorOf<[F32, BF16]>;

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Lap_AttentionOp : Lap_Op<"attention", [Lap_BF16Kernel, Pure, AttrSizedOperandSegments, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "multi-head attention with a kind per head";
  let description = [{
    Queries `q` [B, T, H, D], keys `k` and values `v` [B, S, KV, D]; query
    head h reads kv head h / (H / KV) (grouped-query attention). For each
    head, with P = softmax(scale * Q K^T) (causal when `causal` is set):

        O_h = alpha_h * P V_h + beta_h * V_h

    A `window` w > 0 (causal only) is a sliding window: query t sees keys
    t - w < s <= t, and `starts` [B, T] (i32, causal only; see
    lap.document_starts) confines each query to its document: query t of
    sequence b sees keys s >= starts[b, t]. `lengths` [B] (i32) pads
    variable-length sequences: sequence b's keys are its first lengths[b],
    and no query sees the others. P is normalised over the keys a query
    sees; a query that sees none has P V = 0 (O_h = beta_h V_h) and no
    gradient through P.

    The kinds are given either by name (`kinds`, from the table of head
    kinds: `attn` = (1, 0), `laplacian` = (-1, 1)) or, after
    `--lap-lower-head-kinds`, as coefficient arrays `alpha` and `beta`, or,
    when some are learned, as a tensor operand `coefficients` [2, H] (alpha,
    then beta; see lap.head_coefficients). An op with none is plain softmax
    attention. A kind with beta != 0 adds the query's own value and so needs
    square self-attention: it is refused on ops marked `cross` or whose
    query and key lengths differ, and so are coefficients given as a tensor.

    ```mlir
    %o = lap.attention %q, %k, %v {causal, scale = 0.125 : f32,
           kinds = ["attn", "attn", "laplacian", "laplacian"]}
         : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>
           -> tensor<?x?x4x64xf32>
    %l = lap.attention %q, %k, %v coefficients %c {causal, scale = 0.125 : f32}
         : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
           tensor<2x4xf32> -> tensor<?x?x4x64xf32>
    %d = lap.attention %q, %k, %v starts %s {causal, scale = 0.125 : f32}
         : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>
           starts tensor<?x?xi32> -> tensor<?x?x4x64xf32>
    %p = lap.attention %q, %k, %v lengths %n {scale = 0.125 : f32}
         : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>
           lengths tensor<?xi32> -> tensor<?x?x4x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$q, Lap_FloatTensor:$k, Lap_FloatTensor:$v,
                       Optional<Lap_FloatTensor>:$coefficients,
                       Optional<RankedTensorOf<[I32]>>:$starts,
                       Optional<RankedTensorOf<[I32]>>:$lengths,
                       F32Attr:$scale,
                       UnitAttr:$causal,
                       UnitAttr:$cross,
                       OptionalAttr<StrArrayAttr>:$kinds,
                       OptionalAttr<DenseF32ArrayAttr>:$alpha,
                       OptionalAttr<DenseF32ArrayAttr>:$beta,
                       DefaultValuedAttr<I64Attr, "0">:$window);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`coefficients` $coefficients^)? (`starts` $starts^)? (`lengths` $lengths^)? attr-dict `:` type($q) `,` type($k) `,` type($v) (`,` type($coefficients)^)? (`starts` type($starts)^)? (`lengths` type($lengths)^)? `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Query heads H.
    int64_t getNumHeads() { return getQ().getType().getDimSize(2); }
    /// Key/value heads KV.
    int64_t getNumKvHeads() { return getK().getType().getDimSize(2); }
    /// Per-head (alpha, beta), from the kinds or the coefficient arrays;
    /// (1, 0) for every head of plain attention. Not for an op with a
    /// coefficients operand.
    ::llvm::SmallVector<std::pair<float, float>> getFixedCoefficients();
  }];
}

def Lap_PadTargetsOp : Lap_Op<"pad_targets", [Pure, AllTypesMatch<["targets", "result"]>]> {
  let summary = "targets with each sequence's padding ignored";
  let description = [{
    `targets` [B, T] of i32 with every target at or past its sequence's
    length (`lengths` [B], the `lengths` of lap.attention) replaced by -1,
    which the losses ignore: padding neither attends nor counts.

    ```mlir
    %t = lap.pad_targets %targets, %lengths : tensor<?x?xi32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I32]>:$targets,
                       RankedTensorOf<[I32]>:$lengths);
  let results = (outs RankedTensorOf<[I32]>:$result);
  let assemblyFormat = [{
    $targets `,` $lengths attr-dict `:` type($targets) `,` type($lengths)
  }];
  let hasVerifier = 1;
}

def Lap_DocumentStartsOp : Lap_Op<"document_starts", [Pure, AllTypesMatch<["tokens", "result"]>]> {
  let summary = "where each token's document starts";
  let description = [{
    `tokens` [B, T] of i32; for token t of sequence b, the result holds the
    position of the last `bos` token at or before t (0 when there is none):
    the first token of its document, the `starts` of lap.attention for
    documents packed into one sequence.

    ```mlir
    %s = lap.document_starts %tokens {bos = 2047 : i64} : tensor<?x?xi32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I32]>:$tokens, I64Attr:$bos);
  let results = (outs RankedTensorOf<[I32]>:$result);
  let assemblyFormat = [{
    $tokens attr-dict `:` type($tokens)
  }];
  let hasVerifier = 1;
}

def Lap_CachedAttentionOp : Lap_Op<"cached_attention", [MemoryEffects<[MemRead, MemWrite]>,
    AllTypesMatch<["q", "result"]>, AllTypesMatch<["k", "v"]>, AllTypesMatch<["k_cache", "v_cache"]>]> {
  let summary = "causal attention of new tokens against a key/value cache";
  let description = [{
    Incremental decoding. `q` [B, T, H, D], `k` and `v` [B, T, KV, D] belong
    to T new tokens at positions first .. first + T - 1; `k_cache` and
    `v_cache` [B, slots, KV, D] hold the keys and values of the last `slots`
    positions before `first`, position p in slot p mod slots. The slots are
    the compiled maximum sequence, or under a `window` the window (no later
    query sees further back): the cache's memory grows with the window, not
    the context. The op computes, like a causal lap.attention over the whole
    sequence, the rows of the new tokens, then stores `k` and `v` of the
    positions the cache keeps (the one lap op that writes an operand: the
    caches are buffers the caller keeps between calls):

        O_h = alpha_h * P V_h + beta_h * V_h (V_h at the query's own position)

    Head kinds, coefficients and the `window` are given as on lap.attention.

    ```mlir
    %o = lap.cached_attention %q, %k, %v into %kc, %vc at %first
           {scale = 0.125 : f32, kinds = ["attn", "laplacian"]}
         : tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32> -> tensor<?x?x2x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$q, Lap_FloatTensor:$k, Lap_FloatTensor:$v,
                       Lap_FloatTensor:$k_cache, Lap_FloatTensor:$v_cache, I64:$first,
                       Optional<Lap_FloatTensor>:$coefficients,
                       F32Attr:$scale,
                       OptionalAttr<StrArrayAttr>:$kinds,
                       OptionalAttr<DenseF32ArrayAttr>:$alpha,
                       OptionalAttr<DenseF32ArrayAttr>:$beta,
                       DefaultValuedAttr<I64Attr, "0">:$window);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v `into` $k_cache `,` $v_cache `at` $first (`coefficients` $coefficients^)? attr-dict `:` type($q) `,` type($k) `,` type($k_cache) (`,` type($coefficients)^)? `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumHeads() { return getQ().getType().getDimSize(2); }
    int64_t getNumKvHeads() { return getK().getType().getDimSize(2); }
    ::llvm::SmallVector<std::pair<float, float>> getFixedCoefficients();
    /// The positions a cache holds per sequence, for a compiled maximum
    /// sequence of `capacity`.
    int64_t getSlots(int64_t capacity) {
      return getWindow() > 0 ? std::min<int64_t>(getWindow(), capacity)
                             : capacity;
    }
  }];
}

def Lap_HeadCoefficientsOp : Lap_Op<"head_coefficients", [Lap_Generated, Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "per-head (alpha, beta) of a layer, some of them learned";
  let description = [{
    The [2, H] coefficients (alpha, then beta) of a layer's heads for the
    `coefficients` operand of lap.attention: head `learnable[i]` takes column
    i of `learned` [2, N] (a parameter), every other head h its fixed
    (alpha[h], beta[h]). The fixed arrays hold one entry per head; the
    entries of learned heads are 0. `learnable` is ascending.

    ```mlir
    %c = lap.head_coefficients %p {alpha = array<f32: 1.0, 0.0>,
           beta = array<f32: 0.0, 0.0>, learnable = array<i64: 1>}
         : tensor<2x1xf32> -> tensor<2x2xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$learned, DenseF32ArrayAttr:$alpha,
                       DenseF32ArrayAttr:$beta, DenseI64ArrayAttr:$learnable);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = [{
    $learned attr-dict `:` type($learned) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Lap_HeadCoefficientsGradOp : Lap_Op<"head_coefficients_grad", [Lap_Generated, Pure]> {
  let summary = "the learned columns of a [2, H] coefficient gradient";
  let description = [{
    The gradient of lap.head_coefficients' `learned` operand: column
    `learnable[i]` of `grad_output` [2, H] is column i of the result [2, N].
  }];
  let arguments = (ins Lap_FloatTensor:$grad_output, DenseI64ArrayAttr:$learnable);
  let results = (outs Lap_FloatTensor:$grad_learned);
  let assemblyFormat = [{
    $grad_output attr-dict `:` type($grad_output) `->` type($grad_learned)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear layers, embeddings, norms
//===----------------------------------------------------------------------===//

def Lap_LinearOp : Lap_Op<"linear", [Lap_BF16Kernel, Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "y = x W^T (+ b)";
  let description = [{
    `input` [..., K], `weight` [N, K] (PyTorch's layout), optional `bias` [N];
    the result is [..., N].

    ```mlir
    %y = lap.linear %x, %w, %b : (tensor<?x?x64xf32>, tensor<192x64xf32>, tensor<192xf32>) -> tensor<?x?x192xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, Lap_FloatTensor:$weight,
                       Optional<Lap_FloatTensor>:$bias);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lap_LinearHeadsOp : Lap_Op<"linear_heads", [Lap_BF16Kernel, Pure, AllTypesMatch<["k", "v"]>]> {
  let summary = "the fused query/key/value projection, straight into heads";
  let description = [{
    `lap.split_heads(lap.linear(x, W, b))` as one op, made by `--lap-fuse`:
    `weight` [(H + 2 KV) D, C] is read as its three row blocks, so q
    [B, T, H, D], k and v [B, T, KV, D] are each a GEMM's output and the
    [B, T, (H + 2 KV) D] projection is never stored or copied.

    ```mlir
    %q, %k, %v = lap.linear_heads %x, %w, %b : (tensor<?x?x64xf32>, tensor<192x64xf32>, tensor<192xf32>) -> (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>)
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, Lap_FloatTensor:$weight,
                       Optional<Lap_FloatTensor>:$bias);
  let results = (outs Lap_FloatTensor:$q, Lap_FloatTensor:$k, Lap_FloatTensor:$v);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lap_EmbeddingOp : Lap_Op<"embedding", [Lap_BF16Kernel, Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "rows of a table by index";
  let description = [{
    `table` [V, C], `indices` [B, T] of i32; the result is [B, T, C].

    ```mlir
    %x = lap.embedding %table[%ids] : tensor<256x64xf32>, tensor<?x?xi32> -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$table, RankedTensorOf<[I32]>:$indices);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $indices `]` attr-dict `:` type($table) `,` type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Lap_LayerNormOp : Lap_Op<"layer_norm",
    [Lap_LoopFusible, Pure, AttrSizedOperandSegments, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "LayerNorm over the last dimension, optional weight and bias";
  let description = [{
    ```mlir
    %y = lap.layer_norm %x weight %w bias %b {eps = 1.0e-05 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, Optional<Lap_FloatTensor>:$weight,
                       Optional<Lap_FloatTensor>:$bias, F32Attr:$eps);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`weight` $weight^)? (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lap_RMSNormOp : Lap_Op<"rms_norm", [Lap_LoopFusible, Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "RMSNorm over the last dimension, optional weight";
  let description = [{
    Parameter-free when `weight` is absent (nanochat).

    ```mlir
    %y = lap.rms_norm %x {eps = 1.0e-06 : f32} : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, Optional<Lap_FloatTensor>:$weight, F32Attr:$eps);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`weight` $weight^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lap_RopeOp : Lap_Op<"rope", [Lap_BF16Kernel, Pure, AllTypesMatch<["input", "result"]>, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "rotary position embedding of [B, T, H, D] by position";
  let description = [{
    Rotates channel pairs (i, i + D/2) of each head by angle p * base^(-2i/D)
    at position p = first + t; `first` (0 when absent) is the position of
    the first token when decoding after a cached prefix.

    ```mlir
    %q2 = lap.rope %q {base = 1.0e+04 : f32} : tensor<?x?x4x64xf32>
    %q3 = lap.rope %q at %first {base = 1.0e+04 : f32} : tensor<?x?x4x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, Optional<I64>:$first, F32Attr:$base);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input (`at` $first^)? attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Lap_SplitHeadsOp : Lap_Op<"split_heads", [Lap_Generated, Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "[B, T, (H + 2 KV) D] -> q [B, T, H, D], k and v [B, T, KV, D]";
  let description = [{
    Splits the output of the fused QKV projection into per-head queries,
    keys and values.

    ```mlir
    %q, %k, %v = lap.split_heads %qkv : tensor<?x?x192xf32> -> tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input);
  let results = (outs Lap_FloatTensor:$q, Lap_FloatTensor:$k, Lap_FloatTensor:$v);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($q) `,` type($k) `,` type($v)
  }];
  let hasVerifier = 1;
}

def Lap_MergeHeadsOp : Lap_Op<"merge_heads", [Lap_Generated, Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "[B, T, H, D] -> [B, T, H D]";
  let description = [{
    Joins the heads of attention's output for the output projection.

    ```mlir
    %m = lap.merge_heads %o : tensor<?x?x4x16xf32> -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Lap_AddPositionsOp : Lap_Op<"add_positions",
    [Lap_BF16Kernel, Pure, AllTypesMatch<["input", "result"]>, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "x[:, t] + table[p - offset] for positions p = first + t >= offset";
  let description = [{
    Adds learned position embeddings [P, C] to x [B, T, C]; the first
    `offset` tokens get none (e.g. learned tokens placed before positioned
    ones), and the table must cover the rest: offset + P >= T. Token t sits
    at position first + t; `first` (0 when absent) is the position of the
    first token when decoding after a cached prefix.

    ```mlir
    %y = lap.add_positions %x, %wpe {offset = 0 : i64} : tensor<?x?x64xf32>, tensor<32x64xf32>
    %z = lap.add_positions %x, %wpe at %first : tensor<?x?x64xf32>, tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, Lap_FloatTensor:$table, Optional<I64>:$first,
                       DefaultValuedAttr<I64Attr, "0">:$offset);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input `,` $table (`at` $first^)? attr-dict `:` type($input) `,` type($table)";
  let hasVerifier = 1;
}

def Lap_InterpolatePositionsOp : Lap_Op<"interpolate_positions",
    [Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "learned patch positions of a G x G grid resampled to g x g (bicubic)";
  let description = [{
    A table [keep + G*G, C] of positions for a G x G patch grid (after
    `keep` rows that are copied unchanged: the CLS token's position) becomes
    one for a g x g grid, [keep + g*g, C], so that one model runs images of
    several sizes. Each channel is resampled as DINO's
    interpolate_pos_encoding does it: PyTorch's bicubic interpolation
    (A = -0.75, align_corners = False, border rows repeated) with scale
    factor (g + 0.1) / G, i.e. output pixel i reads source coordinate
    (i + 0.5) * G / (g + 0.1) - 0.5 along each axis.

    ```mlir
    %p = lap.interpolate_positions %pos {keep = 1 : i64} : tensor<50x64xf32> -> tensor<17x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, I64Attr:$keep);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Images and tokens
//===----------------------------------------------------------------------===//

def Lap_PatchifyOp : Lap_Op<"patchify", [Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "images [B, C, H, W] -> patches [B, (H/p)(W/p), C p p]";
  let description = [{
    Cuts images into non-overlapping p x p patches in row-major order, each
    flattened channel-major (as a stride-p convolution reads them), so that a
    `lap.linear` with a [width, C p p] weight is the patch embedding.

    ```mlir
    %p = lap.patchify %img {patch = 4 : i64} : tensor<?x1x28x28xf32> -> tensor<?x49x16xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$images, I64Attr:$patch);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$images attr-dict `:` type($images) `->` type($result)";
  let hasVerifier = 1;
}

def Lap_PrependTokensOp : Lap_Op<"prepend_tokens", [Lap_BF16Kernel, Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "[B, N, C] and learned tokens [k, C] -> [B, k + N, C]";
  let description = [{
    Puts the same k learned tokens (CLS, registers) before every sequence.

    ```mlir
    %y = lap.prepend_tokens %x, %cls : tensor<?x49x64xf32>, tensor<1x64xf32> -> tensor<?x50x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, Lap_FloatTensor:$tokens);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $tokens attr-dict `:` type($input) `,` type($tokens) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Lap_LayerScaleOp : Lap_Op<"layer_scale",
    [Lap_LoopFusible, Pure, AllTypesMatch<["input", "result"]>, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "x * gamma per channel (LayerScale)";
  let description = [{
    ```mlir
    %y = lap.layer_scale %x, %gamma : tensor<?x50x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, Lap_FloatTensor:$gamma);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input `,` $gamma attr-dict `:` type($input) `,` type($gamma)";
  let hasVerifier = 1;
}

def Lap_AddBiasOp : Lap_Op<"add_bias", [Lap_LoopFusible, Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "x + b per channel: a linear layer's bias, added after its GEMM";
  let description = [{
    Made by `--lap-fuse-loops` from a `lap.linear` with a bias whose result
    feeds generated loops: the GEMM runs without the bias, and the bias is
    added in the loop nest that reads the GEMM's output (with the
    activation, residual add or norm that follows), not in a pass of its
    own.

    ```mlir
    %y = lap.add_bias %x, %b : tensor<?x50x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, Lap_FloatTensor:$bias);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input `,` $bias attr-dict `:` type($input) `,` type($bias)";
  let hasVerifier = 1;
}

def Lap_LinearGeluOp : Lap_Op<"linear_gelu", [Lap_BF16Kernel, Pure]> {
  let summary = "a linear layer and the tanh GELU after it, as one GEMM";
  let description = [{
    `pre` = lap.linear(x, W, b) and `result` = lap.gelu_tanh(pre), made by
    `--lap-fuse-epilogues`: a GEMM whose epilogue adds the bias and applies
    the GELU (cuBLASLt's GELU_AUX_BIAS), keeping `pre` for the backward
    (when nothing reads it, it is not stored).

    ```mlir
    %pre, %y = lap.linear_gelu %x, %w, %b : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> (tensor<?x?x256xf32>, tensor<?x?x256xf32>)
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, Lap_FloatTensor:$weight,
                       Optional<Lap_FloatTensor>:$bias);
  let results = (outs Lap_FloatTensor:$pre, Lap_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lap_GeluLinearGradOp : Lap_Op<"gelu_linear_grad", [Lap_BF16Kernel, Pure, AllTypesMatch<["pre", "grad_pre"]>]> {
  let summary = "the input gradient of y = gelu_tanh(pre) W^T (+ b), as one GEMM";
  let description = [{
    dpre = (dy W) * gelu_tanh'(pre), made by `--lap-fuse-epilogues` from
    lap.activation_grad over the `grad_input` of lap.linear_grad: a GEMM
    whose epilogue applies the GELU's derivative (cuBLASLt's DGELU_BGRAD).
    `grad_bias` [K] is the column sum of dpre: the bias gradient of the
    layer that made `pre` (not stored when nothing reads it).

    ```mlir
    %dpre, %db = lap.gelu_linear_grad %dy, %w, %pre : tensor<?x?x64xf32>, tensor<64x256xf32>, tensor<?x?x256xf32> -> tensor<256xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$grad_output, Lap_FloatTensor:$weight,
                       Lap_FloatTensor:$pre);
  let results = (outs Lap_FloatTensor:$grad_pre, Lap_FloatTensor:$grad_bias);
  let assemblyFormat = [{
    $grad_output `,` $weight `,` $pre attr-dict `:` type($grad_output) `,` type($weight) `,` type($pre) `->` type($grad_bias)
  }];
  let hasVerifier = 1;
}

def Lap_ColumnSumOp : Lap_Op<"column_sum", [Lap_LoopFusible, Pure]> {
  let summary = "[..., C] -> [C]: the sum over every leading index (a bias gradient)";
  let description = [{
    Made by `--lap-fuse-loops` for the bias gradient of a linear layer whose
    output gradient a generated loop makes, so that the gradient is summed
    in that loop rather than read again by the GEMM kernel. Rows are summed
    in chunks fixed by the shape alone, and the chunks' sums added in order,
    so the result does not depend on the number of threads.

    ```mlir
    %db = lap.column_sum %dy : tensor<?x?x64xf32> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Lap_TakeTokenOp : Lap_Op<"take_token", [Lap_BF16Kernel, Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "[B, T, C] -> [B, C]: the token at `index` (CLS pooling)";
  let description = [{
    ```mlir
    %cls = lap.take_token %x {index = 0 : i64} : tensor<?x50x64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, I64Attr:$index);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Lap_MeanTokensOp : Lap_Op<"mean_tokens", [Lap_BF16Kernel, Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "[B, T, C] -> [B, C]: the mean of tokens skip .. T-1";
  let description = [{
    Average pooling over the patch tokens (skipping CLS and registers).

    ```mlir
    %avg = lap.mean_tokens %x {skip = 1 : i64} : tensor<?x50x64xf32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, I64Attr:$skip);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Lap_L2NormalizeOp : Lap_Op<"l2_normalize",
    [Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "x / max(||x||, eps) over the last dimension";
  let description = [{
    DINO's bottleneck normalisation (F.normalize).

    ```mlir
    %z = lap.l2_normalize %x {eps = 1.0e-12 : f32} : tensor<?x256xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, F32Attr:$eps);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Lap_WeightNormOp : Lap_Op<"weight_norm",
    [Pure, AllTypesMatch<["direction", "result"]>, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "W = g * v / ||v|| per row: v [K, D], g [K, 1]";
  let description = [{
    torch.nn.utils.weight_norm over dim 0, as DINO's last layer uses it.
  }];
  let arguments = (ins Lap_FloatTensor:$direction, Lap_FloatTensor:$magnitude);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = [{
    $direction `,` $magnitude attr-dict `:` type($direction) `,` type($magnitude)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Lap_UnaryOp<string mnemonic, string formula>
    : Lap_Op<mnemonic, [Lap_LoopFusible, Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "elementwise " # formula;
  let description = "```mlir\n%y = lap." # mnemonic # " %x : tensor<?x?x256xf32>\n```";
  let arguments = (ins Lap_FloatTensor:$input);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Lap_GeluTanhOp : Lap_UnaryOp<"gelu_tanh",
    "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))">;
def Lap_GeluOp : Lap_UnaryOp<"gelu", "0.5 x (1 + erf(x / sqrt(2)))">;
def Lap_ReLU2Op : Lap_UnaryOp<"relu2", "max(x, 0)^2">;

def Lap_DropoutOp : Lap_Op<"dropout", [Lap_BF16Kernel, Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "zeroes elements with probability `rate` in training, scaling the rest";
  let description = [{
    x * mask / (1 - rate) with mask ~ Bernoulli(1 - rate) per element while
    training; the identity in evaluation. The mask is a function of the
    step's seed and `key`, unique per op, so the adjoint (the same op with
    the same key) applies the same mask to the gradient, and the op is pure
    (equal inputs and keys give equal results).
  }];
  let arguments = (ins Lap_FloatTensor:$input, F32Attr:$rate, I64Attr:$key);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Lap_DropPathOp : Lap_Op<"drop_path", [Lap_BF16Kernel, Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "stochastic depth: drops a residual branch per sample";
  let description = [{
    For x [B, ...]: x * mask_b / (1 - rate) with one Bernoulli(1 - rate) draw
    per sample while training; the identity in evaluation. Masks follow
    (seed, `key`) as for lap.dropout.
  }];
  let arguments = (ins Lap_FloatTensor:$input, F32Attr:$rate, I64Attr:$key);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Lap_AddOp : Lap_Op<"add",
    [Lap_LoopFusible, Pure, SameOperandsAndResultType, Commutative, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "elementwise sum (the residual connection)";
  let description = [{
    ```mlir
    %r = lap.add %x, %branch : tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$lhs, Lap_FloatTensor:$rhs);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs)";
}

def Lap_ScaleOp : Lap_Op<"scale", [Lap_LoopFusible, Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "elementwise x * factor";
  let description = [{
    A constant factor: a LoRA adapter's output times alpha / rank.

    ```mlir
    %s = lap.scale %x {factor = 2.0 : f32} : tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, F32Attr:$factor);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// Not a Lap_Op: converting between the two precisions is its purpose.
def Lap_ConvertOp : Op<Lap_Dialect, "convert",
    [Lap_LoopFusible, Pure, SameOperandsAndResultShape, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "elementwise conversion between f32 and bf16";
  let description = [{
    To bf16: rounded to nearest, ties to even; to f32: exact. A bf16 model
    computes in bf16 between its edges: the front end converts the f32
    parameters (the master weights) and f32 batch tensors to bf16 where they
    enter and the outputs back to f32, so parameter gradients come out in f32
    (the adjoint converts back). `--lap-widen-kernels` adds conversions around
    the ops whose kernels take f32 only.

    ```mlir
    %w = lap.convert %p : tensor<256x64xf32> to tensor<256x64xbf16>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def Lap_ResidualAddOp : Lap_Op<"residual_add",
    [Lap_LoopFusible, Pure, AllTypesMatch<["input", "branch", "result"]>]> {
  let summary = "x + drop_path(branch * gamma): a residual branch in one pass";
  let description = [{
    The fused form of `lap.add(x, lap.drop_path(lap.layer_scale(branch,
    gamma)))` built by `--lap-fuse`: one pass over [B, T, C] instead of three.
    `gamma` (LayerScale) is optional; `drop_rate` 0 means no stochastic depth.
    The mask follows (seed, `key`) as for lap.drop_path.

    ```mlir
    %y = lap.residual_add %x, %b gamma %g {drop_rate = 0.1 : f32, key = 3 : i64} : tensor<?x50x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, Lap_FloatTensor:$branch,
                       Optional<Lap_FloatTensor>:$gamma, F32Attr:$drop_rate, I64Attr:$key);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $branch (`gamma` $gamma^)? attr-dict `:` type($input) (`,` type($gamma)^)?
  }];
  let hasVerifier = 1;
}

def Lap_SoftcapOp : Lap_Op<"softcap", [Lap_LoopFusible, Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "cap * tanh(x / cap)";
  let description = [{
    Caps logits smoothly into (-cap, cap) (nanochat's logit softcap).

    ```mlir
    %c = lap.softcap %logits {cap = 15.0 : f32} : tensor<?x?x65536xf32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$input, F32Attr:$cap);
  let results = (outs Lap_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Lap_CrossEntropyOp : Lap_Op<"cross_entropy", [Lap_BF16Kernel, Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "mean cross-entropy of logits against class indices";
  let description = [{
    `logits` [..., V], `targets` [...] of i32 with the same leading shape;
    targets of -1 are ignored. The result is the mean over counted positions.
    `label_smoothing` mixes the target with the uniform distribution. A
    non-zero `softcap` c caps the logits first (c tanh(logits / c)) without
    materialising them (`--lap-fuse`).

    ```mlir
    %loss = lap.cross_entropy %logits, %targets : tensor<?x?x256xf32>, tensor<?x?xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Lap_FloatTensor:$logits, RankedTensorOf<[I32]>:$targets,
                       DefaultValuedAttr<F32Attr, "0.0f">:$label_smoothing,
                       DefaultValuedAttr<F32Attr, "0.0f">:$softcap);
  let results = (outs 0DTensorOf<[F32]>:$loss);
  let assemblyFormat = [{
    $logits `,` $targets attr-dict `:` type($logits) `,` type($targets) `->` type($loss)
  }];
  let hasVerifier = 1;
}

def Lap_SoftCrossEntropyOp : Lap_Op<"soft_cross_entropy", [Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "mean over rows of -sum_k targets_k log_softmax(logits)_k";
  let description = [{
    `logits` and `targets` [B, K]; targets are distributions (one-hot,
    smoothed, or mixed by mixup and cutmix).
  }];
  let arguments = (ins Lap_FloatTensor:$logits, Lap_FloatTensor:$targets);
  let results = (outs 0DTensorOf<[F32]>:$loss);
  let assemblyFormat = [{
    $logits `,` $targets attr-dict `:` type($logits) `,` type($targets) `->` type($loss)
  }];
  let hasVerifier = 1;
}

def Lap_BCEWithLogitsOp : Lap_Op<"bce_with_logits", [Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "mean binary cross-entropy of sigmoid(logits) against targets";
  let description = [{
    `logits` and `targets` [B, K], targets in [0, 1] (DeiT-3's loss).
  }];
  let arguments = (ins Lap_FloatTensor:$logits, Lap_FloatTensor:$targets);
  let results = (outs 0DTensorOf<[F32]>:$loss);
  let assemblyFormat = [{
    $logits `,` $targets attr-dict `:` type($logits) `,` type($targets) `->` type($loss)
  }];
  let hasVerifier = 1;
}

def Lap_DinoLossOp : Lap_Op<"dino_loss", [Pure, DeclareOpInterfaceMethods<Lap_DifferentiableOpInterface>]> {
  let summary = "mean over rows of -sum_k teacher_k log_softmax(student / temp)_k";
  let description = [{
    `student` logits and `teacher` probabilities [B, K]; the teacher's
    centering and sharpening happen outside, on the teacher's own outputs.
  }];
  let arguments = (ins Lap_FloatTensor:$student, Lap_FloatTensor:$teacher,
                       F32Attr:$temperature);
  let results = (outs 0DTensorOf<[F32]>:$loss);
  let assemblyFormat = [{
    $student `,` $teacher attr-dict `:` type($student) `,` type($teacher) `->` type($loss)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients (built by --lap-autodiff through DifferentiableOp)
//===----------------------------------------------------------------------===//

def Lap_AttentionGradOp : Lap_Op<"attention_grad", [Lap_BF16Kernel, Pure, AttrSizedOperandSegments,
    AllTypesMatch<["q", "grad_q", "grad_output", "output"]>,
    AllTypesMatch<["k", "v", "grad_k", "grad_v"]>]> {
  let summary = "gradients of lap.attention with the same kinds";
  let description = [{
    From dO and the forward's q, k, v and output O, the gradients of q, k and
    v for O_h = alpha_h P V_h + beta_h V_h (flash form: dV += alpha P^T dO +
    beta dO; softmax backward on alpha dO with D_i = rowsum(alpha dO_i * (P
    V)_i)). Carries the forward op's attributes, kinds and window included, its
    `starts`, its `lengths` and its `coefficients` operand; with it, also their gradient `grad_coefficients`
    [2, H]: d alpha_h = sum dO_h * P V_h, d beta_h = sum dO_h * V_h.
  }];
  let arguments = (ins Lap_FloatTensor:$grad_output, Lap_FloatTensor:$q,
                       Lap_FloatTensor:$k, Lap_FloatTensor:$v, Lap_FloatTensor:$output,
                       Optional<Lap_FloatTensor>:$coefficients,
                       Optional<RankedTensorOf<[I32]>>:$starts,
                       Optional<RankedTensorOf<[I32]>>:$lengths,
                       F32Attr:$scale, UnitAttr:$causal, UnitAttr:$cross,
                       OptionalAttr<StrArrayAttr>:$kinds,
                       OptionalAttr<DenseF32ArrayAttr>:$alpha,
                       OptionalAttr<DenseF32ArrayAttr>:$beta,
                       DefaultValuedAttr<I64Attr, "0">:$window);
  let results = (outs Lap_FloatTensor:$grad_q, Lap_FloatTensor:$grad_k,
                      Lap_FloatTensor:$grad_v,
                      Optional<Lap_FloatTensor>:$grad_coefficients);
  let assemblyFormat = [{
    $grad_output `,` $q `,` $k `,` $v `,` $output (`coefficients` $coefficients^)? (`starts` $starts^)? (`lengths` $lengths^)? attr-dict `:` type($q) `,` type($k) (`,` type($coefficients)^ `->` type($grad_coefficients))? (`starts` type($starts)^)? (`lengths` type($lengths)^)?
  }];
  let hasVerifier = 1;
}

def Lap_LinearCrossEntropyOp : Lap_Op<"linear_cross_entropy", [Lap_BF16Kernel, Pure,
    AllTypesMatch<["grad_loss", "loss"]>, AllTypesMatch<["input", "grad_input"]>,
    AllTypesMatch<["weight", "grad_weight"]>]> {
  let summary = "an output layer and its cross-entropy, with their gradients";
  let description = [{
    What lap.linear %input, %weight (no bias), lap.cross_entropy of its
    logits, and their gradients for `grad_loss` compute, in one op
    (`--lap-fuse` makes it in a training step): the loss, and the gradients
    of `input` [..., C] and `weight` [V, C]. The kernels make the logits a
    chunk of rows at a time and never hold [..., V] whole.

    ```mlir
    %loss, %dx, %dw = lap.linear_cross_entropy %dloss, %x, %w, %targets {softcap = 15.0 : f32}
         : tensor<f32>, tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<?x?xi32>
    ```
  }];
  let arguments = (ins TensorRankOf<[F32], [0]>:$grad_loss, Lap_FloatTensor:$input,
                       Lap_FloatTensor:$weight, RankedTensorOf<[I32]>:$targets,
                       DefaultValuedAttr<F32Attr, "0.0f">:$label_smoothing,
                       DefaultValuedAttr<F32Attr, "0.0f">:$softcap);
  let results = (outs 0DTensorOf<[F32]>:$loss, Lap_FloatTensor:$grad_input,
                      Lap_FloatTensor:$grad_weight);
  let assemblyFormat = [{
    $grad_loss `,` $input `,` $weight `,` $targets attr-dict `:` type($grad_loss) `,` type($input) `,` type($weight) `,` type($targets)
  }];
  let hasVerifier = 1;
}

def Lap_LinearGradOp : Lap_Op<"linear_grad", [Lap_BF16Kernel, Pure,
    AllTypesMatch<["input", "grad_input"]>, AllTypesMatch<["weight", "grad_weight"]>]> {
  let summary = "dx = dy W, dW = dy^T x, db = sum dy (over leading dimensions)";
  let arguments = (ins Lap_FloatTensor:$grad_output, Lap_FloatTensor:$input,
                       Lap_FloatTensor:$weight);
  let results = (outs Lap_FloatTensor:$grad_input, Lap_FloatTensor:$grad_weight,
                      Lap_FloatTensor:$grad_bias);
  let assemblyFormat = [{
    $grad_output `,` $input `,` $weight attr-dict `:` type($grad_output) `,` type($input) `,` type($weight) `->` type($grad_bias)
  }];
  let hasVerifier = 1;
}

def Lap_LinearHeadsGradOp : Lap_Op<"linear_heads_grad", [Lap_BF16Kernel, Pure,
    AllTypesMatch<["input", "grad_input"]>, AllTypesMatch<["weight", "grad_weight"]>,
    AllTypesMatch<["grad_k", "grad_v"]>]> {
  let summary = "the gradients of lap.linear_heads from dq, dk, dv";
  let description = [{
    `lap.linear_grad(lap.split_heads_grad(dq, dk, dv), x, W)` as one op,
    made by `--lap-fuse`: dx = dq Wq + dk Wk + dv Wv, and dW and db by row
    blocks, without the [B, T, (H + 2 KV) D] gradient of the projection.
  }];
  let arguments = (ins Lap_FloatTensor:$grad_q, Lap_FloatTensor:$grad_k,
                       Lap_FloatTensor:$grad_v, Lap_FloatTensor:$input,
                       Lap_FloatTensor:$weight);
  let results = (outs Lap_FloatTensor:$grad_input, Lap_FloatTensor:$grad_weight,
                      Lap_FloatTensor:$grad_bias);
  let assemblyFormat = [{
    $grad_q `,` $grad_k `,` $grad_v `,` $input `,` $weight attr-dict `:` type($grad_q) `,` type($grad_k) `,` type($input) `,` type($weight) `->` type($grad_bias)
  }];
  let hasVerifier = 1;
}

def Lap_EmbeddingGradOp : Lap_Op<"embedding_grad", [Lap_BF16Kernel, Pure]> {
  let summary = "dtable[v] = sum of dy at the positions holding index v";
  let arguments = (ins Lap_FloatTensor:$grad_output, RankedTensorOf<[I32]>:$indices);
  let results = (outs Lap_FloatTensor:$grad_table);
  let assemblyFormat = [{
    $grad_output `,` $indices attr-dict `:` type($grad_output) `,` type($indices) `->` type($grad_table)
  }];
  let hasVerifier = 1;
}

def Lap_AddPositionsGradOp : Lap_Op<"add_positions_grad", [Lap_BF16Kernel, Pure]> {
  let summary = "dtable[t - offset] = sum over the batch of dy[:, t], t >= offset";
  let arguments = (ins Lap_FloatTensor:$grad_output, I64Attr:$offset);
  let results = (outs Lap_FloatTensor:$grad_table);
  let assemblyFormat = "$grad_output attr-dict `:` type($grad_output) `->` type($grad_table)";
  let hasVerifier = 1;
}

def Lap_InterpolatePositionsGradOp : Lap_Op<"interpolate_positions_grad", [Pure]> {
  let summary = "gradient of lap.interpolate_positions: its transpose";
  let arguments = (ins Lap_FloatTensor:$grad_output, I64Attr:$keep);
  let results = (outs Lap_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output attr-dict `:` type($grad_output) `->` type($grad_input)";
  let hasVerifier = 1;
}

def Lap_LayerNormGradOp : Lap_Op<"layer_norm_grad", [Lap_BF16Kernel, Pure,
    AllTypesMatch<["input", "grad_input", "grad_output"]>]> {
  let summary = "gradients of lap.layer_norm: input, weight and bias";
  let arguments = (ins Lap_FloatTensor:$grad_output, Lap_FloatTensor:$input,
                       Optional<Lap_FloatTensor>:$weight, F32Attr:$eps);
  let results = (outs Lap_FloatTensor:$grad_input, Lap_FloatTensor:$grad_weight,
                      Lap_FloatTensor:$grad_bias);
  let assemblyFormat = [{
    $grad_output `,` $input (`weight` $weight^)? attr-dict `:` type($input) `,` type($grad_weight) `,` type($grad_bias) (`,` type($weight)^)?
  }];
  let hasVerifier = 1;
}

def Lap_RMSNormGradOp : Lap_Op<"rms_norm_grad", [Lap_BF16Kernel, Pure,
    AllTypesMatch<["input", "grad_input", "grad_output"]>]> {
  let summary = "gradients of lap.rms_norm: input and weight";
  let arguments = (ins Lap_FloatTensor:$grad_output, Lap_FloatTensor:$input,
                       Optional<Lap_FloatTensor>:$weight, F32Attr:$eps);
  let results = (outs Lap_FloatTensor:$grad_input, Lap_FloatTensor:$grad_weight);
  let assemblyFormat = [{
    $grad_output `,` $input (`weight` $weight^)? attr-dict `:` type($input) `,` type($grad_weight) (`,` type($weight)^)?
  }];
  let hasVerifier = 1;
}

def Lap_SplitHeadsGradOp : Lap_Op<"split_heads_grad",
    [Lap_Generated, Pure, AllTypesMatch<["grad_k", "grad_v"]>]> {
  let summary = "dq, dk, dv -> d(qkv): the inverse of lap.split_heads";
  let arguments = (ins Lap_FloatTensor:$grad_q, Lap_FloatTensor:$grad_k, Lap_FloatTensor:$grad_v);
  let results = (outs Lap_FloatTensor:$grad_input);
  let assemblyFormat = [{
    $grad_q `,` $grad_k `,` $grad_v attr-dict `:` type($grad_q) `,` type($grad_k) `->` type($grad_input)
  }];
  let hasVerifier = 1;
}

def Lap_MergeHeadsGradOp : Lap_Op<"merge_heads_grad", [Lap_Generated, Pure]> {
  let summary = "[B, T, H D] -> [B, T, H, D]: the inverse of lap.merge_heads";
  let arguments = (ins Lap_FloatTensor:$grad_output);
  let results = (outs Lap_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output attr-dict `:` type($grad_output) `->` type($grad_input)";
  let hasVerifier = 1;
}

def Lap_RopeGradOp : Lap_Op<"rope_grad", [Lap_BF16Kernel, Pure, SameOperandsAndResultType]> {
  let summary = "rotation by the opposite angles: the transpose of lap.rope";
  let arguments = (ins Lap_FloatTensor:$grad_output, F32Attr:$base);
  let results = (outs Lap_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output attr-dict `:` type($grad_output)";
}

def Lap_ActivationGradOp : Lap_Op<"activation_grad", [Lap_LoopFusible, Pure, SameOperandsAndResultType]> {
  let summary = "dy * f'(x) for the elementwise activation named `activation`";
  let arguments = (ins Lap_FloatTensor:$grad_output, Lap_FloatTensor:$input,
                       StrAttr:$activation);
  let results = (outs Lap_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Lap_SoftcapGradOp : Lap_Op<"softcap_grad", [Lap_LoopFusible, Pure, SameOperandsAndResultType]> {
  let summary = "dy * (1 - tanh(x / cap)^2)";
  let arguments = (ins Lap_FloatTensor:$grad_output, Lap_FloatTensor:$input, F32Attr:$cap);
  let results = (outs Lap_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $input attr-dict `:` type($input)";
}

def Lap_CrossEntropyGradOp : Lap_Op<"cross_entropy_grad", [Lap_BF16Kernel, Pure,
    AllTypesMatch<["logits", "grad_logits"]>]> {
  let summary = "dloss * (softmax(logits) - smoothed one-hot(targets)) / count";
  let description = [{
    With a non-zero `softcap`, the gradient with respect to the uncapped
    logits: the softmax is of the capped logits, times the cap's derivative.
  }];
  let arguments = (ins TensorRankOf<[F32], [0]>:$grad_loss, Lap_FloatTensor:$logits,
                       RankedTensorOf<[I32]>:$targets, F32Attr:$label_smoothing,
                       DefaultValuedAttr<F32Attr, "0.0f">:$softcap);
  let results = (outs Lap_FloatTensor:$grad_logits);
  let assemblyFormat = [{
    $grad_loss `,` $logits `,` $targets attr-dict `:` type($grad_loss) `,` type($logits) `,` type($targets)
  }];
  let hasVerifier = 1;
}

def Lap_PatchifyGradOp : Lap_Op<"patchify_grad", [Pure]> {
  let summary = "patch gradients back to image positions: the inverse of lap.patchify";
  let arguments = (ins Lap_FloatTensor:$grad_output, I64Attr:$patch);
  let results = (outs Lap_FloatTensor:$grad_images);
  let assemblyFormat = "$grad_output attr-dict `:` type($grad_output) `->` type($grad_images)";
  let hasVerifier = 1;
}

def Lap_PrependTokensGradOp : Lap_Op<"prepend_tokens_grad", [Lap_BF16Kernel, Pure]> {
  let summary = "dy [B, k + N, C] -> dx = dy[:, k:], dtokens = sum over B of dy[:, :k]";
  let arguments = (ins Lap_FloatTensor:$grad_output);
  let results = (outs Lap_FloatTensor:$grad_input, Lap_FloatTensor:$grad_tokens);
  let assemblyFormat = [{
    $grad_output attr-dict `:` type($grad_output) `->` type($grad_input) `,` type($grad_tokens)
  }];
  let hasVerifier = 1;
}

def Lap_LayerScaleGradOp : Lap_Op<"layer_scale_grad", [Lap_BF16Kernel, Pure,
    AllTypesMatch<["input", "grad_input", "grad_output"]>, AllTypesMatch<["gamma", "grad_gamma"]>]> {
  let summary = "dx = dy * gamma, dgamma = sum of dy * x over leading dimensions";
  let arguments = (ins Lap_FloatTensor:$grad_output, Lap_FloatTensor:$input, Lap_FloatTensor:$gamma);
  let results = (outs Lap_FloatTensor:$grad_input, Lap_FloatTensor:$grad_gamma);
  let assemblyFormat = "$grad_output `,` $input `,` $gamma attr-dict `:` type($input) `,` type($gamma)";
}

def Lap_TakeTokenGradOp : Lap_Op<"take_token_grad", [Lap_BF16Kernel, Pure, AllTypesMatch<["input", "grad_input"]>]> {
  let summary = "dx: zero but for token `index`, which is dy";
  let arguments = (ins Lap_FloatTensor:$grad_output, Lap_FloatTensor:$input, I64Attr:$index);
  let results = (outs Lap_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $input attr-dict `:` type($grad_output) `,` type($input)";
}

def Lap_MeanTokensGradOp : Lap_Op<"mean_tokens_grad", [Lap_BF16Kernel, Pure, AllTypesMatch<["input", "grad_input"]>]> {
  let summary = "dx: dy / (T - skip) on tokens skip .. T-1, zero before";
  let arguments = (ins Lap_FloatTensor:$grad_output, Lap_FloatTensor:$input, I64Attr:$skip);
  let results = (outs Lap_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $input attr-dict `:` type($grad_output) `,` type($input)";
}

def Lap_L2NormalizeGradOp : Lap_Op<"l2_normalize_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "gradient of x / max(||x||, eps) over the last dimension";
  let arguments = (ins Lap_FloatTensor:$grad_output, Lap_FloatTensor:$input, F32Attr:$eps);
  let results = (outs Lap_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $input attr-dict `:` type($input)";
}

def Lap_WeightNormGradOp : Lap_Op<"weight_norm_grad", [Pure,
    AllTypesMatch<["direction", "grad_direction", "grad_output"]>,
    AllTypesMatch<["magnitude", "grad_magnitude"]>]> {
  let summary = "gradients of W = g v / ||v|| for v and g";
  let arguments = (ins Lap_FloatTensor:$grad_output, Lap_FloatTensor:$direction,
                       Lap_FloatTensor:$magnitude);
  let results = (outs Lap_FloatTensor:$grad_direction, Lap_FloatTensor:$grad_magnitude);
  let assemblyFormat = [{
    $grad_output `,` $direction `,` $magnitude attr-dict `:` type($direction) `,` type($magnitude)
  }];
}

def Lap_RowLossGradOp : Lap_Op<"row_loss_grad", [Pure,
    AllTypesMatch<["logits", "targets", "grad_logits"]>]> {
  let summary = "gradient of a [B, K] loss against targets, for the loss named `loss`";
  let description = [{
    `soft_cross_entropy`: (softmax(l) - t) / B; `bce_with_logits`:
    (sigmoid(l) - t) / (B K); `dino_loss`: (softmax(l / temperature) - t) /
    (B temperature); each times the incoming scalar gradient.
  }];
  let arguments = (ins TensorRankOf<[F32], [0]>:$grad_loss, Lap_FloatTensor:$logits,
                       Lap_FloatTensor:$targets, StrAttr:$loss,
                       DefaultValuedAttr<F32Attr, "1.0f">:$temperature);
  let results = (outs Lap_FloatTensor:$grad_logits);
  let assemblyFormat = [{
    $grad_loss `,` $logits `,` $targets attr-dict `:` type($grad_loss) `,` type($logits)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

// Not a Lap_Op: its body's ops verify their precisions, and a lap.convert
// among them makes inputs and results of both.
def Lap_FusionOp : Op<Lap_Dialect, "fusion", [Lap_Generated, IsolatedFromAbove, RecursiveMemoryEffects, SingleBlock]> {
  let summary = "elementwise ops and the norms they feed, computed as one loop nest";
  let description = [{
    Made by `--lap-fuse-loops`. The body holds loop-fusible ops (elementwise
    ops and forward norms, see `isLoopFusible`) on tensors of one shape
    [..., C], and [C] operands read per column (LayerScale, norm weights);
    a `lap.column_sum` in it yields a [C] sum over the rows.
    Code generation evaluates the body one row at a time: values the body
    yields are written out, the others stay in registers, and a norm's
    statistics are computed from its input row while it is still in cache.
    Only the yielded values get memory in the plan.

    ```mlir
    %h, %n = lap.fusion %x, %p : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
    ^bb0(%a: tensor<?x?x64xf32>, %b: tensor<?x?x64xf32>):
      %s = lap.add %a, %b : tensor<?x?x64xf32>
      %r = lap.rms_norm %s {eps = 1.0e-06 : f32} : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
      lap.yield %s, %r : tensor<?x?x64xf32>, tensor<?x?x64xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Lap_FloatTensor>:$inputs);
  let results = (outs Variadic<Lap_FloatTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results) $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The shape every row-wise value of the body has: [..., C].
    ::mlir::RankedTensorType getRowType();
  }];
}

// Not a Lap_Op: a fusion yields values of either precision.
def Lap_YieldOp : Op<Lap_Dialect, "yield", [Pure, Terminator, HasParent<"FusionOp">]> {
  let summary = "the values a lap.fusion writes out";
  let arguments = (ins Variadic<Lap_FloatTensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // LAP_OPS
