//===- Losses.cpp ---------------------------------------------*- C++ -*-===//

#include "runtime/kernels/cpu/Kernels.h"
