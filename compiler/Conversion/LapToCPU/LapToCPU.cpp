//===- LapToCPU.cpp - Planned lap functions to CPU code ---------*- C++ -*-===//
//
// Walks each planned function's single block in order and emits, into a new
// function on raw pointers, either a loop nest (elementwise work, generated
// here) or a call into the kernel library for each op. Tensors become
// pointers: parameters at their offsets in the parameter buffer, batch
// tensors and outputs from pointer arrays, intermediates at their planned
// workspace offsets. Dynamic sizes are the B and T arguments; an i64
// argument (@decode's first position) is the `first` argument.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/LapToCPU/Layout.h"
#include "compiler/Conversion/LapToCPU/Loops.h"
#include "compiler/Conversion/Passes.h"
#include "dialects/Lap/IR/LapOps.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>

namespace lap {
#define GEN_PASS_DEF_LAPTOCPU
#include "compiler/Conversion/Passes.h.inc"
} // namespace lap

using namespace mlir;
using namespace lap;

namespace {

class Emitter {
public:
  using Constants = std::map<std::vector<float>, std::string>;

  Emitter(func::FuncOp source, func::FuncOp target, ModuleOp module,
          Constants &constants, bool profile)
      : source(source), module(module), constants(constants),
        b(target.getBody()), lb(b, source.getLoc()),
        training(source.getName() == "train_step"), profile(profile) {
    Block &entry = target.getBody().front();
    params = entry.getArgument(0);
    batch = entry.getArgument(1);
    outputs = entry.getArgument(2);
    workspace = entry.getArgument(3);
    batchSize = entry.getArgument(4);
    seqLen = entry.getArgument(5);
    seed = entry.getArgument(6);
    first = entry.getArgument(7);
    b.setInsertionPointToStart(&entry);
  }

  LogicalResult emit() {
    int64_t total = 0;
    SmallVector<int64_t> offsets = parameterOffsets(source, total);
    unsigned param = 0, input = 0;
    for (unsigned i = 0; i < source.getNumArguments(); ++i) {
      Value arg = source.getArgument(i);
      if (arg.getType().isInteger(64)) {
        ptrs[arg] = first;
        continue;
      }
      ptrs[arg] = isParameter(source, i)
                      ? lb.gep(params, b.getF32Type(), lb.i64(offsets[param++]))
                      : lb.loadPtr(batch, input++);
    }
    for (Operation &op : source.getBody().front()) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        emitReturn(ret);
        continue;
      }
      assignResults(&op);
      Value label = profile ? profileLabel(&op) : Value();
      if (label)
        call("lap_cpu_profile_begin", {label});
      if (failed(emitOp(&op)))
        return failure();
      if (label)
        call("lap_cpu_profile_end", {label});
    }
    b.create<func::ReturnOp>(source.getLoc());
    return success();
  }

