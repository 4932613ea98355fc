// RUN: lap-opt %s --split-input-file --lap-pipeline="fuse-loops=0" --lap-kernels="max-batch=4 max-seq=16 profile=1" | FileCheck %s

// The kernel form of every op, each between its profile markers (ops
// alone: lap-to-kernels-fused.mlir has the fused loops). A planned
// function becomes @lap_gen_<name> on flat buffers of static size: the
// parameter and workspace bytes, one buffer per batch tensor and output,
// then B, T (index), the seed (a buffer of one i64: read where it is
// used) and first (i64); lapk.entry counts the batch
// tensors. Parameters and intermediates are views at their offsets.

// CHECK-LABEL: func.func @lap_gen_forward(
// CHECK-SAME: %[[PARAMS:[a-z0-9]+]]: memref<832xi8>, %[[WS:[a-z0-9]+]]: memref<12288xi8>, %[[X:[a-z0-9]+]]: memref<512xf32>, %[[T:[a-z0-9]+]]: memref<64xi32>, %[[LOSS:[a-z0-9]+]]: memref<1xf32>, %[[B:[a-z0-9]+]]: index, %[[S:[a-z0-9]+]]: index, %{{[a-z0-9]+}}: memref<1xi64>, %{{[a-z0-9]+}}: i64)
// CHECK-SAME: lapk.entry = 2 : i64
// CHECK-DAG: %[[W:.*]] = memref.view %[[PARAMS]][%c0][] : memref<832xi8> to memref<192xf32>
// CHECK-DAG: %[[G:.*]] = memref.view %[[PARAMS]][%c768][] : memref<832xi8> to memref<8xf32>

// LayerNorm: one row per parallel iteration; mean and variance by
// reassociable sums, then normalise, scale and shift.
// CHECK: lapk.profile_begin "lap.layer_norm"
// CHECK: %[[ROWS:.*]] = arith.muli %[[B]], %[[S]] : index
// CHECK: scf.parallel (%[[R:.*]]) = (%c0) to (%[[ROWS]]) step (%c1) {
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.addf {{.*}} fastmath<reassoc,contract>
// CHECK: scf.for {{.*}} iter_args
// CHECK: math.rsqrt
// CHECK: scf.for
// CHECK: memref.load %[[G]]
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: memref.store
// CHECK: } {lapk.grain = 2048 : i64}
// CHECK-NEXT: lapk.profile_end "lap.layer_norm"

// GEMMs call the kernel library; a missing bias is lapk.null. A linear
// layer and the tanh GELU it feeds are one GEMM with the GELU in its
// epilogue; evaluating, nothing else reads the pre-activation, which is not
// stored (a null buffer too).
// CHECK: %[[NOPRE:.*]] = lapk.null : memref<1536xf32>
// CHECK: lapk.profile_begin "lap.linear_gelu"
// CHECK: %[[NONE:.*]] = lapk.null : memref<0xf32>
// CHECK: lapk.call "linear_gelu_forward"(%{{.*}}, %[[NOPRE]], %{{.*}}, %[[W]], %[[NONE]], %{{.*}}, %c8_i64, %c24_i64, %c0_i32{{[_0-9]*}}) : memref<1536xf32>, memref<1536xf32>, memref<512xf32>, memref<192xf32>, memref<0xf32>, i64, i64, i64, i32

// Heads: the fused [N, 24] rows copied into q, k and v, 8 floats each.
// CHECK: lapk.profile_begin "lap.split_heads"
// CHECK: scf.parallel
// CHECK-COUNT-3: scf.for %{{.*}} = %c0 to %c8 step %c1 {
// CHECK: } {lapk.grain = 682 : i64}

// Per-head coefficients [2, H] of fixed kinds are a constant global (alpha,
// then beta); the logsumexp [B, H, T] lies right after the output.
// CHECK: lapk.profile_begin "lap.attention"
// CHECK: %[[LSE:.*]] = memref.view %[[WS]][%{{.*}}][] : memref<12288xi8> to memref<128xf32>
// CHECK: %[[COEFFICIENTS:.*]] = memref.get_global @lap_coefficients_0 : memref<4xf32>
// CHECK: lapk.call "attention_forward"(%{{.*}}, %[[LSE]], %{{.*}}, %{{.*}}, %{{.*}}, %[[COEFFICIENTS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c2_i64, %c4_i64, %{{.*}}, %c1_i32, %c0_i64) : memref<512xf32>, memref<128xf32>, memref<512xf32>, memref<512xf32>, memref<512xf32>, memref<4xf32>, memref<0xi32>, memref<0xi32>, i64, i64, i64, i64, i64, i64, f32, i32, i64

