//===- IterationOnWarp.h - One loop iteration on a warp's 32 lanes -*- C++ -*-===//
//
// A parallel loop of the kernel form whose iterations each walk a row (a
// norm, a row's sums, a vector's cast) runs one thread per iteration: each
// thread reads its own row, so a warp's loads are 32 rows apart, and a loop
// of few rows leaves the GPU idle. Spread over a warp instead, an iteration's
// loops over the row step by 32 from their lane: a warp's loads are
// consecutive, reductions finish with shuffles, and there are 32 times as
// many threads.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_TARGET_CUDA_ITERATIONONWARP_H
#define LAP_COMPILER_TARGET_CUDA_ITERATIONONWARP_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace lap::cuda {

/// The lanes an iteration spreads over.
constexpr int64_t kWarpLanes = 32;

/// Whether each iteration of `loop` (one dimension) can run on a warp: its
/// body holds loops (scf.for) of at least kWarpLanes steps whose iterations
/// are independent but for reductions (an add with reassoc, a max or a min
/// of f32 carried by the loop), and whose stores each go to an element of
/// their own step (the index is the step's, or it plus a value from outside
/// the loop); memory it writes outside such loops is written by no op that
/// returns a value.
bool runsOnWarp(mlir::scf::ParallelOp loop);

/// Clones the body of `loop` (runsOnWarp) at `b` for the lane `lane` of the
/// warp that runs the iteration (`map` has its index): each of its loops
/// steps by kWarpLanes from `lane`, its reductions combined across the warp
/// with shuffles; what it writes outside them, lane 0 writes; and the warp
/// synchronises after each write, so that every lane sees it.
void cloneOnWarp(mlir::OpBuilder &b, mlir::scf::ParallelOp loop,
                 mlir::Value lane, mlir::IRMapping &map);

} // namespace lap::cuda

#endif // LAP_COMPILER_TARGET_CUDA_ITERATIONONWARP_H
