//===- SandboxTest.cpp - Hostile programs stay in the sandbox -------------===//
//
// A corpus of hostile programs, each run with and without namespaces (what
// the sandbox falls back to where the kernel refuses them), and, run as
// root, as root without capabilities (where nobody cannot reach python3):
// every one is contained, ends as a failed run by the deadline, and leaves
// nothing running. This test process is a child subreaper, so anything a
// program leaves behind would become its child; after each run it must have
// none.
//
//===----------------------------------------------------------------------===//

#include "runtime/sandbox/Sandbox.h"

#include "test/unit/TempDir.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace lap::sandbox;

namespace {

constexpr double kSeconds = 2;

Limits testLimits() {
  Limits limits;
  limits.seconds = kSeconds;
  limits.outputBytes = 256 << 10;
  return limits;
}

/// Replaces every `from` in `text` with `to`.
std::string substitute(std::string text, const std::string &from,
                       const std::string &to) {
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

/// Whether this process has a child still running, once those that are
/// dying (killed a moment ago) have been reaped.
bool childLeftRunning() {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (true) {
    int status;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0)
      continue; // a zombie: it has ended
    if (pid < 0)
      return false; // ECHILD: no children at all
    if (std::chrono::steady_clock::now() > until)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

enum class Mode { Namespaces, WithoutNamespaces, RootWithoutCapabilities };

class SandboxTest : public ::testing::TestWithParam<Mode> {
protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  }
  void SetUp() override {
    Options &options = options_;
    options.withoutNamespaces = GetParam() != Mode::Namespaces;
    options.keepRoot = GetParam() == Mode::RootWithoutCapabilities;
    if (options.keepRoot && ::geteuid() != 0)
      GTEST_SKIP() << "not run as root: programs run as this user";
    try {
      sandbox_ = std::make_unique<Sandbox>(testLimits(), options);
    } catch (const std::runtime_error &e) {
      // Root without capabilities needs Landlock ABI 6; without it the
      // sandbox refuses to run programs, which is what this checks.
      ASSERT_TRUE(options.keepRoot) << e.what();
      EXPECT_NE(std::string(e.what()).find("Landlock ABI 6"), std::string::npos)
          << e.what();
      GTEST_SKIP() << "this kernel cannot confine root's programs: "
                   << e.what();
    }
    if (GetParam() == Mode::Namespaces && !sandbox_->confinement().namespaces)
      GTEST_SKIP() << "the kernel refuses new namespaces here; the "
                      "WithoutNamespaces cases run what programs get";
  }
  void TearDown() override {
    EXPECT_FALSE(childLeftRunning()) << "a sandboxed process outlived its run";
  }

  Result run(const std::string &program) {
    Result r = sandbox_->runPython(program);
    EXPECT_LT(r.seconds, kSeconds + 1.5) << "the run overran its deadline";
    return r;
  }
  const Confinement &confinement() { return sandbox_->confinement(); }

  Options options_;
  std::unique_ptr<Sandbox> sandbox_;
};

TEST_P(SandboxTest, RunsAProgramAndReturnsItsOutput) {
  Result r = run("import sys\nprint('hello')\nprint('to stderr', "
                 "file=sys.stderr)\n");
  EXPECT_TRUE(r.passed()) << r.describe(sandbox_->limits()) << r.err;
  EXPECT_EQ(r.out, "hello\n");
  EXPECT_EQ(r.err, "to stderr\n");
}

TEST_P(SandboxTest, AFailingAssertionFails) {
  Result r = run("assert 1 + 1 == 3, 'arithmetic'\n");
  EXPECT_EQ(r.outcome, Outcome::Exited);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("AssertionError: arithmetic"), std::string::npos)
      << r.err;
}

TEST_P(SandboxTest, CannotConnectToTheNetwork) {
  // A listener on this host's loopback: the program must not reach it.
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  ASSERT_EQ(::bind(listener, (sockaddr *)&address, size), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  ASSERT_EQ(::getsockname(listener, (sockaddr *)&address, &size), 0);
  std::string port = std::to_string(ntohs(address.sin_port));

  Result r = run(substitute(R"(import socket, sys
for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    try:
        socket.create_connection((host, PORT), timeout=1)
        print("connected")
    except OSError as e:
        print("refused", e.errno)
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", PORT))
    print("sent")
except OSError as e:
    print("refused", e.errno)
sys.exit(1)
)",
                            "PORT", port));
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.out.find("connected"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("sent"), std::string::npos) << r.out;
  int accepted = ::accept(listener, nullptr, nullptr);
  EXPECT_LT(accepted, 0) << "the listener was reached";
  if (accepted >= 0)
    ::close(accepted);
  ::close(listener);
}

TEST_P(SandboxTest, AForkBombIsContained) {
  Result r = run(R"(import os
while True:
    try:
        os.fork()
    except OSError:
        pass
)");
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.outcome, Outcome::TimedOut) << r.describe(sandbox_->limits());
}

