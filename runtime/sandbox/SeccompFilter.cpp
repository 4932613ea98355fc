//===- SeccompFilter.cpp - The system calls a sandbox refuses -------------===//

#include "runtime/sandbox/SeccompFilter.h"

#include "runtime/platform/Errors.h"

#include <cerrno>
#include <memory>

#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace lap::sandbox {

namespace {

/// Calls that reach the kernel's or other processes' state: debugging,
/// mounts, BPF, modules, kexec, keys, io_uring (which seccomp cannot see
/// into), namespaces, sessions and process groups (the supervisor kills
/// the program's group), clocks and the like.
constexpr const char *kRefused[] = {"ptrace",
                                    "process_vm_readv",
                                    "process_vm_writev",
                                    "kcmp",
                                    "pidfd_getfd",
                                    "mount",
                                    "umount2",
                                    "pivot_root",
                                    "chroot",
                                    "move_mount",
                                    "open_tree",
                                    "fsopen",
                                    "fsconfig",
                                    "fsmount",
                                    "fspick",
                                    "mount_setattr",
                                    "bpf",
                                    "perf_event_open",
                                    "kexec_load",
                                    "kexec_file_load",
                                    "init_module",
                                    "finit_module",
                                    "delete_module",
                                    "reboot",
                                    "swapon",
                                    "swapoff",
                                    "acct",
                                    "quotactl",
                                    "syslog",
                                    "add_key",
                                    "request_key",
                                    "keyctl",
                                    "userfaultfd",
                                    "io_uring_setup",
                                    "io_uring_enter",
                                    "io_uring_register",
                                    "setns",
                                    "unshare",
                                    "setsid",
                                    "setpgid",
                                    "open_by_handle_at",
                                    "name_to_handle_at",
                                    "fanotify_init",
                                    "settimeofday",
                                    "clock_settime",
                                    "clock_adjtime",
                                    "adjtimex",
                                    "sethostname",
                                    "setdomainname",
                                    "iopl",
                                    "ioperm",
                                    "vhangup",
                                    "personality",
                                    "lookup_dcookie",
                                    "nfsservctl"};

struct ContextDeleter {
  void operator()(void *ctx) const { seccomp_release(ctx); }
};

void check(int rc, const char *what) {
  if (rc < 0) {
    errno = -rc;
    platform::failWithErrno("seccomp", what);
  }
}

} // namespace

std::vector<sock_filter> seccompFilter(bool processes) {
  std::unique_ptr<void, ContextDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx)
    platform::fail("seccomp", "cannot start a filter");
  void *c = ctx.get();
  // The program runs under no_new_privs, set by the child itself.
  check(seccomp_attr_set(c, SCMP_FLTATR_CTL_NNP, 0), "attribute");
  for (const char *name : kRefused) {
    int call = seccomp_syscall_resolve_name(name);
    if (call != __NR_SCMP_ERROR) // older libseccomp: a call it cannot name
      check(seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), call, 0), name);
  }
  for (int call : {SCMP_SYS(socket), SCMP_SYS(socketpair)})
    check(seccomp_rule_add(c, SCMP_ACT_ERRNO(EAFNOSUPPORT), call, 1,
                           SCMP_A0(SCMP_CMP_NE, AF_UNIX)),
          "socket");
  check(seccomp_rule_add(c, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0),
        "clone3");
  for (unsigned long flag :
       {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWIPC,
        CLONE_NEWUTS, CLONE_NEWCGROUP})
    check(seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                           SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)),
          "clone");
  if (!processes) {
    for (int call : {SCMP_SYS(fork), SCMP_SYS(vfork)})
      check(seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), call, 0), "fork");
    check(seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                           SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)),
          "clone");
  }

  int fd = ::memfd_create("lap-seccomp", MFD_CLOEXEC);
  if (fd < 0)
    platform::failWithErrno("seccomp", "memfd_create");
  int rc = seccomp_export_bpf(c, fd);
  off_t size = rc == 0 ? ::lseek(fd, 0, SEEK_END) : -1;
  std::vector<sock_filter> program(size > 0 ? size / sizeof(sock_filter) : 0);
  bool read = size > 0 &&
              ::pread(fd, program.data(), size, 0) == ssize_t(size) &&
              size % sizeof(sock_filter) == 0;
  ::close(fd);
  check(rc, "cannot export the filter");
  if (!read)
    platform::fail("seccomp", "cannot read back the exported filter");
  return program;
}

bool installSeccompFilter(const std::vector<sock_filter> &filter) {
  sock_fprog program{static_cast<unsigned short>(filter.size()),
                     const_cast<sock_filter *>(filter.data())};
  return ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

bool seccompAvailable() { return ::prctl(PR_GET_SECCOMP) >= 0; }

} // namespace lap::sandbox
