//===- Optimizer.h - AdamW, Muon, gradient clipping -------------*- C++ -*-===//
//
// Parameters live in one flat fp32 buffer and their gradients in another of
// the same layout; a TensorInfo names each tensor's slice. The optimizer
// updates the buffer in place:
//  - adamw: every tensor by torch.optim.AdamW (decoupled weight decay, bias
//    correction), weight decay skipped for the `no_decay` groups;
//  - muon (nanochat): 2-D matrices of the transformer blocks by Muon
//    (momentum, Nesterov, Newton-Schulz orthogonalisation), everything else
//    by AdamW at its own lr (embedding, unembedding, scalars).
//
// The arithmetic runs on the parameters' device (device::Device.h); on the
// host, results do not depend on the number of threads.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_OPTIMIZER_H
#define LAP_RUNTIME_TRAIN_OPTIMIZER_H

#include "runtime/device/Device.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lap::train {

/// One tensor of the flat parameter buffer.
struct TensorInfo {
  std::string name;           ///< "blocks.3.attn.qkv.weight"
  std::vector<int64_t> shape; ///< PyTorch's layout ([out, in] for a linear)
  int64_t offset = 0;         ///< in floats
  int64_t elements = 0;
};

enum class OptimizerKind { AdamW, Muon };

/// `train.optimizer` as plain values (see dsl/Spec.h's OptimizerSpec).
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::AdamW;
  double lr = 1e-3; ///< AdamW's lr; Muon's (matrix) lr under muon
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weightDecay = 0;
  /// The cosine schedule's final weight decay (DINO); < 0: constant.
  double weightDecayEnd = -1;
  /// Groups without weight decay: bias, norm, layer_scale, embedding,
  /// positions, tokens, head (see matchesParameterGroup); any other string
  /// matches names containing it.
  std::vector<std::string> noDecay;
  // muon
  double momentum = 0.95;
  bool nesterov = true;
  int64_t nsSteps = 5;
  /// Newton-Schulz's GEMMs (train.matmul_precision).
  lap_matmul matmulPrecision = LAP_MATMUL_FP32;
  double embeddingLr = 0.2, unembeddingLr = 0.004, scalarLr = 0.5;
  bool scaleLrByWidth = true; ///< AdamW lrs × (width / 768)^-1/2
  int64_t width = 768;        ///< the model's width, for scaleLrByWidth
  /// Learned head coefficients ("blocks.*.attn.coefficients"), under
  /// either optimizer.
  double headCoefficientLr = 0.01;
  /// nanochat's momentum warmup: momentumStart → momentum over this many
  /// steps; 0 = off (nanochat: 0.85 over 300).
  int64_t momentumWarmupSteps = 0;
  double momentumStart = 0.85;
};

enum class UpdateRule { AdamW, Muon };

/// Tensors updated alike. Names: under muon "matrix" (Muon), "embedding",
/// "unembedding", "scalar"; under adamw "decay", "no_decay"; a muon group
/// with weight decay whose members partly match no_decay is split, the
/// exempt part named "<group>.no_decay"; under both, "head_coefficients".
struct ParamGroup {
  std::string name;
  UpdateRule rule = UpdateRule::AdamW;
  double lr = 0;               ///< peak lr; the schedule's multiplier scales it
  double weightDecay = 0;      ///< decoupled: p *= 1 - lr * weightDecay
  std::vector<size_t> tensors; ///< indices into the table, in table order
};

/// Whether `name` belongs to the no_decay group `group`:
///  - bias: ".bias" parameters;
///  - norm: parameters of a norm (a name part containing "norm": norm1,
///    q_norm, embedding_norm, norm) and weight norm's gains ("weight_g");
///  - layer_scale: LayerScale gains (".ls1", ".ls2");
///  - embedding: the input embeddings ("wte.", "patch_embed.");
///  - positions: learned positions ("wpe.weight", "pos_embed");
///  - tokens: prepended tokens ("cls_token", "registers", "pool.query");
///  - head: the output layers ("lm_head.", "head.", "dino_head.");
///  - anything else: a plain substring of the name.
bool matchesParameterGroup(const std::string &name, const std::string &group);

/// Splits the table into groups (nanochat's setup_optimizers under muon):
/// 2-D "blocks.*.weight" matrices → Muon at lr; "wte.weight" → AdamW at
/// embeddingLr; "lm_head.weight" → unembeddingLr; everything else (norms,
/// biases, gains, positions, tokens, the patch embedding, heads) →
/// scalarLr; AdamW lrs × (width/768)^-1/2 with scaleLrByWidth. Under adamw,
/// every tensor at lr. Weight decay for every tensor not in no_decay (Muon
/// included, decoupled as in AdamW). Learned head coefficients
/// (".attn.coefficients") → AdamW at headCoefficientLr without weight decay,
/// under both. Empty groups are left out.
std::vector<ParamGroup> assignGroups(const std::vector<TensorInfo> &tensors,
                                     const OptimizerConfig &config);

