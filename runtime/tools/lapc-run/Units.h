//===- Units.h - How lapc-run prints quantities -----------------*- C++ -*-===//

#ifndef LAP_RUNTIME_TOOLS_LAPCRUN_UNITS_H
#define LAP_RUNTIME_TOOLS_LAPCRUN_UNITS_H

#include <fmt/format.h>

#include <string>

namespace lap::cli {

/// "12.34 MiB".
inline std::string mebibytes(double bytes) {
  return fmt::format("{:.2f} MiB", bytes / (1 << 20));
}

} // namespace lap::cli

#endif // LAP_RUNTIME_TOOLS_LAPCRUN_UNITS_H
