//===- AttentionMask.h - Which keys a query sees ----------------*- C++ -*-===//
//
// The masks of causal attention beyond causality, as the CPU and CUDA
// kernels share them (host and device code): a sliding window of `window`
// keys (0: none) and documents packed into a sequence, query t seeing keys
// from its document's start starts[t]. Both narrow the keys from below:
// query t sees keys firstKey(t) <= s <= t, and firstKey is nondecreasing
// in t, so the queries that see a block of keys end where it passes them.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_KERNELS_ATTENTIONMASK_H
#define LAP_RUNTIME_KERNELS_ATTENTIONMASK_H

#include "runtime/platform/Random.h"

#include <cstdint>

namespace lap::attention_mask {

/// The first key query t sees: t - window + 1 under a window, its
/// document's start (`starts`: the sequence's row, or null), 0 at least.
template <typename Int>
LAP_HOST_DEVICE inline Int firstKey(Int t, Int window, const int32_t *starts) {
  Int first = window > 0 ? t - window + 1 : 0;
  if (starts && Int(starts[t]) > first)
    first = Int(starts[t]);
  return first > 0 ? first : 0;
}

/// One past the last query of [last + 1, T) whose first key (firstKeyOf,
/// nondecreasing) is at most `last`: from it on, no query sees key `last`
/// or an earlier one. A binary search.
template <typename Int, typename FirstKey>
LAP_HOST_DEVICE inline Int queryEnd(Int last, Int T, FirstKey firstKeyOf) {
  Int lo = last + 1 < T ? last + 1 : T, hi = T;
  while (lo < hi) {
    const Int mid = lo + (hi - lo) / 2;
    if (firstKeyOf(mid) > last)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

} // namespace lap::attention_mask

#endif // LAP_RUNTIME_KERNELS_ATTENTIONMASK_H
