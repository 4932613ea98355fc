//===- Passes.td - The CPU target ---------------------------*- tablegen -*-===//

#ifndef LAP_TARGET_CPU_PASSES
#define LAP_TARGET_CPU_PASSES

include "mlir/Pass/PassBase.td"

def LapkToCPU : Pass<"lapk-to-cpu", "::mlir::ModuleOp"> {
  let summary = "Lower the kernel form to CPU code: the ABI, the thread pool, lap_cpu_* calls";
  let description = [{
    The CPU's part of code generation, after `--lap-to-kernels`:

    - each entry `@lap_gen_f` gets the ABI signature of
      runtime/include/lap/model.h: `(params, batch, outputs, workspace, B,
      T, seed, first)` on raw pointers, the batch tensors and outputs
      through pointer arrays; its buffers are built from those pointers.
    - each `scf.parallel` is outlined into `@lap_gen_f_loop_N(frame, begin,
      end)` and run on the thread pool through `lap_cpu_parallel_for`, in
      chunks of at least its `lapk.grain` iterations; the values it uses
      travel in an on-stack frame.
    - `lapk.call "k"` becomes a call of `lap_cpu_k` (runtime/kernels/cpu/
      Kernels.h), declared from Kernels.def; buffers pass as pointers,
      `lapk.null` as null.
    - `lapk.profile_begin/end` become calls that time the op
      (runtime/kernels/cpu/Profile.cpp).
    - tanh and erf become polynomials (vectorisable, no libm calls).

    What remains (scf, arith, math, memref) lowers to the LLVM dialect by
    MLIR's conversions (the `--lap-cpu-codegen` pipeline).
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

#endif // LAP_TARGET_CPU_PASSES
