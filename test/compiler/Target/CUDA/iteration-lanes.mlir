// RUN: lap-opt %s --lapk-to-cuda | FileCheck %s

// A loop whose iterations walk rows runs one warp per iteration where the
// iteration sums along its row, and one block per iteration where it does
// not: its loops over the row step by the lane count from their lane, a
// warp's sums combined with shuffles and then with the loop's initial
// value, what the iteration writes outside those loops written by lane 0,
// and a barrier of the lanes around each write. Loops that could not run
// so keep one thread per iteration.

// The host launches each loop with its rows and the threads of a row: 32,
// a block (0), or one.
// CHECK-LABEL: func.func @lap_gen_rows(
// CHECK-DAG: %[[WARP:.*]] = llvm.mlir.constant(32 : i64) : i64
// CHECK-DAG: %[[BLOCK:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-DAG: %[[THREAD:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK: %[[R0:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: call @lap_cuda_launch(%{{.*}}, %[[R0]], %[[WARP]],
// CHECK: %[[R1:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK: call @lap_cuda_launch(%{{.*}}, %[[R1]], %[[BLOCK]],
// CHECK-COUNT-6: call @lap_cuda_launch(%{{.*}}, %{{.*}}, %[[THREAD]],

// CHECK-LABEL: gpu.func @lap_gen_rows_loop_0(
// CHECK: %[[I:.*]] = arith.addi
// CHECK: %[[LANE:.*]] = arith.remui %[[I]], %c32 : index
// CHECK: %[[ROW:.*]] = arith.divui %[[I]], %c32 : index
// CHECK: arith.cmpi ult, %[[ROW]],
// The row's sum: each lane from -0 over its elements, then the butterfly.
// CHECK: %[[PART:.*]] = scf.for %{{.*}} = %[[LANE]] to %c64 step %c32 iter_args(%{{.*}} = %cst{{.*}}) -> (f32) {
// CHECK: %[[S16:.*]], %{{.*}} = gpu.shuffle  xor %[[PART]], %c16_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c8_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: %[[TOTAL:.*]] = arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK: %[[SUM:.*]] = arith.addf %[[TOTAL]], %{{.*}} fastmath<reassoc> : f32
// The row's maximum likewise.
// CHECK: scf.for %{{.*}} = %[[LANE]] to %c64 step %c32
// CHECK: arith.maximumf
// CHECK: gpu.shuffle  xor
// The row written, each lane its own elements, after the lanes' reads.
// CHECK: nvvm.bar.warp.sync
// CHECK: scf.for %{{.*}} = %[[LANE]] to %c64 step %c32 {
// CHECK: memref.store
// CHECK: nvvm.bar.warp.sync
// The row's statistic: lane 0 writes it.
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0 : index
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: memref.store %[[SUM]]
// CHECK: nvvm.bar.warp.sync
// CHECK: gpu.return

// A row of 512 with no sum: a block's threads, the block's barrier.
// CHECK-LABEL: gpu.func @lap_gen_rows_loop_1(
// CHECK: %[[BROW:.*]] = gpu.block_id x
// CHECK: %[[BWIDTH:.*]] = gpu.block_dim x
// CHECK: %[[BLANE:.*]] = gpu.thread_id x
// CHECK: arith.cmpi ult, %[[BROW]],
// CHECK: scf.for %{{.*}} = %[[BLANE]] to %c512 step %[[BWIDTH]] {
// CHECK: memref.store
// CHECK: gpu.barrier
// CHECK: arith.cmpi eq, %[[BLANE]], %c0 : index
// CHECK: gpu.barrier
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return

// Refused: a sum without reassoc (its order is kept), a store to another
// step's element, a row of 8, a loop-carried value that is not a
// reduction, a store to memory another view reads, two stores of one
// memref at different elements. Each keeps one thread per iteration.
// CHECK-LABEL: gpu.func @lap_gen_rows_loop_2(
// CHECK-NOT: gpu.shuffle
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1
// CHECK-LABEL: gpu.func @lap_gen_rows_loop_3(
// CHECK-NOT: arith.remui
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1
// CHECK-LABEL: gpu.func @lap_gen_rows_loop_4(
// CHECK-NOT: arith.remui
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1
// CHECK-LABEL: gpu.func @lap_gen_rows_loop_5(
// CHECK-NOT: arith.remui
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1
// CHECK-LABEL: gpu.func @lap_gen_rows_loop_6(
// CHECK-NOT: arith.remui
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1
// CHECK-LABEL: gpu.func @lap_gen_rows_loop_7(
// CHECK-NOT: arith.remui
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1
// CHECK: gpu.return

