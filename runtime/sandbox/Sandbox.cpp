//===- Sandbox.cpp - Running untrusted Python programs --------------------===//

#include "runtime/sandbox/Sandbox.h"

#include "runtime/platform/Errors.h"
#include "runtime/platform/Files.h"
#include "runtime/sandbox/Landlock.h"
#include "runtime/sandbox/SeccompFilter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace lap::sandbox {

namespace {

constexpr uid_t kNobody = 65534;
constexpr int kNamespaces =
    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC;

/// What the children report on the status pipe: a setup step that failed
/// (and its errno), or the program's wait status.
struct Report {
  int32_t step; ///< 0: the program ended, `value` its wait status
  int32_t value;
};
constexpr const char *kSteps[] = {"",
                                  "make its process group",
                                  "enter its directory",
                                  "drop root",
                                  "create namespaces",
                                  "map its user",
                                  "fork",
                                  "redirect its output",
                                  "set its limits",
                                  "set no_new_privs",
                                  "apply Landlock",
                                  "install the seccomp filter",
                                  "start python3"};
enum Step : int32_t {
  kEnded,
  kGroup,
  kDirectory,
  kDropRoot,
  kUnshare,
  kUserMap,
  kFork,
  kRedirect,
  kLimits,
  kNoNewPrivs,
  kLandlock,
  kSeccomp,
  kExec
};

/// In a child: reports `step` failing with errno and ends.
[[noreturn]] void failStep(int status, Step step) {
  Report r{step, errno};
  (void)!::write(status, &r, sizeof r);
  ::_exit(125);
}

/// In a child: writes `text` to the file `path` (a /proc map).
bool writeText(const char *path, const std::string &text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::close(fd);
  return ok;
}

/// The system's Python: never one found on PATH, which may be a user's
/// shim script (pyenv) or outside what Landlock lets the program read.
std::string systemPython() {
  for (const char *candidate : {"/usr/bin/python3", "/usr/local/bin/python3"})
    if (::access(candidate, X_OK) == 0)
      return std::filesystem::canonical(candidate).string();
  platform::fail("/usr/bin/python3", "not found (the sandbox runs Python "
                                     "programs with the system's python3)");
}

/// Whether the kernel lets a child create the namespaces, as the program's
/// supervisor does (dropping root first).
bool namespacesAllowed() {
  pid_t pid = ::fork();
  if (pid < 0)
    return false;
  if (pid == 0) {
    if (::geteuid() == 0 &&
        (::setgroups(0, nullptr) || ::setgid(kNobody) || ::setuid(kNobody)))
      ::_exit(1);
    ::_exit(::unshare(kNamespaces) == 0 ? 0 : 1);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// Whether `nobody` can run `python`: not where the root directory is
/// root's alone (a chroot into a private directory).
bool nobodyReaches(const std::string &python) {
  pid_t pid = ::fork();
  if (pid < 0)
    return false;
  if (pid == 0) {
    if (::setgroups(0, nullptr) || ::setgid(kNobody) || ::setuid(kNobody))
      ::_exit(1);
    ::_exit(::access(python.c_str(), X_OK) == 0 ? 0 : 1);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/// In a child: gives up every capability for good, this process's and
/// what exec could grant uid 0 (securebits), so that root is an ordinary
/// user to the kernel's checks.
bool dropCapabilities() {
  if (::prctl(PR_SET_SECUREBITS,
              SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                  SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED) != 0)
    return false;
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap)
    ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  return ::syscall(SYS_capset, &header, data) == 0;
}

/// Tasks (processes and threads) of real user `uid` now: RLIMIT_NPROC
/// counts them all where the program shares its user namespace.
int tasksOf(uid_t uid) {
  int tasks = 0;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator("/proc", ec)) {
    struct stat st;
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos ||
        ::stat(entry.path().c_str(), &st) != 0 || st.st_uid != uid)
      continue;
    std::error_code ignored;
    for (auto it = std::filesystem::directory_iterator(entry.path() / "task",
                                                       ignored);
         it != std::filesystem::directory_iterator(); it.increment(ignored))
      ++tasks;
  }
  return tasks;
}

/// A fresh directory for one program, owned by `owner` (the user the
/// program runs as).
std::string makeWorkDir(uid_t owner, gid_t group) {
  std::string dir =
      (std::filesystem::temp_directory_path() / "lap-sandbox-XXXXXX").string();
  if (!::mkdtemp(dir.data()))
    platform::failWithErrno(dir, "cannot create the sandbox's directory");
  if (owner != ::geteuid() && ::chown(dir.c_str(), owner, group) != 0) {
    int err = errno;
    std::error_code ignored;
    std::filesystem::remove(dir, ignored);
    errno = err;
    platform::failWithErrno(dir, "cannot hand the sandbox's directory over");
  }
  return dir;
}

/// `program` in an anonymous file, read from its start: the program's
/// stdin, which python3 reads to its end before running it (so the program
/// needs no path it could not reach once it runs as nobody, and reads EOF).
int programFile(std::string_view program) {
  int fd = ::memfd_create("program.py", MFD_CLOEXEC);
  if (fd < 0 || !platform::writeAll(fd, program.data(), program.size()) ||
      ::lseek(fd, 0, SEEK_SET) != 0) {
    int err = errno;
    if (fd >= 0)
      ::close(fd);
    errno = err;
    platform::failWithErrno("sandbox", "cannot hold the program");
  }
  return fd;
}

/// A descriptor closed when this goes (-1: none).
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0)
      ::close(fd);
  }
};

struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      platform::failWithErrno("sandbox", "pipe");
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() {
    closeRead();
    closeWrite();
  }
  void closeRead() {
    if (read >= 0)
      ::close(read);
    read = -1;
  }
  void closeWrite() {
    if (write >= 0)
      ::close(write);
    write = -1;
  }
};

/// In a child: closes descriptors lo..hi (close_range, or one by one on
/// kernels before 5.9).
void closeRange(unsigned lo, unsigned hi) {
  if (lo > hi || ::syscall(SYS_close_range, lo, hi, 0) == 0)
    return;
  for (unsigned fd = lo; fd <= std::min(hi, 4096u); ++fd)
    ::close(int(fd));
}

/// In a child: closes every descriptor from 3 on but the `n` in `keep`
/// (sorted here), e.g. pipes of runs other threads are starting at once.
void closeAllBut(int *keep, int n) {
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && keep[j - 1] > keep[j]; --j)
      std::swap(keep[j - 1], keep[j]);
  unsigned next = 3;
  for (int i = 0; i < n; ++i) {
    if (keep[i] < int(next))
      continue;
    closeRange(next, unsigned(keep[i]) - 1);
    next = unsigned(keep[i]) + 1;
  }
  closeRange(next, ~0u);
}

/// Whether child `pid` has ended, leaving it to be waited for.
bool ended(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

void setLimit(int resource, uint64_t soft, uint64_t hard, int status) {
  rlimit r{rlim_t(soft), rlim_t(hard)};
  if (::setrlimit(resource, &r) != 0)
    failStep(status, kLimits);
}

} // namespace

std::string Result::describe(const Limits &limits) const {
  switch (outcome) {
  case Outcome::Exited:
    return fmt::format("exit {}", exitCode);
  case Outcome::Signalled: {
    const char *name = ::sigdescr_np(signal);
    return fmt::format("signal {} ({})", signal, name ? name : "unknown");
  }
  case Outcome::TimedOut:
    return fmt::format("timed out after {} s",
                       platform::numberText(limits.seconds));
  case Outcome::OutputLimit:
    return fmt::format("killed after {} bytes of output", limits.outputBytes);
  }
  return "";
}

std::string Confinement::describe() const {
  std::string layers = namespaces ? "namespaces" : "no namespaces";
  layers += seccomp ? ", seccomp" : ", no seccomp";
  layers += landlockAbi ? fmt::format(", Landlock ABI {}", landlockAbi)
                        : ", no Landlock";
  return layers + ", rlimits, as " + user +
         (processes ? "" : ", no new processes");
}

Sandbox::Sandbox(Limits limits, Options options)
    : limits_(limits), python_(systemPython()) {
  if (!(limits.seconds > 0) || limits.memoryBytes == 0 ||
      limits.outputBytes == 0 || limits.processes < 1 || limits.openFiles < 4)
    platform::fail("sandbox", "limits must be positive (and at least 4 "
                              "open files)");
  confinement_.namespaces = !options.withoutNamespaces && namespacesAllowed();
  confinement_.seccomp = seccompAvailable();
  confinement_.landlockAbi = landlockAbi();
  uid_ = ::geteuid();
  gid_ = ::getegid();
  confinement_.user = "uid " + std::to_string(uid_);
  if (uid_ == 0 && !options.keepRoot && nobodyReaches(python_)) {
    uid_ = gid_ = kNobody;
    confinement_.user = "nobody";
  } else if (uid_ == 0) {
    // Root without capabilities still owns root's files and processes:
    // only Landlock keeps it from them, and seccomp from forking past
    // RLIMIT_NPROC, which does not hold for root.
    if (!confinement_.seccomp || confinement_.landlockAbi < 6)
      platform::fail(
          "sandbox",
          "nobody cannot reach " + python_ +
              " here (a root directory only root may enter, as in a "
              "chroot), and programs run as root need seccomp and Landlock "
              "ABI 6 or later to be confined; this kernel has " +
              confinement_.describe());
    dropCapabilities_ = true;
    confinement_.processes = false;
    confinement_.user = "root without capabilities";
  }
  if (confinement_.seccomp)
    filter_ = seccompFilter(confinement_.processes);
  static std::once_flag said;
  if (!confinement_.namespaces || !confinement_.seccomp ||
      !confinement_.landlockAbi)
    std::call_once(said, [&] {
      fmt::print(stderr, "sandbox: {}programs run with {}\n",
                 confinement_.namespaces
                     ? ""
                     : "the kernel refuses new namespaces here: ",
                 confinement_.describe());
    });
}

