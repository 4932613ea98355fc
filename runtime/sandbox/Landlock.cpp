//===- Landlock.cpp - Filesystem, network and signal confinement ----------===//

#include "runtime/sandbox/Landlock.h"

#include "runtime/platform/Errors.h"

#include <cstdint>

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace lap::sandbox {

namespace {

// Rights after ABI 2, which Debian 12's linux/landlock.h does not define.
constexpr uint64_t kFsTruncate = 1ull << 14; // ABI 3
constexpr uint64_t kFsIoctlDev = 1ull << 15; // ABI 5
constexpr uint64_t kNetBindTcp = 1ull << 0;  // ABI 4
constexpr uint64_t kNetConnectTcp = 1ull << 1;
constexpr uint64_t kScopeAbstractUnixSocket = 1ull << 0; // ABI 6
constexpr uint64_t kScopeSignal = 1ull << 1;

/// struct landlock_ruleset_attr as of ABI 6; the kernel is told the size
/// of the part its ABI knows.
struct RulesetAttr {
  uint64_t handledAccessFs = 0, handledAccessNet = 0, scoped = 0;
};

constexpr uint64_t kReadOnly = LANDLOCK_ACCESS_FS_EXECUTE |
                               LANDLOCK_ACCESS_FS_READ_FILE |
                               LANDLOCK_ACCESS_FS_READ_DIR;
constexpr uint64_t kFileRights =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
    LANDLOCK_ACCESS_FS_READ_FILE | kFsTruncate | kFsIoctlDev;

/// Every filesystem right ABI `abi` knows.
uint64_t fsRights(int abi) {
  uint64_t rights = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; // ABI 1
  if (abi >= 2)
    rights |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3)
    rights |= kFsTruncate;
  if (abi >= 5)
    rights |= kFsIoctlDev;
  return rights;
}

/// Allows `access` (within `handled`) beneath `path`; a path that does not
/// exist is skipped (a system without /lib64).
void allow(int ruleset, const std::string &path, uint64_t access,
           uint64_t handled) {
  int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0)
    return;
  struct stat st;
  bool directory = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
  landlock_path_beneath_attr rule{};
  rule.allowed_access = access & handled & (directory ? ~0ull : kFileRights);
  rule.parent_fd = fd;
  long r = ::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH,
                     &rule, 0);
  ::close(fd);
  if (r != 0)
    platform::failWithErrno(path, "cannot add it to the sandbox's ruleset");
}

} // namespace

int landlockAbi() {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0,
                       LANDLOCK_CREATE_RULESET_VERSION);
  return abi > 0 ? int(abi) : 0;
}

int landlockRuleset(int abi, const std::string &workDir) {
  RulesetAttr attr;
  attr.handledAccessFs = fsRights(abi);
  size_t size = sizeof(uint64_t);
  if (abi >= 4) {
    attr.handledAccessNet = kNetBindTcp | kNetConnectTcp;
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
    size = sizeof(RulesetAttr);
  }
  long fd = ::syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (fd < 0)
    platform::failWithErrno("landlock", "cannot create a ruleset");
  int ruleset = int(fd);
  try {
    uint64_t handled = attr.handledAccessFs;
    for (const char *system :
         {"/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/dev/urandom"})
      allow(ruleset, system, kReadOnly, handled);
    allow(ruleset, "/dev/null",
          LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE,
          handled);
    allow(ruleset, workDir, handled, handled);
  } catch (...) {
    ::close(ruleset);
    throw;
  }
  return ruleset;
}

bool landlockRestrictSelf(int ruleset) {
  return ::syscall(SYS_landlock_restrict_self, ruleset, 0) == 0;
}

} // namespace lap::sandbox
