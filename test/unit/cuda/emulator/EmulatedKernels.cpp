//===- EmulatedKernels.cpp - CUDA entry points, built for the emulator ----===//
//
// The lap_cuda_ entry points of the kernel families written as plans over
// a Launcher (DeviceCode.h's CUDA), compiled from their own .cu files as host
// C++ with LAP_CUDA_EMULATOR: their Launcher is then the emulator's. The
// GPU tests of those families, built into the same program, run on them.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/Attention.cu"
#include "runtime/kernels/cuda/Copy.cu"
#include "runtime/kernels/cuda/DecodeAttention.cu"
#include "runtime/kernels/cuda/Dropout.cu"
#include "runtime/kernels/cuda/Embedding.cu"
#include "runtime/kernels/cuda/Losses.cu"
#include "runtime/kernels/cuda/Norms.cu"
#include "runtime/kernels/cuda/Rope.cu"
#include "runtime/kernels/cuda/Tokens.cu"
