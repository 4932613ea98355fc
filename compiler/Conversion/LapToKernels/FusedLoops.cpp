//===- FusedLoops.cpp - One loop nest for loop-fusible ops ------*- C++ -*-===//

#include "compiler/Conversion/LapToKernels/FusedLoops.h"
#include "compiler/Memory/MemoryPlan.h"
#include "dialects/Lap/IR/LapOps.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace lap;

namespace {

// gelu_tanh(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
constexpr float kSqrt2OverPi = 0.7978845608028654f, kGeluCubic = 0.044715f;
constexpr float kSqrtHalf = 0.7071067811865476f;

class NestEmitter {
public:
  NestEmitter(LoopBuilder &lb, const LoopNest &nest, const LoopNestShape &shape)
      : lb(lb), b(lb.builder()), nest(nest), shape(shape) {}

  void emit() {
    if (!nest.partials.empty())
      return chunks();
    bool rowWise = llvm::any_of(nest.ops, [&](Operation *op) {
      return isRowReduction(op) || needsRowFactor(op) ||
             llvm::any_of(op->getOperands(), [](Value v) {
               return cast<ShapedType>(v.getType()).getRank() == 1;
             });
    });
    if (rowWise)
      lb.parallel(shape.rows,
                  std::max<int64_t>(1, shape.elementGrain / shape.width),
                  [&](Value r) { row(r); });
    else
      lb.parallel(lb.mul(shape.rows, lb.index(shape.width)), shape.elementGrain,
                  [&](Value i) { element(i); });
  }

private:
  /// Every op at element i, in one iteration: values are SSA values, those
  /// written out are stored as they are made.
  void element(Value i) {
    base = Value();
    for (Operation *op : nest.ops)
      if (Value buffer = outputBuffer(op->getResult(0)))
        lb.store(at(op->getResult(0), i), buffer, i);
  }

  /// Rows in chunks, for column sums: chunks = clamp(rows C / 2^15, 1,
  /// kColumnSumChunks) but at most the rows, as the kernels' own column
  /// sums (Linear.cpp) cut them. Each chunk zeroes its partial sums, then
  /// runs its rows in order; the chunks' sums are then added in order.
  void chunks() {
    Value width = lb.index(shape.width);
    Value count = lb.minU(
        lb.maxU(lb.minU(lb.divU(lb.mul(shape.rows, width), lb.index(1 << 15)),
                        lb.index(kColumnSumChunks)),
                lb.index(1)),
        lb.maxU(shape.rows, lb.index(1)));
    Value perChunk =
        lb.divU(lb.add(shape.rows, lb.sub(count, lb.index(1))), count);
    lb.parallel(count, 1, [&](Value c) {
      chunk = c;
      for (auto [sum, out] : nest.outputs)
        if (Value partial = nest.partials.lookup(sum))
          lb.loop(width, [&](Value j) {
            lb.store(lb.f32(0), partial, lb.add(lb.mul(c, width), j));
          });
      Value begin = lb.mul(c, perChunk);
      Value end = lb.minU(shape.rows, lb.add(begin, perChunk));
      lb.loop(begin, end, [&](Value r) { row(r); });
    });
    chunk = Value();
    // In the outputs' order, as everything here: the same code every time.
    // Columns are independent (a target may run them at once); on the CPU
    // one chunk of them, as the sum is short.
    for (auto [sum, out] : nest.outputs) {
      Value partial = nest.partials.lookup(sum);
      if (!partial)
        continue;
      lb.parallel(width, shape.width, [&](Value j) {
        lb.store(lb.sumInOrder(count,
                               [&](Value c) {
                                 return lb.load(partial,
                                                lb.add(lb.mul(c, width), j));
                               }),
                 out, j);
      });
    }
  }

