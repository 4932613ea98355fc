//===- RunLock.cpp - One trainer per run directory --------------*- C++ -*-===//

#include "runtime/train/RunLock.h"
#include "runtime/platform/Files.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

using namespace lap::train;

RunLock::RunLock(const std::string &runDir) {
  std::string path = runDir + "/.lock";
  fd = lap::platform::openForWriting(path, O_RDWR | O_CREAT);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    char holder[32] = {};
    ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    fd = -1;
    if (error != EWOULDBLOCK)
      throw std::runtime_error(
          path + ": cannot lock the run directory: " + std::strerror(error));
    std::string pid = n > 0 ? std::string(holder, size_t(n)) : "";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' '))
      pid.pop_back();
    throw std::runtime_error(
        runDir + ": another trainer" +
        (pid.empty() ? std::string() : " (pid " + pid + ")") +
        " is using this run directory; wait for it, stop it (" +
        (pid.empty() ? std::string("SIGTERM") : "kill " + pid) +
        ": it writes a checkpoint and exits, and --resume goes on from "
        "there), or give another --run-dir");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != ssize_t(pid.size()))
    throw std::runtime_error(
        path + ": cannot write the lock: " + std::strerror(errno));
}

RunLock::~RunLock() {
  if (fd >= 0)
    ::close(fd); // releases the flock
}
