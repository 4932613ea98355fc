//===- CheckpointState.cpp - A checkpoint's state.json --------------------===//

#include "runtime/train/CheckpointState.h"

#include "runtime/platform/Errors.h"

namespace lap {

using lap::platform::fail;

nlohmann::json toJson(const CheckpointState &s) {
  return {{"format", "lap-checkpoint"},
          {"version", kCheckpointVersion},
          {"step", s.step},
          {"seed", s.seed},
          {"rng_state", s.rngState},
          {"data_position", s.dataPosition},
          {"spec", s.specName},
          {"manifest_hash", s.manifestHash},
          {"schedule", s.schedule},
          {"extra", s.extra}};
}

CheckpointState stateFromJson(const nlohmann::json &j,
                              const std::string &origin) {
  if (!j.is_object())
    fail(origin, "not a JSON object");
  if (!j.contains("format") || j["format"] != "lap-checkpoint")
    fail(origin, "not a lap checkpoint state ('format' is not "
                 "\"lap-checkpoint\")");
  auto field = [&](const char *key, bool (nlohmann::json::*is)() const noexcept,
                   const char *type) -> const nlohmann::json & {
    auto it = j.find(key);
    if (it == j.end() || !((*it).*is)())
      fail(origin,
           std::string("'") + key + "' is " +
               (it == j.end() ? "missing" : "not " + std::string(type)));
    return *it;
  };
  const nlohmann::json &version =
      field("version", &nlohmann::json::is_number_integer, "an integer");
  if (version != kCheckpointVersion)
    fail(origin, "version " + version.dump() + "; this lap reads version " +
                     std::to_string(kCheckpointVersion) + " checkpoints");
  auto count = [&](const char *key) {
    const nlohmann::json &v =
        field(key, &nlohmann::json::is_number_integer, "an integer");
    if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(INT64_MAX)
                               : v.get<int64_t>() < 0)
      fail(origin, std::string("'") + key + "' is " + v.dump() +
                       ", outside 0.." + std::to_string(INT64_MAX));
    return v.get<int64_t>();
  };
  CheckpointState s;
  s.step = count("step");
  s.dataPosition = count("data_position");
  s.seed = field("seed", &nlohmann::json::is_number_unsigned,
                 "a non-negative integer")
               .get<uint64_t>();
  for (const nlohmann::json &word :
       field("rng_state", &nlohmann::json::is_array, "an array")) {
    if (!word.is_number_unsigned())
      fail(origin,
           "'rng_state' holds " + word.dump() + ", not a non-negative integer");
    s.rngState.push_back(word.get<uint64_t>());
  }
  s.specName = field("spec", &nlohmann::json::is_string, "a string");
  s.manifestHash =
      field("manifest_hash", &nlohmann::json::is_string, "a string");
  s.schedule = field("schedule", &nlohmann::json::is_object, "an object");
  s.extra = field("extra", &nlohmann::json::is_object, "an object");
  return s;
}

} // namespace lap