  /// One row: per op, its row statistics, then, when it is written out, a
  /// pass that stores it (a column sum: that adds it to the chunk's partial
  /// sums); later passes read it back.
  void row(Value r) {
    base = lb.mul(r, lb.index(shape.width));
    rowValues.clear();
    written.clear();
    for (Operation *op : nest.ops) {
      if (auto sum = dyn_cast<ColumnSumOp>(op)) {
        Value partial = nest.partials.lookup(sum.getResult());
        Value first = lb.mul(chunk, lb.index(shape.width));
        lb.loop(lb.index(shape.width), [&](Value j) {
          Scope scope(memo);
          Value i = lb.add(first, j);
          lb.store(addf(lb.load(partial, i), at(sum.getInput(), j)), partial,
                   i);
        });
        continue;
      }
      rowStatistics(op, r);
      Value result = op->getResult(0);
      if (Value buffer = outputBuffer(result)) {
        lb.loop(lb.index(shape.width), [&](Value j) {
          Scope scope(memo);
          lb.store(at(result, j), buffer, lb.add(base, j));
        });
        written.insert(result);
      }
    }
  }

  /// Memoised values belong to the loop body being built.
  struct Scope {
    explicit Scope(DenseMap<Value, Value> &memo) : memo(memo) {
      saved.swap(memo);
    }
    ~Scope() { memo.swap(saved); }
    DenseMap<Value, Value> &memo, saved;
  };

  Value outputBuffer(Value v) {
    for (auto [value, buffer] : nest.outputs)
      if (value == v)
        return buffer;
    return Value();
  }

  bool needsRowFactor(Operation *op) {
    auto add = dyn_cast<ResidualAddOp>(op);
    return add && shape.training && !add.getDropRate().isZero();
  }

  /// What an op needs once per row: a norm's mean and reciprocal standard
  /// deviation, a residual branch's drop-path factor.
  void rowStatistics(Operation *op, Value r) {
    if (auto add = dyn_cast<ResidualAddOp>(op); add && needsRowFactor(op)) {
      // One draw per sample, as lap.drop_path; the seed is read where the
      // nest runs (on a GPU, in the kernel), as the dropout kernels read it.
      Value seed = lb.load(shape.seed, lb.index(0));
      rowValues[op] = {lb.keepFactor(seed, add.getKey(),
                                     lb.divU(r, shape.rowsPerSample),
                                     add.getDropRate().convertToFloat())};
      return;
    }
    if (!isRowReduction(op))
      return;
    bool centred = isa<LayerNormOp>(op);
    Value input = op->getOperand(0);
    float eps = op->getAttrOfType<FloatAttr>("eps").getValueAsDouble();
    Value n = lb.index(shape.width);
    Value inverseWidth = lb.f32(1.0f / float(shape.width));
    Value mean = centred ? mulf(lb.sum(n,
                                       [&](Value j) {
                                         Scope scope(memo);
                                         return at(input, j);
                                       }),
                                inverseWidth)
                         : lb.f32(0);
    Value variance = mulf(lb.sum(n,
                                 [&](Value j) {
                                   Scope scope(memo);
                                   Value d = subf(at(input, j), mean);
                                   return mulf(d, d);
                                 }),
                          inverseWidth);
    Value rstd = b.create<math::RsqrtOp>(loc(), addf(variance, lb.f32(eps)));
    rowValues[op] = {mean, rstd};
  }

  /// The value of `v` at column j of the row (element j without rows).
  Value at(Value v, Value j) {
    if (Value known = memo.lookup(v))
      return known;
    Value result;
    if (auto it = nest.inputs.find(v); it != nest.inputs.end())
      result = lb.load(it->second, columnOnly(v) ? j : elementIndex(j));
    else if (written.contains(v))
      result = lb.load(outputBuffer(v), elementIndex(j));
    else
      result = compute(v.getDefiningOp(), j);
    return memo[v] = result;
  }

  bool columnOnly(Value v) {
    return base && cast<ShapedType>(v.getType()).getRank() == 1;
  }
  Value elementIndex(Value j) { return base ? lb.add(base, j) : j; }

