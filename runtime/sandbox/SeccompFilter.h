//===- SeccompFilter.h - The system calls a sandbox refuses -----*- C++ -*-===//
//
// The seccomp program a sandboxed process installs before exec: everything
// a Python program needs is allowed; what reaches beyond the sandbox fails
// with EPERM (EAFNOSUPPORT for sockets other than AF_UNIX, ENOSYS for
// clone3 so that the C library falls back to clone, whose namespace flags
// are checked). Calls of other architectures (x32, i386) kill the process.
// Built with libseccomp in the parent, installed in the child with one
// prctl, so nothing between fork and exec allocates.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_SANDBOX_SECCOMPFILTER_H
#define LAP_RUNTIME_SANDBOX_SECCOMPFILTER_H

#include <vector>

#include <linux/filter.h>

namespace lap::sandbox {

/// The BPF program; without `processes`, fork, vfork and clone of anything
/// but a thread fail too. Throws when libseccomp cannot build it.
std::vector<sock_filter> seccompFilter(bool processes);

/// Installs `filter` on the calling process (needs PR_SET_NO_NEW_PRIVS);
/// false on failure. Async-signal-safe.
bool installSeccompFilter(const std::vector<sock_filter> &filter);

/// Whether this kernel takes seccomp filters.
bool seccompAvailable();

} // namespace lap::sandbox

#endif // LAP_RUNTIME_SANDBOX_SECCOMPFILTER_H
