// RUN: lap-opt %s --lap-pipeline --lap-cpu-codegen="max-batch=4 max-seq=16" | FileCheck %s

// A lap.fusion on the CPU: one outlined loop body, run on the thread pool,
// in which each row is summed and stored, read back by the norm's
// reassociable reduction, and normalised and stored.
// CHECK-LABEL: llvm.func @lap_gen_forward(
// CHECK: llvm.call @lap_cpu_linear_forward
// CHECK: llvm.call @lap_cpu_parallel_for(
// CHECK: llvm.call @lap_cpu_linear_forward
// CHECK-LABEL: llvm.func @lap_gen_forward_loop_0(
// CHECK: %[[A:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: %[[B:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: %[[S:.*]] = llvm.fadd %[[A]], %[[B]] : f32
// CHECK: llvm.store %[[S]], %{{.*}} : f32, !llvm.ptr
// CHECK: %[[H:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: %[[SQ:.*]] = llvm.fmul %[[H]], %[[H]] : f32
// CHECK: llvm.fadd %{{.*}}, %[[SQ]] {fastmathFlags = #llvm.fastmath<contract, reassoc>} : f32
// CHECK: llvm.intr.sqrt
// CHECK: llvm.fmul
// CHECK: llvm.store
// CHECK: llvm.return
func.func @forward(%w: tensor<8x8xf32> {lap.name = "w", lap.parameter},
                   %x: tensor<?x?x8xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  %p = lap.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %h = lap.add %x, %p : tensor<?x?x8xf32>
  %n = lap.rms_norm %h {eps = 1.0e-6 : f32} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %q = lap.linear %n, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %b = lap.add %q, %h : tensor<?x?x8xf32>
  %loss = lap.cross_entropy %b, %t : tensor<?x?x8xf32>, tensor<?x?xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
