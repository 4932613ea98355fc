//===- Files.h - Opening only what can be read to its end -------*- C++ -*-===//
//
// Every file lap reads (specs, token shards, IDX files, tokenizers, model
// libraries, checkpoints) must be a regular file: a FIFO would block the
// reader forever and a device such as /dev/zero never ends. These checks
// name the file and what it is instead.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_PLATFORM_FILES_H
#define LAP_RUNTIME_PLATFORM_FILES_H

#include <cstdint>
#include <string>

namespace lap::platform {

/// The size of `path` when it is a regular file; otherwise throws
/// std::runtime_error "PATH: <why>" (strerror, or "a FIFO, not a regular
/// file", "a directory, ..."). `what` names the file's role in the message
/// ("token shard").
uint64_t regularFileSize(const std::string &path, const std::string &what);

/// The whole contents of the regular file `path`, at most `maxBytes` long;
/// a larger file is refused before it is read.
std::string readRegularFile(const std::string &path, const std::string &what,
                            uint64_t maxBytes);

} // namespace lap::platform

#endif // LAP_RUNTIME_PLATFORM_FILES_H
