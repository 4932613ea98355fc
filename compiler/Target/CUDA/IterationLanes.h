//===- IterationLanes.h - The threads that run one loop iteration -*- C++ -*-===//
//
// A parallel loop of the kernel form whose iterations each walk a row (a
// norm, a row's sums, a vector's cast) would run one thread per iteration:
// each thread reads its own row, so a warp's loads are rows apart, and a
// loop of few rows leaves the GPU idle. Its iterations run on a warp
// instead, or on a block where nothing is summed across the row: the
// iteration's loops over the row step by the lane count from their lane,
// so neighbouring lanes load neighbouring elements, and a warp's sums
// finish with shuffles.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_TARGET_CUDA_ITERATIONLANES_H
#define LAP_COMPILER_TARGET_CUDA_ITERATIONLANES_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace lap::cuda {

/// The threads that run one iteration, as lap_cuda_launch takes them: one
/// (or one for several: ThreadIterations.h), a warp's 32, or a whole block
/// (0: as many as the runtime's blocks have).
enum class Lanes : int64_t { kThread = 1, kWarp = 32, kBlock = 0 };

/// The lanes each iteration of `loop` (one dimension) runs on. Lanes are
/// possible where the iteration's body holds loops (scf.for) whose steps
/// are independent but for sums (an add with reassoc, a max or a min of
/// f32, carried by the loop), whose stores each go to an element of their
/// own step (the index is the step's, or it plus a value from outside the
/// loop), and where memory written outside such loops is written by no op
/// that returns a value. Then: a block where no loop sums and one walks at
/// least 256 elements (or an unknown number), a warp where one walks at
/// least 32; else one thread.
Lanes lanesOf(mlir::scf::ParallelOp loop);

/// Clones the body of `loop` at `b` for lane `lane` of the `lanes` (not
/// kThread) that run the iteration (`map` has its index; `count` is their
/// number): each of its loops steps by `count` from `lane`, a warp's sums
/// combined across it with shuffles; what it writes outside them, lane 0
/// writes; and the lanes synchronise around each write, so that every lane
/// sees it.
void cloneOnLanes(mlir::OpBuilder &b, mlir::scf::ParallelOp loop, Lanes lanes,
                  mlir::Value lane, mlir::Value count, mlir::IRMapping &map);

} // namespace lap::cuda

#endif // LAP_COMPILER_TARGET_CUDA_ITERATIONLANES_H
