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