  Value compute(Operation *op, Value j) {
    return llvm::TypeSwitch<Operation *, Value>(op)
        .Case(
            [&](AddOp a) { return addf(at(a.getLhs(), j), at(a.getRhs(), j)); })
        .Case([&](ResidualAddOp a) {
          Value v = at(a.getBranch(), j);
          if (a.getGamma())
            v = mulf(v, at(a.getGamma(), j));
          if (needsRowFactor(a))
            v = mulf(v, rowValues[a][0]);
          return addf(at(a.getInput(), j), v);
        })
        .Case([&](AddBiasOp a) {
          return addf(at(a.getInput(), j), at(a.getBias(), j));
        })
        .Case([&](LayerScaleOp a) {
          return mulf(at(a.getInput(), j), at(a.getGamma(), j));
        })
        .Case<GeluTanhOp, GeluOp, ReLU2Op>([&](Operation *a) {
          return activation(a->getName().stripDialect(),
                            at(a->getOperand(0), j));
        })
        .Case([&](ActivationGradOp a) {
          return mulf(
              at(a.getGradOutput(), j),
              activationDerivative(a.getActivation(), at(a.getInput(), j)));
        })
        .Case([&](ScaleOp a) {
          return mulf(at(a.getInput(), j),
                      lb.f32(a.getFactor().convertToFloat()));
        })
        .Case([&](SoftcapOp a) {
          float cap = a.getCap().convertToFloat();
          return mulf(lb.f32(cap),
                      tanh(mulf(at(a.getInput(), j), lb.f32(1 / cap))));
        })
        .Case([&](ConvertOp a) {
          // Values stay f32 in the loop; one that is bf16 is rounded, as
          // it would be in memory.
          Value x = at(a.getInput(), j);
          if (!a.getType().getElementType().isBF16())
            return x;
          return b
              .create<arith::ExtFOp>(loc(), b.getF32Type(), lb.roundToBF16(x))
              .getResult();
        })
        .Case([&](SoftcapGradOp a) {
          float cap = a.getCap().convertToFloat();
          Value t = tanh(mulf(at(a.getInput(), j), lb.f32(1 / cap)));
          return mulf(at(a.getGradOutput(), j), subf(lb.f32(1), mulf(t, t)));
        })
        .Case<LayerNormOp, RMSNormOp>([&](Operation *a) {
          Value mean = rowValues[a][0], rstd = rowValues[a][1];
          Value v = mulf(subf(at(a->getOperand(0), j), mean), rstd);
          if (auto norm = dyn_cast<LayerNormOp>(a)) {
            if (norm.getWeight())
              v = mulf(v, at(norm.getWeight(), j));
            if (norm.getBias())
              v = addf(v, at(norm.getBias(), j));
          } else if (Value weight = cast<RMSNormOp>(a).getWeight()) {
            v = mulf(v, at(weight, j));
          }
          return v;
        });
  }

  Value activation(StringRef name, Value x) {
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
    Value e = b.create<math::ErfOp>(loc(), mulf(x, lb.f32(kSqrtHalf)));
    return mulf(mulf(lb.f32(0.5f), x), addf(lb.f32(1), e));
  }

  Value activationDerivative(StringRef name, Value x) {
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
    Value cdf =
        mulf(lb.f32(0.5f),
             addf(lb.f32(1),
                  b.create<math::ErfOp>(loc(), mulf(x, lb.f32(kSqrtHalf)))));
    Value pdf =
        mulf(lb.f32(0.3989422804014327f),
             b.create<math::ExpOp>(loc(), mulf(lb.f32(-0.5f), mulf(x, x))));
    return addf(cdf, mulf(x, pdf));
  }

  Value addf(Value a, Value c) { return b.create<arith::AddFOp>(loc(), a, c); }
  Value subf(Value a, Value c) { return b.create<arith::SubFOp>(loc(), a, c); }
  Value mulf(Value a, Value c) { return b.create<arith::MulFOp>(loc(), a, c); }
  Value maxf(Value a, Value c) {
    return b.create<arith::MaximumFOp>(loc(), a, c);
  }
  Value tanh(Value a) { return b.create<math::TanhOp>(loc(), a); }
  Location loc() { return lb.location(); }

  LoopBuilder &lb;
  OpBuilder &b;
  const LoopNest &nest;
  const LoopNestShape &shape;
  Value base;  ///< the row's first element; none without rows
  Value chunk; ///< the chunk of rows being summed, with column sums
  DenseMap<Value, Value> memo;
  DenseSet<Value> written;
  DenseMap<Operation *, SmallVector<Value, 2>> rowValues;
};

} // namespace

void lap::emitLoopNest(LoopBuilder &lb, const LoopNest &nest,
                       const LoopNestShape &shape) {
  NestEmitter(lb, nest, shape).emit();
}
