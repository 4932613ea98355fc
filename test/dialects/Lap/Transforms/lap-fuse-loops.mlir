// RUN: lap-opt %s --lap-fuse-loops --split-input-file | FileCheck %s

// A residual add and the norm it feeds become one lap.fusion at the norm's
// place; both values are read later, so both are yielded.
// CHECK-LABEL: func @residual_add_then_norm
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>, %[[P:.*]]: tensor<?x?x8xf32>, %[[W:.*]]: tensor<4x8xf32>)
// CHECK: %[[F:.*]]:2 = lap.fusion %[[X]], %[[P]] : (tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<?x?x8xf32>, %[[B:.*]]: tensor<?x?x8xf32>):
// CHECK-NEXT: %[[H:.*]] = lap.add %[[A]], %[[B]]
// CHECK-NEXT: %[[N:.*]] = lap.rms_norm %[[H]]
// CHECK-NEXT: lap.yield %[[H]], %[[N]]
// CHECK: lap.linear %[[F]]#1, %[[W]]
// CHECK: return %[[F]]#0
func.func @residual_add_then_norm(%x: tensor<?x?x8xf32>, %p: tensor<?x?x8xf32>, %w: tensor<4x8xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x?x4xf32>) {
  %h = lap.add %x, %p : tensor<?x?x8xf32>
  %n = lap.rms_norm %h {eps = 1.0e-5 : f32} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %y = lap.linear %n, %w : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  return %h, %y : tensor<?x?x8xf32>, tensor<?x?x4xf32>
}

// -----

