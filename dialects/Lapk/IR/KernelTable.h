//===- KernelTable.h - The kernels' signatures, from Kernels.def -*- C++ -*-===//
//
// The compiler's view of runtime/kernels/Kernels.def: for every kernel, the
// kind of each parameter, derived from its C prototype by the templates
// below. lapk.call's verifier checks calls against it, a target declares
// its kernels from it, and the code generator's calls are checked against
// the prototypes when it is compiled (KernelArgs).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_DIALECTS_LAPK_IR_KERNELTABLE_H
#define LAP_DIALECTS_LAPK_IR_KERNELTABLE_H

#include "runtime/kernels/KernelEnums.h"

#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace lap::lapk {

/// The kinds of kernel parameters.
enum class KernelArg {
  F32Buffer,
  BF16Buffer,
  I32Buffer,
  I64Buffer,
  I64,
  I32,
  F32
};

template <typename T> struct KernelArgOf;
template <> struct KernelArgOf<float *> {
  static constexpr KernelArg kind = KernelArg::F32Buffer;
};
template <> struct KernelArgOf<const float *> : KernelArgOf<float *> {};
template <> struct KernelArgOf<lap_bf16 *> {
  static constexpr KernelArg kind = KernelArg::BF16Buffer;
};
template <> struct KernelArgOf<const lap_bf16 *> : KernelArgOf<lap_bf16 *> {};
template <> struct KernelArgOf<const int32_t *> {
  static constexpr KernelArg kind = KernelArg::I32Buffer;
};
template <> struct KernelArgOf<int32_t *> : KernelArgOf<const int32_t *> {};
template <> struct KernelArgOf<const uint64_t *> {
  static constexpr KernelArg kind = KernelArg::I64Buffer;
};
template <> struct KernelArgOf<int64_t> {
  static constexpr KernelArg kind = KernelArg::I64;
};
template <> struct KernelArgOf<uint64_t> : KernelArgOf<int64_t> {};
template <> struct KernelArgOf<int32_t> {
  static constexpr KernelArg kind = KernelArg::I32;
};
template <> struct KernelArgOf<lap_row_loss> : KernelArgOf<int32_t> {};
template <> struct KernelArgOf<lap_matmul> : KernelArgOf<int32_t> {};
template <> struct KernelArgOf<float> {
  static constexpr KernelArg kind = KernelArg::F32;
};

/// One kernel: its name in Kernels.def and its parameters' kinds.
struct KernelSignature {
  llvm::StringRef name;
  llvm::ArrayRef<KernelArg> args;
};

/// Every kernel of Kernels.def, in its order.
llvm::ArrayRef<KernelSignature> kernelTable();
/// The kernel called `name`, or null.
const KernelSignature *lookupKernel(llvm::StringRef name);

/// Whether a value of `type` can be passed as a `kind` parameter.
bool acceptsType(KernelArg kind, mlir::Type type);
/// "f32 buffer", "i64", ...: for diagnostics.
llvm::StringRef describe(KernelArg kind);

/// The C function types of the kernels, as `lap::lapk::kernel::<name>`.
namespace kernel {
#define LAP_KERNEL(name, parameters) using name = void parameters;
#include "runtime/kernels/Kernels.def"
} // namespace kernel

/// Checks, when it compiles, that arguments of types `Args` fit the kernel
/// of C type `Function` in number and kind: `Args::fits(kind)` says which
/// parameter kinds each can be passed as.
template <typename Function, typename... Args> struct KernelArgs;
template <typename... Parameters, typename... Args>
struct KernelArgs<void(Parameters...), Args...> {
  static_assert(sizeof...(Parameters) == sizeof...(Args),
                "the call passes another number of arguments than the "
                "kernel's prototype in Kernels.def takes");
  static_assert((Args::fits(KernelArgOf<Parameters>::kind) && ...),
                "an argument's kind differs from the kernel's prototype in "
                "Kernels.def");
  static constexpr bool ok = true;
};

} // namespace lap::lapk

#endif // LAP_DIALECTS_LAPK_IR_KERNELTABLE_H
