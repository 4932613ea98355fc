// The lapk ops parse, verify and print back, in custom and generic form.
// RUN: lap-opt %s | lap-opt | FileCheck %s
// RUN: lap-opt %s --mlir-print-op-generic | lap-opt | FileCheck %s

// CHECK-LABEL: func @kernel_calls
func.func @kernel_calls(%y: memref<64xf32>, %x: memref<32xf32>, %w: memref<16xf32>,
                        %ids: memref<8xi32>, %n: i64, %s: f32, %bf16: i32) {
  // CHECK: %[[NONE:.*]] = lapk.null : memref<0xf32>
  %none = lapk.null : memref<0xf32>
  // CHECK: lapk.profile_begin "lap.linear blocks.0.mlp.fc1"
  lapk.profile_begin "lap.linear blocks.0.mlp.fc1"
  // CHECK: lapk.call "linear_forward"(%{{.*}}, %{{.*}}, %{{.*}}, %[[NONE]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : memref<64xf32>, memref<32xf32>, memref<16xf32>, memref<0xf32>, i64, i64, i64, i32
  lapk.call "linear_forward"(%y, %x, %w, %none, %n, %n, %n, %bf16) : memref<64xf32>, memref<32xf32>, memref<16xf32>, memref<0xf32>, i64, i64, i64, i32
  // CHECK: lapk.profile_end "lap.linear blocks.0.mlp.fc1"
  lapk.profile_end "lap.linear blocks.0.mlp.fc1"
  // CHECK: lapk.call "embedding_forward"({{.*}}) : memref<64xf32>, memref<16xf32>, memref<8xi32>, i64, i64, i64
  lapk.call "embedding_forward"(%y, %w, %ids, %n, %n, %n) : memref<64xf32>, memref<16xf32>, memref<8xi32>, i64, i64, i64
  return
}
