//===- Loops.cpp - Building generated CPU loops on raw pointers -*- C++ -*-===//

#include "compiler/Conversion/LapToCPU/Loops.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace lap;

Value LoopBuilder::i64(int64_t v) {
  return b.create<arith::ConstantIntOp>(loc, v, 64);
}
Value LoopBuilder::i32(int32_t v) {
  return b.create<arith::ConstantIntOp>(loc, v, 32);
}
Value LoopBuilder::f32(float v) {
  return b.create<arith::ConstantFloatOp>(loc, APFloat(v), b.getF32Type());
}
Value LoopBuilder::nullPtr() {
  return b.create<LLVM::ZeroOp>(loc,
                                LLVM::LLVMPointerType::get(b.getContext()));
}
Value LoopBuilder::add(Value a, Value c) {
  return b.create<arith::AddIOp>(loc, a, c);
}
Value LoopBuilder::mul(Value a, Value c) {
  return b.create<arith::MulIOp>(loc, a, c);
}
Value LoopBuilder::divU(Value a, Value c) {
  return b.create<arith::DivUIOp>(loc, a, c);
}

Value LoopBuilder::gep(Value base, Type element, Value index) {
  return b.create<LLVM::GEPOp>(loc, LLVM::LLVMPointerType::get(b.getContext()),
                               element, base, ArrayRef<LLVM::GEPArg>{index},
                               /*inbounds=*/true);
}
Value LoopBuilder::gepBytes(Value base, int64_t bytes) {
  return gep(base, b.getI8Type(), i64(bytes));
}
Value LoopBuilder::loadF32(Value base, Value index) {
  return b.create<LLVM::LoadOp>(loc, b.getF32Type(),
                                gep(base, b.getF32Type(), index));
}
void LoopBuilder::storeF32(Value value, Value base, Value index) {
  b.create<LLVM::StoreOp>(loc, value, gep(base, b.getF32Type(), index));
}
Value LoopBuilder::loadPtr(Value array, int64_t index) {
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  return b.create<LLVM::LoadOp>(loc, ptr, gep(array, ptr, i64(index)));
}
void LoopBuilder::memcpy(Value dst, Value src, Value bytes) {
  b.create<LLVM::MemcpyOp>(loc, dst, src, bytes, /*isVolatile=*/false);
}

void LoopBuilder::loop(Value n, const std::function<void(Value)> &body) {
  loop(i64(0), n, body);
}

void LoopBuilder::loop(Value begin, Value end,
                       const std::function<void(Value)> &body) {
  b.create<scf::ForOp>(loc, begin, end, i64(1), ValueRange{},
                       [&](OpBuilder &nested, Location, Value i, ValueRange) {
                         OpBuilder::InsertionGuard guard(b);
                         b.setInsertionPoint(nested.getInsertionBlock(),
                                             nested.getInsertionPoint());
                         body(i);
                         b.create<scf::YieldOp>(loc);
                       });
}

Value LoopBuilder::sum(Value n, const std::function<Value(Value)> &term) {
  auto loop = b.create<scf::ForOp>(
      loc, i64(0), n, i64(1), ValueRange{f32(0)},
      [&](OpBuilder &nested, Location, Value i, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        Value total = b.create<arith::AddFOp>(
            loc, acc[0], term(i),
            arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
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
  Value u = mix(add(mix(keyed), index));
  Value top = b.create<arith::ShRUIOp>(loc, u, i64(40));
  Value uniform = b.create<arith::MulFOp>(
      loc, b.create<arith::UIToFPOp>(loc, b.getF32Type(), top), f32(0x1p-24f));
  Value keep = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGE, uniform,
                                       f32(rate));
  return b.create<arith::SelectOp>(loc, keep, f32(1.0f / (1.0f - rate)),
                                   f32(0));
}
