//===- Files.cpp - Opening only what can be read to its end ---------------===//

#include "runtime/platform/Files.h"
#include "runtime/platform/Errors.h"
#include "runtime/platform/Hash.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace lap::platform {

std::string notRegularFile(unsigned mode) {
  const char *kind = S_ISFIFO(mode)   ? "a FIFO"
                     : S_ISDIR(mode)  ? "a directory"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                     : S_ISSOCK(mode) ? "a socket"
                                      : "not a plain file";
  return std::string(kind) + ", not a regular file";
}

uint64_t regularFileSize(const std::string &path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    fail(path, notRegularFile(info.st_mode));
  return uint64_t(info.st_size);
}

std::ifstream openRegularFile(const std::string &path, uint64_t *size) {
  uint64_t bytes = regularFileSize(path);
  if (size)
    *size = bytes;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  return in;
}

std::string readRegularFile(const std::string &path, uint64_t maxBytes) {
  // O_NONBLOCK: a FIFO swapped in after the check must not block the open.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int err = errno;
    ::close(fd);
    fail(path, std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    fail(path, notRegularFile(info.st_mode));
  }
  if (uint64_t(info.st_size) > maxBytes) {
    ::close(fd);
    fail(path, std::to_string(info.st_size) + " bytes, more than the " +
                   std::to_string(maxBytes) + " such a file may have");
  }
  std::string text(size_t(info.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int err = n < 0 ? errno : 0;
      ::close(fd);
      fail(path, err ? std::string("read failed: ") + std::strerror(err)
                     : std::string("the file shrank while it was read"));
    }
    done += size_t(n);
  }
  ::close(fd);
  return text;
}

bool writeAll(int fd, const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = EIO;
      return false;
    }
    p += n;
    size -= size_t(n);
  }
  return true;
}

std::string fileContentHash(const std::string &path) {
  std::ifstream in = openRegularFile(path);
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(
      XXH3_createState(), XXH3_freeState);
  XXH3_64bits_reset(state.get());
  std::vector<char> chunk(size_t(1) << 20);
  while (in) {
    in.read(chunk.data(), std::streamsize(chunk.size()));
    XXH3_64bits_update(state.get(), chunk.data(), size_t(in.gcount()));
  }
  if (in.bad())
    fail(path, std::string("read failed: ") + std::strerror(errno));
  return hashText(XXH3_64bits_digest(state.get()));
}

namespace {

/// Whether `path` is a device, FIFO or socket (-o /dev/null, a pipe): one is
/// written into, since renaming over it would put a regular file in its
/// place.
bool isSpecialFile(const std::string &path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0 &&
         (S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode) ||
          S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode));
}

/// fsyncs directory `dir`: 0, or the errno of what failed.
int fsyncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  int err = ::fsync(fd) != 0 ? errno : 0;
  ::close(fd);
  return err;
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

} // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  if (isSpecialFile(path_)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd_ < 0)
      failWithErrno(path_, "cannot open for writing");
    return;
  }
  temporary_ = path_ + ".tmp.XXXXXX";
  fd_ = ::mkstemp(temporary_.data());
  if (fd_ < 0) {
    temporary_.clear();
    failWithErrno(path_, "cannot create a temporary file beside it");
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!temporary_.empty())
    ::unlink(temporary_.c_str());
}

void AtomicFileWriter::write(const void *data, size_t size) {
  if (fd_ < 0)
    fail(path_, "written after it was committed");
  if (!writeAll(fd_, data, size))
    failWithErrno(path_, "write failed");
}

void AtomicFileWriter::commit() {
  if (fd_ < 0)
    fail(path_, "committed twice");
  if (temporary_.empty()) { // a device or FIFO: written in place
    if (::close(std::exchange(fd_, -1)) != 0)
      failWithErrno(path_, "close failed");
    return;
  }
  if (::fchmod(fd_, 0644) != 0)
    failWithErrno(path_, "cannot set its permissions");
  if (::fsync(fd_) != 0)
    failWithErrno(path_, "fsync failed");
  // A full disk can show first at close on some file systems.
  if (::close(std::exchange(fd_, -1)) != 0)
    failWithErrno(path_, "close failed");
  // rename replaces a link at `path` itself, not the file it points to.
  if (::rename(temporary_.c_str(), path_.c_str()) != 0)
    failWithErrno(path_, "cannot rename into place");
  temporary_.clear();
  // The rename's own durability: the data already is durable, so a
  // directory that cannot be synced is no error.
  fsyncDirectory(directoryOf(path_));
}

void syncDirectory(const std::string &dir) {
  if (int err = fsyncDirectory(dir)) {
    errno = err;
    failWithErrno(dir, "cannot fsync the directory");
  }
}

void writeFileAtomically(const std::string &path, std::string_view contents) {
  AtomicFileWriter file(path);
  file.write(contents);
  file.commit();
}

std::string writeFileAtomically(const std::string &path,
                                std::string_view contents, std::nothrow_t) {
  try {
    writeFileAtomically(path, contents);
    return "";
  } catch (const std::exception &e) {
    // fail() wrote "PATH: WHY"; the caller names the file itself.
    std::string what = e.what();
    return what.compare(0, path.size() + 2, path + ": ") == 0
               ? what.substr(path.size() + 2)
               : what;
  }
}

int openForWriting(const std::string &path, int flags, unsigned mode) {
  int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd >= 0)
    return fd;
  int err = errno;
  struct stat info;
  if (err == ELOOP && ::lstat(path.c_str(), &info) == 0 &&
      S_ISLNK(info.st_mode))
    fail(path, "is a symbolic link; lap does not write through links "
               "(remove it, or choose another path)");
  fail(path, std::string("cannot open for writing: ") + std::strerror(err));
}

} // namespace lap::platform
