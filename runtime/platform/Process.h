//===- Process.h - Starting other programs and waiting for them -*- C++ -*-===//
//
// lapc-run runs lapc and its own training runs as child processes (a
// sweep). Children are started so that a threaded parent is safe (only
// async-signal-safe calls between fork and exec) and never outlive it.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_PLATFORM_PROCESS_H
#define LAP_RUNTIME_PLATFORM_PROCESS_H

#include <string>
#include <vector>

#include <sys/types.h>

namespace lap::platform {

/// The path of the running program (/proc/self/exe).
std::string executablePath();

/// Starts `argv` (argv[0] looked up on PATH), its output appended to `log`
/// (empty: this process's; never written through a link), with `env`
/// entries ("NAME=value") added to or replacing this process's environment;
/// returns its pid. The child gets SIGTERM when this process ends, however
/// it ends. Throws when it cannot be started.
pid_t spawn(const std::vector<std::string> &argv, const std::string &log,
            const std::vector<std::string> &env = {});

/// The exit status of a waitpid `status` as a shell reports it: the exit
/// code, or 128 + the signal that ended it.
int exitCode(int status);

/// Waits for child `pid` to end: its exitCode (127 if it cannot be waited
/// for).
int waitFor(pid_t pid);

} // namespace lap::platform

#endif // LAP_RUNTIME_PLATFORM_PROCESS_H