// [B, T, H, D] and [B, T, H D] share a layout, and the plan their bytes:
// nothing to do.
// CHECK: lapk.profile_begin "lap.merge_heads"
// CHECK-NEXT: lapk.profile_end "lap.merge_heads"

// CHECK: lapk.profile_begin "lap.rms_norm"
// CHECK: scf.parallel
// CHECK: arith.addf {{.*}} fastmath<reassoc,contract>
// CHECK: math.rsqrt
// CHECK: memref.load %[[G]]
// CHECK: } {lapk.grain = 2048 : i64}

// add(x, drop_path(layer_scale(r, g))) fused: no drop when evaluating.
// CHECK: lapk.profile_begin "lap.residual_add"
// CHECK: scf.parallel
// CHECK: memref.load %[[G]]
// CHECK-NOT: arith.select
// CHECK: memref.load %[[X]]
// CHECK: arith.addf
// CHECK: } {lapk.grain = 2048 : i64}
// CHECK-NEXT: lapk.profile_end "lap.residual_add"

// Evaluating, drop path and dropout are the identity: their results share
// their inputs' bytes.
// CHECK: lapk.profile_begin "lap.drop_path"
// CHECK-NEXT: lapk.profile_end "lap.drop_path"
// CHECK: lapk.profile_begin "lap.dropout"
// CHECK-NEXT: lapk.profile_end "lap.dropout"

// CHECK: lapk.profile_begin "lap.relu2"
// CHECK: arith.maximumf
// CHECK-NEXT: arith.mulf
// CHECK: lapk.profile_begin "lap.gelu"
// CHECK: math.erf
// CHECK: lapk.profile_begin "lap.softcap"
// CHECK: math.tanh
// CHECK: lapk.profile_begin "lap.add"
// CHECK: memref.load %[[X]]
// CHECK: arith.addf
// CHECK: lapk.profile_begin "lap.cross_entropy"
// CHECK-NEXT: lapk.call "cross_entropy_forward"(%[[LOSS]], %{{.*}}, %[[T]], %{{.*}}, %c8_i64, %{{.*}}, %{{.*}}) : memref<1xf32>, memref<512xf32>, memref<64xi32>, i64, i64, f32, f32
// CHECK: return

