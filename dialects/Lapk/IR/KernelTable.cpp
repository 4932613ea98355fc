//===- KernelTable.cpp - The kernels' signatures, from Kernels.def -------===//

#include "dialects/Lapk/IR/KernelTable.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace lap::lapk;

namespace {

template <typename... Parameters>
llvm::ArrayRef<KernelArg> argsOf(void (*)(Parameters...)) {
  static const KernelArg args[] = {KernelArgOf<Parameters>::kind...};
  return args;
}

} // namespace

llvm::ArrayRef<KernelSignature> lap::lapk::kernelTable() {
  static const KernelSignature table[] = {
#define LAP_KERNEL(name, parameters)                                           \
  {#name, argsOf(static_cast<kernel::name *>(nullptr))},
#include "runtime/kernels/Kernels.def"
  };
  return table;
}

const KernelSignature *lap::lapk::lookupKernel(llvm::StringRef name) {
  for (const KernelSignature &kernel : kernelTable())
    if (kernel.name == name)
      return &kernel;
  return nullptr;
}

bool lap::lapk::acceptsType(KernelArg kind, mlir::Type type) {
  auto buffer = [&](mlir::Type element) {
    auto memref = mlir::dyn_cast<mlir::MemRefType>(type);
    return memref && memref.getElementType() == element;
  };
  mlir::MLIRContext *context = type.getContext();
  switch (kind) {
  case KernelArg::F32Buffer:
    return buffer(mlir::Float32Type::get(context));
  case KernelArg::BF16Buffer:
    return buffer(mlir::BFloat16Type::get(context));
  case KernelArg::I32Buffer:
    return buffer(mlir::IntegerType::get(context, 32));
  case KernelArg::I64Buffer:
    return buffer(mlir::IntegerType::get(context, 64));
  case KernelArg::I64:
    return type.isInteger(64);
  case KernelArg::I32:
    return type.isInteger(32);
  case KernelArg::F32:
    return type.isF32();
  }
  return false;
}

llvm::StringRef lap::lapk::describe(KernelArg kind) {
  switch (kind) {
  case KernelArg::F32Buffer:
    return "an f32 buffer";
  case KernelArg::BF16Buffer:
    return "a bf16 buffer";
  case KernelArg::I32Buffer:
    return "an i32 buffer";
  case KernelArg::I64Buffer:
    return "an i64 buffer";
  case KernelArg::I64:
    return "an i64";
  case KernelArg::I32:
    return "an i32";
  case KernelArg::F32:
    return "an f32";
  }
  return "?";
}
