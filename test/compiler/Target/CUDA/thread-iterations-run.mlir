// RUN: lap-opt %s --lapk-to-cuda --lap-cuda-kernels-on-host \
// RUN: | mlir-opt --convert-scf-to-cf --convert-cf-to-llvm \
// RUN:     --convert-arith-to-llvm --finalize-memref-to-llvm \
// RUN:     --convert-func-to-llvm --reconcile-unrealized-casts \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils \
// RUN: | FileCheck %s

// The kernels of elementwise loops that run several iterations to a thread
// (compiler/Target/CUDA/ThreadIterations.h), run on the CPU as the GPU runs
// their threads (--lap-cuda-kernels-on-host), launched as the host code
// and the runtime launch them: a thread per 4 iterations (32-bit loads) or
// 8 (16-bit), in blocks of 256. For trip counts within one block's stretch
// and past it, at and just past its end, and up to the buffers' end: each
// iteration below n stores its element, none past n does. Prints the
// elements that differ, for each loop and trip count.
// CHECK-COUNT-12: 0{{$}}
// CHECK-NOT: {{[0-9]}}

func.func @lap_gen_step(%params: memref<64xi8>, %ws: memref<42000xi8>,
                        %B: index, %T: index, %seed: memref<1xi64>, %first: i64)
    attributes {lapk.entry = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12000 = arith.constant 12000 : index
  %c24000 = arith.constant 24000 : index
  %c30000 = arith.constant 30000 : index
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %x = memref.view %ws[%c0][] : memref<42000xi8> to memref<3000xf32>
  %y = memref.view %ws[%c12000][] : memref<42000xi8> to memref<3000xf32>
  %h = memref.view %ws[%c24000][] : memref<42000xi8> to memref<3000xbf16>
  %z = memref.view %ws[%c30000][] : memref<42000xi8> to memref<3000xf32>
  %n = arith.muli %B, %T : index
  // y = 2 x + 1: 4 iterations to a thread.
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %x[%i] : memref<3000xf32>
    %r = arith.mulf %v, %two : f32
    %s = arith.addf %r, %one : f32
    memref.store %s, %y[%i] : memref<3000xf32>
    scf.reduce
  } {lapk.grain = 512 : i64}
  // z = h widened: 8 iterations to a thread.
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %h[%i] : memref<3000xbf16>
    %w = arith.extf %v : bf16 to f32
    memref.store %w, %z[%i] : memref<3000xf32>
    scf.reduce
  } {lapk.grain = 512 : i64}
  return
}

func.func private @lap_gen_step_loop_0(memref<3000xf32>, memref<3000xf32>, i64, index)
func.func private @lap_gen_step_loop_1(memref<3000xbf16>, memref<3000xf32>, i64, index)
func.func private @printI64(i64)
func.func private @printNewline()

/// The blocks of the launch of a loop of n iterations, `per` to a thread.
func.func @blocks(%n: index, %per: index) -> index {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %rounded = arith.addi %n, %per : index
  %up = arith.subi %rounded, %c1 : index
  %threads = arith.divui %up, %per : index
  %full = arith.addi %threads, %c256 : index
  %last = arith.subi %full, %c1 : index
  %blocks = arith.divui %last, %c256 : index
  return %blocks : index
}

/// Prints how many of got's 3000 elements differ from want's below n and
/// from -1 past it.
func.func @mismatches(%got: memref<3000xf32>, %want: memref<3000xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3000 = arith.constant 3000 : index
  %none = arith.constant -1.0 : f32
  %zero = arith.constant 0 : i64
  %bad = scf.for %i = %c0 to %c3000 step %c1 iter_args(%count = %zero) -> (i64) {
    %inside = arith.cmpi ult, %i, %n : index
    %w = memref.load %want[%i] : memref<3000xf32>
    %expected = arith.select %inside, %w, %none : f32
    %g = memref.load %got[%i] : memref<3000xf32>
    %differs = arith.cmpf une, %g, %expected : f32
    %add = arith.extui %differs : i1 to i64
    %next = arith.addi %count, %add : i64
    scf.yield %next : i64
  }
  func.call @printI64(%bad) : (i64) -> ()
  func.call @printNewline() : () -> ()
  return
}

func.func @check(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c256_i64 = arith.constant 256 : i64
  %c3000 = arith.constant 3000 : index
  %none = arith.constant -1.0 : f32
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %x = memref.alloc() : memref<3000xf32>
  %y = memref.alloc() : memref<3000xf32>
  %yWant = memref.alloc() : memref<3000xf32>
  %h = memref.alloc() : memref<3000xbf16>
  %z = memref.alloc() : memref<3000xf32>
  %zWant = memref.alloc() : memref<3000xf32>
  scf.for %i = %c0 to %c3000 step %c1 {
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    memref.store %f, %x[%i] : memref<3000xf32>
    %r = arith.mulf %f, %two : f32
    %s = arith.addf %r, %one : f32
    memref.store %s, %yWant[%i] : memref<3000xf32>
    // i mod 256: exact in bf16.
    %m = arith.remui %ii, %c256_i64 : i64
    %g = arith.uitofp %m : i64 to f32
    %b = arith.truncf %g : f32 to bf16
    memref.store %b, %h[%i] : memref<3000xbf16>
    memref.store %g, %zWant[%i] : memref<3000xf32>
    memref.store %none, %y[%i] : memref<3000xf32>
    memref.store %none, %z[%i] : memref<3000xf32>
  }
  %n64 = arith.index_cast %n : index to i64
  %blocks4 = func.call @blocks(%n, %c4) : (index, index) -> index
  func.call @lap_gen_step_loop_0(%x, %y, %n64, %blocks4) : (memref<3000xf32>, memref<3000xf32>, i64, index) -> ()
  func.call @mismatches(%y, %yWant, %n) : (memref<3000xf32>, memref<3000xf32>, index) -> ()
  %blocks8 = func.call @blocks(%n, %c8) : (index, index) -> index
  func.call @lap_gen_step_loop_1(%h, %z, %n64, %blocks8) : (memref<3000xbf16>, memref<3000xf32>, i64, index) -> ()
  func.call @mismatches(%z, %zWant, %n) : (memref<3000xf32>, memref<3000xf32>, index) -> ()
  memref.dealloc %x : memref<3000xf32>
  memref.dealloc %y : memref<3000xf32>
  memref.dealloc %yWant : memref<3000xf32>
  memref.dealloc %h : memref<3000xbf16>
  memref.dealloc %z : memref<3000xf32>
  memref.dealloc %zWant : memref<3000xf32>
  return
}

// Trip counts: one; within a block's stretch (1024 iterations at 4, 2048
// at 8); at its end and past it; a few stretches, ending mid-block and at
// the buffers' end.
func.func @main() {
  %c1 = arith.constant 1 : index
  %c255 = arith.constant 255 : index
  %c1024 = arith.constant 1024 : index
  %c1025 = arith.constant 1025 : index
  %c2999 = arith.constant 2999 : index
  %c3000 = arith.constant 3000 : index
  func.call @check(%c1) : (index) -> ()
  func.call @check(%c255) : (index) -> ()
  func.call @check(%c1024) : (index) -> ()
  func.call @check(%c1025) : (index) -> ()
  func.call @check(%c2999) : (index) -> ()
  func.call @check(%c3000) : (index) -> ()
  return
}
