// RUN: lap-opt %s --lapk-to-cuda --verify-diagnostics

// A value read from device memory cannot steer the host.
func.func @lap_gen_step(%params: memref<16xi8>, %ws: memref<64xi8>,
                        %B: index, %T: index, %seed: i64, %first: i64)
    attributes {lapk.entry = 0 : i64} {
  %c0 = arith.constant 0 : index
  %sizes = memref.view %params[%c0][] : memref<16xi8> to memref<4xi32>
  %y = memref.view %ws[%c0][] : memref<64xi8> to memref<16xf32>
  // expected-error @+1 {{the CUDA target reads no device memory on the host}}
  %n = memref.load %sizes[%c0] : memref<4xi32>
  %rows = arith.extsi %n : i32 to i64
  lapk.call "copy"(%y, %y, %rows) : memref<16xf32>, memref<16xf32>, i64
  return
}