// Training: gradients are written straight into the output buffers (the
// loss, then grad.w [192] and grad.g [8]).
// CHECK-LABEL: func.func @lap_gen_train_step(
// CHECK-SAME: %{{[a-z0-9]+}}: memref<832xi8>, %{{[a-z0-9]+}}: memref<24640xi8>, %{{[a-z0-9]+}}: memref<512xf32>, %{{[a-z0-9]+}}: memref<64xi32>, %{{[a-z0-9]+}}: memref<1xf32>, %[[DW:[a-z0-9]+]]: memref<192xf32>, %{{[a-z0-9]+}}: memref<8xf32>, %{{[a-z0-9]+}}: index, %{{[a-z0-9]+}}: index, %[[SEED:[a-z0-9]+]]: memref<1xi64>, %{{[a-z0-9]+}}: i64)
// A splat constant fills its buffer (here one element: the loss's seed
// gradient).
// CHECK: lapk.profile_begin "arith.constant"
// CHECK-NEXT: memref.store %cst{{.*}}, %{{.*}}[%c0] : memref<1xf32>
// Training keeps the pre-activation, for the GELU's derivative.
// CHECK: lapk.call "linear_gelu_forward"(%{{[a-z0-9_]+}}, %[[PRE:[a-z0-9_]+]], %{{.*}}) : memref<1536xf32>, memref<1536xf32>,
// Training, the residual's drop path draws once per sample.
// CHECK: lapk.profile_begin "lap.residual_add"
// CHECK: scf.parallel
// CHECK: arith.divui
// CHECK: arith.select
// CHECK: lapk.profile_begin "lap.drop_path"
// CHECK: lapk.call "drop_path"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SEED]], %c5_i64) : memref<512xf32>, memref<512xf32>, i64, i64, f32, memref<1xi64>, i64
// CHECK: lapk.profile_begin "lap.dropout"
// CHECK: lapk.call "dropout"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SEED]], %c4_i64) : memref<512xf32>, memref<512xf32>, i64, f32, memref<1xi64>, i64
// CHECK: lapk.call "cross_entropy_backward"(%{{.*}}) : memref<512xf32>, memref<1xf32>, memref<512xf32>, memref<64xi32>, i64, i64, f32, f32
// CHECK: lapk.profile_begin "lap.softcap_grad"
// CHECK: math.tanh
// CHECK: arith.subf
// gelu's derivative: Phi(x) + x phi(x).
// CHECK: lapk.profile_begin "lap.activation_grad"
// CHECK: math.erf
// CHECK: math.exp
// relu2's: 2 max(x, 0).
// CHECK: lapk.profile_begin "lap.activation_grad"
// CHECK: arith.maximumf
// CHECK: lapk.call "layer_scale_backward"(%{{.*}}) : memref<512xf32>, memref<8xf32>, memref<512xf32>, memref<512xf32>, memref<8xf32>, i64, i64
// CHECK: lapk.call "rms_norm_backward"(%{{.*}}) : memref<512xf32>, memref<8xf32>, memref<512xf32>, memref<512xf32>, memref<8xf32>, i64, i64, f32
// CHECK: lapk.profile_begin "lap.merge_heads_grad"
// CHECK-NEXT: lapk.profile_end "lap.merge_heads_grad"
// Fixed kinds: no coefficient gradient (a null buffer).
// CHECK: lapk.call "attention_backward"(%{{.*}}, %{{.*}}) : memref<512xf32>, memref<512xf32>, memref<512xf32>, memref<0xf32>, memref<512xf32>, memref<512xf32>, memref<512xf32>, memref<512xf32>, memref<512xf32>, memref<128xf32>, memref<4xf32>, memref<0xi32>, memref<0xi32>, i64, i64, i64, i64, i64, i64, f32, i32, i64
// q, k and v copied back into the fused rows.
// CHECK: lapk.profile_begin "lap.split_heads_grad"
// CHECK: scf.parallel
// CHECK-COUNT-3: scf.for %{{.*}} = %c0 to %c8 step %c1 {
// gelu_tanh's derivative (here of a copy of heads, not of a linear layer's
// input gradient: a loop of its own).
// CHECK: lapk.profile_begin "lap.activation_grad"
// CHECK: memref.load %[[PRE]]
// CHECK: math.tanh
// CHECK: lapk.call "linear_backward"(%{{.*}}, %[[DW]], %{{.*}}) : memref<512xf32>, memref<192xf32>, memref<24xf32>, memref<1536xf32>, memref<512xf32>, memref<192xf32>, i64, i64, i64, i32
// CHECK: lapk.call "layer_norm_backward"(%{{.*}}) : memref<512xf32>, memref<8xf32>, memref<8xf32>, memref<512xf32>, memref<512xf32>, memref<8xf32>, i64, i64, f32
// CHECK: return
func.func @forward(%w: tensor<24x8xf32> {lap.name = "w", lap.parameter},
                   %g: tensor<8xf32> {lap.name = "g", lap.parameter},
                   %x: tensor<?x?x8xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  %n = lap.layer_norm %x weight %g bias %g {eps = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %h = lap.linear %n, %w : (tensor<?x?x8xf32>, tensor<24x8xf32>) -> tensor<?x?x24xf32>
  %a = lap.gelu_tanh %h : tensor<?x?x24xf32>
  %q, %k, %v = lap.split_heads %a : tensor<?x?x24xf32> -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %o = lap.attention %q, %k, %v {causal, scale = 0.5 : f32, kinds = ["attn", "laplacian"]} : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x2x4xf32>
  %m = lap.merge_heads %o : tensor<?x?x2x4xf32> -> tensor<?x?x8xf32>
  %r = lap.rms_norm %m weight %g {eps = 1.0e-6 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %s = lap.layer_scale %r, %g : tensor<?x?x8xf32>, tensor<8xf32>
  %sp = lap.drop_path %s {rate = 0.1 : f32, key = 3} : tensor<?x?x8xf32>
  %y = lap.add %x, %sp : tensor<?x?x8xf32>
  %p = lap.drop_path %y {rate = 0.2 : f32, key = 5} : tensor<?x?x8xf32>
  %d = lap.dropout %p {rate = 0.1 : f32, key = 4} : tensor<?x?x8xf32>
  %e = lap.relu2 %d : tensor<?x?x8xf32>
  %f = lap.gelu %e : tensor<?x?x8xf32>
  %c = lap.softcap %f {cap = 15.0 : f32} : tensor<?x?x8xf32>
  %z = lap.add %c, %x : tensor<?x?x8xf32>
  %loss = lap.cross_entropy %z, %t : tensor<?x?x8xf32>, tensor<?x?xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The image ops and the row losses (kinds: 0 soft cross-entropy, 1 BCE, 2
// DINO, KernelEnums.h). LayerScale on its own is a generated loop.
// CHECK-LABEL: func.func @lap_gen_forward(
// CHECK: lapk.profile_begin "lap.layer_scale"
// CHECK: scf.parallel
// CHECK: arith.mulf
// CHECK: } {lapk.grain = 1024 : i64}
// CHECK-LABEL: func.func @lap_gen_train_step(
// CHECK: lapk.call "patchify_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i64, %c28_i64, %c28_i64, %c7_i64) : memref<3136xf32>, memref<3136xf32>, i64, i64, i64, i64, i64
// CHECK: lapk.call "linear_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c49_i64, %c16_i64, %c0_i32{{[_0-9]*}}) : memref<1024xf32>, memref<3136xf32>, memref<784xf32>, memref<0xf32>, i64, i64, i64, i32
// CHECK: lapk.call "prepend_tokens_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c16_i64, %c1_i64, %c16_i64) : memref<1088xf32>, memref<1024xf32>, memref<16xf32>, i64, i64, i64, i64
// CHECK: lapk.call "add_positions_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c17_i64, %c16_i64, %c0_i64, %c0_i64) : memref<1088xf32>, memref<1088xf32>, memref<272xf32>, i64, i64, i64, i64, i64
// CHECK: lapk.call "take_token_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %c17_i64, %c16_i64, %c0_i64) : memref<64xf32>, memref<1088xf32>, i64, i64, i64, i64
// CHECK: lapk.call "mean_tokens_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %c17_i64, %c16_i64, %c1_i64) : memref<64xf32>, memref<1088xf32>, i64, i64, i64, i64
// CHECK: lapk.call "l2_normalize_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %c16_i64, %{{.*}}) : memref<64xf32>, memref<64xf32>, i64, i64, f32
// CHECK: lapk.call "weight_norm_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %c32_i64, %c16_i64) : memref<512xf32>, memref<512xf32>, memref<32xf32>, i64, i64
// CHECK: lapk.call "linear_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c16_i64, %c32_i64, %c0_i32{{[_0-9]*}}) : memref<128xf32>, memref<64xf32>, memref<512xf32>, memref<0xf32>, i64, i64, i64, i32
// CHECK: lapk.call "row_loss_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c32_i64, %c0_i32, %{{.*}}) : memref<1xf32>, memref<128xf32>, memref<128xf32>, i64, i64, i32, f32
// CHECK: lapk.call "row_loss_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c32_i64, %c1_i32, %{{.*}}) : memref<1xf32>, memref<128xf32>, memref<128xf32>, i64, i64, i32, f32
// CHECK: lapk.call "row_loss_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c32_i64, %c2_i32, %{{.*}}) : memref<1xf32>, memref<128xf32>, memref<128xf32>, i64, i64, i32, f32
// CHECK: lapk.call "row_loss_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c32_i64, %c2_i32, %{{.*}}) : memref<128xf32>, memref<1xf32>, memref<128xf32>, memref<128xf32>, i64, i64, i32, f32
// CHECK: lapk.call "row_loss_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c32_i64, %c1_i32, %{{.*}}) : memref<128xf32>, memref<1xf32>, memref<128xf32>, memref<128xf32>, i64, i64, i32, f32
// CHECK: lapk.call "row_loss_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c32_i64, %c0_i32, %{{.*}}) : memref<128xf32>, memref<1xf32>, memref<128xf32>, memref<128xf32>, i64, i64, i32, f32
// CHECK: lapk.call "linear_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c16_i64, %c32_i64, %c0_i32{{[_0-9]*}}) : memref<64xf32>, memref<512xf32>, memref<32xf32>, memref<128xf32>, memref<64xf32>, memref<512xf32>, i64, i64, i64, i32
// CHECK: lapk.call "weight_norm_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c32_i64, %c16_i64) : memref<512xf32>, memref<32xf32>, memref<512xf32>, memref<512xf32>, memref<32xf32>, i64, i64
// CHECK: lapk.call "l2_normalize_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c16_i64, %{{.*}}) : memref<64xf32>, memref<64xf32>, memref<64xf32>, i64, i64, f32
// CHECK: lapk.call "mean_tokens_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %c17_i64, %c16_i64, %c1_i64) : memref<1088xf32>, memref<64xf32>, i64, i64, i64, i64
// CHECK: lapk.call "take_token_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %c17_i64, %c16_i64, %c0_i64) : memref<1088xf32>, memref<64xf32>, i64, i64, i64, i64
// CHECK: lapk.call "layer_scale_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c16_i64) : memref<1088xf32>, memref<16xf32>, memref<1088xf32>, memref<1088xf32>, memref<16xf32>, i64, i64
// CHECK: lapk.call "add_positions_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %c17_i64, %c16_i64, %c0_i64, %c17_i64) : memref<272xf32>, memref<1088xf32>, i64, i64, i64, i64, i64
// CHECK: lapk.call "prepend_tokens_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c16_i64, %c1_i64, %c16_i64) : memref<1024xf32>, memref<16xf32>, memref<1088xf32>, i64, i64, i64, i64
// CHECK: lapk.call "linear_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c49_i64, %c16_i64, %c0_i32{{[_0-9]*}}) : memref<3136xf32>, memref<784xf32>, memref<16xf32>, memref<1024xf32>, memref<3136xf32>, memref<784xf32>, i64, i64, i64, i32
func.func @forward(%pw: tensor<16x49xf32> {lap.name = "pw", lap.parameter},
                   %cls: tensor<1x16xf32> {lap.name = "cls", lap.parameter},
                   %pos: tensor<17x16xf32> {lap.name = "pos", lap.parameter},
                   %g: tensor<16xf32> {lap.name = "g", lap.parameter},
                   %v: tensor<32x16xf32> {lap.name = "v", lap.parameter},
                   %m: tensor<32x1xf32> {lap.name = "m", lap.parameter},
                   %img: tensor<?x1x28x28xf32>, %t: tensor<?x32xf32>) -> tensor<f32> {
  %p = lap.patchify %img {patch = 7} : tensor<?x1x28x28xf32> -> tensor<?x16x49xf32>
  %x = lap.linear %p, %pw : (tensor<?x16x49xf32>, tensor<16x49xf32>) -> tensor<?x16x16xf32>
  %y = lap.prepend_tokens %x, %cls : tensor<?x16x16xf32>, tensor<1x16xf32> -> tensor<?x17x16xf32>
  %yp = lap.add_positions %y, %pos {offset = 0} : tensor<?x17x16xf32>, tensor<17x16xf32>
  %s = lap.layer_scale %yp, %g : tensor<?x17x16xf32>, tensor<16xf32>
  %c = lap.take_token %s {index = 0} : tensor<?x17x16xf32> -> tensor<?x16xf32>
  %a = lap.mean_tokens %s {skip = 1} : tensor<?x17x16xf32> -> tensor<?x16xf32>
  %ca = lap.add %c, %a : tensor<?x16xf32>
  %z = lap.l2_normalize %ca {eps = 1.0e-12 : f32} : tensor<?x16xf32>
  %wn = lap.weight_norm %v, %m : tensor<32x16xf32>, tensor<32x1xf32>
  %l = lap.linear %z, %wn : (tensor<?x16xf32>, tensor<32x16xf32>) -> tensor<?x32xf32>
  %ce = lap.soft_cross_entropy %l, %t : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<f32>
  %bce = lap.bce_with_logits %l, %t : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<f32>
  %dino = lap.dino_loss %l, %t {temperature = 0.1 : f32} : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<f32>
  %s1 = lap.add %ce, %bce : tensor<f32>
  %s2 = lap.add %s1, %dino : tensor<f32>
  return %s2 : tensor<f32>
}

// -----

// Token ids, learned and rotary positions, grouped-query attention; and
// decoding: the i64 argument is `first`, where positions start and cached
// attention appends (to batch tensors 1 and 2, with the compiled maximum
// sequence, 16, as capacity). A function without parameters or
// intermediates gets empty buffers.
// CHECK-LABEL: func.func @lap_gen_train_step(
// CHECK: lapk.call "embedding_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c32_i64, %c8_i64) : memref<512xf32>, memref<256xf32>, memref<64xi32>, i64, i64, i64
// CHECK: lapk.call "add_positions_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c8_i64, %c0_i64, %c0_i64) : memref<512xf32>, memref<512xf32>, memref<128xf32>, i64, i64, i64, i64, i64
// The projection and split_heads are one op: its GEMMs write q, k and v.
// CHECK: lapk.call "linear_heads_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c8_i64, %c8_i64, %c4_i64, %c0_i32{{[_0-9]*}}) : memref<512xf32>, memref<256xf32>, memref<256xf32>, memref<512xf32>, memref<128xf32>, memref<0xf32>, i64, i64, i64, i64, i32
// CHECK: lapk.call "rope_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c4_i64, %{{.*}}, %c0_i64) : memref<512xf32>, memref<512xf32>, i64, i64, i64, i64, f32, i64
// CHECK: lapk.call "rope_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c1_i64, %c4_i64, %{{.*}}, %c0_i64) : memref<256xf32>, memref<256xf32>, i64, i64, i64, i64, f32, i64
// CHECK: lapk.call "attention_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c1_i64, %c4_i64, %{{.*}}, %c1_i32, %c3_i64) : memref<512xf32>, memref<128xf32>, memref<512xf32>, memref<256xf32>, memref<256xf32>, memref<4xf32>, memref<0xi32>, memref<0xi32>, i64, i64, i64, i64, i64, i64, f32, i32, i64
// CHECK: lapk.call "cross_entropy_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c8_i64, %{{.*}}, %{{.*}}) : memref<1xf32>, memref<512xf32>, memref<64xi32>, i64, i64, f32, f32
// CHECK: lapk.call "cross_entropy_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c8_i64, %{{.*}}, %{{.*}}) : memref<512xf32>, memref<1xf32>, memref<512xf32>, memref<64xi32>, i64, i64, f32, f32
// CHECK: lapk.call "attention_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c1_i64, %c4_i64, %{{.*}}, %c1_i32, %c3_i64) : memref<512xf32>, memref<256xf32>, memref<256xf32>, memref<0xf32>, memref<512xf32>, memref<512xf32>, memref<256xf32>, memref<256xf32>, memref<512xf32>, memref<128xf32>, memref<4xf32>, memref<0xi32>, memref<0xi32>, i64, i64, i64, i64, i64, i64, f32, i32, i64
// CHECK: lapk.call "rope_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c1_i64, %c4_i64, %{{.*}}, %c0_i64) : memref<256xf32>, memref<256xf32>, i64, i64, i64, i64, f32, i64
// CHECK: lapk.call "rope_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c4_i64, %{{.*}}, %c0_i64) : memref<512xf32>, memref<512xf32>, i64, i64, i64, i64, f32, i64
// CHECK: lapk.call "linear_heads_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c8_i64, %c8_i64, %c4_i64, %c0_i32{{[_0-9]*}}) : memref<512xf32>, memref<128xf32>, memref<16xf32>, memref<512xf32>, memref<256xf32>, memref<256xf32>, memref<512xf32>, memref<128xf32>, i64, i64, i64, i64, i32
// CHECK: lapk.call "add_positions_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c8_i64, %c0_i64, %c16_i64) : memref<128xf32>, memref<512xf32>, i64, i64, i64, i64, i64
// CHECK: lapk.call "embedding_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c32_i64, %c8_i64) : memref<256xf32>, memref<512xf32>, memref<64xi32>, i64, i64, i64
// CHECK-LABEL: func.func @lap_gen_decode(
// CHECK-SAME: %[[FIRST:[a-z0-9]+]]: i64) attributes {{.*}}lapk.entry = 3 : i64
// CHECK: lapk.call "add_positions_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c16_i64, %c0_i64, %[[FIRST]]) : memref<1024xf32>, memref<1024xf32>, memref<256xf32>, i64, i64, i64, i64, i64
// CHECK: lapk.call "rope_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c2_i64, %c4_i64, %{{.*}}, %[[FIRST]]) : memref<512xf32>, memref<512xf32>, i64, i64, i64, i64, f32, i64
// CHECK: lapk.call "rope_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c1_i64, %c4_i64, %{{.*}}, %[[FIRST]]) : memref<256xf32>, memref<256xf32>, i64, i64, i64, i64, f32, i64
// CHECK: lapk.call "attention_decode"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[FIRST]], %c3_i64, %c2_i64, %c1_i64, %c4_i64, %{{.*}}, %c3_i64) : memref<512xf32>, memref<256xf32>, memref<256xf32>, memref<512xf32>, memref<256xf32>, memref<256xf32>, memref<4xf32>, i64, i64, i64, i64, i64, i64, i64, f32, i64
// CHECK-LABEL: func.func @lap_gen_images(
// CHECK: lapk.call "patchify_backward"(%{{.*}}, %{{.*}}, %{{.*}}, %c1_i64, %c28_i64, %c28_i64, %c7_i64) : memref<3136xf32>, memref<3136xf32>, i64, i64, i64, i64, i64
func.func @forward(%wte: tensor<32x8xf32> {lap.name = "wte", lap.parameter},
                   %wpe: tensor<16x8xf32> {lap.name = "wpe", lap.parameter},
                   %w: tensor<16x8xf32> {lap.name = "w", lap.parameter},
                   %ids: tensor<?x?xi32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  %x = lap.embedding %wte[%ids] : tensor<32x8xf32>, tensor<?x?xi32> -> tensor<?x?x8xf32>
  %xp = lap.add_positions %x, %wpe {offset = 0} : tensor<?x?x8xf32>, tensor<16x8xf32>
  %h = lap.linear %xp, %w : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %q, %k, %v = lap.split_heads %h : tensor<?x?x16xf32> -> tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>
  %rq = lap.rope %q {base = 1.0e+04 : f32} : tensor<?x?x2x4xf32>
  %rk = lap.rope %k {base = 1.0e+04 : f32} : tensor<?x?x1x4xf32>
  %o = lap.attention %rq, %rk, %v {causal, scale = 0.5 : f32, kinds = ["attn", "laplacian"], window = 3} : tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32> -> tensor<?x?x2x4xf32>
  %m = lap.merge_heads %o : tensor<?x?x2x4xf32> -> tensor<?x?x8xf32>
  %loss = lap.cross_entropy %m, %t : tensor<?x?x8xf32>, tensor<?x?xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

func.func @decode(%pos: tensor<16x16xf32> {lap.name = "pos", lap.parameter}, %x: tensor<?x?x16xf32>,
                  %first: i64, %kc: tensor<?x?x1x4xf32>, %vc: tensor<?x?x1x4xf32>) -> tensor<?x?x2x4xf32> {
  %y = lap.add_positions %x, %pos at %first : tensor<?x?x16xf32>, tensor<16x16xf32>
  %q, %k, %v = lap.split_heads %y : tensor<?x?x16xf32> -> tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>
  %rq = lap.rope %q at %first {base = 1.0e+04 : f32} : tensor<?x?x2x4xf32>
  %rk = lap.rope %k at %first {base = 1.0e+04 : f32} : tensor<?x?x1x4xf32>
  %o = lap.cached_attention %rq, %rk, %v into %kc, %vc at %first {alpha = array<f32: 1.0, -1.0>, beta = array<f32: 0.0, 1.0>, scale = 0.5 : f32, window = 3} : tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32> -> tensor<?x?x2x4xf32>
  return %o : tensor<?x?x2x4xf32>
}

func.func @images(%dy: tensor<?x16x49xf32>) -> tensor<?x1x28x28xf32> {
  %d = lap.patchify_grad %dy {patch = 7 : i64} : tensor<?x16x49xf32> -> tensor<?x1x28x28xf32>
  return %d : tensor<?x1x28x28xf32>
}
