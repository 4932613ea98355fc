//===- RunSignals.h - The signals that stop a run or ask for a checkpoint -===//
//
// SIGINT (a terminal), SIGTERM, SIGHUP (schedulers, a closed terminal) and
// SIGUSR2 (which mpirun forwards to every rank at once) stop a run at the
// next step boundary with a checkpoint; SIGUSR1 asks for a checkpoint there
// and the run goes on. The handlers only set flags.
//
// Where a signal frame goes matters: the JIT GEMM kernels of oneDNN 2.x
// (Debian's; fixed upstream in oneDNN 3.12) point the stack pointer into a
// heap workspace while they run, and the kernel pushes a signal frame at
// the stack pointer, over the heap. So the handlers run on a stack of their
// own, which the installing thread gets, and every other thread must block
// these signals: the threads a process keeps (OpenMP's pool, MPI's, the
// data loaders') are started under withRunSignalsBlocked.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_RUNSIGNALS_H
#define LAP_RUNTIME_TRAIN_RUNSIGNALS_H

#include <csignal>
#include <functional>
#include <vector>

namespace lap::train {

class RunSignals {
public:
  /// Installs the handlers and the calling thread's signal stack; the
  /// previous ones come back when it goes.
  RunSignals();
  ~RunSignals();
  RunSignals(const RunSignals &) = delete;
  RunSignals &operator=(const RunSignals &) = delete;

  /// The signal that asked the run to stop, or 0.
  int stop() const;
  /// Whether SIGUSR1 asked for a checkpoint since the last checkpointWritten.
  bool checkpointAsked() const;
  void checkpointWritten();

  static constexpr int kCount = 5;
  static constexpr int kSignals[kCount] = {SIGINT, SIGTERM, SIGHUP, SIGUSR2,
                                           SIGUSR1};

private:
  struct sigaction previous[kCount];
  std::vector<char> stack;
  stack_t previousStack;
};

/// Calls `startThreads` with the run's signals blocked in the calling
/// thread, so that the threads it starts inherit the block and never take
/// them; the calling thread's mask is restored after.
void withRunSignalsBlocked(const std::function<void()> &startThreads);

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_RUNSIGNALS_H
