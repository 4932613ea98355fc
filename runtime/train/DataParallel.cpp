//===- DataParallel.cpp - The ranks of a run sharing one step ---*- C++ -*-===//

#include "runtime/train/DataParallel.h"

#include <algorithm>
#include <stdexcept>

using namespace lap;
using namespace lap::train;

namespace {

void sendValue(comm::Communicator &comm, int64_t value, int to) {
  comm.send(&value, 8, to);
}
int64_t receiveValue(comm::Communicator &comm, int from) {
  int64_t value = 0;
  comm.receive(&value, 8, from);
  return value;
}
void sendText(comm::Communicator &comm, const std::string &text, int to) {
  sendValue(comm, int64_t(text.size()), to);
  comm.send(text.data(), int64_t(text.size()), to);
}
std::string receiveText(comm::Communicator &comm, int from) {
  std::string text(size_t(receiveValue(comm, from)), '\0');
  comm.receive(text.data(), int64_t(text.size()), from);
  return text;
}

} // namespace

DataParallel::DataParallel(comm::Communicator &comm,
                           std::vector<TensorInfo> tensors, int64_t elements,
                           bool zero, device::Device &device,
                           comm::Communicator *onDevice)
    : communicator(comm), device(device),
      buffers(zero || comm.size() > 1 ? (onDevice ? onDevice : &comm)
                                      : nullptr),
      table(std::move(tensors)), elements(elements), sharded(zero) {
  std::sort(table.begin(), table.end(),
            [](const TensorInfo &a, const TensorInfo &b) {
              return a.offset < b.offset;
            });
  if (!sharded) {
    mine = table;
    return;
  }
  // Tensor t goes to the rank whose equal part of the buffer holds its
  // middle: contiguous shards of about elements / ranks each.
  int64_t ranks = comm.size();
  std::vector<int64_t> begin(size_t(ranks) + 1, elements);
  begin[0] = 0;
  int64_t previous = 0;
  for (size_t i = 0; i < table.size(); ++i) {
    const TensorInfo &t = table[i];
    int64_t owner =
        std::min<int64_t>(ranks - 1, (t.offset + t.elements / 2) * ranks /
                                         std::max<int64_t>(1, elements));
    for (int64_t r = previous + 1; r <= owner; ++r)
      begin[size_t(r)] = t.offset;
    previous = owner;
    if (owner == comm.rank()) {
      if (mine.empty())
        firstMine = i;
      mine.push_back(t);
    }
  }
  for (int64_t r = 0; r < ranks; ++r)
    shardElements.push_back(begin[size_t(r) + 1] - begin[size_t(r)]);
  shardBegin = begin[size_t(comm.rank())];
}

float *DataParallel::reduce(float *accumulated, float *scratch) {
  if (!sharded) {
    if (buffers)
      buffers->allReduceSum(accumulated, elements);
    return accumulated;
  }
  buffers->reduceScatter(accumulated, scratch + shardBegin, shardElements,
                         comm::DataType::F32);
  return scratch;
}

std::vector<double> DataParallel::squares(const float *reduced) const {
  return squaredNormPartials(reduced, mine, device);
}

std::optional<std::string>
DataParallel::firstNonFinite(const std::vector<double> &squares) const {
  std::optional<size_t> bad = firstNonFiniteTensor(squares, mine);
  if (!sharded)
    return bad ? std::optional<std::string>(table[*bad].name) : std::nullopt;
  // The smallest index of the whole table: the largest of size - index.
  int64_t n = int64_t(table.size());
  int64_t key = bad ? n - int64_t(firstMine + *bad) : 0;
  communicator.allReduceMax(&key, 1);
  return key ? std::optional<std::string>(table[size_t(n - key)].name)
             : std::nullopt;
}

