//===- NcclCommunicator.h - Collectives between GPUs over NCCL --*- C++ -*-===//
//
// One rank per GPU. The NCCL unique id travels over `bootstrap` (MPI across
// processes and hosts); collectives take device pointers and run on the
// given CUDA stream, which each call waits for (bounded by the timeout:
// a stuck collective aborts the NCCL communicator and throws CommError).
// Uneven blocks (reduce-scatter, all-gather) are grouped reduces and
// broadcasts, as NCCL's own collectives take equal blocks.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_COMM_NCCLCOMMUNICATOR_H
#define LAP_RUNTIME_COMM_NCCLCOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

namespace lap::comm {

/// The NCCL communicator of rank bootstrap.rank() on CUDA device `device`,
/// collectives on `stream` (a cudaStream_t; null: the default stream).
/// `bootstrap` must outlive it (abort() ends the job through it).
std::unique_ptr<Communicator> ncclCommunicator(Communicator &bootstrap,
                                               int device, void *stream);

} // namespace lap::comm

#endif // LAP_RUNTIME_COMM_NCCLCOMMUNICATOR_H
