//===- RankAgreement.h - The ranks of a run agree before it starts -*- C++ -*-===//
//
// Every rank of a data-parallel run must train the same model the same way:
// ranks given different libraries would sum two models' gradients without
// a word, and ranks with different --steps would wait in an all-reduce
// until --comm-timeout. Before the first step the ranks exchange what they
// were given (the model's hash and manifest, the schedule, the seed, the
// run directory, the flags) and compare it with rank 0's; a difference is
// an error on every rank, naming the setting and both values.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_RANKAGREEMENT_H
#define LAP_RUNTIME_TRAIN_RANKAGREEMENT_H

#include "runtime/comm/Communicator.h"

#include <string>
#include <utility>
#include <vector>

namespace lap::train {

/// A setting the ranks must share: its name and this rank's value as text.
using SharedSetting = std::pair<std::string, std::string>;

/// Every rank's `settings` against rank 0's (all ranks call it, with the
/// same names in the same order); throws std::runtime_error on every rank
/// when any rank differs: "the ranks disagree on NAME: rank 0 has A, rank
/// R has B".
void agreeAcrossRanks(comm::Communicator &comm,
                      const std::vector<SharedSetting> &settings);

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_RANKAGREEMENT_H
