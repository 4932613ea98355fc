// An op without an adjoint on the path to the loss is an error at the op's
// location, which for compiled specs is the spec line that made it.
// RUN: not lap-opt %s --lap-autodiff 2>&1 | FileCheck %s

// CHECK: model.yaml:7:3: error: 'arith.addf' is not differentiable, but the loss depends on it
func.func @forward(%w: tensor<4x4xf32> {lap.name = "w", lap.parameter}, %x: tensor<?x4xf32>,
                   %t: tensor<?xi32>) -> (tensor<f32>, tensor<?x4xf32>) {
  %h = lap.linear %x, %w : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %s = arith.addf %h, %h : tensor<?x4xf32> loc("model.yaml":7:3)
  %l = lap.cross_entropy %s, %t : tensor<?x4xf32>, tensor<?xi32> -> tensor<f32>
  return %l, %s : tensor<f32>, tensor<?x4xf32>
}

// RUN: echo "module {}" | not lap-opt --lap-autodiff 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: lap-autodiff differentiates func @forward; there is none