/// One array of the optimizer's state, on its device.
struct StateTensor {
  std::string name; ///< "blocks.0.mlp.fc1.weight.momentum_buffer"
  float *data;
  int64_t size;
};

class Optimizer {
public:
  /// Updates the tensors' slices of parameter buffers on `device`, keeping
  /// its state there.
  Optimizer(std::vector<TensorInfo> tensors, OptimizerConfig config,
            device::Device &device = device::host());

  /// One update of `params` from `grads` at lr × lrMultiplier and weight
  /// decay × weightDecayMultiplier (for a scheduled weight decay).
  void step(float *params, const float *grads, double lrMultiplier = 1,
            double weightDecayMultiplier = 1);

  /// Tensors (by index into tensors()) the next steps leave alone: no
  /// update, no weight decay, no change of their state (as PyTorch skips a
  /// parameter without a gradient). Empty: none.
  void setFrozen(std::vector<bool> frozen) {
    frozenTensors = std::move(frozen);
  }

  /// Steps taken; AdamW's bias correction and Muon's momentum warmup use it.
  int64_t stepCount() const { return steps; }
  void setStepCount(int64_t s) { steps = s; }

  /// The state to checkpoint, by name: "<tensor>.exp_avg" and
  /// "<tensor>.exp_avg_sq" (AdamW, PyTorch's names), "<tensor>.momentum_buffer"
  /// (Muon), in the device's memory. Restoring = writing into these arrays
  /// (sizes are fixed) and calling setStepCount.
  std::vector<StateTensor> state() const;
  /// The state's bytes.
  int64_t stateBytes() const;

  /// Muon's momentum for the next step (after the warmup, config.momentum).
  double currentMomentum() const;

  const std::vector<ParamGroup> &groups() const { return groupList; }
  const std::vector<TensorInfo> &tensors() const { return table; }
  const OptimizerConfig &config() const { return cfg; }
  device::Device &device() const { return dev; }

private:
  void adamwStep(const std::vector<device::Span> &spans, float *params,
                 const float *grads, double lr, double wd);
  void muonStep(const ParamGroup &group, float *params, const float *grads,
                double lr, double wd, double momentum);

  std::vector<TensorInfo> table;
  OptimizerConfig cfg;
  device::Device &dev;
  std::vector<ParamGroup> groupList;
  std::vector<UpdateRule> rules; ///< per tensor
  /// Where each tensor's state starts in its rule's arrays.
  std::vector<int64_t> stateOffset;
  /// The AdamW spans of each group (empty for Muon's), while none is frozen.
  std::vector<std::vector<device::Span>> adamwSpans;
  device::Array expAvg, expAvgSq; ///< AdamW's tensors, one after the other
  device::Array momentumBuffer;   ///< Muon's tensors, one after the other
  device::Array work; ///< Muon's update, sized for the largest matrix
  std::vector<bool> frozenTensors;
  int64_t steps = 0;
};

/// The spans (each at most device::kSpan) covering `tensors`, in table order,
/// with no state.
std::vector<device::Span> spansOf(const std::vector<TensorInfo> &tensors);

/// The global L2 norm of `grads` over the tensors (fp64 partial sums in a
/// fixed order). When it exceeds maxNorm (> 0), scales every gradient by
/// maxNorm / (norm + 1e-6) like torch.nn.utils.clip_grad_norm_; a
/// non-finite norm leaves the gradients alone. Returns the norm before
/// clipping. `grads` is `device`'s memory.
double clipGradients(float *grads, const std::vector<TensorInfo> &tensors,
                     double maxNorm, device::Device &device = device::host());

/// DINO's clip_gradients: each tensor's gradient whose L2 norm (fp64) exceeds
/// maxNorm (> 0) is scaled by maxNorm / (norm + 1e-6), alone.
void clipEachTensor(float *grads, const std::vector<TensorInfo> &tensors,
                    double maxNorm, device::Device &device = device::host());

/// clipGradients in parts, for gradients split over ranks: the fp64 sums of
/// squares of spansOf(tensors) (a table's partials are its parts' partials
/// one after the other), their norm, and the scaling of `tensors` by a norm
/// computed over all of them.
std::vector<double>
squaredNormPartials(const float *grads, const std::vector<TensorInfo> &tensors,
                    device::Device &device = device::host());
double normOfPartials(const std::vector<double> &partials);
void clipToNorm(float *grads, const std::vector<TensorInfo> &tensors,
                double norm, double maxNorm,
                device::Device &device = device::host());

/// The first tensor (in table order) whose partials (squaredNormPartials of
/// the same tensors) are not finite: it holds a NaN or an infinity.
std::optional<size_t>
firstNonFiniteTensor(const std::vector<double> &partials,
                     const std::vector<TensorInfo> &tensors);
/// The name of the first tensor of `data` holding a NaN or an infinity.
std::optional<std::string>
firstNonFinite(const float *data, const std::vector<TensorInfo> &tensors,
               device::Device &device = device::host());

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_OPTIMIZER_H
