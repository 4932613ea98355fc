//===- FileNames.h - Names lap did not choose, made file names --*- C++ -*-===//
//
// A spec's name, a sweep's variant names (the spec's name and its axis
// values) and the labels a user gives become the names of files and
// directories lap creates inside a directory the user named. A name with
// '/' or a leading dot ("../../victim", ".") would put them elsewhere, and
// one longer than a file system allows fails late. Every such name goes
// through this one rule, early, with the value's location where it has one.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_PLATFORM_FILENAMES_H
#define LAP_RUNTIME_PLATFORM_FILENAMES_H

#include <cstddef>
#include <string>
#include <string_view>

namespace lap::platform {

/// The longest name lap makes a file of: NAME_MAX (255) less room for the
/// suffixes it adds (".yaml", ".so.spec", ".tmp.XXXXXX").
constexpr size_t kMaxFileNameBytes = 200;

/// Why `name` cannot be the name of a file lap creates in a directory: ""
/// when it can. Refused: the empty name, '/', NUL and other control
/// characters, a leading '.' (".", ".." and hidden files), and more than
/// kMaxFileNameBytes bytes.
std::string fileNameProblem(std::string_view name);

/// `dir + "/" + name` once fileNameProblem accepts `name`; throws
/// std::runtime_error "`what` 'NAME' <why>" otherwise.
std::string pathInDirectory(const std::string &dir, std::string_view name,
                            std::string_view what);

} // namespace lap::platform

#endif // LAP_RUNTIME_PLATFORM_FILENAMES_H
