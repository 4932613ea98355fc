// RUN: lap-opt %s --lapk-to-cpu | FileCheck %s
// RUN: lap-opt %s --lap-cpu-lowering | FileCheck %s --check-prefix=LLVM

// The kernel form of one step: a kernel call with a missing bias, a
// parallel loop over a constant global and a view, and profile markers.
memref.global "private" constant @lap_coefficients_0 : memref<2xf32> = dense<[1.0, -1.0]>

// The entry gets the ABI's signature; its buffers are built from the
// parameter and workspace pointers and from the batch and output arrays.
// CHECK-LABEL: func.func @lap_gen_step(
// CHECK-SAME: %[[PARAMS:[a-z0-9]+]]: !llvm.ptr, %[[BATCH:[a-z0-9]+]]: !llvm.ptr, %[[OUT:[a-z0-9]+]]: !llvm.ptr, %[[WS:[a-z0-9]+]]: !llvm.ptr, %[[B:[a-z0-9]+]]: i64, %[[T:[a-z0-9]+]]: i64, %[[SEED:[a-z0-9]+]]: !llvm.ptr, %[[FIRST:[a-z0-9]+]]: i64)
// CHECK-NOT: lapk.entry
// CHECK-DAG: %[[BODY:.*]] = constant @lap_gen_step_loop_0 : (!llvm.ptr, i64, i64) -> ()
// Profile markers: one label global per op, shared by its two calls.
// CHECK-DAG: %[[LABEL:.*]] = llvm.mlir.addressof @lap_profile_0 : !llvm.ptr
// CHECK-DAG: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-DAG: %[[X:.*]] = llvm.load %[[BATCH]] : !llvm.ptr -> !llvm.ptr
// CHECK-DAG: %[[LOSS:.*]] = llvm.load %[[OUT]] : !llvm.ptr -> !llvm.ptr
// CHECK: call @lap_cpu_profile_begin(%[[LABEL]]) : (!llvm.ptr) -> ()
// Buffers pass as pointers, lapk.null as null.
// CHECK: call @lap_cpu_linear_forward(%{{.*}}, %[[X]], %{{.*}}, %[[NULL]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i32) -> ()
// CHECK: call @lap_cpu_profile_end(%[[LABEL]])
// The parallel loop runs on the pool: the values it uses from above go to
// a frame (a pointer for the view, the index as i64), the constants not.
// CHECK: %[[FRAME:.*]] = llvm.alloca %{{.*}} x i64 {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK: llvm.store %{{.*}}, %[[FRAME]] : !llvm.ptr, !llvm.ptr
// CHECK: llvm.store %[[LOSS]], %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK-NOT: llvm.store
// CHECK: call @lap_cpu_parallel_for(%{{.*}}, %{{.*}}, %[[BODY]], %[[FRAME]]) : (i64, i64, (!llvm.ptr, i64, i64) -> (), !llvm.ptr) -> ()
// CHECK: return
// The outlined body: a chunk [begin, end) of the loop, the frame reloaded,
// constants and globals rebuilt in place, tanh as a polynomial.
// CHECK-LABEL: func.func private @lap_gen_step_loop_0(
// CHECK-SAME: %[[F:[a-z0-9]+]]: !llvm.ptr, %[[BEGIN:[a-z0-9]+]]: i64, %[[END:[a-z0-9]+]]: i64)
// CHECK-DAG: memref.get_global @lap_coefficients_0
// CHECK-DAG: llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: scf.for
// CHECK-NOT: math.tanh
// CHECK: return
// Kernels are declared from Kernels.def.
// CHECK-DAG: func.func private @lap_cpu_linear_forward(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i32)
// CHECK-DAG: func.func private @lap_cpu_profile_begin(!llvm.ptr)

// LLVM: llvm.func @lap_gen_step(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr, %{{.*}}: i64)
// LLVM-NOT: builtin.unrealized_conversion_cast
// LLVM: llvm.call @lap_cpu_linear_forward(
// LLVM: llvm.call @lap_cpu_parallel_for(
// LLVM: llvm.func @lap_gen_step_loop_0(

func.func @lap_gen_step(%params: memref<768xi8>, %ws: memref<4096xi8>,
                        %x: memref<512xf32>, %loss: memref<512xf32>,
                        %B: index, %T: index, %seed: memref<1xi64>, %first: i64)
    attributes {lapk.entry = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8_i64 = arith.constant 8 : i64
  %c24_i64 = arith.constant 24 : i64
  %fp32 = arith.constant 0 : i32
  %w = memref.view %params[%c0][] : memref<768xi8> to memref<192xf32>
  %y = memref.view %ws[%c0][] : memref<4096xi8> to memref<1024xf32>
  %none = lapk.null : memref<0xf32>
  %n = arith.muli %B, %T : index
  %rows = arith.index_cast %n : index to i64
  lapk.profile_begin "lap.linear"
  lapk.call "linear_forward"(%y, %x, %w, %none, %rows, %c8_i64, %c24_i64, %fp32) : memref<1024xf32>, memref<512xf32>, memref<192xf32>, memref<0xf32>, i64, i64, i64, i32
  lapk.profile_end "lap.linear"
  %alpha = memref.get_global @lap_coefficients_0 : memref<2xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %a = memref.load %alpha[%c0] : memref<2xf32>
    %v = memref.load %y[%i] : memref<1024xf32>
    %t = math.tanh %v : f32
    %r = arith.mulf %a, %t : f32
    memref.store %r, %loss[%i] : memref<512xf32>
    scf.reduce
  } {lapk.grain = 512 : i64}
  return
}