private:
  //--- Values --------------------------------------------------------------
  Value ptr(Value v) { return ptrs.lookup(v); }

  void assignResults(Operation *op) {
    auto slots = op->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr);
    for (auto [i, result] : llvm::enumerate(op->getResults())) {
      int64_t slot = slots ? slots[i] : kUnused;
      if (slot >= 0)
        ptrs[result] = lb.gepBytes(workspace, slot);
      else if (slot == kUnused)
        ptrs[result] = lb.nullPtr();
      else
        ptrs[result] = lb.loadPtr(outputs, outputIndex(slot));
    }
  }

  /// Dimension i of v's type at run time.
  Value dim(Value v, unsigned i) {
    auto type = cast<ShapedType>(v.getType());
    if (!type.isDynamicDim(i))
      return lb.i64(type.getDimSize(i));
    return i == 0 ? batchSize : seqLen;
  }
  Value product(Value v, unsigned from, unsigned to) {
    Value n = lb.i64(1);
    for (unsigned i = from; i < to; ++i)
      n = lb.mul(n, dim(v, i));
    return n;
  }
  Value numel(Value v) { return product(v, 0, rank(v)); }
  Value rows(Value v) { return product(v, 0, rank(v) - 1); }
  Value last(Value v) { return dim(v, rank(v) - 1); }
  unsigned rank(Value v) { return cast<ShapedType>(v.getType()).getRank(); }
  Value optional(Value v) { return v ? ptr(v) : lb.nullPtr(); }
  /// An optional first position: the argument, or 0.
  Value firstOr0(Value v) { return v ? ptr(v) : lb.i64(0); }
  /// Copies tensor `from` (4-byte elements) to `to`.
  void copy(Value to, Value from) {
    lb.memcpy(to, ptr(from), lb.mul(numel(from), lb.i64(4)));
  }

  /// Pointer to a constant f32 array (per-head coefficients), one global
  /// per distinct array in the module.
  Value coefficients(ArrayRef<float> values) {
    std::string &name =
        constants[std::vector<float>(values.begin(), values.end())];
    if (name.empty()) {
      name = "lap_coefficients_" + std::to_string(constants.size() - 1);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      auto type = LLVM::LLVMArrayType::get(b.getF32Type(), values.size());
      auto data = DenseElementsAttr::get(
          RankedTensorType::get({int64_t(values.size())}, b.getF32Type()),
          values);
      b.create<LLVM::GlobalOp>(loc(), type, /*isConstant=*/true,
                               LLVM::Linkage::Internal, name, data);
    }
    return b.create<LLVM::AddressOfOp>(
        loc(), LLVM::LLVMPointerType::get(b.getContext()), name);
  }

  /// The per-head alpha and beta of `attention` as constant arrays.
  template <typename AttentionLike>
  std::pair<Value, Value> coefficientsOf(AttentionLike attention) {
    SmallVector<float> alpha, beta;
    for (auto [a, c] : attention.getCoefficients()) {
      alpha.push_back(a);
      beta.push_back(c);
    }
    return {coefficients(alpha), coefficients(beta)};
  }

  /// The row logsumexp of `attention`: the plan puts it right after the
  /// output, sized for the largest batch and sequence.
  Value logsumexpOf(AttentionOp attention) {
    auto type = cast<ShapedType>(attention.getResult().getType());
    int64_t maxBatch =
        source->getAttrOfType<IntegerAttr>(kMaxBatchAttr).getInt();
    int64_t maxSeq = source->getAttrOfType<IntegerAttr>(kMaxSeqAttr).getInt();
    return lb.gepBytes(ptr(attention.getResult()),
                       maxBytes(type, maxBatch, maxSeq));
  }

  /// "lap.linear blocks.0.attn" as a global string, for the profiler.
  Value profileLabel(Operation *op) {
    std::string text = op->getName().getStringRef().str();
    if (std::string part = partName(op->getLoc()); !part.empty())
      text += " " + part;
    std::string symbol = "lap_profile_" + std::to_string(labels++) + "_" +
                         source.getName().str();
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      text.push_back('\0');
      auto type = LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
      b.create<LLVM::GlobalOp>(loc(), type, /*isConstant=*/true,
                               LLVM::Linkage::Internal, symbol,
                               b.getStringAttr(text));
    }
    return b.create<LLVM::AddressOfOp>(
        loc(), LLVM::LLVMPointerType::get(b.getContext()), symbol);
  }

  /// Calls kernel `name` with `args`, declaring it on first use.
  void call(StringRef name, ArrayRef<Value> args) {
    auto callee = module.lookupSymbol<func::FuncOp>(name);
    if (!callee) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(module.getBody());
      callee = b.create<func::FuncOp>(
          source.getLoc(), name,
          b.getFunctionType(ValueRange(args).getTypes(), {}));
      callee.setPrivate();
    }
    b.create<func::CallOp>(source.getLoc(), callee, args);
  }

  //--- Ops -------------------------------------------------------------------
  LogicalResult emitOp(Operation *op);
  void emitReturn(func::ReturnOp ret);
  void unary(Value in, Value out, const std::function<Value(Value)> &f);
  void binary(Value a, Value c, Value out,
              const std::function<Value(Value, Value)> &f);
  Value activation(StringRef name, Value x);
  Value activationDerivative(StringRef name, Value x);
  void residualAdd(ResidualAddOp op);
  void normalize(Value input, Value output, Value weight, Value bias, float eps,
                 bool centred);
  void copyHeads(Value fused, Value q, Value k, Value v, Value rowCount,
                 int64_t qWidth, int64_t kvWidth, bool split);
  /// Runs body(i, captured) for i in [0, n) on the thread pool: the body is
  /// outlined into its own function, which reads `captures` from a frame.
  void parallelLoop(Value n, int64_t grain, ArrayRef<Value> captures,
                    const std::function<void(Value, ArrayRef<Value>)> &body);

  Value addf(Value a, Value c) { return b.create<arith::AddFOp>(loc(), a, c); }
  Value subf(Value a, Value c) { return b.create<arith::SubFOp>(loc(), a, c); }
  Value mulf(Value a, Value c) { return b.create<arith::MulFOp>(loc(), a, c); }
  Value divf(Value a, Value c) { return b.create<arith::DivFOp>(loc(), a, c); }
  Value maxf(Value a, Value c) {
    return b.create<arith::MaximumFOp>(loc(), a, c);
  }
  Value tanh(Value a) { return b.create<math::TanhOp>(loc(), a); }
  Location loc() { return source.getLoc(); }

  func::FuncOp source;
  ModuleOp module;
  Constants &constants;
  OpBuilder b;
  LoopBuilder lb;
  bool training, profile;
  int labels = 0, loops = 0;
  Value params, batch, outputs, workspace, batchSize, seqLen, seed, first;
  DenseMap<Value, Value> ptrs;
};

