//===- LinearCalls.cpp - Linear layers as kernel calls --------------------===//
//
// Linear layers, their GELU epilogues and the fused QKV projection, with
// their gradients: the GEMM kernels at the model's matmul precision.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LapToKernels/Emitter.h"

#include "llvm/ADT/TypeSwitch.h"

namespace lap::kernelform {

std::optional<LogicalResult> Emitter::emitLinear(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](LinearOp a) {
        if (isBF16(a.getResult())) {
          LAP_CALL(linear_forward_bf16, bbuf(a.getResult()), bbuf(a.getInput()),
                   bbuf(a.getWeight()), boptional(a.getBias()),
                   rowsArg(a.getInput()), lastArg(a.getInput()),
                   lastArg(a.getResult()));
          return success();
        }
        LAP_CALL(linear_forward, buf(a.getResult()), buf(a.getInput()),
                 buf(a.getWeight()), optional(a.getBias()),
                 rowsArg(a.getInput()), lastArg(a.getInput()),
                 lastArg(a.getResult()), matmulArg());
        return success();
      })
      .Case([&](LinearGradOp a) {
        if (isBF16(a.getGradOutput())) {
          LAP_CALL(linear_backward_bf16, bbuf(a.getGradInput()),
                   bbuf(a.getGradWeight()), bbuf(a.getGradBias()),
                   bbuf(a.getGradOutput()), bbuf(a.getInput()),
                   bbuf(a.getWeight()), rowsArg(a.getInput()),
                   lastArg(a.getInput()), lastArg(a.getGradOutput()));
          return success();
        }
        LAP_CALL(linear_backward, buf(a.getGradInput()), buf(a.getGradWeight()),
                 buf(a.getGradBias()), buf(a.getGradOutput()),
                 buf(a.getInput()), buf(a.getWeight()), rowsArg(a.getInput()),
                 lastArg(a.getInput()), lastArg(a.getGradOutput()),
                 matmulArg());
        return success();
      })
      .Case([&](LinearGeluOp a) {
        if (isBF16(a.getResult())) {
          LAP_CALL(linear_gelu_forward_bf16, bbuf(a.getResult()),
                   bbuf(a.getPre()), bbuf(a.getInput()), bbuf(a.getWeight()),
                   boptional(a.getBias()), rowsArg(a.getInput()),
                   lastArg(a.getInput()), lastArg(a.getResult()));
          return success();
        }
        LAP_CALL(linear_gelu_forward, buf(a.getResult()), buf(a.getPre()),
                 buf(a.getInput()), buf(a.getWeight()), optional(a.getBias()),
                 rowsArg(a.getInput()), lastArg(a.getInput()),
                 lastArg(a.getResult()), matmulArg());
        return success();
      })
      .Case([&](GeluLinearGradOp a) {
        if (isBF16(a.getPre())) {
          LAP_CALL(gelu_linear_backward_bf16, bbuf(a.getGradPre()),
                   bbuf(a.getGradBias()), bbuf(a.getGradOutput()),
                   bbuf(a.getWeight()), bbuf(a.getPre()), rowsArg(a.getPre()),
                   lastArg(a.getPre()), lastArg(a.getGradOutput()));
          return success();
        }
        LAP_CALL(gelu_linear_backward, buf(a.getGradPre()),
                 buf(a.getGradBias()), buf(a.getGradOutput()),
                 buf(a.getWeight()), buf(a.getPre()), rowsArg(a.getPre()),
                 lastArg(a.getPre()), lastArg(a.getGradOutput()), matmulArg());
        return success();
      })
      .Case([&](LinearHeadsOp a) {
        if (isBF16(a.getQ())) {
          LAP_CALL(linear_heads_forward_bf16, bbuf(a.getQ()), bbuf(a.getK()),
                   bbuf(a.getV()), bbuf(a.getInput()), bbuf(a.getWeight()),
                   boptional(a.getBias()), rowsArg(a.getInput()),
                   lastArg(a.getInput()), i64(headsWidth(a.getQ())),
                   i64(headsWidth(a.getK())));
          return success();
        }
        LAP_CALL(linear_heads_forward, buf(a.getQ()), buf(a.getK()),
                 buf(a.getV()), buf(a.getInput()), buf(a.getWeight()),
                 optional(a.getBias()), rowsArg(a.getInput()),
                 lastArg(a.getInput()), i64(headsWidth(a.getQ())),
                 i64(headsWidth(a.getK())), matmulArg());
        return success();
      })
      .Case([&](LinearHeadsGradOp a) {
        if (isBF16(a.getGradQ())) {
          LAP_CALL(linear_heads_backward_bf16, bbuf(a.getGradInput()),
                   bbuf(a.getGradWeight()), bbuf(a.getGradBias()),
                   bbuf(a.getGradQ()), bbuf(a.getGradK()), bbuf(a.getGradV()),
                   bbuf(a.getInput()), bbuf(a.getWeight()),
                   rowsArg(a.getInput()), lastArg(a.getInput()),
                   i64(headsWidth(a.getGradQ())),
                   i64(headsWidth(a.getGradK())));
          return success();
        }
        LAP_CALL(linear_heads_backward, buf(a.getGradInput()),
                 buf(a.getGradWeight()), buf(a.getGradBias()),
                 buf(a.getGradQ()), buf(a.getGradK()), buf(a.getGradV()),
                 buf(a.getInput()), buf(a.getWeight()), rowsArg(a.getInput()),
                 lastArg(a.getInput()), i64(headsWidth(a.getGradQ())),
                 i64(headsWidth(a.getGradK())), matmulArg());
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace lap::kernelform
