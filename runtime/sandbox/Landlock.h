//===- Landlock.h - Filesystem, network and signal confinement --*- C++ -*-===//
//
// A Landlock ruleset for a sandboxed program: the system's files (/usr and
// what the dynamic loader reads) readable and executable, its own directory
// readable and writable, every other path refused. Newer kernels' rights are
// used where the kernel has them: truncation (ABI 3), TCP bind and connect
// (ABI 4, refused outright), signals and abstract UNIX sockets only within
// the sandbox (ABI 6). The constants Debian 12's headers lack are defined in
// Landlock.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_SANDBOX_LANDLOCK_H
#define LAP_RUNTIME_SANDBOX_LANDLOCK_H

#include <string>

namespace lap::sandbox {

/// The Landlock ABI version this kernel offers; 0 where it has none (not
/// built in, or not among the enabled security modules).
int landlockAbi();

/// A ruleset for ABI `abi` (>= 1) as above, with `workDir` read-write;
/// returns its descriptor (close-on-exec). Throws naming what failed.
int landlockRuleset(int abi, const std::string &workDir);

/// Confines the calling process to `ruleset` (needs PR_SET_NO_NEW_PRIVS);
/// false on failure. Async-signal-safe: for use between fork and exec.
bool landlockRestrictSelf(int ruleset);

} // namespace lap::sandbox

#endif // LAP_RUNTIME_SANDBOX_LANDLOCK_H
