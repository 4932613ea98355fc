// RUN: lap-opt %s --split-input-file --lap-pipeline --lap-kernels="max-batch=4 max-seq=16 profile=1" | FileCheck %s

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
// CHECK: math.erf
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
  %a = lap.gelu %q : tensor<?x?x8xf32>
  %b = lap.add %a, %h : tensor<?x?x8xf32>
  %loss = lap.cross_entropy %b, %t : tensor<?x?x8xf32>, tensor<?x?xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A bias gradient summed in the loop that makes dY (an activation
// gradient): chunks of rows fixed by the shape (rows * C / 2^15, clamped to
// [1, 64] and to the rows), one parallel iteration per chunk that zeroes
// its partial sums and adds its rows to them in order, then the chunks'
// sums added in order (no reassociation) into the bias gradient, which is
// copied to its output at the end. The GEMM kernel gets no bias gradient.
// CHECK-LABEL: func.func @lap_gen_train_step(
// CHECK-SAME: %[[DW:[a-z0-9]+]]: memref<64xf32>, %[[DB:[a-z0-9]+]]: memref<8xf32>, %{{[a-z0-9]+}}: index
// CHECK: lapk.call "cross_entropy_backward"
// CHECK: %[[SUM:.*]] = memref.view %{{.*}} to memref<8xf32>
// CHECK: lapk.profile_begin "lap.fusion"
// CHECK-NEXT: %[[PARTIAL:.*]] = memref.view %{{.*}} to memref<512xf32>
// CHECK: arith.minui %{{.*}}, %c64 : index
// CHECK: %[[CHUNKS:.*]] = arith.minui
// CHECK: scf.parallel (%[[C:.*]]) = (%c0) to (%[[CHUNKS]]) step (%c1) {
// CHECK: memref.store %{{.*}}, %[[PARTIAL]]
// CHECK: scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %c1 {
// CHECK: math.erf
// CHECK: math.exp
// CHECK: memref.store
// CHECK: %[[P:.*]] = memref.load %[[PARTIAL]]
// CHECK: %[[G:.*]] = memref.load
// CHECK: %[[A:.*]] = arith.addf %[[P]], %[[G]] : f32
// CHECK: memref.store %[[A]], %[[PARTIAL]]
// CHECK: } {lapk.grain = 1 : i64}
// The chunks' partial sums, added in chunk order: the columns are
// independent (one chunk of them on the CPU, a thread each on a GPU).
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c8) step (%c1) {
// CHECK: scf.for %{{.*}} = %c0 to %[[CHUNKS]] step %c1 iter_args
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: memref.store %{{.*}}, %[[SUM]]
// CHECK: } {lapk.grain = 8 : i64}
// CHECK: lapk.profile_end "lap.fusion"
// CHECK: %[[NONE:.*]] = lapk.null : memref<8xf32>
// CHECK: lapk.call "linear_backward"(%{{.*}}, %[[DW]], %[[NONE]],
// CHECK: lapk.call "copy"(%[[DB]], %[[SUM]], %c8_i64)
func.func @forward(%w: tensor<8x8xf32> {lap.name = "w", lap.parameter},
                   %b: tensor<8xf32> {lap.name = "b", lap.parameter},
                   %x: tensor<?x?x8xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  %u = lap.linear %x, %w, %b : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %a = lap.gelu %u : tensor<?x?x8xf32>
  %loss = lap.cross_entropy %a, %t : tensor<?x?x8xf32>, tensor<?x?xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
