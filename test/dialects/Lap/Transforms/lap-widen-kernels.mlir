// RUN: lap-opt %s --lap-widen-kernels --split-input-file | FileCheck %s

// A linear layer of a bf16 model: its operands converted to f32, its
// result back to bf16; the norm (a generated loop) stays in bf16.
// CHECK-LABEL: func @linear
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xbf16>, %[[W:[^:]*]]: tensor<16x8xbf16>)
// CHECK-NEXT: %[[X32:.*]] = lap.convert %[[X]] : tensor<?x?x8xbf16> to tensor<?x?x8xf32>
// CHECK-NEXT: %[[W32:.*]] = lap.convert %[[W]] : tensor<16x8xbf16> to tensor<16x8xf32>
// CHECK-NEXT: %[[Y32:.*]] = lap.linear %[[X32]], %[[W32]] : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
// CHECK-NEXT: %[[Y:.*]] = lap.convert %[[Y32]] : tensor<?x?x16xf32> to tensor<?x?x16xbf16>
// CHECK-NEXT: %[[N:.*]] = lap.rms_norm %[[Y]] {{.*}} : (tensor<?x?x16xbf16>) -> tensor<?x?x16xbf16>
// CHECK-NEXT: return %[[N]]
func.func @linear(%x: tensor<?x?x8xbf16>, %w: tensor<16x8xbf16>) -> tensor<?x?x16xbf16> {
  %y = lap.linear %x, %w : (tensor<?x?x8xbf16>, tensor<16x8xbf16>) -> tensor<?x?x16xbf16>
  %n = lap.rms_norm %y {eps = 1.0e-06 : f32} : (tensor<?x?x16xbf16>) -> tensor<?x?x16xbf16>
  return %n : tensor<?x?x16xbf16>
}

// -----

// The gradient of an attention reads the attention's f32 output (the one
// its logsumexp belongs to), not the bf16 copy.
// CHECK-LABEL: func @attention
// CHECK: %[[O32:.*]] = lap.attention {{.*}} -> tensor<?x?x2x8xf32>
// CHECK-NEXT: %[[O:.*]] = lap.convert %[[O32]] : tensor<?x?x2x8xf32> to tensor<?x?x2x8xbf16>
// CHECK: lap.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[O32]] {{.*}} : tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>
func.func @attention(%q: tensor<?x?x2x8xbf16>, %do: tensor<?x?x2x8xbf16>) -> (tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>) {
  %o = lap.attention %q, %q, %q {causal, scale = 0.35 : f32} : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16> -> tensor<?x?x2x8xbf16>
  %dq, %dk, %dv = lap.attention_grad %do, %q, %q, %q, %o {causal, scale = 0.35 : f32} : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
  return %o, %dq : tensor<?x?x2x8xbf16>, tensor<?x?x2x8xbf16>
}

// -----

// An f32 model is left as it is.
// CHECK-LABEL: func @fp32
// CHECK-NEXT: lap.linear %{{.*}}, %{{.*}} : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
// CHECK-NEXT: return
func.func @fp32(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>) -> tensor<?x?x16xf32> {
  %y = lap.linear %x, %w : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}
