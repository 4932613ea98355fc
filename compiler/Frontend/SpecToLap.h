//===- SpecToLap.h - A verified spec as lap IR ------------------*- C++ -*-===//
//
// The front end of the compiler proper: builds `func.func @forward` in the
// lap dialect from a resolved spec. Its arguments are the parameters, in the
// order and with the names of dsl::parameterTable (`lap.name` attributes),
// then the batch; it returns the loss and the logits. Every op carries the
// location of the spec setting that caused it, named after the module it
// belongs to (loc("blocks.3.attn"("spec.yaml":12:3))).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_COMPILER_FRONTEND_SPECTOLAP_H
#define LAP_COMPILER_FRONTEND_SPECTOLAP_H

#include "dsl/Spec.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace lap {

/// Builds the module holding `@forward` for `spec`. The batch is `tokens`
/// and `targets` [B, T] (gpt), `images` [B, C, H, W] and `targets` [B,
/// classes] as distributions (vit), or `images` and the `teacher`'s
/// probabilities [B, prototypes] (dino). Language models also get
/// `@decode(params, tokens [B, T], first : i64, k_cache.0, v_cache.0, ...)`
/// returning the logits of T new tokens at positions first .. first + T - 1,
/// with the caches [B, capacity, KV, D] updated in place. Every model gets
/// `@features(params, batch...)` returning the residual stream [B, T, width]
/// after the embedding and after each block. Null, with an error at the spec
/// location, for the settings the compiler does not build yet (attentive
/// pooling, a dino classifier).
mlir::OwningOpRef<mlir::ModuleOp> buildForward(const dsl::Spec &spec,
                                               mlir::MLIRContext &context);

} // namespace lap

#endif // LAP_COMPILER_FRONTEND_SPECTOLAP_H
