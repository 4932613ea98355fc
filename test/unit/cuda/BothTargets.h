//===- BothTargets.h - A mixed-kind model compiled for CPU and GPU -*- C++ -*-===//

#ifndef LAP_TEST_UNIT_CUDA_BOTHTARGETS_H
#define LAP_TEST_UNIT_CUDA_BOTHTARGETS_H

#include "test/unit/model/MixedKindModels.h"
#include "test/unit/model/ModelTestSupport.h"

#include <string>

namespace lap::test::mixed {

/// The case's library for `target` ("cpu", "cuda"). CPU libraries are
/// built for any x86-64-v3 CPU: a GPU machine's CPU need not be this one.
inline const std::string &library(const Case &c, const std::string &target) {
  return compiled(std::string(c.name) + "_" + target, c.yaml, kMaxBatch,
                  c.image ? 0 : kMaxSeq,
                  "--target=" + target +
                      (target == "cpu" ? " --cpu=x86-64-v3" : ""));
}

} // namespace lap::test::mixed

#endif // LAP_TEST_UNIT_CUDA_BOTHTARGETS_H
