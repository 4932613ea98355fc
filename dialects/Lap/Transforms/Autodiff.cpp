//===- Autodiff.cpp - @train_step from @forward -----------------*- C++ -*-===//
//
// Reverse mode over one basic block: @forward is cloned as @train_step (and
// @forward_local as @train_step_local), then the ops are visited in reverse
// and each builds its adjoint (the DifferentiableOp interface) before the
// terminator. Gradients of values with several uses are summed with lap.add.
//
//===----------------------------------------------------------------------===//

#include "dialects/Lap/IR/LapOps.h"
#include "dialects/Lap/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace lap {
#define GEN_PASS_DEF_LAPAUTODIFF
#include "dialects/Lap/Transforms/Passes.h.inc"
} // namespace lap

using namespace mlir;
using namespace lap;

namespace {

/// A constant tensor of a static shape filled with `value`, of its element
/// type (f32 or bf16).
Value splat(OpBuilder &b, Location loc, Type type, float value) {
  auto shaped = cast<RankedTensorType>(type);
  Attribute element = b.getFloatAttr(shaped.getElementType(), value);
  return b.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(shaped, ArrayRef<Attribute>{element}));
}

/// {lap.name = name}: the attributes of a result.
DictionaryAttr named(OpBuilder &b, const std::string &name) {
  return b.getDictionaryAttr(b.getNamedAttr("lap.name", b.getStringAttr(name)));
}

struct Autodiff : lap::impl::LapAutodiffBase<Autodiff> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!module.lookupSymbol<func::FuncOp>("forward")) {
      module.emitError(
          "lap-autodiff differentiates func @forward; there is none");
      return signalPassFailure();
    }
    for (StringRef name : kForwardFunctions) {
      auto forward = module.lookupSymbol<func::FuncOp>(name);
      if (!forward)
        continue;
      if (auto old = module.lookupSymbol<func::FuncOp>(trainStepOf(name)))
        old.erase();
      if (failed(differentiate(forward)))
        return signalPassFailure();
    }
  }

  LogicalResult differentiate(func::FuncOp forward) {
    if (!forward.getBody().hasOneBlock() || forward.getNumResults() < 1 ||
        forward.getResultTypes()[0] !=
            RankedTensorType::get({}, Float32Type::get(&getContext())))
      return forward.emitError("@forward must be one block returning the loss "
                               "(tensor<f32>) first");
    OpBuilder b(forward);
    b.setInsertionPointAfter(forward);
    auto train = cast<func::FuncOp>(b.clone(*forward));
    train.setSymName(trainStepOf(forward.getName()));
    Block &body = train.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    b.setInsertionPoint(ret);

    DenseMap<Value, Value> grads;
    Value loss = ret.getOperand(0);
    grads[loss] = splat(b, ret.getLoc(), loss.getType(), 1.0f);

    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops)) {
      SmallVector<Value> dResults;
      bool reached = false;
      for (Value r : op->getResults()) {
        dResults.push_back(grads.lookup(r));
        reached |= bool(dResults.back());
      }
      if (!reached)
        continue;
      auto diff = dyn_cast<DifferentiableOp>(op);
      if (!diff)
        return op->emitError()
               << "'" << op->getName()
               << "' is not differentiable, but the loss depends on it";
      SmallVector<Value> dOperands;
      if (failed(diff.buildAdjoint(b, dResults, dOperands)))
        return failure();
      if (dOperands.size() != op->getNumOperands())
        return op->emitError("adjoint returned ")
               << dOperands.size() << " gradients for " << op->getNumOperands()
               << " operands";
      for (auto [operand, grad] : llvm::zip(op->getOperands(), dOperands)) {
        if (!grad)
          continue;
        Value &sum = grads[operand];
        sum = sum ? b.create<AddOp>(op->getLoc(), sum, grad).getResult() : grad;
      }
    }

    SmallVector<Value> results = {loss};
    SmallVector<DictionaryAttr> names = {named(b, "loss")};
    for (BlockArgument arg : body.getArguments()) {
      // A frozen parameter has no gradient, and what only it needed
      // (its weight-gradient GEMMs) is left for dead-code elimination.
      if (!train.getArgAttr(arg.getArgNumber(), "lap.parameter") ||
          train.getArgAttr(arg.getArgNumber(), "lap.frozen"))
        continue;
      Value grad = grads.lookup(arg);
      if (!grad) // A parameter the loss does not depend on.
        grad = splat(b, arg.getLoc(), arg.getType(), 0.0f);
      results.push_back(grad);
      auto name =
          train.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "lap.name");
      names.push_back(
          named(b, "grad." + (name ? name.getValue() : StringRef("?")).str()));
    }
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    train.setType(b.getFunctionType(body.getArgumentTypes(),
                                    ValueRange(results).getTypes()));
    // All at once: one setResultAttrs per result is quadratic in their count.
    train.setAllResultAttrs(names);
    return success();
  }
};

} // namespace
