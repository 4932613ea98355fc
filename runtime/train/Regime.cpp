//===- Regime.cpp - What a kind of training supplies the trainer ----------===//

#include "runtime/train/Regime.h"

#include "dsl/Spec.h"
#include "runtime/model/ModelCalls.h"
#include "runtime/train/ChatRegime.h"
#include "runtime/train/DinoRegime.h"
#include "runtime/train/ImageRegime.h"
#include "runtime/train/LmRegime.h"
#include "runtime/train/SpecConfig.h"

#include <fmt/format.h>

#include <stdexcept>

namespace lap::train {

int64_t Regime::next(lap_batch &) {
  throw std::logic_error("this regime trains by its own step (trainStep)");
}

nlohmann::json Regime::evaluate() {
  throw std::logic_error("this regime has nothing to evaluate on");
}

int64_t Regime::trainStep(const float *, float *, uint64_t, float &) {
  throw std::logic_error("this regime trains the model's own step (next)");
}

std::unique_ptr<Regime> makeRegime(const RegimeContext &c) {
  const LoadedModel &model = c.calls.model();
  bool lm = c.spec.train.regime == dsl::Regime::LM;
  int64_t seq = lm ? sequenceLength(c.spec) : 0;
  if (c.microBatch > model.maxBatch() || seq > model.maxSeq())
    throw std::runtime_error(fmt::format(
        "{}: compiled for batch <= {} and sequence <= {}; the spec trains {} "
        "x {} (recompile with lapc --max-batch/--max-seq)",
        model.path(), model.maxBatch(), model.maxSeq(), c.microBatch, seq));
  switch (c.spec.train.regime) {
  case dsl::Regime::LM:
    if (c.spec.train.data.format == dsl::DataFormat::Conversations)
      return std::make_unique<ChatRegime>(c.spec, c.calls, c.params,
                                          c.microBatch, seq, c.log, c.shard);
    return std::make_unique<LmRegime>(c.spec, c.calls, c.params, c.runDir,
                                      c.microBatch, seq, c.log, c.shard);
  case dsl::Regime::DINO:
    return std::make_unique<DinoRegime>(c.spec, c.calls, c.device, c.params,
                                        c.microBatch, c.seed, c.log, c.shard,
                                        c.ranks);
  case dsl::Regime::Supervised:
    return std::make_unique<ImageRegime>(c.spec, c.calls, c.params,
                                         c.microBatch, c.seed, c.log, c.shard);
  }
  throw std::logic_error("unknown regime");
}

} // namespace lap::train
