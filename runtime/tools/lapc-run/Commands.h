//===- Commands.h - lapc-run's subcommands ----------------------*- C++ -*-===//

#ifndef LAP_RUNTIME_TOOLS_LAPCRUN_COMMANDS_H
#define LAP_RUNTIME_TOOLS_LAPCRUN_COMMANDS_H

#include <cstdint>
#include <string>

namespace lap::cli {

/// `lapc-run info MODEL`: manifest, parameter table, memory.
int info(const std::string &modelPath);

struct CheckOptions {
  std::string model;
  int64_t batch = 0, seq = 0; ///< 0: the compiled maxima
  uint64_t seed = 1;
};
/// `lapc-run check MODEL`: forward and train_step on random data.
int check(const CheckOptions &options);

} // namespace lap::cli

#endif // LAP_RUNTIME_TOOLS_LAPCRUN_COMMANDS_H
