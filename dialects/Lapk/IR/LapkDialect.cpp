//===- LapkDialect.cpp - The lapk dialect -----------------------*- C++ -*-===//

#include "dialects/Lapk/IR/LapkDialect.h"
#include "dialects/Lapk/IR/LapkOps.h"

using namespace lap::lapk;

#include "dialects/Lapk/IR/LapkOpsDialect.cpp.inc"

void LapkDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Lapk/IR/LapkOps.cpp.inc"
      >();
}
