// RUN: not lap-opt %s --lapk-to-cuda --lap-cuda-kernels-on-host 2>&1 | FileCheck %s

// A kernel whose lanes run together (a warp's row sum, with shuffles) does
// not run on the host one thread after another.
// CHECK: error: a kernel whose threads run together (gpu.shuffle) does not run on the host
func.func @lap_gen_step(%params: memref<64xi8>, %ws: memref<8192xi8>,
                        %B: index, %T: index, %seed: memref<1xi64>, %first: i64)
    attributes {lapk.entry = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  %x = memref.view %ws[%c0][] : memref<8192xi8> to memref<1024xf32>
  %s = memref.view %ws[%c4096][] : memref<8192xi8> to memref<16xf32>
  %n = arith.muli %B, %T : index
  scf.parallel (%r) = (%c0) to (%n) step (%c1) {
    %base = arith.muli %r, %c64 : index
    %sum = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
      %at = arith.addi %base, %j : index
      %v = memref.load %x[%at] : memref<1024xf32>
      %next = arith.addf %acc, %v fastmath<reassoc> : f32
      scf.yield %next : f32
    }
    memref.store %sum, %s[%r] : memref<16xf32>
    scf.reduce
  } {lapk.grain = 1 : i64}
  return
}
