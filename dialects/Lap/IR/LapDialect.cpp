//===- LapDialect.cpp - The lap dialect -------------------------*- C++ -*-===//

#include "dialects/Lap/IR/LapDialect.h"
#include "dialects/Lap/IR/LapOps.h"

using namespace lap;

#include "dialects/Lap/IR/LapOpsDialect.cpp.inc"

void LapDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Lap/IR/LapOps.cpp.inc"
      >();
}
