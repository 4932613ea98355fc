//===- LapToKernels.cpp - Planned lap functions to the kernel form -*- C++ -*-===//
//
// Walks each planned function's single block in order and emits, into a new
// function on flat buffers, either a loop nest (elementwise work, generated
// here) or a lapk.call of a library kernel for each op. Tensors become
// buffers: parameters and intermediates are views of the parameter and
// workspace buffers at their offsets, batch tensors and outputs are buffers
// of their own. Dynamic sizes are the B and T arguments; an i64 argument
// (@decode's first position) is the `first` argument. Which op becomes what,
// with which arguments, is decided here once for every target: each family
// of ops in a file of its own (Emitter.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LapToKernels/Emitter.h"
#include "compiler/Conversion/Passes.h"

namespace lap {
#define GEN_PASS_DEF_LAPTOKERNELS
#include "compiler/Conversion/Passes.h.inc"
} // namespace lap

namespace lap::kernelform {

void Emitter::emitReturn(func::ReturnOp ret) {
  for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
    auto slots =
        v.getDefiningOp()
            ? v.getDefiningOp()->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr)
            : DenseI64ArrayAttr();
    if (slots && slots[cast<OpResult>(v).getResultNumber()] == outputSlot(k))
      continue;
    copy(outputs[k], v);
  }
}

LogicalResult Emitter::emitOp(Operation *op) {
  if (isLoopFusible(op)) {
    LoopNest nest;
    for (Value operand : op->getOperands())
      nest.inputs[operand] = buffer(operand);
    if (failed(writeOut(nest, op->getResult(0), op->getResult(0))))
      return failure();
    return loopNest(op, rowsOf(op), nest), success();
  }
  for (auto family :
       {&Emitter::emitGenerated, &Emitter::emitAttention, &Emitter::emitLinear,
        &Emitter::emitTokens, &Emitter::emitNorms, &Emitter::emitLosses})
    if (std::optional<LogicalResult> emitted = (this->*family)(op))
      return *emitted;
  return op->emitError("no lowering to kernels for '") << op->getName() << "'";
}

} // namespace lap::kernelform

namespace {

using namespace mlir;
using namespace lap;
using kernelform::Emitter;

struct LapToKernelsPass : lap::impl::LapToKernelsBase<LapToKernelsPass> {
  using LapToKernelsBase::LapToKernelsBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> planned;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(kWorkspaceAttr))
        planned.push_back(func);
    Emitter::Constants constants;
    for (func::FuncOp source : planned) {
      if (failed(lower(source, module, constants)))
        return signalPassFailure();
      source.erase();
    }
  }

  /// Creates @lap_gen_<name> for `source`, with its signature, and fills it.
  LogicalResult lower(func::FuncOp source, ModuleOp module,
                      Emitter::Constants &constants) {
    MLIRContext *context = &getContext();
    // Generated loops compute at either precision, the library's kernels
    // at f32 but where they have a bf16 variant.
    for (Operation &op : source.getBody().front())
      if (needsWidening(&op))
        return op.emitError("computes in bf16, but its kernel takes f32; run "
                            "--lap-widen-kernels first");
    int64_t maxBatch =
        source->getAttrOfType<IntegerAttr>(kMaxBatchAttr).getInt();
    int64_t maxSeq = source->getAttrOfType<IntegerAttr>(kMaxSeqAttr).getInt();
    auto bytes = [&](int64_t n) {
      return MemRefType::get({n}, IntegerType::get(context, 8));
    };
    int64_t floats = 0;
    SmallVector<int64_t> offsets = parameterOffsets(source, floats);
    SmallVector<Type> args = {
        bytes(floats * 4),
        bytes(source->getAttrOfType<IntegerAttr>(kWorkspaceAttr).getInt())};
    int64_t inputs = 0;
    for (unsigned i = 0; i < source.getNumArguments(); ++i) {
      Type type = source.getArgument(i).getType();
      if (!isParameter(source, i) && !type.isInteger(64)) {
        args.push_back(flatBufferType(type, maxBatch, maxSeq));
        ++inputs;
      }
    }
    for (Type type : source.getResultTypes())
      args.push_back(flatBufferType(type, maxBatch, maxSeq));
    // B, T, the step's seed (read through a pointer where it is used, so
    // that a captured step draws new masks when its seed changes) and the
    // first position.
    Type index = IndexType::get(context), i64 = IntegerType::get(context, 64);
    args.append({index, index, MemRefType::get({1}, i64), i64});
    OpBuilder b(source);
    auto target = b.create<func::FuncOp>(source.getLoc(),
                                         ("lap_gen_" + source.getName()).str(),
                                         FunctionType::get(context, args, {}));
    target.addEntryBlock();
    for (StringRef attr : {kWorkspaceAttr, kMaxBatchAttr, kMaxSeqAttr})
      target->setAttr(attr, source->getAttr(attr));
    // The entry's value: how many batch tensors precede the outputs.
    target->setAttr(lapk::kEntryAttr, b.getI64IntegerAttr(inputs));
    return Emitter(source, target, module, constants, profile).emit(offsets);
  }
};

} // namespace
