//===- Safetensors.h - Hugging Face's safetensors files ---------*- C++ -*-===//
//
// The tensor file format the rest of the ecosystem reads: an 8-byte
// little-endian header length, a JSON header (each tensor's dtype, shape
// and byte range, and a "__metadata__" object of strings), then the raw
// little-endian data, so a file opens in Python with `safetensors` or
// `torch` without lap. lap adds every tensor's XXH3 checksum to the
// metadata ("lap.xxh3") and verifies it on reading, so a flipped byte is an
// error, not a silently different model. Every failure is a
// std::runtime_error naming the file.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_SAFETENSORS_H
#define LAP_RUNTIME_DATA_SAFETENSORS_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace lap {

/// The element types lap stores: F32 for parameters and optimizer moments,
/// I64 and U8 for counters and opaque RNG state.
enum class DType { F32, I64, U8 };

/// A shape as messages print it: "[2, 3]".
std::string shapeText(const std::vector<int64_t> &shape);

/// The safetensors name of a dtype ("F32", "I64", "U8").
const char *dtypeName(DType dtype);
/// The size of one element in bytes.
size_t dtypeSize(DType dtype);

/// A tensor to write: borrowed data, laid out row-major as `shape` says.
struct TensorRef {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  const void *data = nullptr;

  TensorRef() = default;
  TensorRef(std::string name, std::vector<int64_t> shape, const float *data)
      : name(std::move(name)), shape(std::move(shape)), dtype(DType::F32),
        data(data) {}
  TensorRef(std::string name, std::vector<int64_t> shape, const int64_t *data)
      : name(std::move(name)), shape(std::move(shape)), dtype(DType::I64),
        data(data) {}
  TensorRef(std::string name, std::vector<int64_t> shape, const uint8_t *data)
      : name(std::move(name)), shape(std::move(shape)), dtype(DType::U8),
        data(data) {}
};

/// A tensor read back. Exactly one of f32/i64/u8 holds the data, the one
/// `dtype` names.
struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<float> f32;
  std::vector<int64_t> i64;
  std::vector<uint8_t> u8;

  int64_t elements() const;
};

/// The `__metadata__` key of the tensors' checksums: a JSON object, as a
/// string, of tensor name to its data's XXH3-64 in hex.
inline constexpr const char *kChecksumsKey = "lap.xxh3";

/// The contents of a safetensors file.
struct SafetensorsFile {
  std::vector<std::string> order; ///< Tensor names in file order.
  std::map<std::string, Tensor> tensors;
  /// The header's `__metadata__`, without kChecksumsKey.
  std::map<std::string, std::string> metadata;
  /// Whether the file carried checksums (all of which matched: a mismatch
  /// is an error).
  bool checksummed = false;
};

/// Writes `tensors`, in the order given, `metadata` and the tensors'
/// checksums (the header's "__metadata__") to `path`, all at once
/// (platform::AtomicFileWriter).
void writeSafetensors(const std::string &path,
                      const std::vector<TensorRef> &tensors,
                      const std::map<std::string, std::string> &metadata = {});

/// Reads and validates a safetensors file: its size, the header length, the
/// JSON, every dtype, shape and offset range (in bounds, contiguous, no
/// overlaps, matching the shape, covering the data section exactly), and
/// every tensor against its checksum when the file has them. `checkHeader`,
/// when given, sees the tensors' names, dtypes and shapes (no data yet), so
/// a caller can refuse a file by throwing before gigabytes of it are read.
SafetensorsFile readSafetensors(
    const std::string &path,
    const std::function<void(const SafetensorsFile &)> &checkHeader = {});

} // namespace lap

#endif // LAP_RUNTIME_DATA_SAFETENSORS_H
