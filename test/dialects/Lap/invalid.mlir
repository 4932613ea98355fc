// Every verifier error of the lap dialect.
// RUN: lap-opt %s --split-input-file --verify-diagnostics

func.func @laplacian_on_cross_attention(%q: tensor<?x1x2x8xf32>, %kv: tensor<?x?x2x8xf32>) {
  // expected-error @+1 {{head 1 adds the query's own value (beta = 1.000000e+00) and needs square self-attention, but this is cross-attention}}
  %o = lap.attention %q, %kv, %kv {cross, scale = 0.35 : f32, kinds = ["attn", "laplacian"]}
       : tensor<?x1x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32> -> tensor<?x1x2x8xf32>
  return
}

// -----

func.func @laplacian_on_non_square(%q: tensor<?x4x2x8xf32>, %kv: tensor<?x6x2x8xf32>) {
  // expected-error @+1 {{head 0 adds the query's own value and needs square self-attention, but queries are 4 tokens and keys 6}}
  %o = lap.attention %q, %kv, %kv {scale = 0.35 : f32, alpha = array<f32: -1.0, 1.0>, beta = array<f32: 1.0, 0.0>}
       : tensor<?x4x2x8xf32>, tensor<?x6x2x8xf32>, tensor<?x6x2x8xf32> -> tensor<?x4x2x8xf32>
  return
}

// -----

func.func @unknown_kind(%q: tensor<?x?x2x8xf32>) {
  // expected-error @+1 {{unknown head kind 'laplace' (kinds: 'attn', 'laplacian', 'learnable')}}
  %o = lap.attention %q, %q, %q {scale = 0.35 : f32, kinds = ["attn", "laplace"]}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32> -> tensor<?x?x2x8xf32>
  return
}

// -----

func.func @learnable_kind_by_name(%q: tensor<?x?x2x8xf32>) {
  // expected-error @+1 {{head kind 'learnable' is learned: give the layer's coefficients as a tensor operand (lap.head_coefficients)}}
  %o = lap.attention %q, %q, %q {scale = 0.35 : f32, kinds = ["attn", "learnable"]}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32> -> tensor<?x?x2x8xf32>
  return
}

// -----

func.func @coefficients_and_kinds(%q: tensor<?x?x2x8xf32>, %c: tensor<2x2xf32>) {
  // expected-error @+1 {{gives head kinds both as a coefficients operand and as attributes}}
  %o = lap.attention %q, %q, %q coefficients %c {scale = 0.35 : f32, kinds = ["attn", "attn"]}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<2x2xf32> -> tensor<?x?x2x8xf32>
  return
}

// -----

func.func @coefficients_shape(%q: tensor<?x?x2x8xf32>, %c: tensor<2x3xf32>) {
  // expected-error @+1 {{coefficients must be [2, 2] (alpha, then beta, per head), got [2, 3]}}
  %o = lap.attention %q, %q, %q coefficients %c {scale = 0.35 : f32}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<2x3xf32> -> tensor<?x?x2x8xf32>
  return
}

// -----

func.func @coefficients_bf16(%q: tensor<?x?x2x8xbf16>, %c: tensor<2x2xbf16>) {
  // expected-error @+1 {{coefficients must be f32 (per-head scalars stay f32 in a bf16 model)}}
  %o = lap.attention %q, %q, %q coefficients %c {scale = 0.35 : f32}
       : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<2x2xbf16> -> tensor<?x?x2x8xbf16>
  return
}

// -----

func.func @mixed_beside_coefficients(%q: tensor<?x?x2x8xbf16>, %k: tensor<?x?x2x8xf32>, %c: tensor<2x2xf32>) {
  // expected-error @+1 {{mixes 'bf16' and 'f32' tensors; an op computes in one precision}}
  %o = lap.attention %q, %k, %k coefficients %c {scale = 0.35 : f32}
       : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<2x2xf32> -> tensor<?x?x2x8xbf16>
  return
}

// -----

func.func @coefficients_on_cross_attention(%q: tensor<?x1x2x8xf32>, %kv: tensor<?x?x2x8xf32>, %c: tensor<2x2xf32>) {
  // expected-error @+1 {{coefficients given as a tensor may add the query's own value and need square self-attention}}
  %o = lap.attention %q, %kv, %kv coefficients %c {cross, scale = 0.35 : f32}
       : tensor<?x1x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<2x2xf32> -> tensor<?x1x2x8xf32>
  return
}

// -----

