//===- TempDir.h - A temporary directory for one test -----------*- C++ -*-===//

#ifndef LAP_TEST_UNIT_TEMPDIR_H
#define LAP_TEST_UNIT_TEMPDIR_H

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace lap::test {

/// A fresh directory under the system's temporary directory, removed with
/// its contents when this goes away.
class TempDir {
public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "lap-test-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw std::runtime_error("cannot create a temporary directory");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::filesystem::path &path() const { return path_; }
  std::string file(const std::string &name) const {
    return (path_ / name).string();
  }

private:
  std::filesystem::path path_;
};

} // namespace lap::test

#endif // LAP_TEST_UNIT_TEMPDIR_H
