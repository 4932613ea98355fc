//===- Passes.td - lap to the target-neutral form ----------*- tablegen -*-===//

#ifndef LAP_CONVERSION_PASSES
#define LAP_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def LapToKernels : Pass<"lap-to-kernels", "::mlir::ModuleOp"> {
  let summary = "Lower planned lap functions to kernel calls and loops on buffers";
  let description = [{
    The seam between the lap dialect and the targets. Replaces each planned
    function `@f` by `@lap_gen_f(params, workspace, inputs..., outputs...,
    B, T, seed, first)` on flat memrefs of static size (the compiled
    maxima): `params` and `workspace` are byte buffers in which parameters
    and intermediates are `memref.view`s at their offsets (the layout and
    the memory plan); each batch tensor and each output is a buffer of its
    own; `B` and `T` are the run-time batch and sequence (index); `first`
    is the i64 argument of @decode (its first position), 0 otherwise.

    Every lap op becomes either a `lapk.call` of a kernel of
    runtime/kernels/Kernels.def (GEMMs, attention, norm gradients, losses,
    token ops) or a generated loop nest: `scf.parallel` over rows or
    elements, marked with `lapk.grain` (the smallest chunk worth a thread),
    with `scf.for`, arith and math inside (elementwise ops, residual adds,
    activations and their gradients, forward norms, head splitting and
    merging). Per-head coefficients are `memref.global` constants. With
    `profile`, each op's code sits between `lapk.profile_begin` and
    `lapk.profile_end`.

    Nothing here names a target: a target lowers this form (the CPU's in
    compiler/Target/CPU).
  }];
  let options = [
    Option<"profile", "profile", "bool", "false",
           "Mark every op's code for the profiler">,
  ];
  let dependentDialects = [
    "::lap::lapk::LapkDialect", "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::func::FuncDialect",
  ];
}

#endif // LAP_CONVERSION_PASSES
