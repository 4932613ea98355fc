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

// The gradient of an attention reads the attention's f32 output (the one
// its logsumexp belongs to), not the bf16 copy. Of its results only the
// used one (dq) is converted back: the unused ones stay unused, so that
// their kernel skips them.
// CHECK-LABEL: func @attention
// CHECK: %[[O32:.*]] = lap.attention {{.*}} -> tensor<?x?x2x8xf32>
// CHECK-NEXT: %[[O:.*]] = lap.convert %[[O32]] : tensor<?x?x2x8xf32> to tensor<?x?x2x8xbf16>
// CHECK: %[[DQ32:.*]], %{{.*}}, %{{.*}} = lap.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[O32]] {{.*}} : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>
// CHECK-NEXT: %[[DQ:.*]] = lap.convert %[[DQ32]] : tensor<?x?x2x8xf32> to tensor<?x?x2x8xbf16>
// CHECK-NEXT: return %[[O]], %[[DQ]]
func.func @attention(%q: tensor<?x?x2x8xbf16>, %do: tensor<?x?x2x8xbf16>) -> (tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>) {
  %o = lap.attention %q, %q, %q {causal, scale = 0.35 : f32} : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16> -> tensor<?x?x2x8xbf16>
  %dq, %dk, %dv = lap.attention_grad %do, %q, %q, %q, %o {causal, scale = 0.35 : f32} : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
  return %o, %dq : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
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
