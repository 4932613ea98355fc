// RUN: lap-opt %s --lap-fuse --split-input-file | FileCheck %s

// Softcap feeding only the loss and its gradient folds into both.
// CHECK-LABEL: func @softcap_into_cross_entropy
// CHECK-SAME: (%[[L:.*]]: tensor<?x?x64xf32>, %[[T:.*]]: tensor<?x?xi32>, %[[ONE:.*]]: tensor<f32>)
// CHECK-NOT: lap.softcap
// CHECK: %[[LOSS:.*]] = lap.cross_entropy %[[L]], %[[T]] {softcap = 1.500000e+01 : f32}
// CHECK: %[[D:.*]] = lap.cross_entropy_grad %[[ONE]], %[[L]], %[[T]] {label_smoothing = 0.000000e+00 : f32, softcap = 1.500000e+01 : f32}
// CHECK-NOT: lap.softcap_grad
// CHECK: return %[[LOSS]], %[[D]]
func.func @softcap_into_cross_entropy(%l: tensor<?x?x64xf32>, %t: tensor<?x?xi32>, %one: tensor<f32>)
    -> (tensor<f32>, tensor<?x?x64xf32>) {
  %c = lap.softcap %l {cap = 15.0 : f32} : tensor<?x?x64xf32>
  %loss = lap.cross_entropy %c, %t : tensor<?x?x64xf32>, tensor<?x?xi32> -> tensor<f32>
  %dc = lap.cross_entropy_grad %one, %c, %t {label_smoothing = 0.0 : f32} : tensor<f32>, tensor<?x?x64xf32>, tensor<?x?xi32>
  %dl = lap.softcap_grad %dc, %l {cap = 15.0 : f32} : tensor<?x?x64xf32>
  return %loss, %dl : tensor<f32>, tensor<?x?x64xf32>
}

// -----

// The capped logits are returned too (@forward): nothing to gain, no fusion.
// CHECK-LABEL: func @logits_returned
// CHECK: %[[C:.*]] = lap.softcap
// CHECK: lap.cross_entropy %[[C]]
// CHECK-NOT: softcap =
func.func @logits_returned(%l: tensor<?x?x64xf32>, %t: tensor<?x?xi32>) -> (tensor<f32>, tensor<?x?x64xf32>) {
  %c = lap.softcap %l {cap = 15.0 : f32} : tensor<?x?x64xf32>
  %loss = lap.cross_entropy %c, %t : tensor<?x?x64xf32>, tensor<?x?xi32> -> tensor<f32>
  return %loss, %c : tensor<f32>, tensor<?x?x64xf32>
}

// -----

// A loss gradient not followed by the softcap's own gradient is left alone.
// CHECK-LABEL: func @gradient_used_elsewhere
// CHECK: lap.softcap
// CHECK: lap.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} {label_smoothing = 0.000000e+00 : f32} :
func.func @gradient_used_elsewhere(%l: tensor<?x?x64xf32>, %t: tensor<?x?xi32>, %one: tensor<f32>)
    -> (tensor<f32>, tensor<?x?x64xf32>) {
  %c = lap.softcap %l {cap = 15.0 : f32} : tensor<?x?x64xf32>
  %loss = lap.cross_entropy %c, %t : tensor<?x?x64xf32>, tensor<?x?xi32> -> tensor<f32>
  %dc = lap.cross_entropy_grad %one, %c, %t {label_smoothing = 0.0 : f32} : tensor<f32>, tensor<?x?x64xf32>, tensor<?x?xi32>
  return %loss, %dc : tensor<f32>, tensor<?x?x64xf32>
}

// -----

// A vit residual branch: LayerScale, drop path and the add become one op.
// CHECK-LABEL: func @residual_branch
// CHECK-SAME: (%[[X:.*]]: tensor<?x50x64xf32>, %[[Y:.*]]: tensor<?x50x64xf32>, %[[G:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[R:.*]] = lap.residual_add %[[X]], %[[Y]] gamma %[[G]] {drop_rate = 1.000000e-01 : f32, key = 3 : i64} : tensor<?x50x64xf32>, tensor<64xf32>
// CHECK-NEXT: return %[[R]]
func.func @residual_branch(%x: tensor<?x50x64xf32>, %y: tensor<?x50x64xf32>, %g: tensor<64xf32>) -> tensor<?x50x64xf32> {
  %s = lap.layer_scale %y, %g : tensor<?x50x64xf32>, tensor<64xf32>
  %d = lap.drop_path %s {rate = 0.1 : f32, key = 3} : tensor<?x50x64xf32>
  %r = lap.add %x, %d : tensor<?x50x64xf32>
  return %r : tensor<?x50x64xf32>
}

// -----

