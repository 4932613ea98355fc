// RUN: lap-opt %s --lapk-to-cuda | FileCheck %s

// Elementwise loops run several iterations to a thread
// (compiler/Target/CUDA/ThreadIterations.h): 4 with 32-bit loads, 8 with
// 16-bit ones. The host launches a thread per that many iterations; the
// frame keeps the trip count.
// CHECK-LABEL: func.func @lap_gen_step(
// CHECK-DAG: %[[FOUR:.*]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-DAG: %[[THREE:.*]] = llvm.mlir.constant(3 : i64) : i64
// CHECK-DAG: %[[EIGHT:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-DAG: %[[SEVEN:.*]] = llvm.mlir.constant(7 : i64) : i64
// CHECK: %[[N:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: llvm.store %[[N]],
// CHECK: %[[ROUNDED:.*]] = arith.addi %[[N]], %[[THREE]] : i64
// CHECK: %[[THREADS:.*]] = arith.divui %[[ROUNDED]], %[[FOUR]] : i64
// CHECK: call @lap_cuda_launch(%{{.*}}, %[[THREADS]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: %[[ROUNDED8:.*]] = arith.addi %{{.*}}, %[[SEVEN]] : i64
// CHECK: %[[THREADS8:.*]] = arith.divui %[[ROUNDED8]], %[[EIGHT]] : i64
// CHECK: call @lap_cuda_launch(%{{.*}}, %[[THREADS8]],
// A loop with a region in its body, one that loads nothing, and one that
// divides by a loaded value (which must not run for an iteration that
// does not exist) keep a thread to an iteration: the launch's count is the
// frame's.
// CHECK: llvm.store %[[N2:[0-9]+]], %{{[0-9]+}} : i64, !llvm.ptr
// CHECK-NEXT: call @lap_cuda_launch(%{{[0-9]+}}, %[[N2]],
// CHECK: llvm.store %[[N3:[0-9]+]], %{{[0-9]+}} : i64, !llvm.ptr
// CHECK-NEXT: call @lap_cuda_launch(%{{[0-9]+}}, %[[N3]],
// CHECK: llvm.store %[[N4:[0-9]+]], %{{[0-9]+}} : i64, !llvm.ptr
// CHECK-NEXT: call @lap_cuda_launch(%{{[0-9]+}}, %[[N4]],
// CHECK: return

// Thread t of block b runs iterations b * 4w + t + k w (w the block's
// width, k < 4). All four load first, those beyond the trip count
// loading iteration n - 1's element; then each stores, iterations 1-3
// only where they are below n.
// CHECK-LABEL: gpu.func @lap_gen_step_loop_0(
// CHECK-SAME: %[[X:[^:]*]]: memref<1024xf32>, %[[Y:[^:]*]]: memref<1024xf32>, %[[TRIPS:[^:]*]]: i64) kernel
// CHECK: %[[BLOCK:.*]] = gpu.block_id x
// CHECK: %[[W:.*]] = gpu.block_dim x
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[STRETCH:.*]] = arith.muli %[[W]], %c4 : index
// CHECK: %[[START:.*]] = arith.muli %[[BLOCK]], %[[STRETCH]] : index
// CHECK: %[[I0:.*]] = arith.addi %[[START]], %[[T]] : index
// CHECK: %[[NN:.*]] = arith.index_cast %[[TRIPS]] : i64 to index
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[I0]], %[[NN]] : index
// CHECK: scf.if %[[IN]] {
// CHECK: %[[LAST:.*]] = arith.subi %[[NN]], %c1 : index
// CHECK: %[[V0:.*]] = memref.load %[[X]][%[[I0]]]
// CHECK: %[[R0:.*]] = arith.mulf %[[V0]]
// CHECK: %[[I1:.*]] = arith.addi %[[I0]], %[[W]] : index
// CHECK: %[[C1:.*]] = arith.minui %[[I1]], %[[LAST]] : index
// CHECK: %[[V1:.*]] = memref.load %[[X]][%[[C1]]]
// CHECK: %[[R1:.*]] = arith.mulf %[[V1]]
// CHECK: memref.load
// CHECK: memref.load
// CHECK-NOT: memref.load
// CHECK: memref.store %[[R0]], %[[Y]][%[[I0]]]
// CHECK: %[[IN1:.*]] = arith.cmpi ult, %[[I1]], %[[NN]] : index
// CHECK: scf.if %[[IN1]] {
// CHECK-NEXT: memref.store %[[R1]], %[[Y]][%[[C1]]]
// CHECK: scf.if
// CHECK: scf.if
// CHECK-NOT: scf.if
// CHECK: gpu.return

// 16-bit loads: 8 iterations to a thread.
// CHECK-LABEL: gpu.func @lap_gen_step_loop_1(
// CHECK: arith.muli %{{.*}}, %c8 : index
// CHECK-COUNT-8: memref.load
// CHECK-NOT: memref.load
// CHECK-COUNT-7: scf.if
// CHECK: gpu.return

// CHECK-LABEL: gpu.func @lap_gen_step_loop_2(
// CHECK-NOT: arith.minui
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @lap_gen_step_loop_3(
// CHECK-NOT: arith.minui
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @lap_gen_step_loop_4(
// CHECK-NOT: arith.minui
// CHECK: gpu.return

func.func @lap_gen_step(%params: memref<64xi8>, %ws: memref<8192xi8>,
                        %B: index, %T: index, %seed: memref<1xi64>, %first: i64)
    attributes {lapk.entry = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4096 = arith.constant 4096 : index
  %two = arith.constant 2.0 : f32
  %zero = arith.constant 0.0 : f32
  %x = memref.view %ws[%c0][] : memref<8192xi8> to memref<1024xf32>
  %y = memref.view %ws[%c0][] : memref<8192xi8> to memref<1024xf32>
  %h = memref.view %ws[%c4096][] : memref<8192xi8> to memref<1024xbf16>
  %n = arith.muli %B, %T : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %x[%i] : memref<1024xf32>
    %r = arith.mulf %v, %two : f32
    memref.store %r, %y[%i] : memref<1024xf32>
    scf.reduce
  } {lapk.grain = 512 : i64}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %h[%i] : memref<1024xbf16>
    %w = arith.extf %v : bf16 to f32
    memref.store %w, %y[%i] : memref<1024xf32>
    scf.reduce
  } {lapk.grain = 512 : i64}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %x[%i] : memref<1024xf32>
    %positive = arith.cmpf ogt, %v, %zero : f32
    scf.if %positive {
      memref.store %v, %y[%i] : memref<1024xf32>
    }
    scf.reduce
  } {lapk.grain = 512 : i64}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %zero, %y[%i] : memref<1024xf32>
    scf.reduce
  } {lapk.grain = 512 : i64}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %h[%i] : memref<1024xbf16>
    %b = arith.bitcast %v : bf16 to i16
    %d = arith.divui %b, %b : i16
    %w = arith.uitofp %d : i16 to f32
    memref.store %w, %x[%i] : memref<1024xf32>
    scf.reduce
  } {lapk.grain = 512 : i64}
  return
}
