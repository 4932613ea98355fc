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

/// Why the int32 batch tensor `name` ([rows, seq], or the lengths [rows])
/// cannot be read: tokens must lie in [0, vocab), targets may also be -1
/// (ignored), a padded batch's lengths lie in 0 .. seq. Empty when it can.
inline std::string indexProblem(const std::string &name, const int32_t *data,
                                int64_t rows, int64_t seq, int64_t vocab) {
  if (name != "lengths")
    return idOutsideVocabulary(name, data, rows, seq,
                               name == "targets" ? -1 : 0, vocab);
  for (int64_t r = 0; r < rows; ++r)
    if (data[r] < 0 || data[r] > seq)
      return "batch tensor 'lengths' holds " + std::to_string(data[r]) +
             " at [" + std::to_string(r) + "], outside the sequence 0.." +
             std::to_string(seq);
  return "";
}

} // namespace lap::model

#endif // LAP_RUNTIME_ABI_TOKENIDS_H
