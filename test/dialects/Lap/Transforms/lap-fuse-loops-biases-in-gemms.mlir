// RUN: lap-opt %s --lap-fuse-loops=biases-in-loops=false | FileCheck %s

// With biases-in-loops=false (the CUDA target's choice: cuBLASLt's
// epilogues add a bias and its gradient as the GEMM writes), a linear
// layer keeps its bias and its bias gradient; the loops around it still
// fuse.
// CHECK-LABEL: func @biases_in_gemms
// CHECK: %[[U:.*]] = lap.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
// CHECK-NOT: lap.add_bias
// CHECK-NOT: lap.column_sum
// CHECK: %[[F:.*]] = lap.fusion
// CHECK: lap.gelu
// CHECK: lap.relu2
// CHECK: %{{.*}}, %{{.*}}, %[[DB:.*]] = lap.linear_grad
// CHECK: return %{{.*}}, %{{.*}}, %[[DB]]
func.func @biases_in_gemms(%x: tensor<?x?x8xf32>, %w: tensor<32x8xf32>, %b: tensor<32xf32>, %da: tensor<?x?x32xf32>)
    -> (tensor<?x?x32xf32>, tensor<?x?x8xf32>, tensor<32xf32>) {
  %u = lap.linear %x, %w, %b : (tensor<?x?x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %a = lap.gelu %u : tensor<?x?x32xf32>
  %r = lap.relu2 %a : tensor<?x?x32xf32>
  %du = lap.activation_grad %da, %u {activation = "gelu"} : tensor<?x?x32xf32>
  %dx, %dw, %db = lap.linear_grad %du, %x, %w : tensor<?x?x32xf32>, tensor<?x?x8xf32>, tensor<32x8xf32> -> tensor<32xf32>
  return %r, %dx, %db : tensor<?x?x32xf32>, tensor<?x?x8xf32>, tensor<32xf32>
}
