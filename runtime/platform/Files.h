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
#include <fstream>
#include <new>
#include <string>
#include <string_view>

namespace lap::platform {

/// Why a file of `mode` (a stat st_mode) is not one lap reads: "a FIFO, not
/// a regular file", "a directory, not a regular file", ...; for readers that
/// already hold a descriptor and fstat it.
std::string notRegularFile(unsigned mode);

/// The size of `path` when it is a regular file; otherwise throws
/// std::runtime_error "PATH: <why>" (strerror, or notRegularFile).
uint64_t regularFileSize(const std::string &path);

/// `path` opened for binary reading once regularFileSize accepts it (so that
/// opening never blocks on a FIFO), its size in `*size` when given; throws
/// naming the file otherwise.
std::ifstream openRegularFile(const std::string &path,
                              uint64_t *size = nullptr);

/// The whole contents of the regular file `path`, at most `maxBytes` long;
/// a larger file is refused before it is read.
std::string readRegularFile(const std::string &path, uint64_t maxBytes);

/// Writes all `size` bytes at `data` to `fd`, retrying short writes and
/// EINTR; false with errno set (EIO for a write of nothing) on failure.
bool writeAll(int fd, const void *data, size_t size);

/// The XXH3-64 (hex) of the regular file `path`'s contents, read in chunks.
std::string fileContentHash(const std::string &path);

/// A file written in pieces and put in place all at once: the pieces go to
/// a temporary file beside `path`; commit() fsyncs it, renames it over
/// `path` and fsyncs the directory, so a reader (or a crash) sees the old
/// file or the new one, never a part, and a symbolic link at `path` is
/// replaced, never followed. A device or FIFO at `path` (/dev/null, a pipe)
/// is written into instead. Destroyed before commit(), it removes the
/// temporary file and leaves `path` as it was. Errors throw naming `path`.
class AtomicFileWriter {
public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter &) = delete;
  AtomicFileWriter &operator=(const AtomicFileWriter &) = delete;

  /// Appends `size` bytes at `data`.
  void write(const void *data, size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  /// Puts the file in place (see above).
  void commit();

  const std::string &path() const { return path_; }

private:
  std::string path_, temporary_; ///< temporary_ empty: writing into path_
  int fd_ = -1;
};

/// fsyncs the directory `dir`, making the renames and creations in it
/// durable; throws naming it.
void syncDirectory(const std::string &dir);

/// Replaces `path` with `contents` all at once (AtomicFileWriter);
/// throws naming the file.
void writeFileAtomically(const std::string &path, std::string_view contents);
/// The same for code built without exceptions: "" when written, else what
/// failed with the OS's reason ("write failed: No space left on device").
std::string writeFileAtomically(const std::string &path,
                                std::string_view contents, std::nothrow_t);

/// `path` opened with `flags` (O_WRONLY or O_RDWR, with O_CREAT, O_APPEND,
/// O_TRUNC as needed), never through a symbolic link at its last component
/// (O_NOFOLLOW): files a run appends to or locks in place. Throws naming
/// the file and what it is when it cannot be opened.
int openForWriting(const std::string &path, int flags, unsigned mode = 0644);

} // namespace lap::platform

#endif // LAP_RUNTIME_PLATFORM_FILES_H
