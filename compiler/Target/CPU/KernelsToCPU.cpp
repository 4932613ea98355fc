//===- KernelsToCPU.cpp - The kernel form to CPU code -----------*- C++ -*-===//
//
// The CPU's decisions, and only those: the model ABI's pointer signature,
// the thread pool (libgomp, through lap_cpu_parallel_for) for parallel
// loops, the `lap_cpu_` kernel symbols, the profiler's calls. Buffers meet
// pointers at two places: a buffer built from a pointer (an argument, a
// frame slot) and a buffer passed as its pointer (a kernel argument, a
// frame slot); both are MemRefDescriptors that MLIR's memref-to-LLVM
// conversion folds away.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/CPU/Passes.h"
#include "dialects/Lapk/IR/KernelTable.h"
#include "dialects/Lapk/IR/LapkOps.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"

namespace lap {
#define GEN_PASS_DEF_LAPKTOCPU
#include "compiler/Target/CPU/Passes.h.inc"
} // namespace lap

using namespace mlir;
using namespace lap;

namespace {

class CPULowering {
public:
  explicit CPULowering(ModuleOp module)
      : module(module), context(module.getContext()), converter(context),
        ptrType(LLVM::LLVMPointerType::get(context)),
        i64(IntegerType::get(context, 64)) {}

