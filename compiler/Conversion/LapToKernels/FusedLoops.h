//===- FusedLoops.h - One loop nest for loop-fusible ops --------*- C++ -*-===//
//
// The generated code of every elementwise op and forward norm, alone or
// grouped by lap.fusion: one parallel loop over rows [..., C] (or over
// elements, when no op needs a row), in which each op's value at a column
// is an expression of its operands' values there. Values are written out
// only where the nest says so; a later pass over the same row reads them
// back from cache, and the values never written are computed again where
// they are read (only cheap ones are, --lap-fuse-loops sees to that).
// A nest with a column sum runs over chunks of rows fixed by the shape
// alone: each chunk sums its rows in order into its own partial sums,
// which are then added in chunk order, so the sums do not depend on the
// number of threads.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_CONVERSION_LAPTOKERNELS_FUSEDLOOPS_H
#define LAP_COMPILER_CONVERSION_LAPTOKERNELS_FUSEDLOOPS_H

#include "compiler/Conversion/LapToKernels/Loops.h"

#include "llvm/ADT/DenseMap.h"

namespace lap {

/// A group of loop-fusible ops (isLoopFusible) and where their values live.
struct LoopNest {
  /// The ops, in program order; every value they read is an earlier op's
  /// result or in `inputs`.
  llvm::ArrayRef<mlir::Operation *> ops;
  /// Values read from memory, with their flat buffers: row-shaped ones, and
  /// [C] ones read per column.
  llvm::DenseMap<mlir::Value, mlir::Value> inputs;
  /// Results written out, with their flat buffers.
  llvm::SmallVector<std::pair<mlir::Value, mlir::Value>> outputs;
  /// For each column sum written out, its partial sums [chunks, C].
  llvm::DenseMap<mlir::Value, mlir::Value> partials;
};

/// Where the nest runs: its row shape at run time, and the step's random
/// stream for drop path.
struct LoopNestShape {
  mlir::Value rows;          ///< product of the leading dimensions (index)
  int64_t width;             ///< the last dimension, C
  mlir::Value rowsPerSample; ///< rows of one batch element (index)
  int64_t elementGrain;      ///< elements worth a thread (rows: their share)
  mlir::Value seed;          ///< the step's seed (memref<1xi64>)
  bool training;             ///< drop path draws only in a training step
};

/// Emits the loop nest at `lb`'s insertion point.
void emitLoopNest(LoopBuilder &lb, const LoopNest &nest,
                  const LoopNestShape &shape);

} // namespace lap

#endif // LAP_COMPILER_CONVERSION_LAPTOKERNELS_FUSEDLOOPS_H
