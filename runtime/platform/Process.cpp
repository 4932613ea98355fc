//===- Process.cpp - Starting other programs and waiting for them ---------===//

#include "runtime/platform/Process.h"

#include "runtime/platform/Errors.h"
#include "runtime/platform/Files.h"

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <string_view>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace lap::platform {

std::string executablePath() {
  return std::filesystem::read_symlink("/proc/self/exe").string();
}

pid_t spawn(const std::vector<std::string> &argv, const std::string &log,
            const std::vector<std::string> &env) {
  // Everything the child needs is made before fork: the parent may have
  // threads, so the child calls only async-signal-safe functions.
  std::vector<char *> args, envp;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  auto nameOf = [](std::string_view entry) {
    return entry.substr(0, entry.find('=') + 1);
  };
  for (char **e = environ; *e; ++e) {
    bool replaced = false;
    for (const std::string &x : env)
      replaced |= nameOf(*e) == nameOf(x);
    if (!replaced)
      envp.push_back(*e);
  }
  for (const std::string &x : env)
    envp.push_back(const_cast<char *>(x.c_str()));
  envp.push_back(nullptr);
  int output =
      log.empty() ? -1 : openForWriting(log, O_WRONLY | O_CREAT | O_APPEND);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    if (output >= 0)
      ::close(output);
    errno = err;
    failWithErrno(argv.empty() ? "spawn" : argv[0], "cannot start it: fork");
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) // the parent ended before the line above
      ::_exit(128 + SIGTERM);
    if (output >= 0) {
      ::dup2(output, 1);
      ::dup2(output, 2);
      ::close(output);
    }
    ::execvpe(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  if (output >= 0)
    ::close(output);
  return pid;
}

int exitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int waitFor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return 127;
  return exitCode(status);
}

} // namespace lap::platform
