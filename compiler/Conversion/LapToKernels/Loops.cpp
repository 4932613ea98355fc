//===- Loops.cpp - Building generated loops on buffers ----------*- C++ -*-===//

#include "compiler/Conversion/LapToKernels/Loops.h"
#include "dialects/Lapk/IR/LapkDialect.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace lap;

Value LoopBuilder::index(int64_t v) {
  return b.create<arith::ConstantIndexOp>(loc, v);
}
Value LoopBuilder::i64(int64_t v) {
  return b.create<arith::ConstantIntOp>(loc, v, 64);
}
Value LoopBuilder::i32(int32_t v) {
  return b.create<arith::ConstantIntOp>(loc, v, 32);
}
Value LoopBuilder::f32(float v) {
  return b.create<arith::ConstantFloatOp>(loc, APFloat(v), b.getF32Type());
}
Value LoopBuilder::toI64(Value index) {
  return b.create<arith::IndexCastOp>(loc, b.getI64Type(), index);
}
Value LoopBuilder::toIndex(Value i64) {
  return b.create<arith::IndexCastOp>(loc, b.getIndexType(), i64);
}
Value LoopBuilder::add(Value a, Value c) {
  return b.create<arith::AddIOp>(loc, a, c);
}
Value LoopBuilder::mul(Value a, Value c) {
  return b.create<arith::MulIOp>(loc, a, c);
}
Value LoopBuilder::sub(Value a, Value c) {
  return b.create<arith::SubIOp>(loc, a, c);
}
Value LoopBuilder::divU(Value a, Value c) {
  return b.create<arith::DivUIOp>(loc, a, c);
}
Value LoopBuilder::minU(Value a, Value c) {
  return b.create<arith::MinUIOp>(loc, a, c);
}
Value LoopBuilder::maxU(Value a, Value c) {
  return b.create<arith::MaxUIOp>(loc, a, c);
}

Value LoopBuilder::load(Value buffer, Value i) {
  Value v = b.create<memref::LoadOp>(loc, buffer, ValueRange{i});
  if (!v.getType().isBF16())
    return v;
  return b.create<arith::ExtFOp>(loc, b.getF32Type(), v);
}
void LoopBuilder::store(Value value, Value buffer, Value i) {
  if (cast<MemRefType>(buffer.getType()).getElementType().isBF16())
    value = roundToBF16(value);
  b.create<memref::StoreOp>(loc, value, buffer, ValueRange{i});
}
Value LoopBuilder::roundToBF16(Value v) {
  // A bf16 value widened rounds back to itself: no second rounding (a
  // weight's bf16 copy stored as it was made).
  if (auto widened = v.getDefiningOp<arith::ExtFOp>())
    if (widened.getIn().getType().isBF16())
      return widened.getIn();
  return b.create<arith::TruncFOp>(loc, b.getBF16Type(), v);
}

void LoopBuilder::loop(Value n, const std::function<void(Value)> &body) {
  loop(index(0), n, body);
}

void LoopBuilder::loop(Value begin, Value end,
                       const std::function<void(Value)> &body) {
  b.create<scf::ForOp>(loc, begin, end, index(1), ValueRange{},
                       [&](OpBuilder &nested, Location, Value i, ValueRange) {
                         OpBuilder::InsertionGuard guard(b);
                         b.setInsertionPoint(nested.getInsertionBlock(),
                                             nested.getInsertionPoint());
                         body(i);
                         b.create<scf::YieldOp>(loc);
                       });
}

void LoopBuilder::parallel(Value n, int64_t grain,
                           const std::function<void(Value)> &body) {
  auto loop = b.create<scf::ParallelOp>(
      loc, ValueRange{index(0)}, ValueRange{n}, ValueRange{index(1)},
      [&](OpBuilder &nested, Location, ValueRange ivs) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        body(ivs[0]);
      });
  loop->setAttr(lapk::kGrainAttr, b.getI64IntegerAttr(grain));
}

Value LoopBuilder::sum(Value n, const std::function<Value(Value)> &term) {
  return sum(n, term,
             arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
}

Value LoopBuilder::sumInOrder(Value n,
                              const std::function<Value(Value)> &term) {
  return sum(n, term, arith::FastMathFlags::none);
}

Value LoopBuilder::sum(Value n, const std::function<Value(Value)> &term,
                       arith::FastMathFlags flags) {
  auto loop = b.create<scf::ForOp>(
      loc, index(0), n, index(1), ValueRange{f32(0)},
      [&](OpBuilder &nested, Location, Value i, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        Value total = b.create<arith::AddFOp>(loc, acc[0], term(i), flags);
        b.create<scf::YieldOp>(loc, total);
      });
  return loop.getResult(0);
}

Value LoopBuilder::mix(Value z) {
  auto xorShift = [&](Value v, int64_t s) {
    return b.create<arith::XOrIOp>(loc, v,
                                   b.create<arith::ShRUIOp>(loc, v, i64(s)));
  };
  z = add(z, i64(int64_t(0x9E3779B97F4A7C15ull)));
  z = mul(xorShift(z, 30), i64(int64_t(0xBF58476D1CE4E5B9ull)));
  z = mul(xorShift(z, 27), i64(int64_t(0x94D049BB133111EBull)));
  return xorShift(z, 31);
}

Value LoopBuilder::keepFactor(Value seed, int64_t key, Value index,
                              float rate) {
  Value keyed = b.create<arith::XOrIOp>(
      loc, seed, i64(int64_t(uint64_t(key) * 0xD1B54A32D192ED03ull)));
  Value u = mix(add(mix(keyed), toI64(index)));
  Value top = b.create<arith::ShRUIOp>(loc, u, i64(40));
  Value uniform = b.create<arith::MulFOp>(
      loc, b.create<arith::UIToFPOp>(loc, b.getF32Type(), top), f32(0x1p-24f));
  Value keep = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGE, uniform,
                                       f32(rate));
  return b.create<arith::SelectOp>(loc, keep, f32(1.0f / (1.0f - rate)),
                                   f32(0));
}
