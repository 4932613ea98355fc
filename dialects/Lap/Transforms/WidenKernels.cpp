//===- WidenKernels.cpp - f32 around the f32-only kernels -------*- C++ -*-===//

#include "dialects/Lap/IR/LapOps.h"
#include "dialects/Lap/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace lap {
#define GEN_PASS_DEF_LAPWIDENKERNELS
#include "dialects/Lap/Transforms/Passes.h.inc"
} // namespace lap

using namespace mlir;
using namespace lap;

namespace {

/// `type` with f32 elements where it has bf16 ones, else null.
Type widened(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.getElementType().isBF16())
    return Type();
  return tensor.clone(Float32Type::get(type.getContext()));
}

/// `op` in f32, its bf16 operands and results converted at its place.
void widen(Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  for (OpOperand &operand : op->getOpOperands())
    if (Type f32 = widened(operand.get().getType()))
      operand.set(b.create<ConvertOp>(loc, f32, operand.get()));
  b.setInsertionPointAfter(op);
  for (OpResult result : op->getResults()) {
    Type bf16 = result.getType(), f32 = widened(bf16);
    if (!f32)
      continue;
    result.setType(f32);
    // An unused result stays unused: the kernel then skips it (a norm's
    // weight gradient where it has no weight).
    if (result.use_empty())
      continue;
    auto back = b.create<ConvertOp>(loc, bf16, result);
    result.replaceAllUsesExcept(back.getResult(), back);
  }
}

struct WidenKernels : lap::impl::LapWidenKernelsBase<WidenKernels> {
  void runOnOperation() override {
    SmallVector<Operation *> library;
    getOperation()->walk([&](func::FuncOp func) {
      for (Operation &op : func.getOps())
        if (needsWidening(&op))
          library.push_back(&op);
    });
    for (Operation *op : library)
      widen(op);
  }
};

} // namespace