TEST_P(SandboxTest, AMemoryBombFails) {
  Result r = run("blocks = [bytearray(64 << 20) for _ in range(64)]\n");
  EXPECT_FALSE(r.passed());
  EXPECT_NE(r.err.find("MemoryError"), std::string::npos) << r.err;
}

TEST_P(SandboxTest, AnInfiniteLoopTimesOut) {
  Result r = run("while True:\n    pass\n");
  EXPECT_EQ(r.outcome, Outcome::TimedOut) << r.describe(sandbox_->limits());
  EXPECT_GE(r.seconds, kSeconds);
}

TEST_P(SandboxTest, SleepingPastTheDeadlineTimesOut) {
  Result r = run("import time\ntime.sleep(60)\n");
  EXPECT_EQ(r.outcome, Outcome::TimedOut) << r.describe(sandbox_->limits());
  EXPECT_EQ(r.describe(sandbox_->limits()), "timed out after 2 s");
}

TEST_P(SandboxTest, HugeOutputIsCutAndKilled) {
  Result r = run("import sys\nwhile True:\n    sys.stdout.write('x' * "
                 "65536)\n");
  EXPECT_EQ(r.outcome, Outcome::OutputLimit);
  EXPECT_EQ(r.out.size() + r.err.size(), sandbox_->limits().outputBytes);
}

TEST_P(SandboxTest, WhatItStartsEndsWithIt) {
  // The program ends at once, leaving a child asleep; TearDown checks
  // that the child is gone. Root's programs start no process at all.
  Result r = run(R"(import os, time
try:
    if os.fork() == 0:
        time.sleep(60)
except OSError:
    print("no new process")
print("parent done")
)");
  EXPECT_TRUE(r.passed()) << r.describe(sandbox_->limits()) << r.err;
  EXPECT_EQ(r.out, confinement().processes ? "parent done\n"
                                           : "no new process\nparent done\n");
}

TEST_P(SandboxTest, CannotWriteOutsideItsDirectory) {
  if (!confinement().landlockAbi)
    GTEST_SKIP() << "no Landlock on this kernel: files are protected only "
                    "by their permissions";
  // /tmp is writable by anyone, so only the sandbox stands in the way.
  std::string outside = "/tmp/lap-sandbox-escape-" + std::to_string(::getpid());
  Result r = run(substitute(R"(import sys
for path in ("OUTSIDE", "escaped.txt"):
    try:
        with open(path, "w") as f:
            f.write("x")
        print("wrote", path)
    except OSError as e:
        print("refused", path, e.errno)
sys.exit(1)
)",
                            "OUTSIDE", outside));
  EXPECT_FALSE(r.passed());
  EXPECT_NE(r.out.find("refused " + outside + " 13"), std::string::npos)
      << r.out << r.err;
  EXPECT_NE(r.out.find("wrote escaped.txt"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(outside));
  std::filesystem::remove(outside);
}