Result Sandbox::runPython(std::string_view program) const {
  const bool dropRoot = ::geteuid() == 0 && uid_ != 0;
  const uid_t uid = uid_;
  const gid_t gid = gid_;
  const std::string dir = makeWorkDir(uid, gid);
  struct RemoveDir {
    const std::string &dir;
    ~RemoveDir() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } removeDir{dir};

  // Everything the children use is made before fork.
  int ruleset = confinement_.landlockAbi
                    ? landlockRuleset(confinement_.landlockAbi, dir)
                    : -1;
  Descriptor rulesetFile{ruleset};
  std::string uidMap = fmt::format("{0} {0} 1", uid);
  std::string gidMap = fmt::format("{0} {0} 1", gid);
  std::string home = "HOME=" + dir, tmp = "TMPDIR=" + dir;
  const char *argv[] = {python_.c_str(), "-I", "-S", "-B", "-", nullptr};
  const char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", home.c_str(),
                        tmp.c_str(), nullptr};
  const bool namespaces = confinement_.namespaces;
  // RLIMIT_NPROC counts the user's every task unless the program has a
  // user namespace of its own.
  const uint64_t processes =
      uint64_t(limits_.processes) + (namespaces ? 0 : tasksOf(uid));
  const uint64_t cpuSeconds = uint64_t(std::ceil(limits_.seconds)) + 1;
  Descriptor input{programFile(program)};
  Pipe out, err, status;
  const pid_t parent = ::getpid();
  const auto start = std::chrono::steady_clock::now();

  pid_t supervisor = ::fork();
  if (supervisor < 0)
    platform::failWithErrno("sandbox", "fork");
  if (supervisor == 0) {
    int s = status.write;
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(125);
    // Runs started by other threads at this moment have pipes open here,
    // whose ends must not outlive their own programs.
    int keep[] = {s, out.write, err.write, input.fd, ruleset};
    closeAllBut(keep, ruleset >= 0 ? 5 : 4);
    if (::setpgid(0, 0) != 0)
      failStep(s, kGroup);
    if (::chdir(dir.c_str()) != 0)
      failStep(s, kDirectory);
    if (dropRoot &&
        (::setgroups(0, nullptr) || ::setgid(gid) || ::setuid(uid) ||
         // /proc/self stays its own to write its maps.
         ::prctl(PR_SET_DUMPABLE, 1) != 0))
      failStep(s, kDropRoot);
    if (dropCapabilities_ && !dropCapabilities())
      failStep(s, kDropRoot);
    if (namespaces) {
      if (::unshare(kNamespaces) != 0)
        failStep(s, kUnshare);
      if (!writeText("/proc/self/setgroups", "deny") ||
          !writeText("/proc/self/uid_map", uidMap) ||
          !writeText("/proc/self/gid_map", gidMap))
        failStep(s, kUserMap);
    }
    // Rlimits and PDEATHSIG hold only for this process's children, so the
    // program is a second child: the new PID namespace's first process.
    pid_t child = ::fork();
    if (child < 0)
      failStep(s, kFork);
    if (child == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      struct sigaction byDefault {};
      byDefault.sa_handler = SIG_DFL;
      for (int sig = 1; sig < NSIG; ++sig)
        ::sigaction(sig, &byDefault, nullptr);
      if (::dup2(input.fd, 0) < 0 || ::dup2(out.write, 1) < 0 ||
          ::dup2(err.write, 2) < 0)
        failStep(s, kRedirect);
      setLimit(RLIMIT_AS, limits_.memoryBytes, limits_.memoryBytes, s);
      setLimit(RLIMIT_CPU, cpuSeconds, cpuSeconds + 1, s);
      setLimit(RLIMIT_NPROC, processes, processes, s);
      setLimit(RLIMIT_FSIZE, limits_.fileBytes, limits_.fileBytes, s);
      setLimit(RLIMIT_NOFILE, limits_.openFiles, limits_.openFiles, s);
      setLimit(RLIMIT_CORE, 0, 0, s);
      if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        failStep(s, kNoNewPrivs);
      if (ruleset >= 0 && !landlockRestrictSelf(ruleset))
        failStep(s, kLandlock);
      // Every descriptor but 0-2 and the status pipe (close-on-exec).
      closeRange(3, unsigned(s) - 1);
      closeRange(unsigned(s) + 1, ~0u);
      if (!filter_.empty() && !installSeccompFilter(filter_))
        failStep(s, kSeccomp);
      ::execve(argv[0], const_cast<char *const *>(argv),
               const_cast<char *const *>(envp));
      failStep(s, kExec);
    }
    out.closeWrite();
    err.closeWrite();
    int wstatus = 0;
    while (::waitpid(child, &wstatus, 0) < 0)
      if (errno != EINTR)
        failStep(s, kFork);
    Report ended{kEnded, wstatus};
    (void)!::write(s, &ended, sizeof ended);
    ::_exit(0);
  }

  ::setpgid(supervisor, supervisor); // before any kill of its group
  out.closeWrite();
  err.closeWrite();
  status.closeWrite();
  int pidfd = int(::syscall(SYS_pidfd_open, supervisor, 0));

  Result result;
  auto killAll = [&] { ::kill(-supervisor, SIGKILL); };
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  bool supervisorEnded = false;
  uint64_t written = 0;
  // Past the deadline by this much, output that never ends (a descendant
  // that escaped the group where nothing stops it) is no longer read.
  constexpr double kDrainSeconds = 2;
  while ((out.read >= 0 || err.read >= 0 || !supervisorEnded) &&
         elapsed() < limits_.seconds + kDrainSeconds) {
    double left = limits_.seconds - elapsed();
    if (left <= 0 && !supervisorEnded && result.outcome == Outcome::Exited) {
      result.outcome = Outcome::TimedOut;
      killAll();
    }
    pollfd fds[3] = {{out.read, POLLIN, 0},
                     {err.read, POLLIN, 0},
                     {supervisorEnded ? -1 : pidfd, POLLIN, 0}};
    int wait = left > 0 ? int(std::ceil(left * 1000)) : 100;
    if (pidfd < 0 && !supervisorEnded)
      wait = std::min(wait, 10);
    if (::poll(fds, 3, wait) < 0 && errno != EINTR)
      break;
    for (int i = 0; i < 2; ++i) {
      Pipe &pipe = i == 0 ? out : err;
      if (pipe.read < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      char buffer[65536];
      ssize_t n = ::read(pipe.read, buffer, sizeof buffer);
      if (n <= 0) {
        if (n == 0 || errno != EINTR)
          pipe.closeRead();
        continue;
      }
      std::string &text = i == 0 ? result.out : result.err;
      uint64_t keep = std::min<uint64_t>(
          uint64_t(n),
          limits_.outputBytes - std::min(written, limits_.outputBytes));
      text.append(buffer, keep);
      written += uint64_t(n);
      if (written > limits_.outputBytes && result.outcome == Outcome::Exited) {
        result.outcome = Outcome::OutputLimit;
        killAll();
      }
    }
    if (!supervisorEnded &&
        (pidfd >= 0 ? (fds[2].revents & POLLIN) != 0 : ended(supervisor))) {
      supervisorEnded = true;
      // What the program left behind (only possible without a PID
      // namespace) ends with it.
      killAll();
    }
  }
  killAll();
  int supervisorStatus = 0;
  while (::waitpid(supervisor, &supervisorStatus, 0) < 0 && errno == EINTR) {
  }
  if (pidfd >= 0)
    ::close(pidfd);
  result.seconds = elapsed();

  Report report{-1, 0};
  ssize_t got = ::read(status.read, &report, sizeof report);
  if (got == ssize_t(sizeof report) && report.step != kEnded &&
      report.step > 0 && report.step <= kExec) {
    errno = report.value;
    platform::failWithErrno("sandbox",
                            std::string("cannot ") + kSteps[report.step]);
  }
  if (result.outcome != Outcome::Exited)
    return result;
  if (got == ssize_t(sizeof report) && report.step == kEnded) {
    int w = report.value;
    if (WIFEXITED(w)) {
      result.exitCode = WEXITSTATUS(w);
    } else {
      result.outcome = Outcome::Signalled;
      result.signal = WTERMSIG(w);
    }
  } else {
    // The supervisor died first (the program signalled it).
    result.outcome = Outcome::Signalled;
    result.signal =
        WIFSIGNALED(supervisorStatus) ? WTERMSIG(supervisorStatus) : SIGKILL;
  }
  return result;
}

} // namespace lap::sandbox
