//===- LapInterfaces.cpp - lap op interfaces --------------------*- C++ -*-===//

#include "dialects/Lap/IR/LapInterfaces.h"

#include "dialects/Lap/IR/LapInterfaces.cpp.inc"
