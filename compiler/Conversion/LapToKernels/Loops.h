//===- Loops.h - Building generated loops on buffers ------------*- C++ -*-===//
//
// A small builder for the loop nests LapToKernels generates: scf loops over
// index values, loads and stores of flat memrefs, arith and math on
// scalars. Nothing here names a target: a target maps `parallel` to its
// threads (the CPU's pool) or its grid, and vectorises the inner loops
// (they are counted loops over contiguous memory).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_CONVERSION_LAPTOKERNELS_LOOPS_H
#define LAP_COMPILER_CONVERSION_LAPTOKERNELS_LOOPS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

#include <functional>

namespace lap {

class LoopBuilder {
public:
  LoopBuilder(mlir::OpBuilder &b, mlir::Location loc) : b(b), loc(loc) {}

  mlir::Value index(int64_t v);
  mlir::Value i64(int64_t v);
  mlir::Value i32(int32_t v);
  mlir::Value f32(float v);
  /// An index value as i64 (the kernels' sizes), and back.
  mlir::Value toI64(mlir::Value index);
  mlir::Value toIndex(mlir::Value i64);

  mlir::Value add(mlir::Value a, mlir::Value c);
  mlir::Value mul(mlir::Value a, mlir::Value c);
  mlir::Value sub(mlir::Value a, mlir::Value c);
  mlir::Value divU(mlir::Value a, mlir::Value c); ///< unsigned division
  mlir::Value minU(mlir::Value a, mlir::Value c); ///< unsigned minimum
  mlir::Value maxU(mlir::Value a, mlir::Value c); ///< unsigned maximum

  /// Element `index` of a buffer; bf16 elements are loaded as f32, and
  /// f32 values are stored to bf16 rounded to nearest, ties to even: the
  /// loops compute in f32 at either precision.
  mlir::Value load(mlir::Value buffer, mlir::Value index);
  void store(mlir::Value value, mlir::Value buffer, mlir::Value index);
  /// An f32 value as bf16 (to nearest, ties to even).
  mlir::Value roundToBF16(mlir::Value f32);

  /// for (i = 0; i < n; ++i) body(i)
  void loop(mlir::Value n, const std::function<void(mlir::Value)> &body);
  /// for (i = begin; i < end; ++i) body(i)
  void loop(mlir::Value begin, mlir::Value end,
            const std::function<void(mlir::Value)> &body);
  /// body(i) for i in [0, n), iterations independent: split across threads
  /// (or blocks) in chunks of at least `grain`.
  void parallel(mlir::Value n, int64_t grain,
                const std::function<void(mlir::Value)> &body);

  /// The f32 sum of term(i) over [0, n), reassociable so that it
  /// vectorises.
  mlir::Value sum(mlir::Value n,
                  const std::function<mlir::Value(mlir::Value)> &term);
  /// The f32 sum of term(i) over [0, n), added in order of i.
  mlir::Value sumInOrder(mlir::Value n,
                         const std::function<mlir::Value(mlir::Value)> &term);

  /// The dropout keep decision of Kernels.h's lap_cpu_keep, as an f32
  /// factor: 1 / (1 - rate) when element `index` survives, else 0.
  mlir::Value keepFactor(mlir::Value seed, int64_t key, mlir::Value index,
                         float rate);

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() { return loc; }

private:
  mlir::Value mix(mlir::Value z);
  mlir::Value sum(mlir::Value n,
                  const std::function<mlir::Value(mlir::Value)> &term,
                  mlir::arith::FastMathFlags flags);
  mlir::OpBuilder &b;
  mlir::Location loc;
};

} // namespace lap

#endif // LAP_COMPILER_CONVERSION_LAPTOKERNELS_LOOPS_H
