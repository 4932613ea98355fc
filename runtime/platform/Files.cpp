//===- Files.cpp - Opening only what can be read to its end ---------------===//

#include "runtime/platform/Files.h"
#include "runtime/platform/Hash.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace lap::platform {

namespace {

[[noreturn]] void refuse(const std::string &path, const std::string &why) {
  throw std::runtime_error(path + ": " + why);
}

} // namespace

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
    refuse(path, std::string("cannot open: ") + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    refuse(path, notRegularFile(info.st_mode));
  return uint64_t(info.st_size);
}

std::ifstream openRegularFile(const std::string &path, uint64_t *size) {
  uint64_t bytes = regularFileSize(path);
  if (size)
    *size = bytes;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    refuse(path, std::string("cannot open: ") + std::strerror(errno));
  return in;
}

std::string readRegularFile(const std::string &path, uint64_t maxBytes) {
  // O_NONBLOCK: a FIFO swapped in after the check must not block the open.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    refuse(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int err = errno;
    ::close(fd);
    refuse(path, std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    refuse(path, notRegularFile(info.st_mode));
  }
  if (uint64_t(info.st_size) > maxBytes) {
    ::close(fd);
    refuse(path, std::to_string(info.st_size) + " bytes, more than the " +
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
      refuse(path, err ? std::string("read failed: ") + std::strerror(err)
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
    refuse(path, std::string("read failed: ") + std::strerror(errno));
  return hashText(XXH3_64bits_digest(state.get()));
}

std::string writeFileAtomically(const std::string &path,
                                std::string_view contents, std::nothrow_t) {
  // A device, FIFO or socket the user named (-o /dev/null, a pipe) is
  // written into: renaming over it would put a regular file in its place.
  struct stat info;
  if (::lstat(path.c_str(), &info) == 0 &&
      (S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode) ||
       S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode))) {
    int fd = ::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      return std::string("cannot open for writing: ") + std::strerror(errno);
    bool written = writeAll(fd, contents.data(), contents.size());
    int err = errno;
    ::close(fd);
    return written ? "" : std::string("write failed: ") + std::strerror(err);
  }
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    return std::string("cannot create a temporary file beside it: ") +
           std::strerror(errno);
  auto failed = [&](const char *what) {
    int err = errno;
    if (fd >= 0)
      ::close(fd);
    ::unlink(tmp.c_str());
    return std::string(what) + ": " + std::strerror(err);
  };
  if (!writeAll(fd, contents.data(), contents.size()))
    return failed("write failed");
  if (::fchmod(fd, 0644) != 0)
    return failed("cannot set its permissions");
  if (::fsync(fd) != 0)
    return failed("fsync failed");
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0)
    return failed("close failed");
  // rename replaces a link at `path` itself, not the file it points to.
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return failed("cannot rename into place");
  return "";
}

void writeFileAtomically(const std::string &path, std::string_view contents) {
  if (std::string why = writeFileAtomically(path, contents, std::nothrow);
      !why.empty())
    refuse(path, why);
}

int openForWriting(const std::string &path, int flags, unsigned mode) {
  int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd >= 0)
    return fd;
  int err = errno;
  struct stat info;
  if (err == ELOOP && ::lstat(path.c_str(), &info) == 0 &&
      S_ISLNK(info.st_mode))
    refuse(path, "is a symbolic link; lap does not write through links "
                 "(remove it, or choose another path)");
  refuse(path, std::string("cannot open for writing: ") + std::strerror(err));
}

} // namespace lap::platform
