//===- Diagnostics.cpp - Located errors of the spec front end ---*- C++ -*-===//

#include "dsl/Diagnostics.h"

#include <algorithm>
#include <tuple>

using namespace lap::dsl;

void Diagnostics::sortByLocation() {
  std::vector<std::string> files;
  for (const Diagnostic &d : list)
    if (std::find(files.begin(), files.end(), d.loc.file) == files.end())
      files.push_back(d.loc.file);
  // Rank by (file, line, column, order found): a stable sort without the
  // temporary buffer std::stable_sort wants.
  std::vector<std::pair<std::tuple<long, unsigned, unsigned, size_t>, size_t>>
      keys;
  for (size_t i = 0; i < list.size(); ++i) {
    const Diagnostic &d = list[i];
    long file =
        std::find(files.begin(), files.end(), d.loc.file) - files.begin();
    keys.push_back({{file, d.loc.line, d.loc.col, i}, i});
  }
  std::sort(keys.begin(), keys.end());
  std::vector<Diagnostic> sorted;
  for (const auto &key : keys)
    sorted.push_back(std::move(list[key.second]));
  list = std::move(sorted);
}
