//===- RunLock.h - One trainer per run directory ----------------*- C++ -*-===//
//
// A run directory (checkpoints, metrics.jsonl, summary.json) belongs to one
// trainer at a time: an advisory lock (flock) on RUNDIR/.lock, held while
// the RunLock lives and released by the kernel when the process dies, so a
// crashed run never leaves a stale lock. The file holds the holder's pid,
// for the message a second trainer gets.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_RUNLOCK_H
#define LAP_RUNTIME_TRAIN_RUNLOCK_H

#include <string>

namespace lap::train {

class RunLock {
public:
  /// Locks `runDir` (which must exist); throws, naming the directory and
  /// the other trainer's pid, when another process holds it.
  explicit RunLock(const std::string &runDir);
  ~RunLock();
  RunLock(const RunLock &) = delete;
  RunLock &operator=(const RunLock &) = delete;

private:
  int fd = -1;
};

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_RUNLOCK_H
