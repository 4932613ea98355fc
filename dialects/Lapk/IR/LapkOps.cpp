//===- LapkOps.cpp - lapk dialect ops ---------------------------*- C++ -*-===//

#include "dialects/Lapk/IR/LapkOps.h"
#include "dialects/Lapk/IR/KernelTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace lap::lapk;

LogicalResult CallOp::verify() {
  const KernelSignature *kernel = lookupKernel(getKernel());
  if (!kernel)
    return emitOpError("calls '")
           << getKernel() << "', which is not a kernel of Kernels.def";
  if (getArgs().size() != kernel->args.size())
    return emitOpError("passes ")
           << getArgs().size() << " arguments to '" << getKernel()
           << "', which takes " << kernel->args.size();
  for (auto [i, arg, kind] : llvm::enumerate(getArgs(), kernel->args))
    if (!acceptsType(kind, arg.getType()))
      return emitOpError("argument ")
             << i << " of '" << getKernel() << "' must be " << describe(kind)
             << ", not " << arg.getType();
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Lapk/IR/LapkOps.cpp.inc"
