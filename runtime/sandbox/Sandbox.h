//===- Sandbox.h - Running untrusted Python programs ------------*- C++ -*-===//
//
// Generated code (HumanEval completions) runs here: the system's
// `/usr/bin/python3 -I -S -B -`, the program on its stdin (read to the end
// before it runs), in a fresh temporary directory (its working directory,
// HOME and TMPDIR) with a clean environment. Each layer is applied where
// the kernel has it:
//
//  - namespaces: new user, PID, network, mount and IPC namespaces (no
//    network at all; the program sees only its own processes, and all of
//    them die with it);
//  - PR_SET_NO_NEW_PRIVS and a seccomp filter (SeccompFilter.h): sockets
//    only of AF_UNIX, no ptrace, mount, bpf, kexec, modules, io_uring, new
//    namespaces or new sessions;
//  - Landlock (Landlock.h): system files read-only, its own directory
//    read-write, nothing else; no TCP; no signals or abstract sockets
//    beyond its own processes;
//  - rlimits: address space, CPU seconds, processes, file size, open files.
//
// A program run as root runs as `nobody`; where nobody cannot reach python3
// (a root directory only root may enter, as a chroot into a private
// directory has), it runs as root without any capability, starts no
// processes (seccomp), and needs Landlock's signal scoping (ABI 6) to be
// confined at all. The supervisor kills the whole
// process group at the deadline, or once the program's output passes its
// limit, and removes the directory. Where the kernel refuses namespaces
// (some containers) programs run with the other layers alone; the first
// Sandbox built says so once on stderr.
//
// Each run forks twice: a supervisor child (outside the new PID namespace)
// that waits for the program, which is the namespace's first process. Only
// async-signal-safe calls happen after fork, so threaded callers may run
// programs from several threads at once.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_SANDBOX_SANDBOX_H
#define LAP_RUNTIME_SANDBOX_SANDBOX_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <linux/filter.h>
#include <sys/types.h>

namespace lap::sandbox {

struct Limits {
  double seconds = 5;                  ///< wall clock, from start to kill
  uint64_t memoryBytes = 256ull << 20; ///< address space of each process
  uint64_t outputBytes = 1ull << 20;   ///< stdout + stderr; more is killed
  uint64_t fileBytes = 16ull << 20;    ///< the largest file it may write
  int processes = 16;                  ///< processes and threads at once
  int openFiles = 64;
};

/// How a program ended.
enum class Outcome {
  Exited,      ///< by itself, with exitCode
  Signalled,   ///< by signal `signal` (a CPU or memory limit, or its own)
  TimedOut,    ///< still running at the deadline: killed
  OutputLimit, ///< wrote more than Limits::outputBytes: killed
};

struct Result {
  Outcome outcome = Outcome::Exited;
  int exitCode = 0;     ///< Exited
  int signal = 0;       ///< Signalled
  std::string out, err; ///< what it wrote, at most Limits::outputBytes
  double seconds = 0;   ///< wall clock

  /// Exited with code 0.
  bool passed() const { return outcome == Outcome::Exited && exitCode == 0; }
  /// "exit 0", "exit 1", "signal 9 (Killed)", "timed out after 5 s", ...
  std::string describe(const Limits &limits) const;
};

/// Which layers confine programs on this machine.
struct Confinement {
  bool namespaces = false;
  bool seccomp = false;
  int landlockAbi = 0;   ///< 0: no Landlock
  std::string user;      ///< "nobody", "root without capabilities", "uid N"
  bool processes = true; ///< whether programs may start processes
  /// "namespaces, seccomp, Landlock ABI 7, rlimits, as nobody", or what
  /// is missing.
  std::string describe() const;
};

struct Options {
  /// Programs run without new namespaces even where the kernel allows them
  /// (what runs where it does not; for tests).
  bool withoutNamespaces = false;
  /// Root runs programs as root without capabilities even where nobody
  /// could run them (what runs where nobody cannot; for tests).
  bool keepRoot = false;
};

class Sandbox {
public:
  /// Finds the system's python3 (/usr/bin), probes the kernel and builds the
  /// seccomp filter; throws naming what is missing.
  explicit Sandbox(Limits limits = {}, Options options = {});

  /// Runs `program` and waits for its end, the deadline or its output
  /// limit; nothing it started is left running. Throws only when the run
  /// cannot be started (no temporary directory, fork fails).
  Result runPython(std::string_view program) const;

  const Limits &limits() const { return limits_; }
  const Confinement &confinement() const { return confinement_; }
  const std::string &python() const { return python_; }

private:
  Limits limits_;
  Confinement confinement_;
  std::string python_;
  std::vector<sock_filter> filter_; ///< the seccomp program
  uid_t uid_;                       ///< whom programs run as
  gid_t gid_;
  bool dropCapabilities_ = false; ///< root without capabilities
};

} // namespace lap::sandbox

#endif // LAP_RUNTIME_SANDBOX_SANDBOX_H
