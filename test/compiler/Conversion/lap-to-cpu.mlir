// RUN: lap-opt %s --lap-plan-memory="max-batch=4 max-seq=16" --lap-to-cpu | FileCheck %s

// A planned function becomes @lap_gen_<name> on raw pointers: parameters at
// their offsets in one buffer, the batch and outputs through pointer arrays,
// intermediates at their planned workspace offsets. Elementwise ops are
// generated loops, outlined and run on the thread pool through
// lap_cpu_parallel_for; GEMMs and attention call the kernel library with the
// run-time sizes (B and T are arguments) and per-head coefficients.
// CHECK-DAG: llvm.mlir.global internal constant @[[ALPHA:lap_coefficients_[0-9]]](dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>)
// CHECK-DAG: llvm.mlir.global internal constant @[[BETA:lap_coefficients_[0-9]]](dense<[0.000000e+00, 1.000000e+00]> : tensor<2xf32>)
// CHECK-LABEL: func.func @lap_gen_step(
// CHECK-SAME: %[[PARAMS:.*]]: !llvm.ptr, %[[BATCH:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr, %[[WS:.*]]: !llvm.ptr, %[[B:.*]]: i64, %[[T:.*]]: i64, %[[SEED:.*]]: i64)
// CHECK: call @lap_cpu_linear_forward(
// CHECK: call @lap_cpu_parallel_for(%{{.*}}, %c16384_i64, %{{.*}}, %{{.*}}) : (i64, i64, (!llvm.ptr, i64, i64) -> (), !llvm.ptr) -> ()
// CHECK: call @lap_cpu_attention_forward({{.*}}, %[[B]], %[[T]], %[[T]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64, f32, i32) -> ()
// CHECK: call @lap_cpu_cross_entropy_forward(
// CHECK: return
// CHECK: func.func private @lap_cpu_linear_forward(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64)
// CHECK-LABEL: func.func private @lap_gen_step_loop_0(
// CHECK-SAME: %[[FRAME:.*]]: !llvm.ptr, %[[BEGIN:.*]]: i64, %[[END:.*]]: i64)
// CHECK: scf.for %{{.*}} = %[[BEGIN]] to %[[END]]
// CHECK: math.
func.func @step(%w: tensor<24x8xf32> {lap.parameter}, %x: tensor<?x?x8xf32>,
                %t: tensor<?x?xi32>) -> tensor<f32> {
  %qkv = lap.linear %x, %w : (tensor<?x?x8xf32>, tensor<24x8xf32>) -> tensor<?x?x24xf32>
  %g = lap.gelu_tanh %qkv : tensor<?x?x24xf32>
  %q, %k, %v = lap.split_heads %g : tensor<?x?x24xf32> -> tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>
  %o = lap.attention %q, %k, %v {alpha = array<f32: 1.0, -1.0>, beta = array<f32: 0.0, 1.0>, causal, scale = 0.5 : f32} : tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32> -> tensor<?x?x2x4xf32>
  %m = lap.merge_heads %o : tensor<?x?x2x4xf32> -> tensor<?x?x8xf32>
  %loss = lap.cross_entropy %m, %t : tensor<?x?x8xf32>, tensor<?x?xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