// Only LayerScale (the first layer has no stochastic depth), branch on the left.
// CHECK-LABEL: func @layer_scale_only
// CHECK-NEXT: %[[R:.*]] = lap.residual_add %arg0, %arg1 gamma %arg2 {drop_rate = 0.000000e+00 : f32, key = 0 : i64}
// CHECK-NEXT: return %[[R]]
func.func @layer_scale_only(%x: tensor<?x50x64xf32>, %y: tensor<?x50x64xf32>, %g: tensor<64xf32>) -> tensor<?x50x64xf32> {
  %s = lap.layer_scale %y, %g : tensor<?x50x64xf32>, tensor<64xf32>
  %r = lap.add %s, %x : tensor<?x50x64xf32>
  return %r : tensor<?x50x64xf32>
}

// -----

// Only drop path.
// CHECK-LABEL: func @drop_path_only
// CHECK-NEXT: lap.residual_add %arg0, %arg1 {drop_rate = 2.000000e-01 : f32, key = 5 : i64} : tensor<?x50x64xf32>
func.func @drop_path_only(%x: tensor<?x50x64xf32>, %y: tensor<?x50x64xf32>) -> tensor<?x50x64xf32> {
  %d = lap.drop_path %y {rate = 0.2 : f32, key = 5} : tensor<?x50x64xf32>
  %r = lap.add %x, %d : tensor<?x50x64xf32>
  return %r : tensor<?x50x64xf32>
}

// -----

// A branch value with another use (kept for a gradient) is not folded away.
// CHECK-LABEL: func @branch_used_twice
// CHECK: %[[S:.*]] = lap.layer_scale
// CHECK: lap.add %arg0, %[[S]]
func.func @branch_used_twice(%x: tensor<?x50x64xf32>, %y: tensor<?x50x64xf32>, %g: tensor<64xf32>)
    -> (tensor<?x50x64xf32>, tensor<?x50x64xf32>) {
  %s = lap.layer_scale %y, %g : tensor<?x50x64xf32>, tensor<64xf32>
  %r = lap.add %x, %s : tensor<?x50x64xf32>
  return %r, %s : tensor<?x50x64xf32>, tensor<?x50x64xf32>
}

// -----

// A plain residual add (gpt) stays an add.
// CHECK-LABEL: func @plain_add
// CHECK-NEXT: lap.add
func.func @plain_add(%x: tensor<?x?x64xf32>, %y: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %r = lap.add %x, %y : tensor<?x?x64xf32>
  return %r : tensor<?x?x64xf32>
}

// -----

// A training step's output layer: linear, softcapped cross-entropy and
// their gradients become one lap.linear_cross_entropy where the
// linear_grad was; nothing of [B, T, V] is left.
// CHECK-LABEL: func @output_layer_into_cross_entropy
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>, %[[W:.*]]: tensor<64x8xf32>, %[[T:.*]]: tensor<?x?xi32>, %[[ONE:.*]]: tensor<f32>)
// CHECK-NEXT: %[[LOSS:.*]], %[[DX:.*]], %[[DW:.*]] = lap.linear_cross_entropy %[[ONE]], %[[X]], %[[W]], %[[T]] {label_smoothing = 1.000000e-01 : f32, softcap = 1.500000e+01 : f32} : tensor<f32>, tensor<?x?x8xf32>, tensor<64x8xf32>, tensor<?x?xi32>
// CHECK-NEXT: return %[[LOSS]], %[[DX]], %[[DW]]
func.func @output_layer_into_cross_entropy(%x: tensor<?x?x8xf32>, %w: tensor<64x8xf32>, %t: tensor<?x?xi32>, %one: tensor<f32>)
    -> (tensor<f32>, tensor<?x?x8xf32>, tensor<64x8xf32>) {
  %l = lap.linear %x, %w : (tensor<?x?x8xf32>, tensor<64x8xf32>) -> tensor<?x?x64xf32>
  %c = lap.softcap %l {cap = 15.0 : f32} : tensor<?x?x64xf32>
  %loss = lap.cross_entropy %c, %t {label_smoothing = 0.1 : f32} : tensor<?x?x64xf32>, tensor<?x?xi32> -> tensor<f32>
  %dc = lap.cross_entropy_grad %one, %c, %t {label_smoothing = 0.1 : f32} : tensor<f32>, tensor<?x?x64xf32>, tensor<?x?xi32>
  %dl = lap.softcap_grad %dc, %l {cap = 15.0 : f32} : tensor<?x?x64xf32>
  %dx, %dw, %db = lap.linear_grad %dl, %x, %w : tensor<?x?x64xf32>, tensor<?x?x8xf32>, tensor<64x8xf32> -> tensor<64xf32>
  return %loss, %dx, %dw : tensor<f32>, tensor<?x?x8xf32>, tensor<64x8xf32>
}

// -----

