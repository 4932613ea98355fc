//===- Passes.h - The CUDA target -------------------------------*- C++ -*-===//

#ifndef LAP_COMPILER_TARGET_CUDA_PASSES_H
#define LAP_COMPILER_TARGET_CUDA_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace lap {

#define GEN_PASS_DECL
#include "compiler/Target/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Target/CUDA/Passes.h.inc"

} // namespace lap

#endif // LAP_COMPILER_TARGET_CUDA_PASSES_H