double DataParallel::clip(float *reduced, std::vector<double> partials,
                          double maxNorm) const {
  if (sharded) {
    // How many partial sums each shard has is fixed: learn it once.
    if (partialCounts.empty()) {
      partialCounts.assign(size_t(communicator.size()), 0);
      partialCounts[size_t(communicator.rank())] = int64_t(partials.size());
      communicator.allGather(partialCounts.data(),
                             std::vector<int64_t>(partialCounts.size(), 1),
                             comm::DataType::I64);
    }
    std::vector<double> all;
    for (size_t r = 0; r < partialCounts.size(); ++r) {
      if (r == size_t(communicator.rank()))
        all.insert(all.end(), partials.begin(), partials.end());
      else
        all.resize(all.size() + size_t(partialCounts[r]));
    }
    communicator.allGather(all.data(), partialCounts, comm::DataType::F64);
    partials = std::move(all);
  }
  double norm = normOfPartials(partials);
  clipToNorm(reduced, mine, norm, maxNorm, device);
  return norm;
}

void DataParallel::gatherParameters(float *params) const {
  if (sharded)
    buffers->allGather(params, shardElements, comm::DataType::F32);
}

void DataParallel::broadcastParameters(float *params, int64_t count) const {
  if (buffers)
    buffers->broadcast(params, count * 4, 0);
}

namespace {

/// A rank other than 0 tells rank 0 each tensor of its optimizer state, by
/// name and size, and then moves its values through host memory (`move`:
/// a send or a receive; `toDevice`: whether they arrive).
template <typename Move>
void announceState(comm::Communicator &comm, Optimizer &optimizer,
                   bool toDevice, Move &&move) {
  device::Device &device = optimizer.device();
  auto state = optimizer.state();
  sendValue(comm, int64_t(state.size()), 0);
  std::vector<float> staged;
  for (const StateTensor &t : state) {
    sendText(comm, t.name, 0);
    sendValue(comm, t.size, 0);
    if (device.onHost()) {
      move(t.data, t.size * 4);
      continue;
    }
    staged.resize(size_t(t.size));
    if (!toDevice)
      device.download(staged.data(), t.data, t.size);
    move(staged.data(), t.size * 4);
    if (toDevice)
      device.upload(t.data, staged.data(), t.size);
  }
}

/// Rank 0 hears every other rank's announcements: f(rank, name, size).
template <typename F> void hearStates(comm::Communicator &comm, F &&f) {
  for (int from = 1; from < comm.size(); ++from)
    for (int64_t n = receiveValue(comm, from); n > 0; --n) {
      std::string name = receiveText(comm, from);
      f(from, name, size_t(receiveValue(comm, from)));
    }
}

} // namespace

std::vector<std::pair<std::string, std::vector<float>>>
DataParallel::collectState(Optimizer &optimizer) const {
  std::vector<std::pair<std::string, std::vector<float>>> others;
  if (!sharded)
    return others;
  if (communicator.rank() != 0) {
    announceState(
        communicator, optimizer, false,
        [&](float *data, int64_t bytes) { communicator.send(data, bytes, 0); });
    return others;
  }
  hearStates(communicator, [&](int from, const std::string &name, size_t size) {
    std::vector<float> values(size);
    communicator.receive(values.data(), int64_t(size) * 4, from);
    others.emplace_back(name, std::move(values));
  });
  return others;
}

void DataParallel::distributeState(Optimizer &optimizer,
                                   const LoadedCheckpoint *checkpoint) const {
  if (communicator.rank() != 0) {
    announceState(communicator, optimizer, true,
                  [&](float *data, int64_t bytes) {
                    communicator.receive(data, bytes, 0);
                  });
    return;
  }
  auto stateOf = [&](const std::string &name, size_t size) {
    auto it = checkpoint->optimizer.tensors.find(name);
    if (it == checkpoint->optimizer.tensors.end() ||
        it->second.f32.size() != size)
      throw std::runtime_error(checkpoint->path +
                               "/optimizer.safetensors: no state '" + name +
                               "' of " + std::to_string(size) + " values");
    return &it->second.f32;
  };
  for (const StateTensor &t : optimizer.state())
    device.upload(t.data, stateOf(t.name, size_t(t.size))->data(), t.size);
  hearStates(communicator, [&](int to, const std::string &name, size_t size) {
    communicator.send(stateOf(name, size)->data(), int64_t(size) * 4, to);
  });
}
