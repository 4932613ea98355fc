//===- Loops.h - Building generated CPU loops on raw pointers ---*- C++ -*-===//
//
// A small builder for the code LapToCPU generates itself: scf.for loops over
// i64 indices, f32 loads and stores through LLVM pointers, arith and math on
// scalars. LLVM vectorises these loops for the host CPU when it compiles the
// module (the loops are simple counted loops over contiguous memory).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_CONVERSION_LAPTOCPU_LOOPS_H
#define LAP_COMPILER_CONVERSION_LAPTOCPU_LOOPS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

#include <functional>

namespace lap {

class LoopBuilder {
public:
  LoopBuilder(mlir::OpBuilder &b, mlir::Location loc) : b(b), loc(loc) {}

  mlir::Value i64(int64_t v);
  mlir::Value i32(int32_t v);
  mlir::Value f32(float v);
  mlir::Value nullPtr();

  mlir::Value add(mlir::Value a, mlir::Value c);
  mlir::Value mul(mlir::Value a, mlir::Value c);
  mlir::Value divU(mlir::Value a, mlir::Value c); ///< i64 unsigned division

  /// `base` advanced by `index` elements of `element`.
  mlir::Value gep(mlir::Value base, mlir::Type element, mlir::Value index);
  mlir::Value gepBytes(mlir::Value base, int64_t bytes);
  mlir::Value loadF32(mlir::Value base, mlir::Value index);
  void storeF32(mlir::Value value, mlir::Value base, mlir::Value index);
  mlir::Value loadPtr(mlir::Value array, int64_t index);
  void memcpy(mlir::Value dst, mlir::Value src, mlir::Value bytes);

  /// for (i = 0; i < n; ++i) body(i)
  void loop(mlir::Value n, const std::function<void(mlir::Value)> &body);
  /// for (i = begin; i < end; ++i) body(i)
  void loop(mlir::Value begin, mlir::Value end,
            const std::function<void(mlir::Value)> &body);

  /// The f32 sum of term(i) over [0, n), reassociable so that LLVM
  /// vectorises it.
  mlir::Value sum(mlir::Value n,
                  const std::function<mlir::Value(mlir::Value)> &term);

  /// The dropout keep decision of Kernels.h's lap_cpu_keep, as an f32
  /// factor: 1 / (1 - rate) when element `index` survives, else 0.
  mlir::Value keepFactor(mlir::Value seed, int64_t key, mlir::Value index,
                         float rate);

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() { return loc; }

private:
  mlir::Value mix(mlir::Value z);
  mlir::OpBuilder &b;
  mlir::Location loc;
};

} // namespace lap

#endif // LAP_COMPILER_CONVERSION_LAPTOCPU_LOOPS_H
