//===- Targets.cpp - Every target lap compiles for --------------*- C++ -*-===//
//
// One line per target: a new target is its folder and a line here.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/CPU/CPUTarget.h"
#include "compiler/Target/CUDA/CUDATarget.h"
#include "compiler/Target/Target.h"

void lap::registerAllTargets() {
  registerCPUTarget();
  registerCUDATarget();
}