// A sum of gradients: the partial sums are never yielded. LayerNorm's
// per-column weight and bias are inputs of the fusion too.
// CHECK-LABEL: func @gradient_sums
// CHECK-SAME: (%[[D1:.*]]: tensor<?x16x8xf32>, %[[D2:.*]]: tensor<?x16x8xf32>, %[[D3:.*]]: tensor<?x16x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[C:.*]]: tensor<8xf32>)
// CHECK: %[[F:.*]] = lap.fusion %[[D1]], %[[D2]], %[[D3]], %[[G]], %[[C]] : {{.*}} -> tensor<?x16x8xf32> {
// CHECK: lap.add
// CHECK: lap.add
// CHECK: %[[L:.*]] = lap.layer_norm %{{.*}} weight %{{.*}} bias %{{.*}}
// CHECK-NEXT: lap.yield %[[L]] : tensor<?x16x8xf32>
// CHECK: return %[[F]]
func.func @gradient_sums(%d1: tensor<?x16x8xf32>, %d2: tensor<?x16x8xf32>, %d3: tensor<?x16x8xf32>, %g: tensor<8xf32>, %c: tensor<8xf32>)
    -> tensor<?x16x8xf32> {
  %s1 = lap.add %d1, %d2 : tensor<?x16x8xf32>
  %s2 = lap.add %s1, %d3 : tensor<?x16x8xf32>
  %l = lap.layer_norm %s2 weight %g bias %c {eps = 1.0e-6 : f32} : (tensor<?x16x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x16x8xf32>
  return %l : tensor<?x16x8xf32>
}

// -----

// An activation gradient and the sum it feeds: one loop, two loads of
// operands, one store.
// CHECK-LABEL: func @elementwise_chain
// CHECK: lap.fusion
// CHECK: lap.activation_grad
// CHECK-NEXT: lap.add
// CHECK-NEXT: lap.yield
// CHECK-NOT: lap.activation_grad
func.func @elementwise_chain(%dy: tensor<?x?x8xf32>, %x: tensor<?x?x8xf32>, %r: tensor<?x?x8xf32>)
    -> tensor<?x?x8xf32> {
  %d = lap.activation_grad %dy, %x {activation = "gelu_tanh"} : tensor<?x?x8xf32>
  %s = lap.add %d, %r : tensor<?x?x8xf32>
  return %s : tensor<?x?x8xf32>
}

// -----

// A norm does not take in an activation: it would be computed again in
// each of the norm's passes over the row.
// CHECK-LABEL: func @expensive_producer
// CHECK-NOT: lap.fusion
// CHECK: lap.gelu
// CHECK: lap.layer_norm
func.func @expensive_producer(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %a = lap.gelu %x : tensor<?x?x8xf32>
  %l = lap.layer_norm %a {eps = 1.0e-6 : f32} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %l : tensor<?x?x8xf32>
}

// -----

// The sum is read by a linear before the norm: the fused op could not take
// the norm's place.
// CHECK-LABEL: func @read_in_between
// CHECK-NOT: lap.fusion
func.func @read_in_between(%x: tensor<?x?x8xf32>, %p: tensor<?x?x8xf32>, %w: tensor<4x8xf32>)
    -> (tensor<?x?x4xf32>, tensor<?x?x8xf32>) {
  %h = lap.add %x, %p : tensor<?x?x8xf32>
  %y = lap.linear %h, %w : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  %n = lap.rms_norm %h {eps = 1.0e-5 : f32} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %y, %n : tensor<?x?x4xf32>, tensor<?x?x8xf32>
}

// -----

// Fusing would keep %a and %b alive from the add to the far norm, which
// is worse than keeping the sum: not fused. Shapes that differ are not
// fused either.
// CHECK-LABEL: func @would_lengthen_lives
// CHECK-NOT: lap.fusion
func.func @would_lengthen_lives(%a: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %v: tensor<?x?x4xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x?x4xf32>) {
  %b = lap.linear %a, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %h = lap.add %a, %b : tensor<?x?x8xf32>
  %c = lap.linear %a, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %n = lap.rms_norm %h {eps = 1.0e-5 : f32} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %r = lap.relu2 %v : tensor<?x?x4xf32>
  return %n, %r : tensor<?x?x8xf32>, tensor<?x?x4xf32>
}

// -----

// A linear layer's bias moves out of the GEMM into the loop that reads
// its output: here with the GELU after it (the pre-activation is read by
// the backward, so both are yielded), and with a residual add and the
// norm after that.
// CHECK-LABEL: func @bias_epilogues
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x8xf32>, %[[W1:.*]]: tensor<32x8xf32>, %[[B1:.*]]: tensor<32xf32>, %[[W2:.*]]: tensor<8x32xf32>, %[[B2:.*]]: tensor<8xf32>)
// CHECK: %[[U:.*]] = lap.linear %[[X]], %[[W1]] : (tensor<?x?x8xf32>, tensor<32x8xf32>) -> tensor<?x?x32xf32>
// CHECK: %[[F:.*]]:2 = lap.fusion %[[U]], %[[B1]]
// CHECK-NEXT: ^bb0(%[[P:.*]]: tensor<?x?x32xf32>, %[[Q:.*]]: tensor<32xf32>):
// CHECK-NEXT: %[[V:.*]] = lap.add_bias %[[P]], %[[Q]]
// CHECK-NEXT: %[[A:.*]] = lap.gelu %[[V]]
// CHECK-NEXT: lap.yield %[[V]], %[[A]]
// CHECK: %[[Y:.*]] = lap.linear %[[F]]#1, %[[W2]] : (tensor<?x?x32xf32>, tensor<8x32xf32>) -> tensor<?x?x8xf32>
// CHECK: lap.fusion %[[Y]], %[[B2]], %[[X]]
// CHECK: lap.add_bias
// CHECK-NEXT: lap.residual_add
// CHECK-NEXT: lap.layer_norm
// CHECK: return
func.func @bias_epilogues(%x: tensor<?x?x8xf32>, %w1: tensor<32x8xf32>, %b1: tensor<32xf32>, %w2: tensor<8x32xf32>, %b2: tensor<8xf32>)
    -> (tensor<?x?x32xf32>, tensor<?x?x8xf32>) {
  %u = lap.linear %x, %w1, %b1 : (tensor<?x?x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %a = lap.gelu %u : tensor<?x?x32xf32>
  %y = lap.linear %a, %w2, %b2 : (tensor<?x?x32xf32>, tensor<8x32xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %h = lap.residual_add %x, %y {drop_rate = 0.0 : f32, key = 0 : i64} : tensor<?x?x8xf32>
  %n = lap.layer_norm %h {eps = 1.0e-6 : f32} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %u, %n : tensor<?x?x32xf32>, tensor<?x?x8xf32>
}

// -----

// A bias stays in the GEMM when nothing generated reads the output.
// CHECK-LABEL: func @bias_stays
// CHECK: lap.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>)
// CHECK-NOT: lap.add_bias
func.func @bias_stays(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %y = lap.linear %x, %w, %b : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %z = lap.linear %y, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %z : tensor<?x?x8xf32>
}

// -----

// A bias gradient is summed in the loop that makes the layer's output
// gradient: lap.column_sum joins the activation gradient, and the GEMM
// kernel's own sum (the linear_grad's third result) is left unused.
// CHECK-LABEL: func @bias_gradient
// CHECK-SAME: (%[[DA:.*]]: tensor<?x?x32xf32>, %[[U:.*]]: tensor<?x?x32xf32>, %[[X:.*]]: tensor<?x?x8xf32>, %[[W:.*]]: tensor<32x8xf32>)
// CHECK: %[[F:.*]]:2 = lap.fusion %[[DA]], %[[U]]
// CHECK: %[[DU:.*]] = lap.activation_grad
// CHECK-NEXT: %[[DB:.*]] = lap.column_sum %[[DU]] : tensor<?x?x32xf32> -> tensor<32xf32>
// CHECK-NEXT: lap.yield %[[DU]], %[[DB]]
// CHECK: %[[DX:.*]], %[[DW:.*]], %{{.*}} = lap.linear_grad %[[F]]#0, %[[X]], %[[W]]
// CHECK: return %[[DX]], %[[DW]], %[[F]]#1
func.func @bias_gradient(%da: tensor<?x?x32xf32>, %u: tensor<?x?x32xf32>, %x: tensor<?x?x8xf32>, %w: tensor<32x8xf32>)
    -> (tensor<?x?x8xf32>, tensor<32x8xf32>, tensor<32xf32>) {
  %du = lap.activation_grad %da, %u {activation = "gelu"} : tensor<?x?x32xf32>
  %dx, %dw, %db = lap.linear_grad %du, %x, %w : tensor<?x?x32xf32>, tensor<?x?x8xf32>, tensor<32x8xf32> -> tensor<32xf32>
  return %dx, %dw, %db : tensor<?x?x8xf32>, tensor<32x8xf32>, tensor<32xf32>
}
