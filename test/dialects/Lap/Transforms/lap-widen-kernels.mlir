// RUN: lap-opt %s --lap-widen-kernels --split-input-file | FileCheck %s

// L2 normalisation in a bf16 model (a kernel without a bf16 variant): its
// operand converted to f32, its result back to bf16; the rotation and the
// linear layer (whose kernels take bf16) and the norm (a generated loop)
// stay in bf16.
// CHECK-LABEL: func @l2_normalize
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x2x8xbf16>, %[[W:[^:]*]]: tensor<16x16xbf16>)
// CHECK-NEXT: %[[X32:.*]] = lap.convert %[[X]] : tensor<?x?x2x8xbf16> to tensor<?x?x2x8xf32>
// CHECK-NEXT: %[[L32:.*]] = lap.l2_normalize %[[X32]] {{.*}} : tensor<?x?x2x8xf32>
// CHECK-NEXT: %[[L:.*]] = lap.convert %[[L32]] : tensor<?x?x2x8xf32> to tensor<?x?x2x8xbf16>
// CHECK-NEXT: %[[R:.*]] = lap.rope %[[L]] {{.*}} : tensor<?x?x2x8xbf16>
// CHECK-NEXT: %[[N:.*]] = lap.rms_norm %[[R]] {{.*}} : (tensor<?x?x2x8xbf16>) -> tensor<?x?x2x8xbf16>
// CHECK-NEXT: %[[M:.*]] = lap.merge_heads %[[N]] : tensor<?x?x2x8xbf16> -> tensor<?x?x16xbf16>
// CHECK-NEXT: %[[Y:.*]] = lap.linear %[[M]], %[[W]] : (tensor<?x?x16xbf16>, tensor<16x16xbf16>) -> tensor<?x?x16xbf16>
// CHECK-NEXT: return %[[Y]]
func.func @l2_normalize(%x: tensor<?x?x2x8xbf16>, %w: tensor<16x16xbf16>) -> tensor<?x?x16xbf16> {
  %l = lap.l2_normalize %x {eps = 1.0e-12 : f32} : tensor<?x?x2x8xbf16>
  %r = lap.rope %l {base = 1.0e+04 : f32} : tensor<?x?x2x8xbf16>
  %n = lap.rms_norm %r {eps = 1.0e-06 : f32} : (tensor<?x?x2x8xbf16>) -> tensor<?x?x2x8xbf16>
  %m = lap.merge_heads %n : tensor<?x?x2x8xbf16> -> tensor<?x?x16xbf16>
  %y = lap.linear %m, %w : (tensor<?x?x16xbf16>, tensor<16x16xbf16>) -> tensor<?x?x16xbf16>
  return %y : tensor<?x?x16xbf16>
}

// -----

// An attention and its gradient keep bf16 (their kernels take it; the
// logsumexp and learned coefficients are f32).
// CHECK-LABEL: func @attention
// CHECK-NEXT: %[[O:.*]] = lap.attention {{.*}} -> tensor<?x?x2x8xbf16>
// CHECK-NEXT: %[[DQ:.*]], %{{.*}}, %{{.*}}, %[[DC:.*]] = lap.attention_grad {{.*}} : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<2x2xf32> -> tensor<2x2xf32>
// CHECK-NEXT: return %[[O]], %[[DQ]], %[[DC]]
func.func @attention(%q: tensor<?x?x2x8xbf16>, %do: tensor<?x?x2x8xbf16>, %c: tensor<2x2xf32>) -> (tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<2x2xf32>) {
  %o = lap.attention %q, %q, %q coefficients %c {causal, scale = 0.35 : f32} : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<2x2xf32> -> tensor<?x?x2x8xbf16>
  %dq, %dk, %dv, %dc = lap.attention_grad %do, %q, %q, %q, %o coefficients %c {causal, scale = 0.35 : f32} : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<2x2xf32> -> tensor<2x2xf32>
  return %o, %dq, %dc : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<2x2xf32>
}

// -----

// Of a widened op's results only the used one is converted back: an unused
// one stays unused, so that its kernel skips it.
// CHECK-LABEL: func @unused_result
// CHECK-NEXT: %[[DY32:.*]] = lap.convert %{{.*}} : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT: %[[V32:.*]] = lap.convert %{{.*}} : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT: %[[G32:.*]] = lap.convert %{{.*}} : tensor<4x1xbf16> to tensor<4x1xf32>
// CHECK-NEXT: %{{.*}}, %[[DG32:.*]] = lap.weight_norm_grad %[[DY32]], %[[V32]], %[[G32]] : tensor<4x8xf32>, tensor<4x1xf32>
// CHECK-NEXT: %[[DG:.*]] = lap.convert %[[DG32]] : tensor<4x1xf32> to tensor<4x1xbf16>
// CHECK-NEXT: return %[[DG]]
func.func @unused_result(%dy: tensor<4x8xbf16>, %v: tensor<4x8xbf16>, %g: tensor<4x1xbf16>) -> tensor<4x1xbf16> {
  %dv, %dg = lap.weight_norm_grad %dy, %v, %g : tensor<4x8xbf16>, tensor<4x1xbf16>
  return %dg : tensor<4x1xbf16>
}

// -----

// An f32 model is left as it is.
// CHECK-LABEL: func @fp32
// CHECK-NEXT: lap.l2_normalize %{{.*}} : tensor<?x?x2x8xf32>
// CHECK-NEXT: return
func.func @fp32(%x: tensor<?x?x2x8xf32>) -> tensor<?x?x2x8xf32> {
  %r = lap.l2_normalize %x {eps = 1.0e-12 : f32} : tensor<?x?x2x8xf32>
  return %r : tensor<?x?x2x8xf32>
}
