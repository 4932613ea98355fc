//===- Passes.td - lap's conversions to target code --------*- tablegen -*-===//

#ifndef LAP_CONVERSION_PASSES
#define LAP_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def LapPlanMemory : Pass<"lap-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Give every intermediate an offset in one workspace, by liveness";
  let description = [{
    A static memory plan for each function. Every tensor an op produces gets
    a byte offset in one workspace, sized for the compiled maxima of the
    batch (dimension 0 of a dynamic tensor) and the sequence (dimension 1),
    so a smaller batch or shorter sequence fits in the same places. Values
    whose live ranges (definition to last use, in program order) overlap
    never share bytes; the others may. Offsets are 64-byte aligned.

    Results: `lap.offsets` on each op, one entry per result: a byte offset
    (>= 0); -1 for a result nothing reads (the kernel skips it where it
    can, otherwise it gets bytes); -2 - k for a value that is the function's
    k-th result and is written straight into the caller's output buffer (the
    loss and the gradients). A `lap.attention` stores its row logsumexp [B,
    H, T] right after its output, for the backward. The function gets
    `lap.workspace_bytes`.

    ```mlir
    %0 = lap.rms_norm %x {eps = 1.0e-05 : f32, lap.offsets = array<i64: 0>} : ...
    ```
  }];
  let options = [
    Option<"maxBatch", "max-batch", "int64_t", "0",
           "Largest batch size the code must handle">,
    Option<"maxSeq", "max-seq", "int64_t", "0",
           "Largest sequence length the code must handle">,
  ];
}

def LapToCPU : Pass<"lap-to-cpu", "::mlir::ModuleOp"> {
  let summary = "Lower planned lap functions to CPU code: loops and kernel calls";
  let description = [{
    Replaces each planned function `@f` by `@lap_gen_f(params, batch,
    outputs, workspace, B, T, seed, first)` on raw pointers: parameters at
    their offsets in one float buffer, batch tensors and outputs through
    pointer arrays, intermediates at their planned workspace offsets; `first`
    is the i64 argument of @decode (the position of its first token), 0 for
    the other functions. Elementwise
    ops, residual adds, activations and their gradients, head splitting and
    merging are generated here as loops (scf + arith + math on LLVM
    pointers, vectorised later by LLVM for the host CPU); GEMMs, attention,
    norms, losses and the other ops call the kernel library
    (`runtime/kernels/cpu/Kernels.h`).

    With `profile`, every op is bracketed by calls that time it
    (`lap_cpu_profile_begin/end`, runtime/kernels/cpu/Profile.cpp); the
    process prints the time per op kind and per op when it exits.
  }];
  let options = [
    Option<"profile", "profile", "bool", "false",
           "Time every op; print a profile when the process exits">,
  ];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::func::FuncDialect",
  ];
}

#endif // LAP_CONVERSION_PASSES
