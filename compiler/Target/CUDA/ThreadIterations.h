//===- ThreadIterations.h - Several loop iterations on one thread -*- C++ -*-===//
//
// An elementwise loop run one iteration to a thread keeps one load of each
// buffer in flight on a thread: with 2-byte elements a warp's load is 64
// bytes, and an SM's 64 warps then hold about 4 KB in flight, which covers
// HBM's latency for about a fifth of its bandwidth (bf16 loops ran at a
// third of their memory time on an H200). Such a loop's iterations run
// several to a thread instead: a block covers consecutive stretches of a
// block's width, one per iteration of its threads (so each load is still
// coalesced across the warp), and a thread runs what comes before the
// body's first store (its loads, and what they compute) for all its
// iterations before any of them stores.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_TARGET_CUDA_THREADITERATIONS_H
#define LAP_COMPILER_TARGET_CUDA_THREADITERATIONS_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <cstdint>

namespace lap::cuda {

/// How many iterations of `loop` (one dimension, one iteration to a
/// thread) one thread runs: 8 where its narrowest load is of 16 bits or
/// fewer, 4 where its loads are wider, if its body is straight-line code
/// (no op with regions) of loads, stores and pure ops that are safe to run
/// early (speculatable: no division by a loaded value); else 1 (and for a
/// loop of one iteration: the host's memory code).
int64_t iterationsPerThread(mlir::scf::ParallelOp loop);

/// Clones the body of `loop` at `b` for `count` iterations, `first` and
/// every `stride` after it, of the `n` (`map` is the body's mapping for
/// all of them; `first` < n is known). First, for each iteration, the ops
/// before the body's first store (its loads), an iteration beyond n
/// loading iteration n - 1's elements instead; then, for each iteration
/// below n, the rest.
void cloneIterations(mlir::OpBuilder &b, mlir::scf::ParallelOp loop,
                     int64_t count, mlir::Value first, mlir::Value stride,
                     mlir::Value n, const mlir::IRMapping &map);

} // namespace lap::cuda

#endif // LAP_COMPILER_TARGET_CUDA_THREADITERATIONS_H