func.func @lap_gen_rows(%params: memref<16xi8>, %ws: memref<65536xi8>,
                        %B: index, %T: index, %seed: memref<1xi64>, %first: i64)
    attributes {lapk.entry = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant -3.0e38 : f32
  %c4 = arith.constant 4 : index
  %c16384 = arith.constant 16384 : index
  %c32768 = arith.constant 32768 : index
  %x = memref.view %ws[%c0][] : memref<65536xi8> to memref<4096xf32>
  %y = memref.view %ws[%c16384][] : memref<65536xi8> to memref<4096xf32>
  %stat = memref.view %ws[%c32768][] : memref<65536xi8> to memref<64xf32>
  // x one element on: it overlaps x.
  %shifted = memref.view %ws[%c4][] : memref<65536xi8> to memref<4096xf32>
  %rows = arith.muli %B, %T : index
  // Each row: its sum and maximum, the row minus its sum, and the sum.
  scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
    %base = arith.muli %i, %c64 : index
    %sum = scf.for %j = %c0 to %c64 step %c1 iter_args(%s = %zero) -> (f32) {
      %at = arith.addi %base, %j : index
      %v = memref.load %x[%at] : memref<4096xf32>
      %next = arith.addf %s, %v fastmath<reassoc> : f32
      scf.yield %next : f32
    }
    %max = scf.for %j = %c0 to %c64 step %c1 iter_args(%m = %lowest) -> (f32) {
      %at = arith.addi %base, %j : index
      %v = memref.load %x[%at] : memref<4096xf32>
      %next = arith.maximumf %m, %v : f32
      scf.yield %next : f32
    }
    scf.for %j = %c0 to %c64 step %c1 {
      %at = arith.addi %j, %base : index
      %v = memref.load %x[%at] : memref<4096xf32>
      %d = arith.subf %v, %sum : f32
      %e = arith.subf %d, %max : f32
      memref.store %e, %y[%at] : memref<4096xf32>
    }
    memref.store %sum, %stat[%i] : memref<64xf32>
    scf.reduce
  }
  // Rows of 512 scaled, and a value of each row: nothing summed.
  scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
    %base = arith.muli %i, %c512 : index
    scf.for %j = %c0 to %c512 step %c1 {
      %at = arith.addi %base, %j : index
      %v = memref.load %x[%at] : memref<4096xf32>
      %d = arith.mulf %v, %lowest : f32
      memref.store %d, %y[%at] : memref<4096xf32>
    }
    %lead = memref.load %x[%base] : memref<4096xf32>
    memref.store %lead, %stat[%i] : memref<64xf32>
    scf.reduce
  }
  // A sum in order.
  scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
    %base = arith.muli %i, %c64 : index
    %sum = scf.for %j = %c0 to %c64 step %c1 iter_args(%s = %zero) -> (f32) {
      %at = arith.addi %base, %j : index
      %v = memref.load %x[%at] : memref<4096xf32>
      %next = arith.addf %s, %v : f32
      scf.yield %next : f32
    }
    memref.store %sum, %stat[%i] : memref<64xf32>
    scf.reduce
  }
  // Each step shifts the row: it writes the element after its own.
  scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
    %base = arith.muli %i, %c64 : index
    scf.for %j = %c0 to %c64 step %c1 {
      %at = arith.addi %base, %j : index
      %after = arith.addi %at, %c1 : index
      %v = memref.load %x[%at] : memref<4096xf32>
      memref.store %v, %y[%after] : memref<4096xf32>
    }
    scf.reduce
  }
  // A row of 8: a warp would leave 24 lanes idle.
  scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
    %base = arith.muli %i, %c8 : index
    scf.for %j = %c0 to %c8 step %c1 {
      %at = arith.addi %base, %j : index
      %v = memref.load %x[%at] : memref<4096xf32>
      memref.store %v, %y[%at] : memref<4096xf32>
    }
    scf.reduce
  }
  // A running value: each step needs the one before.
  scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
    %base = arith.muli %i, %c64 : index
    %last = scf.for %j = %c0 to %c64 step %c1 iter_args(%s = %zero) -> (f32) {
      %at = arith.addi %base, %j : index
      %v = memref.load %x[%at] : memref<4096xf32>
      %next = arith.addf %s, %v fastmath<reassoc> : f32
      memref.store %next, %y[%at] : memref<4096xf32>
      scf.yield %next : f32
    }
    scf.reduce
  }
  // A store to memory another view of the loop reads: x[j + 1] is
  // shifted[j].
  scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
    %base = arith.muli %i, %c64 : index
    scf.for %j = %c0 to %c64 step %c1 {
      %at = arith.addi %base, %j : index
      %v = memref.load %x[%at] : memref<4096xf32>
      memref.store %v, %shifted[%at] : memref<4096xf32>
    }
    scf.reduce
  }
  // Two stores of one memref at different elements of a step.
  scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
    %base = arith.muli %i, %c64 : index
    %next = arith.addi %base, %c1 : index
    scf.for %j = %c0 to %c64 step %c1 {
      %at = arith.addi %base, %j : index
      %after = arith.addi %next, %j : index
      %v = memref.load %x[%at] : memref<4096xf32>
      memref.store %v, %y[%at] : memref<4096xf32>
      memref.store %v, %y[%after] : memref<4096xf32>
    }
    scf.reduce
  }
  return
}