// Logits that are also returned, or read before the gradient, stay.
// CHECK-LABEL: func @output_layer_logits_returned
// CHECK: lap.linear %
// CHECK: lap.linear_grad
// CHECK-NOT: lap.linear_cross_entropy
func.func @output_layer_logits_returned(%x: tensor<?x?x8xf32>, %w: tensor<64x8xf32>, %t: tensor<?x?xi32>, %one: tensor<f32>)
    -> (tensor<f32>, tensor<?x?x64xf32>, tensor<?x?x8xf32>) {
  %l = lap.linear %x, %w : (tensor<?x?x8xf32>, tensor<64x8xf32>) -> tensor<?x?x64xf32>
  %loss = lap.cross_entropy %l, %t : tensor<?x?x64xf32>, tensor<?x?xi32> -> tensor<f32>
  %dl = lap.cross_entropy_grad %one, %l, %t {label_smoothing = 0.0 : f32} : tensor<f32>, tensor<?x?x64xf32>, tensor<?x?xi32>
  %dx, %dw, %db = lap.linear_grad %dl, %x, %w : tensor<?x?x64xf32>, tensor<?x?x8xf32>, tensor<64x8xf32> -> tensor<64xf32>
  return %loss, %l, %dx : tensor<f32>, tensor<?x?x64xf32>, tensor<?x?x8xf32>
}

// -----

// An output layer with a bias (its gradient would be lost) stays.
// CHECK-LABEL: func @output_layer_with_bias
// CHECK-NOT: lap.linear_cross_entropy
func.func @output_layer_with_bias(%x: tensor<?x?x8xf32>, %w: tensor<64x8xf32>, %b: tensor<64xf32>, %t: tensor<?x?xi32>, %one: tensor<f32>)
    -> (tensor<f32>, tensor<?x?x8xf32>, tensor<64xf32>) {
  %l = lap.linear %x, %w, %b : (tensor<?x?x8xf32>, tensor<64x8xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %loss = lap.cross_entropy %l, %t : tensor<?x?x64xf32>, tensor<?x?xi32> -> tensor<f32>
  %dl = lap.cross_entropy_grad %one, %l, %t {label_smoothing = 0.0 : f32} : tensor<f32>, tensor<?x?x64xf32>, tensor<?x?xi32>
  %dx, %dw, %db = lap.linear_grad %dl, %x, %w : tensor<?x?x64xf32>, tensor<?x?x8xf32>, tensor<64x8xf32> -> tensor<64xf32>
  return %loss, %dx, %db : tensor<f32>, tensor<?x?x8xf32>, tensor<64xf32>
}

// -----

// The QKV projection writes the heads itself, and its gradient takes the
// heads' gradients: no [B, T, (H + 2 KV) D] tensor either way.
// CHECK-LABEL: func @projection_into_heads
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>, %[[W:.*]]: tensor<16x8xf32>, %[[B:.*]]: tensor<16xf32>, %[[DQ:.*]]: tensor<?x?x2x4xf32>, %[[DK:.*]]: tensor<?x?x1x4xf32>)
// CHECK: %[[Q:.*]], %[[K:.*]], %[[V:.*]] = lap.linear_heads %[[X]], %[[W]], %[[B]]
// CHECK-NOT: lap.split_heads
// CHECK: %[[DX:.*]], %[[DW:.*]], %[[DB:.*]] = lap.linear_heads_grad %[[DQ]], %[[DK]], %[[DK]], %[[X]], %[[W]]
// CHECK-NOT: lap.linear_grad
// CHECK: return %[[Q]], %[[K]], %[[V]], %[[DX]], %[[DW]], %[[DB]]
func.func @projection_into_heads(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %dq: tensor<?x?x2x4xf32>, %dk: tensor<?x?x1x4xf32>)
    -> (tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) {
  %qkv = lap.linear %x, %w, %b : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %q, %k, %v = lap.split_heads %qkv : tensor<?x?x16xf32> -> tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>
  %d = lap.split_heads_grad %dq, %dk, %dk : tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32> -> tensor<?x?x16xf32>
  %dx, %dw, %db = lap.linear_grad %d, %x, %w : tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<16x8xf32> -> tensor<16xf32>
  return %q, %k, %v, %dx, %dw, %db : tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>
}

// -----

// A projection read by anything else keeps its split.
// CHECK-LABEL: func @projection_read_twice
// CHECK: lap.linear
// CHECK: lap.split_heads
func.func @projection_read_twice(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>)
    -> (tensor<?x?x2x4xf32>, tensor<?x?x16xf32>) {
  %qkv = lap.linear %x, %w : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %q, %k, %v = lap.split_heads %qkv : tensor<?x?x16xf32> -> tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>
  return %q, %qkv : tensor<?x?x2x4xf32>, tensor<?x?x16xf32>
}