void Emitter::parallelLoop(
    Value n, int64_t grain, ArrayRef<Value> captures,
    const std::function<void(Value, ArrayRef<Value>)> &body) {
  MLIRContext *context = b.getContext();
  auto ptrType = LLVM::LLVMPointerType::get(context);
  auto i64 = b.getI64Type();
  // The captured values go to an on-stack frame of 8-byte slots.
  Value frame = b.create<LLVM::AllocaOp>(
      loc(), ptrType, i64, lb.i64(std::max<int64_t>(captures.size(), 1)), 8);
  for (auto [k, v] : llvm::enumerate(captures))
    b.create<LLVM::StoreOp>(loc(), v, lb.gep(frame, i64, lb.i64(k)));

  auto type = FunctionType::get(context, {ptrType, i64, i64}, {});
  std::string name = ("lap_gen_" + source.getName() + "_loop_").str() +
                     std::to_string(loops++);
  auto outlined = [&] {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(module.getBody());
    auto f = b.create<func::FuncOp>(loc(), name, type);
    f.setPrivate();
    Block *entry = f.addEntryBlock();
    b.setInsertionPointToStart(entry);
    SmallVector<Value> loaded;
    for (auto [k, v] : llvm::enumerate(captures))
      loaded.push_back(b.create<LLVM::LoadOp>(
          loc(), v.getType(), lb.gep(entry->getArgument(0), i64, lb.i64(k))));
    lb.loop(entry->getArgument(1), entry->getArgument(2),
            [&](Value i) { body(i, loaded); });
    b.create<func::ReturnOp>(loc());
    return f;
  }();
  Value function =
      b.create<func::ConstantOp>(loc(), type, SymbolRefAttr::get(outlined));
  call("lap_cpu_parallel_for", {n, lb.i64(grain), function, frame});
}

/// Elements per chunk of an elementwise loop: below twice this, one thread.
constexpr int64_t kElementGrain = 1 << 14;

/// Rows per chunk for rows of `value`'s last (static) dimension.
int64_t rowGrain(Value value) {
  auto type = cast<ShapedType>(value.getType());
  return std::max<int64_t>(1,
                           kElementGrain / type.getDimSize(type.getRank() - 1));
}

void Emitter::unary(Value in, Value out,
                    const std::function<Value(Value)> &fn) {
  parallelLoop(numel(in), kElementGrain, {ptr(in), ptr(out)},
               [&](Value i, ArrayRef<Value> c) {
                 lb.storeF32(fn(lb.loadF32(c[0], i)), c[1], i);
               });
}

void Emitter::binary(Value a, Value c, Value out,
                     const std::function<Value(Value, Value)> &fn) {
  parallelLoop(numel(a), kElementGrain, {ptr(a), ptr(c), ptr(out)},
               [&](Value i, ArrayRef<Value> p) {
                 lb.storeF32(fn(lb.loadF32(p[0], i), lb.loadF32(p[1], i)), p[2],
                             i);
               });
}

// gelu_tanh(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
constexpr float kSqrt2OverPi = 0.7978845608028654f, kGeluCubic = 0.044715f;

Value Emitter::activation(StringRef name, Value x) {
  if (name == "relu2") {
    Value r = maxf(x, lb.f32(0));
    return mulf(r, r);
  }
  if (name == "gelu_tanh") {
    Value u = mulf(lb.f32(kSqrt2OverPi),
                   addf(x, mulf(lb.f32(kGeluCubic), mulf(x, mulf(x, x)))));
    return mulf(mulf(lb.f32(0.5f), x), addf(lb.f32(1), tanh(u)));
  }
  // gelu(x) = 0.5 x (1 + erf(x / sqrt 2))
  Value e = b.create<math::ErfOp>(loc(), mulf(x, lb.f32(0.7071067811865476f)));
  return mulf(mulf(lb.f32(0.5f), x), addf(lb.f32(1), e));
}

Value Emitter::activationDerivative(StringRef name, Value x) {
  if (name == "relu2")
    return mulf(lb.f32(2), maxf(x, lb.f32(0)));
  if (name == "gelu_tanh") {
    Value x2 = mulf(x, x);
    Value u = mulf(lb.f32(kSqrt2OverPi),
                   addf(x, mulf(lb.f32(kGeluCubic), mulf(x2, x))));
    Value t = tanh(u);
    Value du = mulf(lb.f32(kSqrt2OverPi),
                    addf(lb.f32(1), mulf(lb.f32(3 * kGeluCubic), x2)));
    Value sech2 = subf(lb.f32(1), mulf(t, t));
    return addf(mulf(lb.f32(0.5f), addf(lb.f32(1), t)),
                mulf(mulf(lb.f32(0.5f), x), mulf(sech2, du)));
  }
  // gelu'(x) = Phi(x) + x phi(x)
  Value cdf = mulf(
      lb.f32(0.5f),
      addf(lb.f32(1),
           b.create<math::ErfOp>(loc(), mulf(x, lb.f32(0.7071067811865476f)))));
  Value pdf =
      mulf(lb.f32(0.3989422804014327f),
           b.create<math::ExpOp>(loc(), mulf(lb.f32(-0.5f), mulf(x, x))));
  return addf(cdf, mulf(x, pdf));
}

