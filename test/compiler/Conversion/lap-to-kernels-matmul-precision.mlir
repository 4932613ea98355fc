// RUN: lap-opt %s --lap-pipeline --lap-kernels="max-batch=4 max-seq=16" | FileCheck %s

// lap.matmul_precision = "bf16" on the module: every GEMM kernel's last
// argument is LAP_MATMUL_BF16 (1, runtime/kernels/KernelEnums.h) in the
// forward and the training step: the linear layers, the fused
// query/key/value projection, the lm_head's fused cross-entropy and all
// their gradients. Without the attribute it is 0 (lap-to-kernels.mlir).
// CHECK-LABEL: func.func @lap_gen_forward(
// CHECK: lapk.call "linear_heads_forward"({{.*}}, %c1_i32{{[_0-9]*}}) :
// CHECK: lapk.call "linear_forward"({{.*}}, %c1_i32{{[_0-9]*}}) :
// CHECK-LABEL: func.func @lap_gen_train_step(
// CHECK: lapk.call "linear_heads_forward"({{.*}}, %c1_i32{{[_0-9]*}}) :
// CHECK: lapk.call "linear_cross_entropy"({{.*}}, %c1_i32{{[_0-9]*}}) :
// CHECK: lapk.call "linear_heads_backward"({{.*}}, %c1_i32{{[_0-9]*}}) :
// CHECK-NOT: %c0_i32
module attributes {lap.matmul_precision = "bf16"} {
func.func @forward(%wte: tensor<32x8xf32> {lap.name = "wte", lap.parameter},
                   %w: tensor<16x8xf32> {lap.name = "w", lap.parameter},
                   %head: tensor<32x8xf32> {lap.name = "head", lap.parameter},
                   %ids: tensor<?x?xi32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  %x = lap.embedding %wte[%ids] : tensor<32x8xf32>, tensor<?x?xi32> -> tensor<?x?x8xf32>
  %h = lap.linear %x, %w : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %q, %k, %v = lap.split_heads %h : tensor<?x?x16xf32> -> tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>
  %o = lap.attention %q, %k, %v {causal, scale = 0.5 : f32, kinds = ["attn", "laplacian"]} : tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32> -> tensor<?x?x2x4xf32>
  %m = lap.merge_heads %o : tensor<?x?x2x4xf32> -> tensor<?x?x8xf32>
  %logits = lap.linear %m, %head : (tensor<?x?x8xf32>, tensor<32x8xf32>) -> tensor<?x?x32xf32>
  %loss = lap.cross_entropy %logits, %t : tensor<?x?x32xf32>, tensor<?x?xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
}
