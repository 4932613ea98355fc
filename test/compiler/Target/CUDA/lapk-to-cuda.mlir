// RUN: lap-opt %s --lapk-to-cuda | FileCheck %s

// The kernel form of one step: a kernel call with a missing bias and a
// constant's device address, a parallel loop over a constant and a view,
// and the store of a gradient's seed outside any loop.
memref.global "private" constant @lap_coefficients_0 : memref<2xf32> = dense<[1.0, -1.0]>

// CHECK: module attributes {gpu.container_module}
// The entry gets the ABI's signature, as on the CPU.
// CHECK-LABEL: func.func @lap_gen_step(
// CHECK-SAME: %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: i64)
// CHECK-NOT: lapk.entry
// CHECK-DAG: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-DAG: %[[NAME:.*]] = llvm.mlir.addressof @lap_symbol_lap_coefficients_0 : !llvm.ptr
// Buffers pass as pointers, lapk.null as null, to the CUDA kernels.
// CHECK: call @lap_cuda_linear_forward(%{{.*}}, %{{.*}}, %{{.*}}, %[[NULL]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i32) -> ()
// A constant a library kernel reads goes at its device address.
// CHECK: %[[COEFFICIENTS:.*]] = call @lap_cuda_symbol(%[[NAME]]) : (!llvm.ptr) -> !llvm.ptr
// CHECK: call @lap_cuda_attention_forward(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[COEFFICIENTS]],
// The loop is enqueued as a kernel: its trip count, the threads of an
// iteration, and the values it uses, then its trip count, in a frame of
// 8-byte slots.
// CHECK: %[[FRAME:.*]] = llvm.alloca %{{.*}} x i64 {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK: call @lap_cuda_launch(%{{.*}}, %{{.*}}, %{{.*}}, %[[FRAME]], %{{.*}}) : (!llvm.ptr, i64, i64, !llvm.ptr, i64) -> ()
// The seed's store is a kernel of one iteration: the host touches no
// device memory.
// CHECK: call @lap_cuda_launch(
// CHECK-NOT: memref.store
// CHECK: return
// Memory code outside loops (a layer's learned head coefficients: loads
// and stores) runs as one kernel of one iteration, the pure ops only it
// uses moved along.
// CHECK-LABEL: func.func @lap_gen_coefficients(
// CHECK-NOT: memref.load
// CHECK: call @lap_cuda_launch(
// CHECK-NOT: memref.store
// CHECK: return

// The GPU module holds the constants (public: the runtime finds them by
// name) and one kernel per loop, one thread per iteration.
// CHECK: gpu.module @lap_kernels
// CHECK: memref.global constant @lap_coefficients_0
// CHECK: gpu.func @lap_gen_step_loop_0(%{{.*}}: memref<1024xf32>, %{{.*}}: memref<512xf32>, %[[N:.*]]: i64) kernel
// CHECK-DAG: gpu.block_id x
// CHECK-DAG: gpu.block_dim x
// CHECK-DAG: gpu.thread_id x
// CHECK-DAG: memref.get_global @lap_coefficients_0
// CHECK: scf.if
// CHECK-NOT: math.tanh
// CHECK: gpu.return
// CHECK: gpu.func @lap_gen_step_loop_1(%{{.*}}: memref<1xf32>, %{{.*}}: i64) kernel
// CHECK: memref.store
// CHECK: gpu.func @lap_gen_coefficients_loop_0(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>, %{{.*}}: i64) kernel
// CHECK: memref.load
// CHECK: arith.negf
// CHECK: memref.store
// CHECK: memref.store
// Kernels are declared from Kernels.def.
// CHECK-DAG: func.func private @lap_cuda_linear_forward(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i32)
// CHECK-DAG: func.func private @lap_cuda_launch(!llvm.ptr, i64, i64, !llvm.ptr, i64)

func.func @lap_gen_step(%params: memref<768xi8>, %ws: memref<4096xi8>,
                        %x: memref<512xf32>, %loss: memref<512xf32>,
                        %B: index, %T: index, %seed: memref<1xi64>, %first: i64)
    attributes {lapk.entry = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c0_i64 = arith.constant 0 : i64
  %c1_i64 = arith.constant 1 : i64
  %c2_i64 = arith.constant 2 : i64
  %c4_i64 = arith.constant 4 : i64
  %c8_i64 = arith.constant 8 : i64
  %c24_i64 = arith.constant 24 : i64
  %fp32 = arith.constant 0 : i32
  %zero = arith.constant 0 : i32
  %scale = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %w = memref.view %params[%c0][] : memref<768xi8> to memref<192xf32>
  %y = memref.view %ws[%c0][] : memref<4096xi8> to memref<1024xf32>
  %seed_buffer = memref.view %ws[%c0][] : memref<4096xi8> to memref<1xf32>
  %none = lapk.null : memref<0xf32>
  %nostarts = lapk.null : memref<0xi32>
  %n = arith.muli %B, %T : index
  %rows = arith.index_cast %n : index to i64
  lapk.call "linear_forward"(%y, %x, %w, %none, %rows, %c8_i64, %c24_i64, %fp32) : memref<1024xf32>, memref<512xf32>, memref<192xf32>, memref<0xf32>, i64, i64, i64, i32
  %alpha = memref.get_global @lap_coefficients_0 : memref<2xf32>
  lapk.call "attention_forward"(%y, %y, %x, %x, %x, %alpha, %nostarts, %nostarts, %c1_i64, %c4_i64, %c4_i64, %c1_i64, %c1_i64, %c8_i64, %scale, %zero, %c0_i64) : memref<1024xf32>, memref<1024xf32>, memref<512xf32>, memref<512xf32>, memref<512xf32>, memref<2xf32>, memref<0xi32>, memref<0xi32>, i64, i64, i64, i64, i64, i64, f32, i32, i64
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %a = memref.load %alpha[%c0] : memref<2xf32>
    %v = memref.load %y[%i] : memref<1024xf32>
    %t = math.tanh %v : f32
    %r = arith.mulf %a, %t : f32
    memref.store %r, %loss[%i] : memref<512xf32>
    scf.reduce
  } {lapk.grain = 512 : i64}
  memref.store %one, %seed_buffer[%c0] : memref<1xf32>
  return
}

func.func @lap_gen_coefficients(%params: memref<16xi8>, %ws: memref<16xi8>,
                                %B: index, %T: index, %seed: memref<1xi64>, %first: i64)
    attributes {lapk.entry = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %learned = memref.view %params[%c0][] : memref<16xi8> to memref<4xf32>
  %out = memref.view %ws[%c0][] : memref<16xi8> to memref<4xf32>
  %a = memref.load %learned[%c0] : memref<4xf32>
  %minus = arith.negf %a : f32
  memref.store %a, %out[%c0] : memref<4xf32>
  memref.store %minus, %out[%c1] : memref<4xf32>
  return
}
