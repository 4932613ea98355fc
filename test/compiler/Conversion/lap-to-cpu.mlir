// RUN: lap-opt %s --lap-plan-memory="max-batch=4 max-seq=16" --lap-to-cpu | FileCheck %s
// RUN: lap-opt %s --lap-plan-memory="max-batch=4 max-seq=16" --lap-to-cpu | FileCheck %s --check-prefix=DECODE

// A planned function becomes @lap_gen_<name> on raw pointers: parameters at
// their offsets in one buffer, the batch and outputs through pointer arrays,
// intermediates at their planned workspace offsets. Elementwise ops are
// generated loops, outlined and run on the thread pool through
// lap_cpu_parallel_for; GEMMs and attention call the kernel library with the
// run-time sizes (B and T are arguments) and per-head coefficients.
// CHECK-DAG: llvm.mlir.global internal constant @[[ALPHA:lap_coefficients_[0-9]]](dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>)
// CHECK-DAG: llvm.mlir.global internal constant @[[BETA:lap_coefficients_[0-9]]](dense<[0.000000e+00, 1.000000e+00]> : tensor<2xf32>)
// CHECK-LABEL: func.func @lap_gen_step(
// CHECK-SAME: %[[PARAMS:[a-z0-9]+]]: !llvm.ptr, %[[BATCH:[a-z0-9]+]]: !llvm.ptr, %[[OUT:[a-z0-9]+]]: !llvm.ptr, %[[WS:[a-z0-9]+]]: !llvm.ptr, %[[B:[a-z0-9]+]]: i64, %[[T:[a-z0-9]+]]: i64, %[[SEED:[a-z0-9]+]]: i64, %[[FIRST:[a-z0-9]+]]: i64)
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

// Decoding: the i64 argument is the generated function's `first`; RoPE and
// learned positions start there, and cached attention appends to the caches
// (batch tensors 1 and 2) and attends with the compiled maximum sequence
// (16) as the cache capacity.
// DECODE-LABEL: func.func @lap_gen_decode(
// DECODE-SAME: %[[DB:[a-z0-9]+]]: i64, %[[DT:[a-z0-9]+]]: i64, %{{[a-z0-9]+}}: i64, %[[DFIRST:[a-z0-9]+]]: i64)
// DECODE: call @lap_cpu_add_positions_forward({{.*}}, %c0_i64, %[[DFIRST]])
// DECODE: call @lap_cpu_rope_forward({{.*}}, %[[DFIRST]])
// DECODE: call @lap_cpu_attention_decode({{.*}}, %[[DB]], %[[DT]], %[[DFIRST]], %c16_i64, %c2_i64, %c1_i64, %c4_i64, %{{.*}})
func.func @decode(%pos: tensor<16x16xf32> {lap.parameter}, %x: tensor<?x?x16xf32>, %first: i64,
                  %kc: tensor<?x?x1x4xf32>, %vc: tensor<?x?x1x4xf32>) -> tensor<?x?x2x4xf32> {
  %y = lap.add_positions %x, %pos at %first : tensor<?x?x16xf32>, tensor<16x16xf32>
  %q, %k, %v = lap.split_heads %y : tensor<?x?x16xf32> -> tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>
  %rq = lap.rope %q at %first {base = 1.0e+04 : f32} : tensor<?x?x2x4xf32>
  %rk = lap.rope %k at %first {base = 1.0e+04 : f32} : tensor<?x?x1x4xf32>
  %o = lap.cached_attention %rq, %rk, %v into %kc, %vc at %first {alpha = array<f32: 1.0, -1.0>, beta = array<f32: 0.0, 1.0>, scale = 0.5 : f32} : tensor<?x?x2x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32> -> tensor<?x?x2x4xf32>
  return %o : tensor<?x?x2x4xf32>
}
