//===- HostLowering.h - The kernel form's host code, any target -*- C++ -*-===//
//
// What every target's host code does with the kernel form: buffers meet
// pointers (a buffer built from a pointer, a buffer passed as its pointer:
// MemRefDescriptors that MLIR's memref-to-LLVM conversion folds away), the
// model ABI's entry signature, kernel calls by symbol (`<prefix><name>`,
// declared from Kernels.def), frames of 8-byte slots that carry a loop's
// values to the code that runs it, and C strings. A target's lowering
// (compiler/Target/<Name>) derives from it and decides where loops run.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_TARGET_HOSTLOWERING_H
#define LAP_COMPILER_TARGET_HOSTLOWERING_H

#include "dialects/Lapk/IR/LapkOps.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/SetVector.h"

#include <string>

namespace lap {

/// tanh, erf, exp and log as MLIR's polynomials, on every target: the
/// targets compute the same functions (vectorisable on the CPU, no libm or
/// libdevice calls).
mlir::LogicalResult approximateMath(mlir::ModuleOp module);

/// Conversions to and from bf16 as integer arithmetic (to nearest, ties to
/// even), on every target: x86-64 CPUs without AVX512_BF16 would call a
/// runtime function that not every system has, and the targets round the
/// same way.
mlir::LogicalResult expandBF16(mlir::ModuleOp module);

/// What remains of host code after a target's lowering (scf, arith, math,
/// memref, func) to the LLVM dialect: MLIR's conversions.
void buildHostToLLVMPipeline(mlir::OpPassManager &pm);

class HostLowering {
public:
  explicit HostLowering(mlir::ModuleOp module);

protected:
  /// The module's entries (functions with lapk.entry), in order.
  llvm::SmallVector<mlir::func::FuncOp> entries();

  /// The buffer of `type` at `pointer` (identity layout, static shape).
  mlir::Value bufferAt(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::MemRefType type, mlir::Value pointer);
  /// The pointer to the first element of `buffer`, or null for lapk.null.
  mlir::Value pointerOf(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value buffer);
  mlir::Value constant(mlir::OpBuilder &b, mlir::Location loc, int64_t v);
  /// The address of slot `k` of `element`s at `base`.
  mlir::Value slot(mlir::OpBuilder &b, mlir::Location loc, mlir::Value base,
                   mlir::Type element, int64_t k);
  /// An on-stack frame of 8-byte slots holding `values` in order: buffers
  /// as their pointers, indices as i64, scalars as themselves.
  mlir::Value storeFrame(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::ValueRange values);
  /// A pointer to `text` as a C string in an internal global `symbol`.
  mlir::Value cString(mlir::OpBuilder &b, mlir::Location loc,
                      llvm::StringRef symbol, llvm::StringRef text);
  /// The values `loop`'s body uses from above: constants and globals, which
  /// code running the body clones (they fold there: a trip count, a
  /// coefficient), and the others, which it must be passed.
  static void valuesUsedBy(mlir::scf::ParallelOp loop,
                           llvm::SmallVectorImpl<mlir::Operation *> &cloned,
                           llvm::SetVector<mlir::Value> &captures);
  /// Declares `name` (private) with `type` unless the module has it.
  mlir::func::FuncOp declare(llvm::StringRef name, mlir::FunctionType type);

  /// Gives entry `f` (params, workspace, batch..., outputs..., B, T, seed,
  /// first) the ABI's signature (params, batch, outputs, workspace, B, T,
  /// seed, first) on pointers.
  void exposeEntry(mlir::func::FuncOp f);
  /// `lapk.call "k"` as a call of `<prefix>k`: buffers pass as pointers,
  /// lapk.null as null.
  void lowerCall(lapk::CallOp call, llvm::StringRef prefix);
  /// Erases the lapk.null ops nothing uses any more.
  void eraseUnusedNulls();

  mlir::ModuleOp module;
  mlir::MLIRContext *context;
  mlir::LLVMTypeConverter converter;
  mlir::Type ptrType, i64;
};

} // namespace lap

#endif // LAP_COMPILER_TARGET_HOSTLOWERING_H