func.func @head_coefficients_columns(%p: tensor<2x2xf32>) {
  // expected-error @+1 {{learns 1 heads but has 2 learned columns}}
  %c = lap.head_coefficients %p {alpha = array<f32: 1.0, 0.0>, beta = array<f32: 0.0, 0.0>, learnable = array<i64: 1>}
       : tensor<2x2xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @head_coefficients_order(%p: tensor<2x2xf32>) {
  // expected-error @+1 {{learnable must list ascending heads below 3}}
  %c = lap.head_coefficients %p {alpha = array<f32: 0.0, 0.0, 1.0>, beta = array<f32: 0.0, 0.0, 0.0>, learnable = array<i64: 1, 0>}
       : tensor<2x2xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @head_coefficients_fixed_entry(%p: tensor<2x1xf32>) {
  // expected-error @+1 {{head 1 is learned; its fixed entries must be 0}}
  %c = lap.head_coefficients %p {alpha = array<f32: 1.0, -1.0>, beta = array<f32: 0.0, 1.0>, learnable = array<i64: 1>}
       : tensor<2x1xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @head_coefficients_grad_columns(%g: tensor<2x4xf32>) {
  // expected-error @+1 {{learnable must list ascending heads below 4}}
  %d = lap.head_coefficients_grad %g {learnable = array<i64: 4>} : tensor<2x4xf32> -> tensor<2x1xf32>
  return
}

// -----

func.func @kinds_count(%q: tensor<?x?x2x8xf32>) {
  // expected-error @+1 {{has 3 head kinds for 2 heads}}
  %o = lap.attention %q, %q, %q {scale = 0.35 : f32, kinds = ["attn", "attn", "attn"]}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32> -> tensor<?x?x2x8xf32>
  return
}

// -----

func.func @kinds_and_coefficients(%q: tensor<?x?x1x8xf32>) {
  // expected-error @+1 {{gives head kinds both by name and as coefficients}}
  %o = lap.attention %q, %q, %q {scale = 0.35 : f32, kinds = ["attn"], alpha = array<f32: 1.0>, beta = array<f32: 0.0>}
       : tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32> -> tensor<?x?x1x8xf32>
  return
}

// -----

func.func @alpha_without_beta(%q: tensor<?x?x1x8xf32>) {
  // expected-error @+1 {{alpha and beta come together}}
  %o = lap.attention %q, %q, %q {scale = 0.35 : f32, alpha = array<f32: 1.0>}
       : tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32> -> tensor<?x?x1x8xf32>
  return
}

// -----

func.func @coefficient_count(%q: tensor<?x?x2x8xf32>) {
  // expected-error @+1 {{alpha and beta must have one entry per head (2)}}
  %o = lap.attention %q, %q, %q {scale = 0.35 : f32, alpha = array<f32: 1.0>, beta = array<f32: 0.0>}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32> -> tensor<?x?x2x8xf32>
  return
}

// -----

func.func @gqa_groups(%q: tensor<?x?x6x8xf32>, %kv: tensor<?x?x4x8xf32>) {
  // expected-error @+1 {{kv heads (4) must divide query heads (6)}}
  %o = lap.attention %q, %kv, %kv {scale = 0.35 : f32}
       : tensor<?x?x6x8xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4x8xf32> -> tensor<?x?x6x8xf32>
  return
}

// -----

func.func @head_dim_mismatch(%q: tensor<?x?x2x8xf32>, %kv: tensor<?x?x2x16xf32>) {
  // expected-error @+1 {{q has head_dim 8 but k has 16}}
  %o = lap.attention %q, %kv, %kv {scale = 0.35 : f32}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x2x8xf32>
  return
}

// -----

func.func @k_v_mismatch(%q: tensor<?x?x2x8xf32>, %v: tensor<?x?x1x8xf32>) {
  // expected-error @+1 {{k and v must have the same type}}
  %o = lap.attention %q, %q, %v {scale = 0.35 : f32}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x1x8xf32> -> tensor<?x?x2x8xf32>
  return
}

// -----

func.func @attention_rank(%q: tensor<?x?x16xf32>) {
  // expected-error @+1 {{expects q [B, T, H, D] and k, v [B, S, KV, D], got [?, ?, 16] and [?, ?, 16]}}
  %o = lap.attention %q, %q, %q {scale = 0.35 : f32}
       : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @attention_result(%q: tensor<?x?x2x8xf32>) {
  // expected-error @+1 {{result type must equal the type of q}}
  %o = lap.attention %q, %q, %q {scale = 0.35 : f32}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32> -> tensor<?x?x2x4xf32>
  return
}

// -----

func.func @dynamic_heads(%q: tensor<?x?x?x8xf32>) {
  // expected-error @+1 {{head counts and head_dim must be static}}
  %o = lap.attention %q, %q, %q {scale = 0.35 : f32}
       : tensor<?x?x?x8xf32>, tensor<?x?x?x8xf32>, tensor<?x?x?x8xf32> -> tensor<?x?x?x8xf32>
  return
}

// -----

func.func @batch_mismatch(%q: tensor<2x?x2x8xf32>, %kv: tensor<3x?x2x8xf32>) {
  // expected-error @+1 {{q and k have different batch sizes}}
  %o = lap.attention %q, %kv, %kv {scale = 0.35 : f32}
       : tensor<2x?x2x8xf32>, tensor<3x?x2x8xf32>, tensor<3x?x2x8xf32> -> tensor<2x?x2x8xf32>
  return
}

// -----

func.func @scale(%q: tensor<?x?x2x8xf32>) {
  // expected-error @+1 {{scale must be positive}}
  %o = lap.attention %q, %q, %q {scale = 0.0 : f32}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32> -> tensor<?x?x2x8xf32>
  return
}

// -----

func.func @linear_k(%x: tensor<?x?x64xf32>, %w: tensor<128x32xf32>) {
  // expected-error @+1 {{input [?, ?, 64] does not end in K = 32}}
  %y = lap.linear %x, %w : (tensor<?x?x64xf32>, tensor<128x32xf32>) -> tensor<?x?x128xf32>
  return
}

// -----

func.func @linear_n(%x: tensor<?x?x64xf32>, %w: tensor<128x64xf32>) {
  // expected-error @+1 {{result must be [?, ?, 64] with the last dimension 128, got [?, ?, 64]}}
  %y = lap.linear %x, %w : (tensor<?x?x64xf32>, tensor<128x64xf32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @linear_weight(%x: tensor<?x?x64xf32>, %w: tensor<?x64xf32>) {
  // expected-error @+1 {{weight must be a static [N, K] matrix, got [?, 64]}}
  %y = lap.linear %x, %w : (tensor<?x?x64xf32>, tensor<?x64xf32>) -> tensor<?x?x64xf32>
  return
}

// -----

func.func @linear_leading(%x: tensor<2x?x64xf32>, %w: tensor<8x64xf32>) {
  // expected-error @+1 {{result dimension 0 differs from the input's}}
  %y = lap.linear %x, %w : (tensor<2x?x64xf32>, tensor<8x64xf32>) -> tensor<3x?x8xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<?x64xf32>, %w: tensor<8x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{bias must be [8], got [64]}}
  %y = lap.linear %x, %w, %b : (tensor<?x64xf32>, tensor<8x64xf32>, tensor<64xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @embedding_width(%t: tensor<256x64xf32>, %ids: tensor<?x?xi32>) {
  // expected-error @+1 {{result must be the index shape [?, ?] followed by C = 64}}
  %x = lap.embedding %t[%ids] : tensor<256x64xf32>, tensor<?x?xi32> -> tensor<?x?x32xf32>
  return
}

// -----

func.func @embedding_table(%t: tensor<256x?xf32>, %ids: tensor<?x?xi32>) {
  // expected-error @+1 {{table must be [V, C] with static C, got [256, ?]}}
  %x = lap.embedding %t[%ids] : tensor<256x?xf32>, tensor<?x?xi32> -> tensor<?x?x32xf32>
  return
}

// -----

func.func @embedding_batch(%t: tensor<256x64xf32>, %ids: tensor<2x?xi32>) {
  // expected-error @+1 {{result dimension 0 differs from the indices'}}
  %x = lap.embedding %t[%ids] : tensor<256x64xf32>, tensor<2x?xi32> -> tensor<3x?x64xf32>
  return
}

// -----

func.func @norm_weight(%x: tensor<?x64xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{weight must be [64], got [32]}}
  %y = lap.layer_norm %x weight %g {eps = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<32xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @norm_bias(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %b: tensor<2x32xf32>) {
  // expected-error @+1 {{bias must be [64], got [2, 32]}}
  %y = lap.layer_norm %x weight %g bias %b {eps = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<64xf32>, tensor<2x32xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @norm_eps(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{eps must be positive}}
  %y = lap.rms_norm %x {eps = 0.0 : f32} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func @norm_dynamic(%x: tensor<?x?xf32>) {
  // expected-error @+1 {{normalises over a static last dimension, got [?, ?]}}
  %y = lap.rms_norm %x {eps = 1.0e-6 : f32} : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return
}

// -----

func.func @norm_result(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{result type must equal the input type}}
  %y = lap.rms_norm %x {eps = 1.0e-6 : f32} : (tensor<?x64xf32>) -> tensor<2x64xf32>
  return
}

// -----

func.func @rope_odd(%x: tensor<?x?x2x7xf32>) {
  // expected-error @+1 {{rotates [B, T, H, D] with a static, even D, got [?, ?, 2, 7]}}
  %y = lap.rope %x {base = 10000.0 : f32} : tensor<?x?x2x7xf32>
  return
}

// -----

func.func @rope_base(%x: tensor<?x?x2x8xf32>) {
  // expected-error @+1 {{base must be positive}}
  %y = lap.rope %x {base = -1.0 : f32} : tensor<?x?x2x8xf32>
  return
}

// -----

func.func @softcap(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{cap must be positive}}
  %y = lap.softcap %x {cap = 0.0 : f32} : tensor<?x8xf32>
  return
}

// -----

func.func @ce_rank(%l: tensor<?x?x8xf32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{targets [?] must be the logits' shape [?, ?, 8] without the classes}}
  %y = lap.cross_entropy %l, %t : tensor<?x?x8xf32>, tensor<?xi32> -> tensor<f32>
  return
}

// -----

func.func @ce_batch(%l: tensor<2x?x8xf32>, %t: tensor<3x?xi32>) {
  // expected-error @+1 {{targets dimension 0 differs from the logits'}}
  %y = lap.cross_entropy %l, %t : tensor<2x?x8xf32>, tensor<3x?xi32> -> tensor<f32>
  return
}

// -----

func.func @ce_smoothing(%l: tensor<?x8xf32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{label_smoothing must be in [0, 1]}}
  %y = lap.cross_entropy %l, %t {label_smoothing = 1.5 : f32} : tensor<?x8xf32>, tensor<?xi32> -> tensor<f32>
  return
}

// -----

func.func @split_width(%x: tensor<?x?x100xf32>) {
  // expected-error @+1 {{input must be [B, T, (H + 2 KV) D] = [?, ?, 128], got [?, ?, 100]}}
  %q, %k, %v = lap.split_heads %x : tensor<?x?x100xf32> -> tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>
  return
}

// -----

func.func @split_kv(%x: tensor<?x?x128xf32>) {
  // expected-error @+1 {{heads must be q [B, T, H, D] and k, v [B, T, KV, D]}}
  %q, %k, %v = lap.split_heads %x : tensor<?x?x128xf32> -> tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x1x16xf32>
  return
}

// -----

func.func @split_head_dim(%x: tensor<?x?x128xf32>) {
  // expected-error @+1 {{head counts and head_dim must be static and agree}}
  %q, %k, %v = lap.split_heads %x : tensor<?x?x128xf32> -> tensor<?x?x4x16xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>
  return
}

// -----

func.func @split_batch(%x: tensor<2x?x128xf32>) {
  // expected-error @+1 {{heads must keep the input's batch and sequence}}
  %q, %k, %v = lap.split_heads %x : tensor<2x?x128xf32> -> tensor<3x?x4x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>
  return
}

// -----

func.func @merge_width(%x: tensor<?x?x4x16xf32>) {
  // expected-error @+1 {{result must be [B, T, H D], got [?, ?, 32]}}
  %m = lap.merge_heads %x : tensor<?x?x4x16xf32> -> tensor<?x?x32xf32>
  return
}

// -----

func.func @merge_rank(%x: tensor<?x?x64xf32>) {
  // expected-error @+1 {{input must be [B, T, H, D] with static H and D}}
  %m = lap.merge_heads %x : tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return
}

// -----

func.func @positions_width(%x: tensor<?x?x64xf32>, %t: tensor<32x32xf32>) {
  // expected-error @+1 {{expects x [B, T, C] and a static table [P, C], got [?, ?, 64] and [32, 32]}}
  %p = lap.add_positions %x, %t : tensor<?x?x64xf32>, tensor<32x32xf32>
  return
}

// -----

func.func @positions_cover(%x: tensor<?x40x64xf32>, %t: tensor<32x64xf32>) {
  // expected-error @+1 {{the table's 32 positions do not cover tokens 1..39}}
  %p = lap.add_positions %x, %t {offset = 1} : tensor<?x40x64xf32>, tensor<32x64xf32>
  return
}

// -----

func.func @positions_offset(%x: tensor<?x?x64xf32>, %t: tensor<32x64xf32>) {
  // expected-error @+1 {{offset must not be negative}}
  %p = lap.add_positions %x, %t {offset = -1} : tensor<?x?x64xf32>, tensor<32x64xf32>
  return
}

// -----

func.func @dropout_rate(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{rate must be in [0, 1), got 1.000000e+00}}
  %y = lap.dropout %x {rate = 1.0 : f32, key = 0} : tensor<?x8xf32>
  return
}

// -----

func.func @drop_path_rate(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{rate must be in [0, 1), got -5.000000e-01}}
  %y = lap.drop_path %x {rate = -0.5 : f32, key = 0} : tensor<?x8xf32>
  return
}

// -----

func.func @patch_divides(%img: tensor<?x3x30x30xf32>) {
  // expected-error @+1 {{patch 4 must divide the image size 30x30}}
  %p = lap.patchify %img {patch = 4} : tensor<?x3x30x30xf32> -> tensor<?x49x48xf32>
  return
}

// -----

func.func @patch_result(%img: tensor<?x3x32x32xf32>) {
  // expected-error @+1 {{result must be [B, 64, 48], got [?, 64, 16]}}
  %p = lap.patchify %img {patch = 4} : tensor<?x3x32x32xf32> -> tensor<?x64x16xf32>
  return
}

// -----

func.func @patch_images(%img: tensor<?x3x?x32xf32>) {
  // expected-error @+1 {{images must be [B, C, H, W] with static C, H, W, got [?, 3, ?, 32]}}
  %p = lap.patchify %img {patch = 4} : tensor<?x3x?x32xf32> -> tensor<?x64x48xf32>
  return
}

// -----

func.func @prepend_width(%x: tensor<?x16x16xf32>, %cls: tensor<1x8xf32>) {
  // expected-error @+1 {{expects x [B, N, C] and static tokens [k, C], got [?, 16, 16] and [1, 8]}}
  %y = lap.prepend_tokens %x, %cls : tensor<?x16x16xf32>, tensor<1x8xf32> -> tensor<?x17x16xf32>
  return
}

// -----

func.func @prepend_result(%x: tensor<?x16x16xf32>, %cls: tensor<2x16xf32>) {
  // expected-error @+1 {{result must be [B, k + N, C], got [?, 17, 16]}}
  %y = lap.prepend_tokens %x, %cls : tensor<?x16x16xf32>, tensor<2x16xf32> -> tensor<?x17x16xf32>
  return
}

// -----

func.func @layer_scale_gamma(%x: tensor<?x17x16xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{gamma must be [16], got [8]}}
  %y = lap.layer_scale %x, %g : tensor<?x17x16xf32>, tensor<8xf32>
  return
}

// -----

func.func @take_outside(%x: tensor<?x17x16xf32>) {
  // expected-error @+1 {{token 17 is outside the sequence}}
  %y = lap.take_token %x {index = 17} : tensor<?x17x16xf32> -> tensor<?x16xf32>
  return
}

// -----

func.func @mean_shape(%x: tensor<?x17x16xf32>) {
  // expected-error @+1 {{pools [B, T, C] to [B, C], got [?, 17, 16] -> [?, 8]}}
  %y = lap.mean_tokens %x {skip = 1} : tensor<?x17x16xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @weight_norm_shapes(%v: tensor<32x16xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{expects v [K, D] and g [K, 1], got [32, 16] and [32]}}
  %w = lap.weight_norm %v, %g : tensor<32x16xf32>, tensor<32xf32>
  return
}

// -----

func.func @soft_ce_shapes(%l: tensor<?x32xf32>, %t: tensor<?x10xf32>) {
  // expected-error @+1 {{expects [B, K] logits and targets of the same shape, got [?, 32] and [?, 10]}}
  %y = lap.soft_cross_entropy %l, %t : tensor<?x32xf32>, tensor<?x10xf32> -> tensor<f32>
  return
}

// -----

func.func @bce_shapes(%l: tensor<?x32xf32>, %t: tensor<?xf32>) {
  // expected-error @+1 {{expects [B, K] logits and targets of the same shape, got [?, 32] and [?]}}
  %y = lap.bce_with_logits %l, %t : tensor<?x32xf32>, tensor<?xf32> -> tensor<f32>
  return
}

// -----

func.func @dino_temperature(%s: tensor<?x32xf32>) {
  // expected-error @+1 {{temperature must be positive}}
  %y = lap.dino_loss %s, %s {temperature = 0.0 : f32} : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<f32>
  return
}

// -----

func.func @ce_softcap(%l: tensor<?x8xf32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{softcap must not be negative}}
  %y = lap.cross_entropy %l, %t {softcap = -1.0 : f32} : tensor<?x8xf32>, tensor<?xi32> -> tensor<f32>
  return
}

// -----

func.func @activation_grad_name(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{unknown activation 'swish' (gelu_tanh, gelu or relu2)}}
  %y = lap.activation_grad %x, %x {activation = "swish"} : tensor<?x8xf32>
  return
}

// -----

func.func @row_loss_grad_name(%one: tensor<f32>, %l: tensor<?x8xf32>) {
  // expected-error @+1 {{unknown loss 'mse' (soft_cross_entropy, bce_with_logits or dino_loss)}}
  %y = lap.row_loss_grad %one, %l, %l {loss = "mse"} : tensor<f32>, tensor<?x8xf32>
  return
}

// -----

func.func @row_loss_grad_temperature(%one: tensor<f32>, %l: tensor<?x8xf32>) {
  // expected-error @+1 {{temperature must be positive}}
  %y = lap.row_loss_grad %one, %l, %l {loss = "dino_loss", temperature = 0.0 : f32} : tensor<f32>, tensor<?x8xf32>
  return
}

// -----

func.func @linear_grad_shapes(%dy: tensor<?x8xf32>, %x: tensor<?x4xf32>, %w: tensor<4x4xf32>) {
  // expected-error @+1 {{expects dy [..., N], x [..., K] and W [N, K], got [?, 8], [?, 4] and [4, 4]}}
  %dx, %dw, %db = lap.linear_grad %dy, %x, %w : tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @linear_grad_bias(%dy: tensor<?x8xf32>, %x: tensor<?x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{grad_bias must be [8], got [4]}}
  %dx, %dw, %db = lap.linear_grad %dy, %x, %w : tensor<?x8xf32>, tensor<?x4xf32>, tensor<8x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @linear_gelu_types(%x: tensor<?x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{pre and result must have one type}}
  %pre, %y = lap.linear_gelu %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> (tensor<?x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @linear_gelu_shapes(%x: tensor<?x4xf32>, %w: tensor<8x5xf32>) {
  // expected-error @+1 {{input [?, 4] does not end in K = 5}}
  %pre, %y = lap.linear_gelu %x, %w : (tensor<?x4xf32>, tensor<8x5xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>)
  return
}

// -----

func.func @gelu_linear_grad_bias(%dy: tensor<?x8xf32>, %w: tensor<8x4xf32>, %pre: tensor<?x4xf32>) {
  // expected-error @+1 {{grad_bias must be [4], got [8]}}
  %dpre, %db = lap.gelu_linear_grad %dy, %w, %pre : tensor<?x8xf32>, tensor<8x4xf32>, tensor<?x4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @gelu_linear_grad_shapes(%dy: tensor<?x8xf32>, %w: tensor<4x4xf32>, %pre: tensor<?x4xf32>) {
  // expected-error @+1 {{expects dy [..., N], pre [..., K] and W [N, K], got [?, 8], [?, 4] and [4, 4]}}
  %dpre, %db = lap.gelu_linear_grad %dy, %w, %pre : tensor<?x8xf32>, tensor<4x4xf32>, tensor<?x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @embedding_grad_table(%dy: tensor<?x?x8xf32>, %ids: tensor<?x?xi32>) {
  // expected-error @+1 {{expects dy [..., C] over the indices and a static table [V, C], got [?, ?, 8] and [100, 4]}}
  %t = lap.embedding_grad %dy, %ids : tensor<?x?x8xf32>, tensor<?x?xi32> -> tensor<100x4xf32>
  return
}

// -----

func.func @positions_grad_table(%dy: tensor<?x?x8xf32>) {
  // expected-error @+1 {{expects dy [B, T, C] and a static table [P, C], got [?, ?, 8] and [?, 8]}}
  %t = lap.add_positions_grad %dy {offset = 0} : tensor<?x?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @layer_norm_grad_weight(%dy: tensor<?x8xf32>) {
  // expected-error @+1 {{grad_weight must be [8], got [4]}}
  %dx, %dw, %db = lap.layer_norm_grad %dy, %dy {eps = 1.0e-5 : f32} : tensor<?x8xf32>, tensor<4xf32>, tensor<8xf32>
  return
}

// -----

func.func @rms_norm_grad_weight(%dy: tensor<?x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{weight must be [8], got [4]}}
  %dx, %dw = lap.rms_norm_grad %dy, %dy weight %w {eps = 1.0e-5 : f32} : tensor<?x8xf32>, tensor<8xf32>, tensor<4xf32>
  return
}

// -----

func.func @split_heads_grad_width(%dq: tensor<?x?x4x16xf32>, %dk: tensor<?x?x2x16xf32>) {
  // expected-error @+1 {{expects dq [B, T, H, D], dk, dv [B, T, KV, D] and a result [B, T, (H + 2 KV) D], got [?, ?, 4, 16], [?, ?, 2, 16] -> [?, ?, 64]}}
  %dx = lap.split_heads_grad %dq, %dk, %dk : tensor<?x?x4x16xf32>, tensor<?x?x2x16xf32> -> tensor<?x?x64xf32>
  return
}

// -----

func.func @merge_heads_grad_width(%dy: tensor<?x?x64xf32>) {
  // expected-error @+1 {{expects dy [B, T, H D] and a result [B, T, H, D], got [?, ?, 64] -> [?, ?, 2, 16]}}
  %dx = lap.merge_heads_grad %dy : tensor<?x?x64xf32> -> tensor<?x?x2x16xf32>
  return
}

// -----

func.func @ce_grad_targets(%one: tensor<f32>, %l: tensor<?x?x8xf32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{targets [?] must be the logits' shape [?, ?, 8] without the classes}}
  %d = lap.cross_entropy_grad %one, %l, %t {label_smoothing = 0.0 : f32} : tensor<f32>, tensor<?x?x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @patchify_grad_shape(%dy: tensor<?x49x16xf32>) {
  // expected-error @+1 {{expects patch gradients [B, (H/p)(W/p), C p p] for images [B, C, H, W], got [?, 49, 16] -> [?, 3, 28, 28]}}
  %d = lap.patchify_grad %dy {patch = 4} : tensor<?x49x16xf32> -> tensor<?x3x28x28xf32>
  return
}

// -----

func.func @prepend_grad_shape(%dy: tensor<?x50x16xf32>) {
  // expected-error @+1 {{expects dy [B, k + N, C] -> [B, N, C] and [k, C], got [?, 50, 16] -> [?, 48, 16] and [1, 16]}}
  %dx, %dt = lap.prepend_tokens_grad %dy : tensor<?x50x16xf32> -> tensor<?x48x16xf32>, tensor<1x16xf32>
  return
}

// -----

func.func @residual_gamma(%x: tensor<?x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{gamma must be [8], got [4]}}
  %y = lap.residual_add %x, %x gamma %g {drop_rate = 0.0 : f32, key = 0} : tensor<?x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @residual_rate(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{rate must be in [0, 1), got 1.500000e+00}}
  %y = lap.residual_add %x, %x {drop_rate = 1.5 : f32, key = 0} : tensor<?x8xf32>
  return
}

// -----

func.func @zero_kv_heads(%q: tensor<2x4x2x8xf32>, %kv: tensor<2x4x0x8xf32>) {
  // expected-error @+1 {{head counts and head_dim must be positive}}
  %o = lap.attention %q, %kv, %kv {scale = 0.35 : f32}
       : tensor<2x4x2x8xf32>, tensor<2x4x0x8xf32>, tensor<2x4x0x8xf32> -> tensor<2x4x2x8xf32>
  return
}

// -----

func.func @attention_grad_kind(%q: tensor<?x?x2x8xf32>) {
  // expected-error @+1 {{unknown head kind 'bogus' (kinds: 'attn', 'laplacian', 'learnable')}}
  %dq, %dk, %dv = lap.attention_grad %q, %q, %q, %q, %q {scale = 0.35 : f32, kinds = ["attn", "bogus"]} : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>
  return
}

// -----

func.func @attention_grad_cross(%q: tensor<?x1x1x8xf32>, %kv: tensor<?x?x1x8xf32>) {
  // expected-error @+1 {{head 0 adds the query's own value (beta = 1.000000e+00) and needs square self-attention, but this is cross-attention}}
  %dq, %dk, %dv = lap.attention_grad %q, %q, %kv, %kv, %q {cross, scale = 0.35 : f32, kinds = ["laplacian"]} : tensor<?x1x1x8xf32>, tensor<?x?x1x8xf32>
  return
}

// -----

func.func @patchify_grad_divides(%dy: tensor<?x4x16xf32>) {
  // expected-error @+1 {{expects patch gradients [B, (H/p)(W/p), C p p] for images [B, C, H, W], got [?, 4, 16] -> [?, 1, 10, 10]}}
  %d = lap.patchify_grad %dy {patch = 4} : tensor<?x4x16xf32> -> tensor<?x1x10x10xf32>
  return
}

// -----

func.func @cache_of_other_heads(%q: tensor<?x?x2x8xf32>, %c: tensor<?x?x1x8xf32>, %first: i64) {
  // expected-error @+1 {{caches must be [B, slots, KV, D] like k [?, ?, 2, 8], got [?, ?, 1, 8]}}
  %o = lap.cached_attention %q, %q, %q into %c, %c at %first {scale = 0.35 : f32}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x1x8xf32> -> tensor<?x?x2x8xf32>
  return
}

// -----

func.func @cached_attention_unknown_kind(%q: tensor<?x?x2x8xf32>, %first: i64) {
  // expected-error @+1 {{unknown head kind 'lapalcian'}}
  %o = lap.cached_attention %q, %q, %q into %q, %q at %first {scale = 0.35 : f32, kinds = ["attn", "lapalcian"]}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32> -> tensor<?x?x2x8xf32>
  return
}

// -----

// Element types: an op computes in one precision.
func.func @mixed_precision(%x: tensor<?x8xf32>, %w: tensor<4x8xbf16>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'lap.linear' op mixes 'f32' and 'bf16' tensors; an op computes in one precision}}
  %c = lap.linear %x, %w : (tensor<?x8xf32>, tensor<4x8xbf16>) -> tensor<?x4xf32>
  return %c : tensor<?x4xf32>
}

// -----

// Scalars (losses, summed losses) are f32 whatever the precision.
func.func @bf16_scalar(%a: tensor<bf16>) -> tensor<bf16> {
  // expected-error @+1 {{'lap.add' op has a scalar of 'bf16'; scalars (losses) are f32 at every precision}}
  %c = lap.add %a, %a : tensor<bf16>
  return %c : tensor<bf16>
}

// -----

func.func @f16(%a: tensor<?x8xf16>) -> tensor<?x8xf16> {
  // expected-error @+1 {{must be ranked tensor of 32-bit float or bfloat16 type values}}
  %c = lap.relu2 %a : tensor<?x8xf16>
  return %c : tensor<?x8xf16>
}

// -----

func.func @linear_cross_entropy_widths(%one: tensor<f32>, %x: tensor<?x?x8xf32>, %w: tensor<64x4xf32>, %t: tensor<?x?xi32>) {
  // expected-error @+1 {{expects input [..., C] and weight [V, C], got [?, ?, 8] and [64, 4]}}
  %loss, %dx, %dw = lap.linear_cross_entropy %one, %x, %w, %t : tensor<f32>, tensor<?x?x8xf32>, tensor<64x4xf32>, tensor<?x?xi32>
  return
}

// -----

func.func @linear_cross_entropy_targets(%one: tensor<f32>, %x: tensor<?x?x8xf32>, %w: tensor<64x8xf32>, %t: tensor<?xi32>) {
  // expected-error @+1 {{targets [?] must be the input's shape [?, ?, 8] without the features}}
  %loss, %dx, %dw = lap.linear_cross_entropy %one, %x, %w, %t : tensor<f32>, tensor<?x?x8xf32>, tensor<64x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @fusion_of_a_kernel(%x: tensor<?x?x2x8xf32>) {
  // expected-error @+1 {{cannot compute 'lap.rope' in its loop}}
  %y = lap.fusion %x : (tensor<?x?x2x8xf32>) -> tensor<?x?x2x8xf32> {
  ^bb0(%a: tensor<?x?x2x8xf32>):
    %r = lap.rope %a {base = 10000.0 : f32} : tensor<?x?x2x8xf32>
    lap.yield %r : tensor<?x?x2x8xf32>
  }
  return
}

// -----

func.func @fusion_of_two_shapes(%x: tensor<?x?x8xf32>, %y: tensor<?x4x8xf32>) {
  // expected-error @+1 {{reads [?, 4, 8]; its values are [?, ?, 8] or [8] per column}}
  %s = lap.fusion %x, %y : (tensor<?x?x8xf32>, tensor<?x4x8xf32>) -> tensor<?x?x8xf32> {
  ^bb0(%a: tensor<?x?x8xf32>, %b: tensor<?x4x8xf32>):
    %r = lap.relu2 %a : tensor<?x?x8xf32>
    lap.yield %r : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @fusion_argument_types(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{needs one body argument of the same type per input}}
  %s = lap.fusion %x : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  ^bb0(%a: tensor<?x?x8xf32>, %b: tensor<?x?x8xf32>):
    lap.yield %a : tensor<?x?x8xf32>
  }
  return
}

// -----

func.func @fusion_yields_nothing(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{must yield at least one value}}
  lap.fusion %x : (tensor<?x?x8xf32>) -> () {
  ^bb0(%a: tensor<?x?x8xf32>):
    lap.yield
  }
  return
}

// -----

func.func @add_bias_width(%x: tensor<?x17x16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{bias must be [16], got [8]}}
  %y = lap.add_bias %x, %b : tensor<?x17x16xf32>, tensor<8xf32>
  return
}

// -----

func.func @linear_heads_weight(%x: tensor<?x?x8xf32>, %w: tensor<24x4xf32>) {
  // expected-error @+1 {{weight must be [(H + 2 KV) D, C] = [24, 8], got [24, 4]}}
  %q, %k, %v = lap.linear_heads %x, %w : (tensor<?x?x8xf32>, tensor<24x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>)
  return
}

// -----

func.func @linear_heads_bias(%x: tensor<?x?x8xf32>, %w: tensor<24x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{bias must be [24], got [8]}}
  %q, %k, %v = lap.linear_heads %x, %w, %b : (tensor<?x?x8xf32>, tensor<24x8xf32>, tensor<8xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>)
  return
}

// -----

func.func @linear_heads_grad_rows(%dq: tensor<?x?x2x4xf32>, %x: tensor<?x8xf32>, %w: tensor<24x8xf32>) {
  // expected-error @+1 {{input must be [B, T, C], got [?, 8]}}
  %dx, %dw, %db = lap.linear_heads_grad %dq, %dq, %dq, %x, %w : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x8xf32>, tensor<24x8xf32> -> tensor<24xf32>
  return
}

// -----

func.func @column_sum_width(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{sums [..., C] to [C], got [?, ?, 8] -> [4]}}
  %s = lap.column_sum %x : tensor<?x?x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @fusion_yields_a_column(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{yields a value that is neither [?, ?, 8] nor a column sum}}
  %s = lap.fusion %x, %g : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<?x?x8xf32>, %b: tensor<8xf32>):
    %r = lap.relu2 %a : tensor<?x?x8xf32>
    lap.yield %b : tensor<8xf32>
  }
  return
}

// -----

func.func @interpolate_not_a_grid(%pos: tensor<50x32xf32>) {
  // expected-error @+1 {{expects static tables [1 + G*G, C] and [1 + g*g, C], got [50, 32] and [11, 32]}}
  %p = lap.interpolate_positions %pos {keep = 1} : tensor<50x32xf32> -> tensor<11x32xf32>
  return
}

// -----

func.func @interpolate_width(%pos: tensor<49x32xf32>) {
  // expected-error @+1 {{expects static tables [0 + G*G, C] and [0 + g*g, C], got [49, 32] and [9, 16]}}
  %p = lap.interpolate_positions %pos {keep = 0} : tensor<49x32xf32> -> tensor<9x16xf32>
  return
}

// -----

func.func @interpolate_keep(%pos: tensor<49x32xf32>) {
  // expected-error @+1 {{keep must not be negative}}
  %p = lap.interpolate_positions %pos {keep = -1} : tensor<49x32xf32> -> tensor<9x32xf32>
  return
}

// -----

func.func @interpolate_grad_dynamic(%d: tensor<?x32xf32>) {
  // expected-error @+1 {{expects static tables [1 + G*G, C] and [1 + g*g, C], got [50, 32] and [?, 32]}}
  %g = lap.interpolate_positions_grad %d {keep = 1} : tensor<?x32xf32> -> tensor<50x32xf32>
  return
}

// -----

// expected-error @+1 {{'lap.matmul_precision' must be "fp32" or "bf16"}}
module attributes {lap.matmul_precision = "tf32"} {
}

// -----

// expected-error @+1 {{'lap.matmul_precision' belongs on a module}}
func.func @precision_on_a_function() attributes {lap.matmul_precision = "bf16"} {
  return
}

// -----

func.func @convert_to_itself(%x: tensor<?x8xbf16>) -> tensor<?x8xbf16> {
  // expected-error @+1 {{converts between f32 and bf16, got 'bf16' to 'bf16'}}
  %c = lap.convert %x : tensor<?x8xbf16> to tensor<?x8xbf16>
  return %c : tensor<?x8xbf16>
}

// -----

func.func @convert_a_loss(%x: tensor<f32>) -> tensor<bf16> {
  // expected-error @+1 {{converts tensors of rank >= 1; scalars (losses) are f32 at every precision}}
  %c = lap.convert %x : tensor<f32> to tensor<bf16>
  return %c : tensor<bf16>
}

// -----

func.func @convert_reshapes(%x: tensor<4x8xf32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %c = lap.convert %x : tensor<4x8xf32> to tensor<8x4xbf16>
  return %c : tensor<8x4xbf16>
}

// -----

func.func @window_without_causal(%q: tensor<?x?x2x8xf32>) {
  // expected-error @+1 {{'lap.attention' op a window needs causal attention}}
  %o = lap.attention %q, %q, %q {scale = 0.35 : f32, window = 4}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32> -> tensor<?x?x2x8xf32>
  return
}

// -----

func.func @negative_window(%q: tensor<?x?x2x8xf32>) {
  // expected-error @+1 {{'lap.attention' op window must be 0 (none) or positive, got -2}}
  %o = lap.attention %q, %q, %q {causal, scale = 0.35 : f32, window = -2}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32> -> tensor<?x?x2x8xf32>
  return
}

// -----

func.func @documents_without_causal(%q: tensor<?x?x2x8xf32>, %s: tensor<?x?xi32>) {
  // expected-error @+1 {{'lap.attention' op documents (starts) need causal attention}}
  %o = lap.attention %q, %q, %q starts %s {scale = 0.35 : f32}
       : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32> starts tensor<?x?xi32> -> tensor<?x?x2x8xf32>
  return
}

// -----

func.func @lengths_of_another_shape(%q: tensor<2x5x2x8xf32>, %n: tensor<3xi32>) {
  // expected-error @+1 {{'lap.attention' op lengths must be [B] like q's first dimension, got [3]}}
  %o = lap.attention %q, %q, %q lengths %n {scale = 0.35 : f32}
       : tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32> lengths tensor<3xi32> -> tensor<2x5x2x8xf32>
  return
}

// -----

func.func @starts_of_another_shape(%q: tensor<2x5x2x8xf32>, %s: tensor<2x6xi32>) {
  // expected-error @+1 {{'lap.attention' op starts must be [B, T] like q's first two dimensions, got [2, 6]}}
  %o = lap.attention %q, %q, %q starts %s {causal, scale = 0.35 : f32}
       : tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32> starts tensor<2x6xi32> -> tensor<2x5x2x8xf32>
  return
}

// -----

func.func @negative_bos(%tokens: tensor<?x?xi32>) {
  // expected-error @+1 {{'lap.document_starts' op bos must be a token id, got -1}}
  %s = lap.document_starts %tokens {bos = -1} : tensor<?x?xi32>
  return
}
