//===- Diagnostics.h - Located errors of the spec front end -----*- C++ -*-===//
//
// The spec front end never prints and never throws: it collects located
// errors here, and the tool that called it decides how to show them (lapc
// routes them through MLIR's SourceMgr diagnostics, which print the line and
// a caret). Locations are 1-based, as FileLineColLoc is.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_DSL_DIAGNOSTICS_H
#define LAP_DSL_DIAGNOSTICS_H

#include <string>
#include <vector>

namespace lap::dsl {

/// A position in a spec file; line and column are 1-based, 0 means unknown.
struct Loc {
  std::string file;
  unsigned line = 0;
  unsigned col = 0;
};

/// One error: where, and what (with a hint folded into the message).
struct Diagnostic {
  Loc loc;
  std::string message;
};

/// The errors of one load, in the order they were found.
class Diagnostics {
public:
  void error(const Loc &loc, std::string message) {
    list.push_back({loc, std::move(message)});
  }
  /// A failure of lap itself, not of the input (exit code 1, not 2).
  void internalError(std::string message) {
    list.push_back({Loc{}, "internal error: " + std::move(message)});
    internal = true;
  }
  bool hasErrors() const { return !list.empty(); }
  bool hasInternalError() const { return internal; }
  const std::vector<Diagnostic> &all() const { return list; }
  /// Sorts by file order of first appearance, then line, then column, so
  /// output reads top to bottom however the checks were ordered.
  void sortByLocation();

private:
  std::vector<Diagnostic> list;
  bool internal = false;
};

} // namespace lap::dsl

#endif // LAP_DSL_DIAGNOSTICS_H