void Emitter::residualAdd(ResidualAddOp op) {
  float rate = op.getDropRate().convertToFloat();
  bool drop = training && rate > 0;
  bool scaled = bool(op.getGamma());
  Value c = last(op.getInput());
  Value rowsPerSample = product(op.getInput(), 1, rank(op.getInput()) - 1);
  SmallVector<Value> captures = {ptr(op.getInput()),
                                 ptr(op.getBranch()),
                                 ptr(op.getResult()),
                                 c,
                                 rowsPerSample,
                                 seed,
                                 scaled ? ptr(op.getGamma()) : lb.nullPtr()};
  parallelLoop(rows(op.getInput()), rowGrain(op.getInput()), captures,
               [&](Value r, ArrayRef<Value> p) {
                 Value x = p[0], branch = p[1], y = p[2], width = p[3],
                       gamma = p[6];
                 // One drop-path draw per sample, as lap.drop_path.
                 Value factor = drop ? lb.keepFactor(p[5], op.getKey(),
                                                     lb.divU(r, p[4]), rate)
                                     : lb.f32(1);
                 Value base = lb.mul(r, width);
                 lb.loop(width, [&](Value j) {
                   Value i = lb.add(base, j);
                   Value v = lb.loadF32(branch, i);
                   if (scaled)
                     v = mulf(v, lb.loadF32(gamma, j));
                   if (drop)
                     v = mulf(v, factor);
                   lb.storeF32(addf(lb.loadF32(x, i), v), y, i);
                 });
               });
}

/// LayerNorm (centred) or RMSNorm over the last dimension, one row per
/// iteration: statistics by two vectorised reductions, then one pass that
/// normalises, scales and shifts.
void Emitter::normalize(Value input, Value output, Value weight, Value bias,
                        float eps, bool centred) {
  int64_t width = cast<ShapedType>(input.getType()).getShape().back();
  SmallVector<Value> captures = {ptr(input), ptr(output), optional(weight),
                                 optional(bias)};
  parallelLoop(
      rows(input), rowGrain(input), captures, [&](Value r, ArrayRef<Value> p) {
        Value x = p[0], y = p[1], c = lb.i64(width);
        Value base = lb.mul(r, c);
        Value inverseWidth = lb.f32(1.0f / float(width));
        auto at = [&](Value j) { return lb.loadF32(x, lb.add(base, j)); };
        Value mean = centred ? mulf(lb.sum(c, at), inverseWidth) : lb.f32(0);
        Value variance = mulf(lb.sum(c,
                                     [&](Value j) {
                                       Value d = subf(at(j), mean);
                                       return mulf(d, d);
                                     }),
                              inverseWidth);
        Value rstd =
            b.create<math::RsqrtOp>(loc(), addf(variance, lb.f32(eps)));
        lb.loop(c, [&](Value j) {
          Value v = mulf(subf(at(j), mean), rstd);
          if (weight)
            v = mulf(v, lb.loadF32(p[2], j));
          if (bias)
            v = addf(v, lb.loadF32(p[3], j));
          lb.storeF32(v, y, lb.add(base, j));
        });
      });
}

/// [N, (H + 2 KV) D] <-> q [N, H D], k [N, KV D], v [N, KV D]: one row at a
/// time, copying the three parts between the fused and the split layouts.
void Emitter::copyHeads(Value fused, Value q, Value k, Value v, Value rowCount,
                        int64_t qWidth, int64_t kvWidth, bool split) {
  int64_t width = qWidth + 2 * kvWidth;
  int64_t sizes[3] = {qWidth, kvWidth, kvWidth},
          starts[3] = {0, qWidth, qWidth + kvWidth};
  parallelLoop(rowCount, std::max<int64_t>(1, kElementGrain / width),
               {fused, q, k, v}, [&](Value r, ArrayRef<Value> p) {
                 for (int part = 0; part < 3; ++part) {
                   Value inFused =
                       lb.add(lb.mul(r, lb.i64(width)), lb.i64(starts[part]));
                   Value inPart = lb.mul(r, lb.i64(sizes[part]));
                   lb.loop(lb.i64(sizes[part]), [&](Value j) {
                     Value f = lb.add(inFused, j), s = lb.add(inPart, j);
                     if (split)
                       lb.storeF32(lb.loadF32(p[0], f), p[1 + part], s);
                     else
                       lb.storeF32(lb.loadF32(p[1 + part], s), p[0], f);
                   });
                 }
               });
}

