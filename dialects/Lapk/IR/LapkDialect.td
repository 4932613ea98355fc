//===- LapkDialect.td - The lapk dialect -------------------*- tablegen -*-===//
//
// The target-neutral form between the lap dialect and a target: every lap
// op is either a call of a library kernel (lapk.call, typed by
// runtime/kernels/Kernels.def) or a loop nest generated from scf, arith,
// math and memref ops on flat buffers. Seam: docs/architecture.md, Data flow.
//
//===----------------------------------------------------------------------===//

#ifndef LAPK_DIALECT
#define LAPK_DIALECT

include "mlir/IR/OpBase.td"

def Lapk_Dialect : Dialect {
  let name = "lapk";
  let summary = "Kernel calls and the markers of lap's target-neutral form";
  let description = [{
    After `--lap-to-kernels`, each planned lap function is a function on
    flat, static-size memrefs: the parameter and workspace byte buffers, one
    buffer per batch tensor and per output, and the run-time batch and
    sequence. Intermediates are `memref.view`s of the workspace at their
    planned offsets. Ops of the lap dialect become either `lapk.call`s of
    library kernels or loops (`scf.parallel` marked with `lapk.grain` for
    work split across threads or GPU blocks, `scf.for` inside). A target
    lowers this form: the CPU target to LLVM and `lap_cpu_<kernel>` calls.
  }];
  let cppNamespace = "::lap::lapk";
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

class Lapk_Op<string mnemonic, list<Trait> traits = []>
    : Op<Lapk_Dialect, mnemonic, traits>;

#endif // LAPK_DIALECT