  LogicalResult run() {
    SmallVector<func::FuncOp> entries;
    for (auto f : module.getOps<func::FuncOp>())
      if (f->hasAttr(lapk::kEntryAttr))
        entries.push_back(f);
    for (func::FuncOp f : entries) {
      SmallVector<scf::ParallelOp> loops;
      f.walk([&](scf::ParallelOp loop) { loops.push_back(loop); });
      int count = 0;
      for (scf::ParallelOp loop : loops)
        if (failed(outline(loop, f.getName(), count++)))
          return failure();
    }
    SmallVector<Operation *> ops;
    module.walk([&](Operation *op) {
      if (isa<lapk::CallOp, lapk::ProfileBeginOp, lapk::ProfileEndOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops)
      lowerOp(op);
    module.walk([&](lapk::NullOp null) {
      if (null->use_empty())
        null.erase();
    });
    for (func::FuncOp f : entries)
      exposeEntry(f);
    return success();
  }

private:
  //--- Buffers and pointers ------------------------------------------------
  /// The buffer of `type` at `pointer` (identity layout, static shape).
  Value bufferAt(OpBuilder &b, Location loc, MemRefType type, Value pointer) {
    Value descriptor =
        MemRefDescriptor::fromStaticShape(b, loc, converter, type, pointer);
    return b.create<UnrealizedConversionCastOp>(loc, type, descriptor)
        .getResult(0);
  }

  /// The pointer to the first element of `buffer`, or null for lapk.null.
  Value pointerOf(OpBuilder &b, Location loc, Value buffer) {
    if (buffer.getDefiningOp<lapk::NullOp>())
      return b.create<LLVM::ZeroOp>(loc, ptrType);
    Type descriptorType = converter.convertType(buffer.getType());
    Value descriptor =
        b.create<UnrealizedConversionCastOp>(loc, descriptorType, buffer)
            .getResult(0);
    return MemRefDescriptor(descriptor).alignedPtr(b, loc);
  }

  Value constant(OpBuilder &b, Location loc, int64_t v) {
    return b.create<LLVM::ConstantOp>(loc, i64, b.getI64IntegerAttr(v));
  }
  Value slot(OpBuilder &b, Location loc, Value base, Type element, int64_t k) {
    return b.create<LLVM::GEPOp>(loc, ptrType, element, base,
                                 ArrayRef<LLVM::GEPArg>{int32_t(k)},
                                 /*inbounds=*/true);
  }

  /// Declares `name` (private) with `type` unless the module has it.
  func::FuncOp declare(StringRef name, FunctionType type) {
    if (auto f = module.lookupSymbol<func::FuncOp>(name))
      return f;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto f = b.create<func::FuncOp>(module.getLoc(), name, type);
    f.setPrivate();
    return f;
  }

  //--- The ABI ---------------------------------------------------------------
  /// Gives entry `f` (params, workspace, batch..., outputs..., B, T, seed,
  /// first) the ABI's signature (params, batch, outputs, workspace, B, T,
  /// seed, first) on pointers.
  void exposeEntry(func::FuncOp f) {
    int64_t inputs = f->getAttrOfType<IntegerAttr>(lapk::kEntryAttr).getInt();
    Block &old = f.getBody().front();
    unsigned n = old.getNumArguments();
    int64_t outputs = int64_t(n) - 6 - inputs;
    Location loc = f.getLoc();
    OpBuilder b(f);
    auto type = FunctionType::get(
        context, {ptrType, ptrType, ptrType, ptrType, i64, i64, i64, i64}, {});
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
    buffers.append({arg(6), arg(7)});
    for (auto [from, to] : llvm::zip(old.getArguments(), buffers))
      from.replaceAllUsesWith(to);
    entry->getOperations().splice(entry->end(), old.getOperations());
    f.erase();
  }

  //--- The thread pool -------------------------------------------------------
  /// Runs `loop`'s body through lap_cpu_parallel_for: outlined into
  /// @<parent>_loop_<k>(frame, begin, end), with the values it uses from
  /// above stored in an on-stack frame of 8-byte slots.
  LogicalResult outline(scf::ParallelOp loop, StringRef parent, int k) {
    Location loc = loop.getLoc();
    if (loop.getNumLoops() != 1 || loop.getNumResults() != 0)
      return loop.emitError("a parallel loop of the kernel form has one "
                            "dimension and no results");
    // Constants are cloned into the body, where they fold (a loop's trip
    // count, a coefficient); the other values it uses travel in the frame.
    SetVector<Value> used, captures;
    SmallVector<Operation *> cloned;
    getUsedValuesDefinedAbove(loop.getRegion(), used);
    for (Value v : used) {
      Operation *def = v.getDefiningOp();
      if (def && (def->hasTrait<OpTrait::ConstantLike>() ||
                  isa<memref::GetGlobalOp>(def)))
        cloned.push_back(def);
      else
        captures.insert(v);
    }

    OpBuilder b(loop);
    Value frame = b.create<LLVM::AllocaOp>(
        loc, ptrType, i64,
        constant(b, loc, std::max<int64_t>(captures.size(), 1)), 8);
    for (auto [i, v] : llvm::enumerate(captures)) {
      Value stored = v;
      if (isa<MemRefType>(v.getType()))
        stored = pointerOf(b, loc, v);
      else if (v.getType().isIndex())
        stored = b.create<arith::IndexCastOp>(loc, i64, v);
      b.create<LLVM::StoreOp>(loc, stored, slot(b, loc, frame, i64, i));
    }

    auto type = FunctionType::get(context, {ptrType, i64, i64}, {});
    std::string name = (parent + "_loop_" + Twine(k)).str();
    auto body = [&] {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(module.getBody());
      auto f = b.create<func::FuncOp>(loc, name, type);
      f.setPrivate();
      return f;
    }();
    Block *entry = body.addEntryBlock();
    OpBuilder in = OpBuilder::atBlockBegin(entry);
    for (Operation *def : cloned) {
      Value copy = in.clone(*def)->getResult(0);
      def->getResult(0).replaceUsesWithIf(copy, [&](OpOperand &use) {
        return loop->isProperAncestor(use.getOwner());
      });
    }
    SmallVector<Value> loaded;
    for (auto [i, v] : llvm::enumerate(captures)) {
      Value at = slot(in, loc, entry->getArgument(0), i64, i);
      if (auto memref = dyn_cast<MemRefType>(v.getType()))
        loaded.push_back(bufferAt(in, loc, memref,
                                  in.create<LLVM::LoadOp>(loc, ptrType, at)));
      else if (v.getType().isIndex())
        loaded.push_back(in.create<arith::IndexCastOp>(
            loc, in.getIndexType(), in.create<LLVM::LoadOp>(loc, i64, at)));
      else
        loaded.push_back(in.create<LLVM::LoadOp>(loc, v.getType(), at));
    }
    auto index = [&](Value v) {
      return in.create<arith::IndexCastOp>(loc, in.getIndexType(), v);
    };
    auto chunk = in.create<scf::ForOp>(
        loc, index(entry->getArgument(1)), index(entry->getArgument(2)),
        in.create<arith::ConstantIndexOp>(loc, 1));
    in.create<func::ReturnOp>(loc);
    Block *from = loop.getBody();
    Block *to = chunk.getBody();
    to->getOperations().splice(to->getTerminator()->getIterator(),
                               from->getOperations(), from->begin(),
                               std::prev(from->end()));
    from->getArgument(0).replaceAllUsesWith(chunk.getInductionVar());
    for (auto [captured, reloaded] : llvm::zip(captures, loaded))
      Value(captured).replaceUsesWithIf(reloaded, [&](OpOperand &use) {
        return body->isProperAncestor(use.getOwner());
      });

    Value n = b.create<arith::IndexCastOp>(loc, i64, loop.getUpperBound()[0]);
    auto grainAttr = loop->getAttrOfType<IntegerAttr>(lapk::kGrainAttr);
    int64_t grain = grainAttr ? grainAttr.getInt() : 1;
    Value function =
        b.create<func::ConstantOp>(loc, type, SymbolRefAttr::get(body));
    auto fnType = FunctionType::get(context, {i64, i64, type, ptrType}, {});
    b.create<func::CallOp>(
        loc, declare("lap_cpu_parallel_for", fnType),
        ValueRange{n, constant(b, loc, grain), function, frame});
    loop.erase();
    return success();
  }

  //--- Kernels and the profiler ----------------------------------------------
  void lowerOp(Operation *op) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    if (auto call = dyn_cast<lapk::CallOp>(op)) {
      const lapk::KernelSignature *kernel =
          lapk::lookupKernel(call.getKernel());
      SmallVector<Value> args;
      SmallVector<Type> types;
      for (auto [arg, kind] : llvm::zip(call.getArgs(), kernel->args)) {
        bool buffer = kind == lapk::KernelArg::F32Buffer ||
                      kind == lapk::KernelArg::I32Buffer;
        args.push_back(buffer ? pointerOf(b, loc, arg) : arg);
        types.push_back(args.back().getType());
      }
      func::FuncOp callee = declare(("lap_cpu_" + call.getKernel()).str(),
                                    FunctionType::get(context, types, {}));
      b.create<func::CallOp>(loc, callee, args);
    } else {
      auto begin = dyn_cast<lapk::ProfileBeginOp>(op);
      StringRef label =
          begin ? begin.getLabel() : cast<lapk::ProfileEndOp>(op).getLabel();
      auto type = FunctionType::get(context, {ptrType}, {});
      b.create<func::CallOp>(
          loc,
          declare(begin ? "lap_cpu_profile_begin" : "lap_cpu_profile_end",
                  type),
          ValueRange{labelPointer(b, loc, label, bool(begin))});
    }
    op->erase();
  }

  /// A pointer to `label` as a C string. Each op gets a global of its own
  /// (the profiler tells ops apart by it), which its end marker, the next
  /// one in program order, shares.
  Value labelPointer(OpBuilder &b, Location loc, StringRef label, bool begin) {
    if (begin) {
      symbol = "lap_profile_" + std::to_string(labels++);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      std::string text = label.str();
      text.push_back('\0');
      auto type = LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
      b.create<LLVM::GlobalOp>(loc, type, /*isConstant=*/true,
                               LLVM::Linkage::Internal, symbol,
                               b.getStringAttr(text));
    }
    return b.create<LLVM::AddressOfOp>(loc, ptrType, symbol);
  }

  ModuleOp module;
  MLIRContext *context;
  LLVMTypeConverter converter;
  Type ptrType, i64;
  std::string symbol;
  int labels = 0;
};

struct LapkToCPUPass : lap::impl::LapkToCPUBase<LapkToCPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(CPULowering(module).run()))
      return signalPassFailure();
    // tanh and erf as polynomials: vectorisable, no libm calls.
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
