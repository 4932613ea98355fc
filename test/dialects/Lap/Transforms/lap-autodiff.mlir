// RUN: lap-opt %s --lap-autodiff --split-input-file | FileCheck %s

// The example of the pass description: a linear layer and cross-entropy.
// CHECK-LABEL: func.func @forward
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[W:.*]]: tensor<8x4xf32> {lap.name = "w", lap.parameter}, %[[X:.*]]: tensor<?x4xf32>, %[[T:.*]]: tensor<?xi32>) -> (tensor<f32> {lap.name = "loss"}, tensor<8x4xf32> {lap.name = "grad.w"})
// CHECK: %[[Y:.*]] = lap.linear %[[X]], %[[W]]
// CHECK: %[[L:.*]] = lap.cross_entropy %[[Y]], %[[T]]
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DY:.*]] = lap.cross_entropy_grad %[[ONE]], %[[Y]], %[[T]]
// CHECK: %{{.*}}, %[[DW:.*]], %{{.*}} = lap.linear_grad %[[DY]], %[[X]], %[[W]]
// CHECK: return %[[L]], %[[DW]] : tensor<f32>, tensor<8x4xf32>
func.func @forward(%w: tensor<8x4xf32> {lap.name = "w", lap.parameter}, %x: tensor<?x4xf32>,
                   %t: tensor<?xi32>) -> (tensor<f32>, tensor<?x8xf32>) {
  %y = lap.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x8xf32>
  %l = lap.cross_entropy %y, %t : tensor<?x8xf32>, tensor<?xi32> -> tensor<f32>
  return %l, %y : tensor<f32>, tensor<?x8xf32>
}

// -----

// A residual block over a mixed attention layer (attn, attn, laplacian,
// laplacian): the gradient op carries the kinds; the residual's two uses of
// %x have their gradients summed; a parameter the loss ignores gets zeros.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<f32> {lap.name = "loss"}, tensor<192x64xf32> {lap.name = "grad.qkv"}, tensor<10x64xf32> {lap.name = "grad.head"}, tensor<5xf32> {lap.name = "grad.unused"})
// CHECK: lap.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal, kinds = ["attn", "attn", "laplacian", "laplacian"], scale = 2.500000e-01 : f32}
// CHECK: lap.split_heads_grad
// CHECK: %[[DX1:.*]], %[[DQKV:.*]], %{{.*}} = lap.linear_grad
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<5xf32>
// CHECK: return %{{.*}}, %[[DQKV]], %{{.*}}, %[[ZERO]]
func.func @forward(%qkv: tensor<192x64xf32> {lap.name = "qkv", lap.parameter},
                   %head: tensor<10x64xf32> {lap.name = "head", lap.parameter},
                   %unused: tensor<5xf32> {lap.name = "unused", lap.parameter},
                   %x: tensor<?x?x64xf32>, %t: tensor<?x?xi32>) -> (tensor<f32>, tensor<?x?x10xf32>) {
  %p = lap.linear %x, %qkv : (tensor<?x?x64xf32>, tensor<192x64xf32>) -> tensor<?x?x192xf32>
  %q, %k, %v = lap.split_heads %p : tensor<?x?x192xf32> -> tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>
  %o = lap.attention %q, %k, %v {causal, scale = 0.25 : f32, kinds = ["attn", "attn", "laplacian", "laplacian"]}
       : tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32> -> tensor<?x?x4x16xf32>
  %m = lap.merge_heads %o : tensor<?x?x4x16xf32> -> tensor<?x?x64xf32>
  %r = lap.add %x, %m : tensor<?x?x64xf32>
  %y = lap.linear %r, %head : (tensor<?x?x64xf32>, tensor<10x64xf32>) -> tensor<?x?x10xf32>
  %l = lap.cross_entropy %y, %t : tensor<?x?x10xf32>, tensor<?x?xi32> -> tensor<f32>
  return %l, %y : tensor<f32>, tensor<?x?x10xf32>
}

// -----

// A value used twice: its gradient is the sum of both uses' gradients.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[A:.*]] = lap.activation_grad %{{.*}}, %{{.*}} {activation = "relu2"}
// CHECK: %[[SUM:.*]] = lap.add %{{.*}}, %[[A]]
// CHECK: lap.linear_grad %[[SUM]]
func.func @forward(%w: tensor<4x4xf32> {lap.name = "w", lap.parameter}, %x: tensor<?x4xf32>,
                   %t: tensor<?xi32>) -> (tensor<f32>, tensor<?x4xf32>) {
  %h = lap.linear %x, %w : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %a = lap.relu2 %h : tensor<?x4xf32>
  %s = lap.add %h, %a : tensor<?x4xf32>
  %l = lap.cross_entropy %s, %t : tensor<?x4xf32>, tensor<?xi32> -> tensor<f32>
  return %l, %s : tensor<f32>, tensor<?x4xf32>
}

// -----

// Dropout's adjoint is the same dropout: same rate, same key, same mask.
// CHECK-LABEL: func.func @train_step
// CHECK: lap.dropout %{{.*}} {key = 7 : i64, rate = 1.000000e-01 : f32}
// CHECK: lap.dropout %{{.*}} {key = 7 : i64, rate = 1.000000e-01 : f32}
func.func @forward(%w: tensor<4x4xf32> {lap.name = "w", lap.parameter}, %x: tensor<?x4xf32>,
                   %t: tensor<?xi32>) -> (tensor<f32>, tensor<?x4xf32>) {
  %h = lap.linear %x, %w : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %d = lap.dropout %h {rate = 0.1 : f32, key = 7} : tensor<?x4xf32>
  %l = lap.cross_entropy %d, %t : tensor<?x4xf32>, tensor<?xi32> -> tensor<f32>
  return %l, %d : tensor<f32>, tensor<?x4xf32>
}

// -----

// Grouped-query, non-causal attention (vit-style) with all-Laplacian heads:
// dk and dv have the kv heads' shape; k and v come from one tensor here, so
// their gradients are summed.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = lap.attention_grad %{{.*}}, %{{.*}}, %[[KV:.*]], %[[KV]], %{{.*}} {kinds = ["laplacian", "laplacian", "laplacian", "laplacian"], scale = 2.500000e-01 : f32} : tensor<2x16x4x16xf32>, tensor<2x16x2x16xf32>
// CHECK: lap.add %[[DK]], %[[DV]] : tensor<2x16x2x16xf32>
func.func @forward(%w: tensor<10x64xf32> {lap.name = "w", lap.parameter}, %q: tensor<2x16x4x16xf32>,
                   %kv: tensor<2x16x2x16xf32>, %t: tensor<2x16xi32>) -> (tensor<f32>, tensor<2x16x10xf32>) {
  %o = lap.attention %q, %kv, %kv {scale = 0.25 : f32, kinds = ["laplacian", "laplacian", "laplacian", "laplacian"]}
       : tensor<2x16x4x16xf32>, tensor<2x16x2x16xf32>, tensor<2x16x2x16xf32> -> tensor<2x16x4x16xf32>
  %m = lap.merge_heads %o : tensor<2x16x4x16xf32> -> tensor<2x16x64xf32>
  %y = lap.linear %m, %w : (tensor<2x16x64xf32>, tensor<10x64xf32>) -> tensor<2x16x10xf32>
  %l = lap.cross_entropy %y, %t : tensor<2x16x10xf32>, tensor<2x16xi32> -> tensor<f32>
  return %l, %y : tensor<f32>, tensor<2x16x10xf32>
}
