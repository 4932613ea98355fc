//===- Records.h - How each variant of a sweep was trained ------*- C++ -*-===//
//
// Each run directory of a sweep holds sweep-record.json: the hash of the
// model library it trained (its spec and lapc's flags), its seed and
// --steps. A variant trained otherwise than the sweep now asks is an
// error, or with --retrain trained again from scratch, so a table never
// mixes schedules.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_SWEEP_RECORDS_H
#define LAP_RUNTIME_SWEEP_RECORDS_H

#include "runtime/sweep/Variants.h"

namespace lap::sweep {

/// How a variant is trained, as far as its results depend on it: the
/// library's contents, the seed, --steps (0: the spec's). --stop-at only
/// pauses a run, so it is not part of it.
nlohmann::json trainingRecord(const Variant &v, const std::string &libraryHash,
                              int64_t steps);

/// Checks every variant already begun in RUNS/<variant> against
/// `records`; with `retrain` a variant that differs loses its run directory
/// and log (it trains again), else each is reported and the result is
/// false: the sweep must train nothing.
bool checkRecords(const std::vector<Variant> &variants,
                  const std::vector<nlohmann::json> &records,
                  const std::string &runs, bool retrain);

} // namespace lap::sweep

#endif // LAP_RUNTIME_SWEEP_RECORDS_H
