//===- HostLowering.cpp - The kernel form's host code, any target -*- C++ -*-===//

#include "compiler/Target/HostLowering.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace lap;

LogicalResult lap::approximateMath(ModuleOp module) {
  RewritePatternSet patterns(module.getContext());
  populateMathPolynomialApproximationPatterns(patterns);
  return applyPatternsAndFoldGreedily(module, std::move(patterns));
}

LogicalResult lap::expandBF16(ModuleOp module) {
  RewritePatternSet patterns(module.getContext());
  arith::populateExpandBFloat16Patterns(patterns);
  return applyPatternsAndFoldGreedily(module, std::move(patterns));
}

void lap::buildHostToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

HostLowering::HostLowering(ModuleOp module)
    : module(module), context(module.getContext()), converter(context),
      ptrType(LLVM::LLVMPointerType::get(context)),
      i64(IntegerType::get(context, 64)) {}

SmallVector<func::FuncOp> HostLowering::entries() {
  SmallVector<func::FuncOp> found;
  for (auto f : module.getOps<func::FuncOp>())
    if (f->hasAttr(lapk::kEntryAttr))
      found.push_back(f);
  return found;
}

Value HostLowering::bufferAt(OpBuilder &b, Location loc, MemRefType type,
                             Value pointer) {
  Value descriptor =
      MemRefDescriptor::fromStaticShape(b, loc, converter, type, pointer);
  return b.create<UnrealizedConversionCastOp>(loc, type, descriptor)
      .getResult(0);
}

Value HostLowering::pointerOf(OpBuilder &b, Location loc, Value buffer) {
  if (buffer.getDefiningOp<lapk::NullOp>())
    return b.create<LLVM::ZeroOp>(loc, ptrType);
  Type descriptorType = converter.convertType(buffer.getType());
  Value descriptor =
      b.create<UnrealizedConversionCastOp>(loc, descriptorType, buffer)
          .getResult(0);
  return MemRefDescriptor(descriptor).alignedPtr(b, loc);
}

Value HostLowering::constant(OpBuilder &b, Location loc, int64_t v) {
  return b.create<LLVM::ConstantOp>(loc, i64, b.getI64IntegerAttr(v));
}

Value HostLowering::slot(OpBuilder &b, Location loc, Value base, Type element,
                         int64_t k) {
  return b.create<LLVM::GEPOp>(loc, ptrType, element, base,
                               ArrayRef<LLVM::GEPArg>{int32_t(k)},
                               /*inbounds=*/true);
}

Value HostLowering::storeFrame(OpBuilder &b, Location loc, ValueRange values) {
  Value frame = b.create<LLVM::AllocaOp>(
      loc, ptrType, i64,
      constant(b, loc, std::max<int64_t>(int64_t(values.size()), 1)), 8);
  for (auto [i, v] : llvm::enumerate(values)) {
    Value stored = v;
    if (isa<MemRefType>(v.getType()))
      stored = pointerOf(b, loc, v);
    else if (v.getType().isIndex())
      stored = b.create<arith::IndexCastOp>(loc, i64, v);
    b.create<LLVM::StoreOp>(loc, stored, slot(b, loc, frame, i64, i));
  }
  return frame;
}

Value HostLowering::cString(OpBuilder &b, Location loc, StringRef symbol,
                            StringRef text) {
  if (!module.lookupSymbol(symbol)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    std::string bytes = text.str();
    bytes.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
    b.create<LLVM::GlobalOp>(loc, type, /*isConstant=*/true,
                             LLVM::Linkage::Internal, symbol,
                             b.getStringAttr(bytes));
  }
  return b.create<LLVM::AddressOfOp>(loc, ptrType, symbol);
}

void HostLowering::valuesUsedBy(scf::ParallelOp loop,
                                SmallVectorImpl<Operation *> &cloned,
                                SetVector<Value> &captures) {
  SetVector<Value> used;
  getUsedValuesDefinedAbove(loop.getRegion(), used);
  for (Value v : used) {
    Operation *def = v.getDefiningOp();
    if (def && (def->hasTrait<OpTrait::ConstantLike>() ||
                isa<memref::GetGlobalOp>(def)))
      cloned.push_back(def);
    else
      captures.insert(v);
  }
}

func::FuncOp HostLowering::declare(StringRef name, FunctionType type) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto f = b.create<func::FuncOp>(module.getLoc(), name, type);
  f.setPrivate();
  return f;
}

void HostLowering::exposeEntry(func::FuncOp f) {
  int64_t inputs = f->getAttrOfType<IntegerAttr>(lapk::kEntryAttr).getInt();
  Block &old = f.getBody().front();
  unsigned n = old.getNumArguments();
  int64_t outputs = int64_t(n) - 6 - inputs;
  Location loc = f.getLoc();
  OpBuilder b(f);
  auto type = FunctionType::get(
      context, {ptrType, ptrType, ptrType, ptrType, i64, i64, ptrType, i64},
      {});
  auto abi = b.create<func::FuncOp>(loc, f.getName(), type);
  abi->setAttrs(f->getAttrs());
  abi->removeAttr(lapk::kEntryAttr);
  abi.setFunctionType(type);
  Block *entry = abi.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto arg = [&](unsigned i) { return entry->getArgument(i); };
  auto typeOf = [&](unsigned i) {
    return cast<MemRefType>(old.getArgument(i).getType());
  };
  SmallVector<Value> buffers = {bufferAt(b, loc, typeOf(0), arg(0)),
                                bufferAt(b, loc, typeOf(1), arg(3))};
  for (int64_t k = 0; k < inputs + outputs; ++k) {
    Value array = k < inputs ? arg(1) : arg(2);
    Value pointer = b.create<LLVM::LoadOp>(
        loc, ptrType,
        slot(b, loc, array, ptrType, k < inputs ? k : k - inputs));
    buffers.push_back(bufferAt(b, loc, typeOf(2 + k), pointer));
  }
  for (unsigned i = 0; i < 2; ++i)
    buffers.push_back(
        b.create<arith::IndexCastOp>(loc, b.getIndexType(), arg(4 + i)));
  // The seed is a pointer (null outside a training step).
  buffers.append({bufferAt(b, loc, typeOf(n - 2), arg(6)), arg(7)});
  for (auto [from, to] : llvm::zip(old.getArguments(), buffers))
    from.replaceAllUsesWith(to);
  entry->getOperations().splice(entry->end(), old.getOperations());
  f.erase();
}

void HostLowering::lowerCall(lapk::CallOp call, StringRef prefix) {
  OpBuilder b(call);
  Location loc = call.getLoc();
  SmallVector<Value> args;
  SmallVector<Type> types;
  // lapk.call's verifier has matched every argument to its parameter's
  // kind: the buffers are the memrefs, passed as their pointers.
  for (Value arg : call.getArgs()) {
    args.push_back(isa<MemRefType>(arg.getType()) ? pointerOf(b, loc, arg)
                                                  : arg);
    types.push_back(args.back().getType());
  }
  func::FuncOp callee = declare((prefix + call.getKernel()).str(),
                                FunctionType::get(context, types, {}));
  b.create<func::CallOp>(loc, callee, args);
  call.erase();
}

void HostLowering::eraseUnusedNulls() {
  module.walk([&](lapk::NullOp null) {
    if (null->use_empty())
      null.erase();
  });
}
