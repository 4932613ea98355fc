// RUN: lap-opt %s --lap-rematerialize --split-input-file | FileCheck %s

// A backward reader of an activation and of a norm gets its own copy,
// because their operands are read after it anyway; the forward reader
// keeps the original.
// CHECK-LABEL: func @late_readers
// CHECK-SAME: (%[[H:.*]]: tensor<?x?x8xf32>, %[[W:.*]]: tensor<4x8xf32>, %[[X:.*]]: tensor<?x?x8xf32>, %[[DY:.*]]: tensor<?x?x4xf32>)
// CHECK: %[[A:.*]] = lap.relu2 %[[H]]
// CHECK: %[[N:.*]] = lap.rms_norm %[[X]]
// CHECK: lap.linear %[[A]], %[[W]]
// CHECK: lap.linear %[[N]], %[[W]]
// CHECK: %[[A2:.*]] = lap.relu2 %[[H]]
// CHECK-NEXT: lap.linear_grad %[[DY]], %[[A2]], %[[W]]
// CHECK: %[[N2:.*]] = lap.rms_norm %[[X]]
// CHECK-NEXT: lap.linear_grad %[[DY]], %[[N2]], %[[W]]
// CHECK: lap.activation_grad %{{.*}}, %[[H]]
// CHECK: lap.rms_norm_grad %{{.*}}, %[[X]]
func.func @late_readers(%h: tensor<?x?x8xf32>, %w: tensor<4x8xf32>, %x: tensor<?x?x8xf32>, %dy: tensor<?x?x4xf32>)
    -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %a = lap.relu2 %h : tensor<?x?x8xf32>
  %n = lap.rms_norm %x {eps = 1.0e-5 : f32} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %y = lap.linear %a, %w : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  %z = lap.linear %n, %w : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  %da, %dw, %db = lap.linear_grad %dy, %a, %w : tensor<?x?x4xf32>, tensor<?x?x8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  %dn, %dw2, %db2 = lap.linear_grad %dy, %n, %w : tensor<?x?x4xf32>, tensor<?x?x8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  %dh = lap.activation_grad %da, %h {activation = "relu2"} : tensor<?x?x8xf32>
  %dx, %dg = lap.rms_norm_grad %dn, %x {eps = 1.0e-5 : f32} : tensor<?x?x8xf32>, tensor<8xf32>
  return %y, %z, %dw, %dw2, %dh, %dx : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// An operand that would have died at the first reader is not kept alive
// for a copy: the value stays.
// CHECK-LABEL: func @operand_not_live
// CHECK: %[[H:.*]] = lap.gelu %{{.*}}
// CHECK: %[[A:.*]] = lap.relu2 %[[H]]
// CHECK-NOT: lap.relu2
// CHECK: lap.linear_grad %{{.*}}, %[[A]]
func.func @operand_not_live(%x: tensor<?x?x8xf32>, %w: tensor<4x8xf32>, %dy: tensor<?x?x4xf32>)
    -> (tensor<?x?x4xf32>, tensor<4x8xf32>) {
  %h = lap.gelu %x : tensor<?x?x8xf32>
  %a = lap.relu2 %h : tensor<?x?x8xf32>
  %y = lap.linear %a, %w : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  %da, %dw, %db = lap.linear_grad %dy, %a, %w : tensor<?x?x4xf32>, tensor<?x?x8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  return %y, %dw : tensor<?x?x4xf32>, tensor<4x8xf32>
}
