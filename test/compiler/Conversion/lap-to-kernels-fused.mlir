// RUN: lap-opt %s --lap-pipeline --lap-kernels="max-batch=4 max-seq=16 profile=1" | FileCheck %s

// lap.fusion in the kernel form: one parallel loop nest per fusion.

// A residual add and the RMSNorm it feeds: per row, one pass stores the
// sum, the norm's reduction reads it back (from cache) and the last pass
// normalises it; the sum is stored because it is read later. The normalised
// rows overwrite the linear's output %p, which dies here (the memory plan
// lets a loop nest's last output take an input's bytes).
// CHECK-LABEL: func.func @lap_gen_forward(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<512xf32>
// CHECK: %[[G:.*]] = memref.view %{{.*}}[%c256][] : memref<320xi8> to memref<8xf32>
// CHECK: %[[P:.*]] = memref.view %{{.*}}[%c0][] : memref<6144xi8> to memref<512xf32>
// CHECK: lapk.call "linear_forward"(%[[P]],
// CHECK: %[[H:.*]] = memref.view %{{.*}} to memref<512xf32>
// CHECK: lapk.profile_begin "lap.fusion"
// CHECK-NEXT: scf.parallel (%[[R:.*]]) =
// CHECK-NEXT: %[[BASE:.*]] = arith.muli %[[R]], %c8 : index
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %c8 step %c1 {
// CHECK-NEXT: %[[I:.*]] = arith.addi %[[BASE]], %[[J]]
// CHECK-NEXT: %[[A:.*]] = memref.load %[[X]][%[[I]]]
// CHECK-NEXT: %[[B:.*]] = memref.load %[[P]][%[[I]]]
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[A]], %[[B]]
// CHECK-NEXT: memref.store %[[S]], %[[H]][%[[I]]]
// CHECK: scf.for {{.*}} iter_args
// CHECK: memref.load %[[H]]
// CHECK: arith.addf {{.*}} fastmath<reassoc,contract>
// CHECK: math.rsqrt
// CHECK: scf.for
// CHECK: memref.load %[[H]]
// CHECK: memref.load %[[G]]
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: scf.reduce
// CHECK-NEXT: } {lapk.grain = 2048 : i64}
// CHECK-NEXT: lapk.profile_end "lap.fusion"

// An activation and the residual add it feeds: one loop over elements,
// the activation never stored, the sum written over the linear's output.
// CHECK: lapk.call "linear_forward"(%[[Q:[a-z0-9_]+]], %[[P]],
// CHECK: lapk.profile_begin "lap.fusion"
// CHECK-NEXT: %[[E:.*]] = arith.muli
// CHECK-NEXT: scf.parallel (%[[K:.*]]) = (%c0) to (%[[E]])
// CHECK-NEXT: memref.load %[[Q]][%[[K]]]
// CHECK-NOT: memref.store
// CHECK: math.tanh
// CHECK-NOT: memref.store
// CHECK: memref.load %[[H]][%[[K]]]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: memref.store %{{.*}}, %[[Q]][%[[K]]]
// CHECK-NEXT: scf.reduce
// CHECK-NEXT: } {lapk.grain = 16384 : i64}
// CHECK-NEXT: lapk.profile_end "lap.fusion"
// CHECK: lapk.call "cross_entropy_forward"

// Training: the same fusions, then the backward's own ops.
// CHECK-LABEL: func.func @lap_gen_train_step(
// CHECK-COUNT-2: lapk.profile_begin "lap.fusion"
// CHECK: lapk.call "cross_entropy_backward"
func.func @forward(%w: tensor<8x8xf32> {lap.name = "w", lap.parameter},
                   %g: tensor<8xf32> {lap.name = "g", lap.parameter},
                   %x: tensor<?x?x8xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  %p = lap.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %h = lap.add %x, %p : tensor<?x?x8xf32>
  %n = lap.rms_norm %h weight %g {eps = 1.0e-6 : f32} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %q = lap.linear %n, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %a = lap.gelu_tanh %q : tensor<?x?x8xf32>
  %b = lap.add %a, %h : tensor<?x?x8xf32>
  %loss = lap.cross_entropy %b, %t : tensor<?x?x8xf32>, tensor<?x?xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
