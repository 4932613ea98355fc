//===- HeadKinds.cpp - The table of attention head kinds --------*- C++ -*-===//

#include "dsl/HeadKinds.h"

using namespace lap::dsl;

const std::vector<HeadKind> &lap::dsl::headKinds() {
  static const std::vector<HeadKind> kinds = {
      {"attn", 1.0, 0.0, "P V"},
      {"laplacian", -1.0, 1.0, "(I - P) V = V - P V"},
      {"learnable", 1.0, 0.0, "alpha P V + beta V, learned from (1, 0)", true},
  };
  return kinds;
}

std::vector<std::string_view> lap::dsl::headKindNames() {
  std::vector<std::string_view> names;
  for (const HeadKind &kind : headKinds())
    names.push_back(kind.name);
  return names;
}

std::optional<HeadKindId> lap::dsl::findHeadKind(std::string_view name) {
  const auto &kinds = headKinds();
  for (size_t i = 0; i < kinds.size(); ++i)
    if (kinds[i].name == name)
      return HeadKindId(i);
  return std::nullopt;
}

HeadKindId lap::dsl::laplacianKind() { return *findHeadKind("laplacian"); }
