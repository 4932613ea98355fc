//===- Passes.td - The static memory plan ------------------*- tablegen -*-===//

#ifndef LAP_MEMORY_PASSES
#define LAP_MEMORY_PASSES

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

#endif // LAP_MEMORY_PASSES