TEST_P(SandboxTest, CannotReadTheHostsFiles) {
  if (!confinement().landlockAbi)
    GTEST_SKIP() << "no Landlock on this kernel: files are protected only "
                    "by their permissions";
  lap::test::TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  std::string secret = dir.file("secret.txt");
  std::ofstream(secret) << "the host's secret\n";
  ::chmod(secret.c_str(), 0644);
  Result r = run(substitute(R"(import os, sys
for path in ("SECRET", "/etc/passwd", "/proc/1/environ"):
    try:
        print(open(path).read())
    except OSError as e:
        print("refused", e.errno)
for path in ("/", "/tmp", "/etc"):
    try:
        print(os.listdir(path))
    except OSError as e:
        print("refused", e.errno)
sys.exit(1)
)",
                            "SECRET", secret));
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.out.find("secret"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("root:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("["), std::string::npos) << r.out;
}

TEST_P(SandboxTest, CannotKillItsParentOrOthers) {
  // A neighbour running as the user the program runs as, which kill(-1)
  // would reach but for the PID namespace or Landlock's scoping (ABI 6).
  bool contained =
      GetParam() == Mode::Namespaces || confinement().landlockAbi >= 6;
  pid_t neighbour = ::fork();
  ASSERT_GE(neighbour, 0);
  if (neighbour == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0))
      ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  // Ended however this test ends: it holds this process's output open.
  struct Reap {
    pid_t pid;
    ~Reap() {
      int status;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
  } reap{neighbour};
  Result r = run(substitute(
      R"(import os, signal, sys
for pid in TARGETS:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError as e:
        print("refused", pid, e.errno)
sys.exit(1)
)",
      "TARGETS", contained ? "(os.getppid(), 1, -1)" : "(os.getppid(), 1)"));
  EXPECT_FALSE(r.passed());
  int status;
  EXPECT_EQ(::waitpid(neighbour, &status, WNOHANG), 0)
      << "the neighbour was killed";
  // This process, the sandbox's caller, is still here to check.
}

TEST_P(SandboxTest, CannotLeaveItsGroupOrNamespaces) {
  if (!confinement().seccomp)
    GTEST_SKIP() << "no seccomp on this kernel";
  Result r = run(R"(import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
results = []
for name, call in (("setsid", lambda: os.setsid()),
                   ("setpgid", lambda: os.setpgid(0, 0))):
    try:
        call()
        results.append(name + " allowed")
    except OSError as e:
        results.append(name + " refused")
for name, value in (("unshare", libc.unshare(0x10000000)),
                    ("ptrace", libc.ptrace(16, 1, 0, 0)),
                    ("mount", libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))):
    results.append(name + (" refused" if value == -1 else " allowed"))
print("\n".join(results))
sys.exit(1)
)");
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.out.find("allowed"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("mount refused"), std::string::npos) << r.out << r.err;
}

TEST_P(SandboxTest, RunsFromSeveralThreadsDoNotWaitForEachOther) {
  // Quick programs run from two threads while a slow one (3 s) runs from a
  // third: none may hold another run's output open, which would keep that
  // run waiting until the slow one ends. The bound leaves a loaded machine
  // 2 s to start Python.
  Limits limits = testLimits();
  limits.seconds = 10;
  Sandbox sandbox(limits, options_);
  std::atomic<bool> slowRunning{true};
  std::vector<std::string> failures;
  std::mutex lock;
  std::thread slow([&] {
    sandbox.runPython("import time\ntime.sleep(3)\n");
    slowRunning = false;
  });
  std::vector<std::thread> quick;
  for (int t = 0; t < 2; ++t)
    quick.emplace_back([&] {
      while (slowRunning) {
        Result r = sandbox.runPython("print('quick')\n");
        if (!r.passed() || r.out != "quick\n" || r.seconds > 2) {
          std::lock_guard<std::mutex> hold(lock);
          failures.push_back(r.describe(limits) + " after " +
                             std::to_string(r.seconds) + " s: " + r.out +
                             r.err);
        }
      }
    });
  slow.join();
  for (std::thread &t : quick)
    t.join();
  EXPECT_TRUE(failures.empty()) << failures.front();
}

INSTANTIATE_TEST_SUITE_P(Confinements, SandboxTest,
                         ::testing::Values(Mode::Namespaces,
                                           Mode::WithoutNamespaces,
                                           Mode::RootWithoutCapabilities),
                         [](const ::testing::TestParamInfo<Mode> &info) {
                           return info.param == Mode::Namespaces
                                      ? "WithNamespaces"
                                  : info.param == Mode::WithoutNamespaces
                                      ? "WithoutNamespaces"
                                      : "RootWithoutCapabilities";
                         });

TEST(SandboxLimits, NonPositiveLimitsAreRefused) {
  Limits limits;
  limits.seconds = 0;
  EXPECT_THROW(Sandbox{limits}, std::runtime_error);
}

} // namespace
