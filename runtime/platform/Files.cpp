//===- Files.cpp - Opening only what can be read to its end ---------------===//

#include "runtime/platform/Files.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace lap::platform {

namespace {

[[noreturn]] void refuse(const std::string &path, const std::string &what,
                         const std::string &why) {
  throw std::runtime_error(path + ": " + (what.empty() ? "" : what + ": ") +
                           why);
}

const char *kindOf(mode_t mode) {
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a plain file";
}

} // namespace

uint64_t regularFileSize(const std::string &path, const std::string &what) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    refuse(path, what, std::string("cannot open: ") + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    refuse(path, what,
           std::string(kindOf(info.st_mode)) + ", not a regular file");
  return uint64_t(info.st_size);
}

std::string readRegularFile(const std::string &path, const std::string &what,
                            uint64_t maxBytes) {
  // O_NONBLOCK: a FIFO swapped in after the check must not block the open.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    refuse(path, what, std::string("cannot open: ") + std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    int err = errno;
    ::close(fd);
    refuse(path, what,
           S_ISREG(info.st_mode)
               ? std::string("cannot stat: ") + std::strerror(err)
               : std::string(kindOf(info.st_mode)) + ", not a regular file");
  }
  if (uint64_t(info.st_size) > maxBytes) {
    ::close(fd);
    refuse(path, what,
           std::to_string(info.st_size) + " bytes, more than the " +
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
      refuse(path, what,
             err ? std::string("read failed: ") + std::strerror(err)
                 : std::string("the file shrank while it was read"));
    }
    done += size_t(n);
  }
  ::close(fd);
  return text;
}

} // namespace lap::platform
