// RUN: lap-opt %s --lap-fuse-epilogues --split-input-file | FileCheck %s
// RUN: lap-opt %s --lap-fuse-epilogues=bf16=false --split-input-file | FileCheck %s --check-prefix=APART

// An MLP with the tanh GELU, forward and backward as --lap-rematerialize
// leaves it: fc1 and its GELU become one lap.linear_gelu at fc1's place
// (the GELU copied for the backward stays); the GELU's gradient over fc2's
// input gradient becomes lap.gelu_linear_grad right after fc2's
// linear_grad, and its column sum is fc1's bias gradient.
// CHECK-LABEL: func @mlp
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x?x8xf32>, %[[W1:[^:]*]]: tensor<16x8xf32>, %[[B1:[^:]*]]: tensor<16xf32>, %[[W2:[^:]*]]: tensor<8x16xf32>, %[[DY:[^:]*]]: tensor<?x?x8xf32>)
// CHECK-NEXT: %[[H:.*]], %[[A:.*]] = lap.linear_gelu %[[X]], %[[W1]], %[[B1]] : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>)
// CHECK-NEXT: %[[Y:.*]] = lap.linear %[[A]], %[[W2]]
// CHECK-NEXT: %[[A2:.*]] = lap.gelu_tanh %[[H]]
// CHECK-NEXT: %{{.*}}, %[[DW2:.*]], %{{.*}} = lap.linear_grad %[[DY]], %[[A2]], %[[W2]]
// CHECK-NEXT: %[[DH:.*]], %[[DB1:.*]] = lap.gelu_linear_grad %[[DY]], %[[W2]], %[[H]] : tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<?x?x16xf32> -> tensor<16xf32>
// CHECK-NOT: lap.activation_grad
// CHECK-NEXT: %[[DX:.*]], %[[DW1:.*]], %{{.*}} = lap.linear_grad %[[DH]], %[[X]], %[[W1]]
// CHECK-NEXT: return %[[Y]], %[[DX]], %[[DW1]], %[[DB1]], %[[DW2]]
func.func @mlp(%x: tensor<?x?x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<8x16xf32>, %dy: tensor<?x?x8xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>) {
  %h = lap.linear %x, %w1, %b1 : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %a = lap.gelu_tanh %h : tensor<?x?x16xf32>
  %y = lap.linear %a, %w2 : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
  %a2 = lap.gelu_tanh %h : tensor<?x?x16xf32>
  %da, %dw2, %db2 = lap.linear_grad %dy, %a2, %w2 : tensor<?x?x8xf32>, tensor<?x?x16xf32>, tensor<8x16xf32> -> tensor<8xf32>
  %dh = lap.activation_grad %da, %h {activation = "gelu_tanh"} : tensor<?x?x16xf32>
  %dx, %dw1, %db1 = lap.linear_grad %dh, %x, %w1 : tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %y, %dx, %dw1, %db1, %dw2 : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>
}

// -----

// Other activations, a GELU that is not the linear layer's first reader,
// and a GELU gradient whose input gradient something else reads stay.
// CHECK-LABEL: func @unfused
// CHECK-NOT: lap.linear_gelu
// CHECK-NOT: lap.gelu_linear_grad
// CHECK: return
func.func @unfused(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>, %dy: tensor<?x8xf32>)
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %h = lap.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %g = lap.gelu %h : tensor<?x8xf32>
  %k = lap.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %s = lap.add %k, %x : tensor<?x8xf32>
  %t = lap.gelu_tanh %k : tensor<?x8xf32>
  %da, %dw, %db = lap.linear_grad %dy, %x, %w : tensor<?x8xf32>, tensor<?x8xf32>, tensor<8x8xf32> -> tensor<8xf32>
  %dh = lap.activation_grad %da, %h {activation = "gelu_tanh"} : tensor<?x8xf32>
  return %g, %s, %t, %dh, %da : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Without a bias, and in an evaluation forward where nothing else reads
// the pre-activation.
// CHECK-LABEL: func @no_bias
// CHECK: %{{.*}}, %[[A:.*]] = lap.linear_gelu %{{.*}}, %{{.*}} : (tensor<?x8xf32>, tensor<16x8xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>)
// CHECK-NEXT: return %[[A]]
func.func @no_bias(%x: tensor<?x8xf32>, %w: tensor<16x8xf32>) -> tensor<?x16xf32> {
  %h = lap.linear %x, %w : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %a = lap.gelu_tanh %h : tensor<?x16xf32>
  return %a : tensor<?x16xf32>
}

// -----

// A bf16 model's layers fuse as well (the kernels' `_bf16` forms), the
// fused column sum in bf16 replacing fc1's bias gradient; with bf16=false
// (the CPU target's choice) they stay apart, while f32 layers fuse.
// APART-LABEL: func @mlp
// APART: lap.linear_gelu
// APART: lap.gelu_linear_grad
// APART-LABEL: func @bf16
// APART-NOT: lap.linear_gelu
// APART-NOT: lap.gelu_linear_grad
// APART: lap.activation_grad
// CHECK-LABEL: func @bf16
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x8xbf16>, %[[W1:[^:]*]]: tensor<16x8xbf16>, %[[B1:[^:]*]]: tensor<16xbf16>, %[[W2:[^:]*]]: tensor<8x16xbf16>, %[[DY:[^:]*]]: tensor<?x8xbf16>)
// CHECK-NEXT: %[[H:.*]], %[[A:.*]] = lap.linear_gelu %[[X]], %[[W1]], %[[B1]] : (tensor<?x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> (tensor<?x16xbf16>, tensor<?x16xbf16>)
// CHECK: %[[DH:.*]], %[[DB1:.*]] = lap.gelu_linear_grad %[[DY]], %[[W2]], %[[H]] : tensor<?x8xbf16>, tensor<8x16xbf16>, tensor<?x16xbf16> -> tensor<16xbf16>
// CHECK-NOT: lap.activation_grad
// CHECK-NEXT: %[[DX:.*]], %{{.*}}, %{{.*}} = lap.linear_grad %[[DH]], %[[X]], %[[W1]]
// CHECK-NEXT: return %{{.*}}, %[[DX]], %[[DB1]]
func.func @bf16(%x: tensor<?x8xbf16>, %w1: tensor<16x8xbf16>, %b1: tensor<16xbf16>, %w2: tensor<8x16xbf16>, %dy: tensor<?x8xbf16>)
    -> (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<16xbf16>) {
  %h = lap.linear %x, %w1, %b1 : (tensor<?x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<?x16xbf16>
  %a = lap.gelu_tanh %h : tensor<?x16xbf16>
  %y = lap.linear %a, %w2 : (tensor<?x16xbf16>, tensor<8x16xbf16>) -> tensor<?x8xbf16>
  %da, %dw2, %db2 = lap.linear_grad %dy, %a, %w2 : tensor<?x8xbf16>, tensor<?x16xbf16>, tensor<8x16xbf16> -> tensor<8xbf16>
  %dh = lap.activation_grad %da, %h {activation = "gelu_tanh"} : tensor<?x16xbf16>
  %dx, %dw1, %db1 = lap.linear_grad %dh, %x, %w1 : tensor<?x16xbf16>, tensor<?x8xbf16>, tensor<16x8xbf16> -> tensor<16xbf16>
  return %y, %dx, %db1 : tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<16xbf16>
}
