//===- Target.cpp - The registry of targets ---------------------*- C++ -*-===//

#include "compiler/Target/Target.h"

#include <vector>

namespace {
std::vector<lap::TargetInfo> &registry() {
  static std::vector<lap::TargetInfo> targets;
  return targets;
}
} // namespace

void lap::registerTarget(TargetInfo info) {
  if (!lookupTarget(info.name))
    registry().push_back(std::move(info));
}

const lap::TargetInfo *lap::lookupTarget(llvm::StringRef name) {
  for (const TargetInfo &info : registry())
    if (info.name == name)
      return &info;
  return nullptr;
}

llvm::ArrayRef<lap::TargetInfo> lap::registeredTargets() { return registry(); }
