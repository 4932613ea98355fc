//===- Hash.h - The content hash of checkpoints and manifests ---*- C++ -*-===//
//
// XXH3 (64 bits): fast enough to check every tensor of a checkpoint as it is
// read (tens of GB/s), and stable across machines and versions of xxhash.
// Inlined from the header, so that nothing (model.so included) depends on
// libxxhash at run time.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_PLATFORM_HASH_H
#define LAP_RUNTIME_PLATFORM_HASH_H

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace lap::platform {

/// The XXH3-64 of `size` bytes at `data`.
inline uint64_t contentHash64(const void *data, size_t size) {
  return XXH3_64bits(data, size);
}

/// A hash as 16 lower-case hex digits.
inline std::string hashText(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", (unsigned long long)hash);
  return text;
}

/// contentHash64 as text.
inline std::string contentHash(const void *data, size_t size) {
  return hashText(contentHash64(data, size));
}

inline std::string contentHash(const std::string &bytes) {
  return contentHash(bytes.data(), bytes.size());
}

} // namespace lap::platform

#endif // LAP_RUNTIME_PLATFORM_HASH_H
