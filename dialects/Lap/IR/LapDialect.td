//===- LapDialect.td - The lap dialect ---------------------*- tablegen -*-===//
//
// The dialect and the base class of its ops; the ops are in LapOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_DIALECT
#define LAP_DIALECT

include "mlir/IR/OpBase.td"

def Lap_Dialect : Dialect {
  let name = "lap";
  let summary = "Transformer building blocks with per-head attention kinds";
  let description = [{
    The ops of the three model families lap compiles (gpt, vit, dino) on
    tensors whose batch and sequence dimensions are dynamic and whose other
    dimensions are static. The centrepiece is `lap.attention`, which carries
    the kind of every head; kinds become per-head coefficients (alpha, beta)
    of O = alpha * P V + beta * V before code generation.
  }];
  let cppNamespace = "::lap";
  // lap.matmul_precision on a module (LapDialect.h).
  let hasOperationAttrVerify = 1;
}

// Element types: an op computes in one precision. Its floating-point
// tensors of rank >= 1 share one element type, f32 or bf16; a rank-0 float
// tensor (a loss, the gradient of one) is f32, because losses accumulate in
// f32 whatever the precision, as are an attention's per-head coefficients
// and their gradient; integer tensors (token ids, labels) are apart.
// Kernels accumulate sums, statistics and softmax in f32 at either
// precision.
def Lap_ElementTypes : NativeOpTrait<"ElementTypes"> {
  let cppNamespace = "::lap::OpTrait";
}

// Lowering policy, stated on each op that has it (the passes ask with
// hasTrait, through isLoopFusible, isGenerated and hasBF16Kernel in
// LapOps.h):
//  - LoopFusible: a result element (row r, column j) needs only element
//    (r, j) of its row-shaped operands, column j of its [C] operands and,
//    for the forward norms, statistics of its input row; or it is a column
//    sum over rows. Such ops may share a lap.fusion and its loop nest.
//  - Generated: code generation makes the op a loop of its own, at either
//    precision, not a call of the kernel library (loop-fusible ops are too).
//  - BF16Kernel: the kernel library computes the op on bf16 tensors too
//    (Kernels.def's `<kernel>_bf16`); other kernel calls take f32.
def Lap_LoopFusible : NativeOpTrait<"LoopFusible"> {
  let cppNamespace = "::lap::OpTrait";
}
def Lap_Generated : NativeOpTrait<"Generated"> {
  let cppNamespace = "::lap::OpTrait";
}
def Lap_BF16Kernel : NativeOpTrait<"BF16Kernel"> {
  let cppNamespace = "::lap::OpTrait";
}

class Lap_Op<string mnemonic, list<Trait> traits = []>
    : Op<Lap_Dialect, mnemonic, !listconcat(traits, [Lap_ElementTypes])>;

#endif // LAP_DIALECT
