//===- Layout.cpp - Where tensors live in a compiled model ------*- C++ -*-===//

#include "compiler/Memory/Layout.h"

using namespace mlir;

int64_t lap::maxDimSize(ShapedType type, unsigned i, int64_t maxBatch,
                        int64_t maxSeq) {
  if (!type.isDynamicDim(i))
    return type.getDimSize(i);
  return i == 0 ? maxBatch : maxSeq;
}

int64_t lap::maxBytes(ShapedType type, int64_t maxBatch, int64_t maxSeq) {
  // Saturates just above the limit instead of wrapping.
  const int64_t beyond = kMaxPlannedBytes + 1;
  int64_t bytes = int64_t(type.getElementTypeBitWidth() / 8);
  for (unsigned i = 0; i < type.getRank(); ++i)
    if (__builtin_mul_overflow(bytes, maxDimSize(type, i, maxBatch, maxSeq),
                               &bytes) ||
        bytes > beyond)
      return beyond;
  return bytes;
}

MemRefType lap::flatBufferType(Type type, int64_t maxBatch, int64_t maxSeq) {
  auto shaped = cast<ShapedType>(type);
  return MemRefType::get({maxBytes(shaped, maxBatch, maxSeq) /
                          (shaped.getElementTypeBitWidth() / 8)},
                         shaped.getElementType());
}

bool lap::isParameter(func::FuncOp func, unsigned i) {
  return func.getArgAttr(i, "lap.parameter") != nullptr;
}

SmallVector<int64_t> lap::parameterOffsets(func::FuncOp func, int64_t &total) {
  SmallVector<int64_t> offsets;
  total = 0;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (!isParameter(func, i))
      continue;
    offsets.push_back(total);
    auto type = cast<ShapedType>(func.getArgument(i).getType());
    total += alignTo(type.getNumElements(), kTensorAlignment / 4);
  }
  return offsets;
}

std::string lap::partName(Location loc) {
  if (auto named = dyn_cast<NameLoc>(loc))
    return named.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (std::string name = partName(l); !name.empty())
        return name;
  return "";
}