int64_t headsWidth(Value v) {
  auto type = cast<ShapedType>(v.getType());
  return type.getDimSize(2) * type.getDimSize(3);
}

void Emitter::emitReturn(func::ReturnOp ret) {
  for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
    auto slots =
        v.getDefiningOp()
            ? v.getDefiningOp()->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr)
            : DenseI64ArrayAttr();
    if (slots && slots[cast<OpResult>(v).getResultNumber()] == outputSlot(k))
      continue;
    copy(lb.loadPtr(outputs, k), v);
  }
}

LogicalResult Emitter::emitOp(Operation *op) {
  auto i32 = [&](bool v) { return lb.i32(v ? 1 : 0); };
  auto f32 = [&](APFloat v) { return lb.f32(v.convertToFloat()); };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      //--- Generated -----------------------------------------------------------
      .Case([&](arith::ConstantOp c) -> LogicalResult {
        auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
        if (!dense || !dense.isSplat() || !dense.getElementType().isF32())
          return c.emitError("only splat f32 tensor constants are supported");
        Value y = ptr(c.getResult());
        Value v = lb.f32(dense.getSplatValue<float>());
        lb.loop(numel(c.getResult()), [&](Value i) { lb.storeF32(v, y, i); });
        return success();
      })
      .Case([&](AddOp a) {
        binary(a.getLhs(), a.getRhs(), a.getResult(),
               [&](Value x, Value y) { return addf(x, y); });
        return success();
      })
      .Case([&](ResidualAddOp a) { return residualAdd(a), success(); })
      .Case([&](LayerScaleOp a) {
        Value c = last(a.getInput());
        parallelLoop(
            rows(a.getInput()), rowGrain(a.getInput()),
            {ptr(a.getInput()), ptr(a.getGamma()), ptr(a.getResult()), c},
            [&](Value r, ArrayRef<Value> p) {
              lb.loop(p[3], [&](Value j) {
                Value i = lb.add(lb.mul(r, p[3]), j);
                lb.storeF32(mulf(lb.loadF32(p[0], i), lb.loadF32(p[1], j)),
                            p[2], i);
              });
            });
        return success();
      })
      .Case<GeluTanhOp, GeluOp, ReLU2Op>([&](Operation *a) {
        StringRef name = a->getName().stripDialect();
        unary(a->getOperand(0), a->getResult(0),
              [&](Value x) { return activation(name, x); });
        return success();
      })
      .Case([&](ActivationGradOp a) {
        binary(a.getGradOutput(), a.getInput(), a.getGradInput(),
               [&](Value dy, Value x) {
                 return mulf(dy, activationDerivative(a.getActivation(), x));
               });
        return success();
      })
      .Case([&](SoftcapOp a) {
        float cap = a.getCap().convertToFloat();
        unary(a.getInput(), a.getResult(), [&](Value x) {
          return mulf(lb.f32(cap), tanh(mulf(x, lb.f32(1 / cap))));
        });
        return success();
      })
      .Case([&](SoftcapGradOp a) {
        float cap = a.getCap().convertToFloat();
        binary(a.getGradOutput(), a.getInput(), a.getGradInput(),
               [&](Value dy, Value x) {
                 Value t = tanh(mulf(x, lb.f32(1 / cap)));
                 return mulf(dy, subf(lb.f32(1), mulf(t, t)));
               });
        return success();
      })
      .Case([&](SplitHeadsOp a) {
        copyHeads(ptr(a.getInput()), ptr(a.getQ()), ptr(a.getK()),
                  ptr(a.getV()), rows(a.getInput()), headsWidth(a.getQ()),
                  headsWidth(a.getK()),
                  /*split=*/true);
        return success();
      })
      .Case([&](SplitHeadsGradOp a) {
        copyHeads(ptr(a.getGradInput()), ptr(a.getGradQ()), ptr(a.getGradK()),
                  ptr(a.getGradV()), rows(a.getGradInput()),
                  headsWidth(a.getGradQ()), headsWidth(a.getGradK()),
                  /*split=*/false);
        return success();
      })
      .Case<MergeHeadsOp, MergeHeadsGradOp>([&](Operation *a) {
        // [B, T, H, D] and [B, T, H D] share one layout.
        copy(ptr(a->getResult(0)), a->getOperand(0));
        return success();
      })
      .Case([&](DropoutOp a) {
        if (!training)
          copy(ptr(a.getResult()), a.getInput());
        else
          call("lap_cpu_dropout",
               {ptr(a.getResult()), ptr(a.getInput()), numel(a.getInput()),
                f32(a.getRate()), seed, lb.i64(a.getKey())});
        return success();
      })
      .Case([&](DropPathOp a) {
        if (!training)
          copy(ptr(a.getResult()), a.getInput());
        else
          call("lap_cpu_drop_path",
               {ptr(a.getResult()), ptr(a.getInput()), dim(a.getInput(), 0),
                product(a.getInput(), 1, rank(a.getInput())), f32(a.getRate()),
                seed, lb.i64(a.getKey())});
        return success();
      })
      //--- Kernel library ------------------------------------------------------
      .Case([&](AttentionOp a) {
        auto [alpha, beta] = coefficientsOf(a);
        call("lap_cpu_attention_forward",
             {ptr(a.getResult()), logsumexpOf(a), ptr(a.getQ()), ptr(a.getK()),
              ptr(a.getV()), alpha, beta, dim(a.getQ(), 0), dim(a.getQ(), 1),
              dim(a.getK(), 1), lb.i64(a.getNumHeads()),
              lb.i64(a.getNumKvHeads()), dim(a.getQ(), 3), f32(a.getScale()),
              i32(a.getCausal())});
        return success();
      })
      .Case([&](CachedAttentionOp a) {
        auto [alpha, beta] = coefficientsOf(a);
        int64_t capacity =
            source->getAttrOfType<IntegerAttr>(kMaxSeqAttr).getInt();
        call("lap_cpu_attention_decode",
             {ptr(a.getResult()), ptr(a.getKCache()), ptr(a.getVCache()),
              ptr(a.getQ()), ptr(a.getK()), ptr(a.getV()), alpha, beta,
              dim(a.getQ(), 0), dim(a.getQ(), 1), ptr(a.getFirst()),
              lb.i64(capacity), lb.i64(a.getNumHeads()),
              lb.i64(a.getNumKvHeads()), dim(a.getQ(), 3), f32(a.getScale())});
        return success();
      })
      .Case([&](AttentionGradOp a) -> LogicalResult {
        auto forward = a.getOutput().getDefiningOp<AttentionOp>();
        if (!forward)
          return a.emitError("the output operand must come from lap.attention");
        auto [alpha, beta] = coefficientsOf(forward);
        call("lap_cpu_attention_backward",
             {ptr(a.getGradQ()), ptr(a.getGradK()), ptr(a.getGradV()),
              ptr(a.getGradOutput()), ptr(a.getQ()), ptr(a.getK()),
              ptr(a.getV()), ptr(a.getOutput()), logsumexpOf(forward), alpha,
              beta, dim(a.getQ(), 0), dim(a.getQ(), 1), dim(a.getK(), 1),
              lb.i64(forward.getNumHeads()), lb.i64(forward.getNumKvHeads()),
              dim(a.getQ(), 3), f32(a.getScale()), i32(a.getCausal())});
        return success();
      })
      .Case([&](LinearOp a) {
        call("lap_cpu_linear_forward",
             {ptr(a.getResult()), ptr(a.getInput()), ptr(a.getWeight()),
              optional(a.getBias()), rows(a.getInput()), last(a.getInput()),
              last(a.getResult())});
        return success();
      })
      .Case([&](LinearGradOp a) {
        call("lap_cpu_linear_backward",
             {ptr(a.getGradInput()), ptr(a.getGradWeight()),
              ptr(a.getGradBias()), ptr(a.getGradOutput()), ptr(a.getInput()),
              ptr(a.getWeight()), rows(a.getInput()), last(a.getInput()),
              last(a.getGradOutput())});
        return success();
      })
      .Case([&](EmbeddingOp a) {
        auto table = cast<ShapedType>(a.getTable().getType());
        call("lap_cpu_embedding_forward",
             {ptr(a.getResult()), ptr(a.getTable()), ptr(a.getIndices()),
              numel(a.getIndices()), lb.i64(table.getDimSize(0)),
              lb.i64(table.getDimSize(1))});
        return success();
      })
      .Case([&](EmbeddingGradOp a) {
        auto table = cast<ShapedType>(a.getGradTable().getType());
        call("lap_cpu_embedding_backward",
             {ptr(a.getGradTable()), ptr(a.getGradOutput()),
              ptr(a.getIndices()), numel(a.getIndices()),
              lb.i64(table.getDimSize(0)), lb.i64(table.getDimSize(1))});
        return success();
      })
      .Case([&](AddPositionsOp a) {
        call("lap_cpu_add_positions_forward",
             {ptr(a.getResult()), ptr(a.getInput()), ptr(a.getTable()),
              dim(a.getInput(), 0), dim(a.getInput(), 1), last(a.getInput()),
              lb.i64(a.getOffset()), firstOr0(a.getFirst())});
        return success();
      })
      .Case([&](AddPositionsGradOp a) {
        auto table = cast<ShapedType>(a.getGradTable().getType());
        call("lap_cpu_add_positions_backward",
             {ptr(a.getGradTable()), ptr(a.getGradOutput()),
              dim(a.getGradOutput(), 0), dim(a.getGradOutput(), 1),
              last(a.getGradOutput()), lb.i64(a.getOffset()),
              lb.i64(table.getDimSize(0))});
        return success();
      })
      .Case([&](LayerNormOp a) {
        normalize(a.getInput(), a.getResult(), a.getWeight(), a.getBias(),
                  a.getEps().convertToFloat(), /*centred=*/true);
        return success();
      })
      .Case([&](LayerNormGradOp a) {
        call("lap_cpu_layer_norm_backward",
             {ptr(a.getGradInput()), ptr(a.getGradWeight()),
              ptr(a.getGradBias()), ptr(a.getGradOutput()), ptr(a.getInput()),
              optional(a.getWeight()), rows(a.getInput()), last(a.getInput()),
              f32(a.getEps())});
        return success();
      })
      .Case([&](RMSNormOp a) {
        normalize(a.getInput(), a.getResult(), a.getWeight(), Value(),
                  a.getEps().convertToFloat(), /*centred=*/false);
        return success();
      })
      .Case([&](RMSNormGradOp a) {
        call("lap_cpu_rms_norm_backward",
             {ptr(a.getGradInput()), ptr(a.getGradWeight()),
              ptr(a.getGradOutput()), ptr(a.getInput()),
              optional(a.getWeight()), rows(a.getInput()), last(a.getInput()),
              f32(a.getEps())});
        return success();
      })
      .Case([&](L2NormalizeOp a) {
        call("lap_cpu_l2_normalize_forward",
             {ptr(a.getResult()), ptr(a.getInput()), rows(a.getInput()),
              last(a.getInput()), f32(a.getEps())});
        return success();
      })
      .Case([&](L2NormalizeGradOp a) {
        call("lap_cpu_l2_normalize_backward",
             {ptr(a.getGradInput()), ptr(a.getGradOutput()), ptr(a.getInput()),
              rows(a.getInput()), last(a.getInput()), f32(a.getEps())});
        return success();
      })
      .Case([&](WeightNormOp a) {
        call("lap_cpu_weight_norm_forward",
             {ptr(a.getResult()), ptr(a.getDirection()), ptr(a.getMagnitude()),
              dim(a.getDirection(), 0), dim(a.getDirection(), 1)});
        return success();
      })
      .Case([&](WeightNormGradOp a) {
        call("lap_cpu_weight_norm_backward",
             {ptr(a.getGradDirection()), ptr(a.getGradMagnitude()),
              ptr(a.getGradOutput()), ptr(a.getDirection()),
              ptr(a.getMagnitude()), dim(a.getDirection(), 0),
              dim(a.getDirection(), 1)});
        return success();
      })
      .Case([&](LayerScaleGradOp a) {
        call("lap_cpu_layer_scale_backward",
             {ptr(a.getGradInput()), ptr(a.getGradGamma()),
              ptr(a.getGradOutput()), ptr(a.getInput()), ptr(a.getGamma()),
              rows(a.getInput()), last(a.getInput())});
        return success();
      })
      .Case<RopeOp, RopeGradOp>([&](Operation *a) {
        Value x = a->getOperand(0);
        auto base = a->getAttrOfType<FloatAttr>("base");
        auto rope = dyn_cast<RopeOp>(a);
        call(rope ? "lap_cpu_rope_forward" : "lap_cpu_rope_backward",
             {ptr(a->getResult(0)), ptr(x), dim(x, 0), dim(x, 1), dim(x, 2),
              dim(x, 3), lb.f32(base.getValueAsDouble()),
              firstOr0(rope ? rope.getFirst() : Value())});
        return success();
      })
      .Case([&](PatchifyOp a) {
        Value x = a.getImages();
        call("lap_cpu_patchify_forward",
             {ptr(a.getResult()), ptr(x), dim(x, 0), dim(x, 1), dim(x, 2),
              dim(x, 3), lb.i64(a.getPatch())});
        return success();
      })
      .Case([&](PatchifyGradOp a) {
        Value x = a.getGradImages();
        call("lap_cpu_patchify_backward",
             {ptr(x), ptr(a.getGradOutput()), dim(x, 0), dim(x, 1), dim(x, 2),
              dim(x, 3), lb.i64(a.getPatch())});
        return success();
      })
      .Case([&](PrependTokensOp a) {
        call("lap_cpu_prepend_tokens_forward",
             {ptr(a.getResult()), ptr(a.getInput()), ptr(a.getTokens()),
              dim(a.getInput(), 0), dim(a.getInput(), 1), dim(a.getTokens(), 0),
              last(a.getInput())});
        return success();
      })
      .Case([&](PrependTokensGradOp a) {
        call("lap_cpu_prepend_tokens_backward",
             {ptr(a.getGradInput()), ptr(a.getGradTokens()),
              ptr(a.getGradOutput()), dim(a.getGradInput(), 0),
              dim(a.getGradInput(), 1), dim(a.getGradTokens(), 0),
              last(a.getGradInput())});
        return success();
      })
      .Case([&](TakeTokenOp a) {
        call("lap_cpu_take_token_forward",
             {ptr(a.getResult()), ptr(a.getInput()), dim(a.getInput(), 0),
              dim(a.getInput(), 1), last(a.getInput()), lb.i64(a.getIndex())});
        return success();
      })
      .Case([&](TakeTokenGradOp a) {
        call("lap_cpu_take_token_backward",
             {ptr(a.getGradInput()), ptr(a.getGradOutput()),
              dim(a.getInput(), 0), dim(a.getInput(), 1), last(a.getInput()),
              lb.i64(a.getIndex())});
        return success();
      })
      .Case([&](MeanTokensOp a) {
        call("lap_cpu_mean_tokens_forward",
             {ptr(a.getResult()), ptr(a.getInput()), dim(a.getInput(), 0),
              dim(a.getInput(), 1), last(a.getInput()), lb.i64(a.getSkip())});
        return success();
      })
      .Case([&](MeanTokensGradOp a) {
        call("lap_cpu_mean_tokens_backward",
             {ptr(a.getGradInput()), ptr(a.getGradOutput()),
              dim(a.getInput(), 0), dim(a.getInput(), 1), last(a.getInput()),
              lb.i64(a.getSkip())});
        return success();
      })
      .Case([&](CrossEntropyOp a) {
        call("lap_cpu_cross_entropy_forward",
             {ptr(a.getLoss()), ptr(a.getLogits()), ptr(a.getTargets()),
              rows(a.getLogits()), last(a.getLogits()),
              f32(a.getLabelSmoothing()), f32(a.getSoftcap())});
        return success();
      })
      .Case([&](CrossEntropyGradOp a) {
        call("lap_cpu_cross_entropy_backward",
             {ptr(a.getGradLogits()), ptr(a.getGradLoss()), ptr(a.getLogits()),
              ptr(a.getTargets()), rows(a.getLogits()), last(a.getLogits()),
              f32(a.getLabelSmoothing()), f32(a.getSoftcap())});
        return success();
      })
      .Case<SoftCrossEntropyOp, BCEWithLogitsOp, DinoLossOp>([&](Operation *a) {
        int32_t kind = isa<SoftCrossEntropyOp>(a) ? 0
                       : isa<BCEWithLogitsOp>(a)  ? 1
                                                  : 2;
        auto temperature = a->getAttrOfType<FloatAttr>("temperature");
        Value logits = a->getOperand(0);
        call("lap_cpu_row_loss_forward",
             {ptr(a->getResult(0)), ptr(logits), ptr(a->getOperand(1)),
              rows(logits), last(logits), lb.i32(kind),
              lb.f32(temperature ? temperature.getValueAsDouble() : 1.0)});
        return success();
      })
      .Case([&](RowLossGradOp a) {
        StringRef loss = a.getLoss();
        int32_t kind = loss == "soft_cross_entropy" ? 0
                       : loss == "bce_with_logits"  ? 1
                                                    : 2;
        call("lap_cpu_row_loss_backward",
             {ptr(a.getGradLogits()), ptr(a.getGradLoss()), ptr(a.getLogits()),
              ptr(a.getTargets()), rows(a.getLogits()), last(a.getLogits()),
              lb.i32(kind), f32(a.getTemperature())});
        return success();
      })
      .Default([&](Operation *a) {
        return a->emitError("no CPU lowering for '") << a->getName() << "'";
      });
}

struct LapToCPUPass : lap::impl::LapToCPUBase<LapToCPUPass> {
  using LapToCPUBase::LapToCPUBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> planned;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(kWorkspaceAttr))
        planned.push_back(func);
    MLIRContext *context = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(context);
    auto i64 = IntegerType::get(context, 64);
    Emitter::Constants constants;
    for (func::FuncOp source : planned) {
      OpBuilder b(source);
      auto type = FunctionType::get(
          context, {ptr, ptr, ptr, ptr, i64, i64, i64, i64}, {});
      auto target = b.create<func::FuncOp>(
          source.getLoc(), ("lap_gen_" + source.getName()).str(), type);
      target.addEntryBlock();
      for (StringRef attr : {kWorkspaceAttr, kMaxBatchAttr, kMaxSeqAttr})
        target->setAttr(attr, source->getAttr(attr));
      Emitter emitter(source, target, module, constants, profile);
      if (failed(emitter.emit()))
        return signalPassFailure();
      source.erase();
    }
    // tanh and erf as polynomials: vectorisable, no libm calls.
    RewritePatternSet patterns(context);
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(module, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
