//===- HeadKinds.h - The table of attention head kinds ----------*- C++ -*-===//
//
// Every head computes O = alpha * P V + beta * V with P = softmax(Q K^T /
// sqrt(d)). A kind is a named (alpha, beta), fixed or learned per head:
// adding a kind is adding one row to the table in HeadKinds.cpp; the spec
// language, the compiler and the kernels all read the kinds from here.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_DSL_HEADKINDS_H
#define LAP_DSL_HEADKINDS_H

#include <optional>
#include <string_view>
#include <vector>

namespace lap::dsl {

/// One attention head kind.
struct HeadKind {
  std::string_view name;    ///< As written in specs.
  double alpha;             ///< Coefficient of P V.
  double beta;              ///< Coefficient of V (the token's own value).
  std::string_view formula; ///< For documentation and `--emit=spec`.
  /// Whether (alpha, beta) are parameters of the model, one pair per head,
  /// trained from the values above.
  bool learnable = false;

  /// beta != 0 reads V at the query's own position, so the attention must be
  /// square self-attention (queries and keys index the same tokens); a
  /// learned beta may leave 0.
  bool needsSelfAttention() const { return beta != 0 || learnable; }
};

/// The largest |alpha| or |beta| a defined kind may have. The paper's kinds
/// stay within 1; a head's output and its gradients grow with the
/// coefficients, and their squares (clipping's norm) with the squares, so
/// coefficients near single precision's limit (3.4e38) overflow to inf and
/// a run trains to a constant loss.
constexpr double kMaxHeadCoefficient = 1e4;

/// Index into headKinds(); what resolved specs store per head.
using HeadKindId = unsigned char;

/// All kinds, in a fixed order; index 0 is the default (`attn`).
const std::vector<HeadKind> &headKinds();
/// The kinds' names, in table order, for messages.
std::vector<std::string_view> headKindNames();
/// The id of the kind named `name`, if there is one.
std::optional<HeadKindId> findHeadKind(std::string_view name);
/// The id of the Laplacian kind (target of the `laplacian_heads` shorthand).
HeadKindId laplacianKind();

} // namespace lap::dsl

#endif // LAP_DSL_HEADKINDS_H
