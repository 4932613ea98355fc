//===- RunSignals.cpp - The signals that stop a run or ask for a checkpoint ===//

#include "runtime/train/RunSignals.h"

#include <pthread.h>

using namespace lap::train;

namespace {

volatile std::sig_atomic_t stopSignal = 0;          // the signal that stops
volatile std::sig_atomic_t checkpointRequested = 0; // SIGUSR1
extern "C" void onStop(int signal) { stopSignal = signal; }
extern "C" void onCheckpoint(int) { checkpointRequested = 1; }

sigset_t runSignalSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal : RunSignals::kSignals)
    sigaddset(&set, signal);
  return set;
}

} // namespace

RunSignals::RunSignals() : stack(size_t(1) << 16) {
  stopSignal = 0;
  checkpointRequested = 0;
  stack_t own = {};
  own.ss_sp = stack.data();
  own.ss_size = stack.size();
  sigaltstack(&own, &previousStack);
  for (int i = 0; i < kCount; ++i) {
    struct sigaction action = {};
    action.sa_handler = kSignals[i] == SIGUSR1 ? onCheckpoint : onStop;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART | SA_ONSTACK;
    sigaction(kSignals[i], &action, &previous[i]);
  }
}

RunSignals::~RunSignals() {
  for (int i = 0; i < kCount; ++i)
    sigaction(kSignals[i], &previous[i], nullptr);
  sigaltstack(&previousStack, nullptr);
}

int RunSignals::stop() const { return stopSignal; }
bool RunSignals::checkpointAsked() const { return checkpointRequested != 0; }
void RunSignals::checkpointWritten() { checkpointRequested = 0; }

void lap::train::withRunSignalsBlocked(
    const std::function<void()> &startThreads) {
  sigset_t block = runSignalSet(), before;
  pthread_sigmask(SIG_BLOCK, &block, &before);
  try {
    startThreads();
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}
