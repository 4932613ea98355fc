//===- TokenIds.h - Token ids inside a model's vocabulary -------*- C++ -*-===//
//
// One check for both sides of the ABI: a CPU library checks the ids (and a
// padded batch's lengths) of the batches it reads; for a CUDA library, whose
// kernels only keep ids in bounds, the host checks them before copying a
// batch to the GPU.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_ABI_TOKENIDS_H
#define LAP_RUNTIME_ABI_TOKENIDS_H

#include <cstdint>
#include <string>

namespace lap::model {

/// Why an id of `ids` (rows of `seq`) lies outside [lowest, vocab), naming
/// the first and batch tensor `name`; empty when every id is inside.
inline std::string idOutsideVocabulary(const std::string &name,
                                       const int32_t *ids, int64_t rows,
                                       int64_t seq, int32_t lowest,
                                       int64_t vocab) {
  for (int64_t j = 0; j < rows * seq; ++j)
    if (ids[j] < lowest || ids[j] >= vocab)
      return "batch tensor '" + name + "' holds " + std::to_string(ids[j]) +
             " at [" + std::to_string(j / seq) + ", " +
             std::to_string(j % seq) + "], outside the vocabulary 0.." +
             std::to_string(vocab - 1);
  return "";
}

/// The first of `lengths` [rows] outside 0 .. limit, or -1 when none is.
inline int64_t lengthOutside(const int32_t *lengths, int64_t rows,
                             int64_t limit) {
  for (int64_t r = 0; r < rows; ++r)
    if (lengths[r] < 0 || lengths[r] > limit)
      return r;
  return -1;
}

/// Why the int32 batch tensor `name` ([rows, seq], or the lengths [rows])
/// cannot be read: tokens must lie in [0, vocab), targets may also be -1
/// (ignored), a padded batch's lengths lie in 0 .. seq. Empty when it can.
inline std::string indexProblem(const std::string &name, const int32_t *data,
                                int64_t rows, int64_t seq, int64_t vocab) {
  if (name != "lengths")
    return idOutsideVocabulary(name, data, rows, seq,
                               name == "targets" ? -1 : 0, vocab);
  const int64_t r = lengthOutside(data, rows, seq);
  if (r < 0)
    return "";
  return "batch tensor 'lengths' holds " + std::to_string(data[r]) + " at [" +
         std::to_string(r) + "], outside the sequence 0.." +
         std::to_string(seq);
}

} // namespace lap::model

#endif // LAP_RUNTIME_ABI_TOKENIDS_H
