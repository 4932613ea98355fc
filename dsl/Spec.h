//===- Spec.h - A resolved model spec: plain structs ------------*- C++ -*-===//
//
// What `lapc` knows about a model after parsing and verifying its YAML: every
// setting resolved (defaults applied, `extends` merged, head kinds expanded to
// one kind per head), plus where each setting was written, so later stages
// can attach spec locations to what they build. The YAML keys are given next
// to each field; docs/spec.md is the reference for the language.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_DSL_SPEC_H
#define LAP_DSL_SPEC_H

#include "dsl/Diagnostics.h"
#include "dsl/HeadKinds.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lap::dsl {

enum class Family { GPT, ViT, DINO };
enum class Activation { GeluTanh, Gelu, ReLU2 };
enum class NormType { LayerNorm, RMSNorm };
enum class PositionType { Learned, Rope, None };
enum class Pool { Cls, Mean, Attentive };
enum class InitDistribution { Normal, TruncNormal, Uniform };
enum class Regime { LM, Supervised, DINO };
enum class OptimizerType { AdamW, Muon };
enum class Decay { Constant, Cosine, Linear };
enum class SupervisedLoss { CrossEntropy, BCE };
/// The element type of parameters and activations (losses are fp32).
enum class Precision { FP32, BF16 };
enum class Crop { RandomResized, SimpleRandom, None };
enum class DataFormat {
  Shards,
  Text,
  Conversations,
  IDX,
  CIFAR10,
  CIFAR100,
  ImageFolder
};
/// `train.data.packing`: whether a window's tokens attend across the
/// documents packed into it, or a sequence holds one document and padding.
enum class Packing { None, Documents, Padded };

/// `model.norm`: the normalisation used everywhere in the model (blocks,
/// final norm, embedding norm, QK-norm).
struct NormSpec {
  NormType type = NormType::LayerNorm; ///< type: layernorm | rmsnorm
  bool weight = true;                  ///< weight: learned scale
  bool bias = true;                    ///< bias: learned shift (LayerNorm only)
  double eps = 1e-5;                   ///< eps
};

/// `model.positions`.
struct PositionSpec {
  PositionType type = PositionType::Learned; ///< type: learned | rope | none
  double ropeBase = 10000;                   ///< rope_base
  bool patchesOnly =
      false; ///< patches_only: vit, CLS/registers get none (DeiT-3)
};

/// `model.init`: initial distributions per parameter group. Biases start at
/// zero and norm weights at one.
struct InitSpec {
  InitDistribution distribution = InitDistribution::Normal; ///< distribution
  double std = 0.02;     ///< std: linear (matrix) weights
  bool stdFanIn = false; ///< std: fan_in  => std = fan_in^-1/2 per matrix
  double embeddingStd =
      0.02; ///< embedding_std: token embedding, patch embedding
  double positionStd =
      0.02;                 ///< position_std: learned positions, CLS, registers
  double headStd = 0.02;    ///< head_std: lm_head or classifier
  bool zeroOutProj = false; ///< zero_out_proj: attn.proj and mlp.fc2 start at 0
  bool zeroHead = false;    ///< zero_head: lm_head or classifier starts at 0
};

/// `model.dino_head`: DINO's projection head.
struct DinoHeadSpec {
  int64_t layers = 3;         ///< layers: MLP layers before the bottleneck
  int64_t hidden = 2048;      ///< hidden
  int64_t bottleneck = 256;   ///< bottleneck
  int64_t prototypes = 65536; ///< prototypes: K, output dimension
  bool normLastLayer = true;  ///< norm_last_layer: weight-norm g frozen at 1
};

/// `model`.
struct ModelSpec {
  Family family = Family::GPT; ///< family: gpt | vit | dino
  int64_t layers = 0;          ///< layers
  int64_t width = 0;           ///< width: residual stream d
  int64_t heads = 0;           ///< heads
  int64_t headDim = 0;         ///< head_dim (default width / heads)
  int64_t kvHeads = 0;         ///< kv_heads (default heads; GQA when fewer)
  double mlpRatio = 4;         ///< mlp_ratio
  int64_t mlpHidden = 0;       ///< mlp_hidden (default width * mlp_ratio)
  Activation activation = Activation::GeluTanh; ///< activation
  NormSpec norm;                                ///< norm
  bool embeddingNorm = false; ///< embedding_norm: norm after the embedding
  bool finalNorm = true;      ///< final_norm
  PositionSpec positions;     ///< positions
  bool qkNorm = false;        ///< qk_norm: norm q and k per head
  bool bias = true;           ///< bias: biases in attention and MLP linears
  double dropout = 0;         ///< dropout
  InitSpec init;              ///< init
  // gpt
  int64_t vocab = 0;           ///< vocab
  int64_t context = 0;         ///< context: maximum sequence length
  bool tiedEmbeddings = false; ///< tied_embeddings
  double logitSoftcap = 0;     ///< logit_softcap: 0 = none
  // vit, dino
  int64_t imageSize = 0; ///< image_size
  int64_t patch = 0;     ///< patch
  int64_t channels = 3;  ///< channels
  int64_t classes = 0;   ///< classes (vit; dino: 0 = no classifier)
  bool clsToken = true;  ///< cls_token
  int64_t registers = 0; ///< registers: extra learned tokens
  double layerScale = 0; ///< layer_scale: init of LayerScale, 0 = off
  double dropPath = 0;   ///< drop_path: stochastic depth at the last layer
  Pool pool = Pool::Cls; ///< pool: cls | mean | attentive
  int64_t poolHeads = 0; ///< pool_heads: heads of attentive pooling
  DinoHeadSpec dinoHead; ///< dino_head (dino)
};

/// A kind the spec defines (`attention.define`): a name for
/// O = alpha P V + beta V with the spec's coefficients, or, learnable, with
/// coefficients learned per head from these.
struct DefinedKind {
  std::string name;
  double alpha = 1, beta = 0;
  bool learnable = false;
};

/// `attention`, resolved: the kind of every head.
struct AttentionSpec {
  std::vector<std::vector<HeadKindId>> layers; ///< [layer][head]
  std::vector<HeadKindId> pool;                ///< attentive pooling heads
  /// `define`, in the spec's order: kind ids headKinds().size() + i.
  std::vector<DefinedKind> defined;
  /// `window`, per layer: the keys a query sees, itself included (0: all).
  std::vector<int64_t> windows;

  /// The kind of `id`, built in or defined (its name lives as long as this).
  HeadKind kind(HeadKindId id) const {
    if (id < headKinds().size())
      return headKinds()[id];
    const DefinedKind &d = defined[id - headKinds().size()];
    return {d.name, d.alpha, d.beta, "", d.learnable};
  }
  /// Heads of layer `layer` whose coefficients are learned, ascending.
  std::vector<int64_t> learnedHeads(size_t layer) const {
    std::vector<int64_t> heads;
    for (size_t h = 0; h < layers[layer].size(); ++h)
      if (kind(layers[layer][h]).learnable)
        heads.push_back(int64_t(h));
    return heads;
  }
  bool isDefined(HeadKindId id) const { return id >= headKinds().size(); }
  /// Every kind a head may have: the built-in ones, then the defined ones.
  std::vector<HeadKind> kinds() const {
    std::vector<HeadKind> all = headKinds();
    for (size_t i = 0; i < defined.size(); ++i)
      all.push_back(kind(HeadKindId(headKinds().size() + i)));
    return all;
  }
  std::optional<HeadKindId> find(std::string_view name) const {
    std::vector<HeadKind> all = kinds();
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].name == name)
        return HeadKindId(i);
    return std::nullopt;
  }
};

/// `train.optimizer`.
struct OptimizerSpec {
  OptimizerType type = OptimizerType::AdamW; ///< type: adamw | muon
  double lr = 1e-3; ///< lr: peak lr (of the matrices under muon)
  int64_t lrReferenceBatch =
      0;                  ///< lr_reference_batch: lr *= batch / this; 0 = off
  double initLrFrac = 1;  ///< init_lr_frac: every lr *= this (nanochat SFT)
  double beta1 = 0.9;     ///< betas[0]
  double beta2 = 0.999;   ///< betas[1]
  double eps = 1e-8;      ///< eps
  double weightDecay = 0; ///< weight_decay
  double weightDecayEnd =
      -1; ///< weight_decay_end: cosine-scheduled wd; <0 = constant
  std::vector<std::string> noDecay; ///< no_decay: parameter groups without wd
  /// head_coefficient_lr: learned head kinds' (alpha, beta), either optimizer
  double headCoefficientLr = 0.01;
  // muon (nanochat): Muon for block matrices, AdamW for the rest
  double momentum = 0.95;       ///< momentum
  bool nesterov = true;         ///< nesterov
  int64_t nsSteps = 5;          ///< ns_steps: Newton-Schulz iterations
  double embeddingLr = 0.2;     ///< embedding_lr
  double unembeddingLr = 0.004; ///< unembedding_lr
  double scalarLr = 0.5;        ///< scalar_lr
  bool scaleLrByWidth =
      true; ///< scale_lr_by_width: AdamW lrs *= (width/768)^-1/2
};

/// `train.schedule`: warmup, then constant, then decay over the final
/// `decay_fraction` of training.
struct ScheduleSpec {
  int64_t warmupSteps = 0;     ///< warmup_steps
  double warmupEpochs = 0;     ///< warmup_epochs
  double warmupLr = 0;         ///< warmup_lr: lr at step 0
  Decay decay = Decay::Cosine; ///< decay: constant | cosine | linear
  double decayFraction = 1;    ///< decay_fraction (nanochat's warmdown_ratio)
  double minLr = 0;            ///< min_lr: lr at the end
};

/// `train.data`.
struct DataSpec {
  DataFormat format = DataFormat::Shards; ///< format
  std::string train;                      ///< train: file, directory or glob
  std::string val;                        ///< val
  /// mixture: conversation files and how many times an epoch reads each
  /// (nanochat's task mixture), in the spec's order.
  std::vector<std::pair<std::string, double>> mixture;
  double valFraction = 0; ///< val_fraction: held out of train when no val
  std::string tokenizer;  ///< tokenizer: file, or "train" (byte-level BPE)
  int64_t workers = 0;    ///< workers: loader threads, 0 = one per core
  bool strict = false; ///< strict: an entry that is no image file is an error
  Packing packing = Packing::None; ///< packing: none | documents | padded
  /// bos: the token that starts a document; -1 until resolved (default:
  /// model.vocab - 1, where lap's trained tokenizers put <|bos|>).
  int64_t bos = -1;
};

/// `train.eval`.
struct EvalSpec {
  int64_t everySteps = 0; ///< every_steps
  double everyEpochs = 0; ///< every_epochs
  int64_t batches = 0;    ///< batches: per evaluation, 0 = the whole split
};

/// `train.checkpoint`.
struct CheckpointSpec {
  int64_t everySteps = 0;          ///< every_steps
  double everyEpochs = 0;          ///< every_epochs
  std::string dir = "checkpoints"; ///< dir
  int64_t keep = 3;                ///< keep: newest N kept
};

/// `train.augment` (supervised).
struct AugmentSpec {
  Crop crop =
      Crop::RandomResized; ///< crop: random_resized | simple_random | none
  double scaleMin = 0.08, scaleMax = 1.0;       ///< crop_scale
  double ratioMin = 0.75, ratioMax = 4.0 / 3.0; ///< crop_ratio
  double hflip = 0.5;                           ///< hflip: probability
  bool threeAugment = false; ///< three_augment: grayscale|solarize|blur
  double colorJitter = 0;    ///< color_jitter: strength, 0 = off
  double mixup = 0;          ///< mixup: Beta(alpha, alpha); 0 = off
  double cutmix = 0;         ///< cutmix: alpha; 0 = off
  double mixProb = 1;        ///< mix_prob
  double switchProb = 0.5;   ///< switch_prob: cutmix instead of mixup
};

/// `train.dino`.
struct DinoSpec {
  int64_t globalCrops = 2;                           ///< global_crops
  int64_t globalCropSize = 224;                      ///< global_crop_size
  double globalScaleMin = 0.4, globalScaleMax = 1.0; ///< global_crop_scale
  int64_t localCrops = 8;                            ///< local_crops
  int64_t localCropSize = 96;                        ///< local_crop_size
  double localScaleMin = 0.05, localScaleMax = 0.4;  ///< local_crop_scale
  double studentTemp = 0.1;                          ///< student_temp
  double teacherTemp = 0.04;                         ///< teacher_temp
  double warmupTeacherTemp = 0.04;                   ///< warmup_teacher_temp
  double warmupTeacherTempEpochs = 0; ///< warmup_teacher_temp_epochs
  double teacherMomentum = 0.996;     ///< teacher_momentum: start of cosine
  double teacherMomentumEnd = 1.0;    ///< teacher_momentum_end
  double centerMomentum = 0.9;        ///< center_momentum
  double freezeLastLayerEpochs = 1;   ///< freeze_last_layer_epochs
};

/// `train.lora`: low-rank adapters (Hu et al. 2021) on the blocks' linear
/// layers, x W^T + (x A^T) B^T alpha / rank, with every other parameter
/// frozen.
struct LoraSpec {
  int64_t rank = 0; ///< rank: 0 = off
  double alpha = 0; ///< alpha: the adapters' scale is alpha / rank
  /// targets: the linear layers of each block that get adapters.
  std::vector<std::string> targets = {"qkv", "proj", "fc1", "fc2"};
  /// train: whole modules trained beside the adapters (PEFT's
  /// modules_to_save): embedding, head.
  std::vector<std::string> train;
  bool enabled() const { return rank > 0; }
  double scale() const { return alpha / double(rank); }
};

/// `train`.
struct TrainSpec {
  Regime regime = Regime::LM; ///< regime: lm | supervised | dino
  int64_t seed = 0;           ///< seed
  int64_t batchSize =
      0; ///< batch_size: sequences or images per step, all devices
  int64_t microBatchSize =
      0;               ///< micro_batch_size: per forward (default batch_size)
  int64_t seqLen = 0;  ///< seq_len (lm; default context)
  int64_t steps = 0;   ///< steps
  double epochs = 0;   ///< epochs
  double gradClip = 0; ///< grad_clip: max global norm, 0 = off
  int64_t zero = 0;    ///< zero: 1 shards the optimizer state over the ranks
  Precision precision = Precision::FP32; ///< precision: fp32 | bf16
  /// matmul_precision: fp32 | bf16, what the matrix products of an fp32
  /// model multiply (bf16: operands rounded to bf16, fp32 accumulation).
  Precision matmulPrecision = Precision::FP32;
  OptimizerSpec optimizer;   ///< optimizer
  ScheduleSpec schedule;     ///< schedule
  DataSpec data;             ///< data
  EvalSpec eval;             ///< eval
  CheckpointSpec checkpoint; ///< checkpoint
  LoraSpec lora;             ///< lora
  int64_t logEvery = 10;     ///< log_every: steps
  // supervised
  AugmentSpec augment;                                ///< augment
  SupervisedLoss loss = SupervisedLoss::CrossEntropy; ///< loss: ce | bce
  double labelSmoothing = 0;                          ///< label_smoothing
  // dino
  DinoSpec dino; ///< dino
};

/// Values computed from the spec; `--emit=spec` prints them under `derived`.
struct DerivedSpec {
  int64_t parameters = 0; ///< Exact count of parameters.
  /// Those training updates: all but under train.lora, where the adapters.
  int64_t trainableParameters = 0;
  /// Parameters per group, in a fixed order (embedding, blocks, head, ...).
  std::vector<std::pair<std::string, int64_t>> parameterGroups;
  int64_t tokens = 0;      ///< Sequence length: tokens per sequence or image.
  double forwardFlops = 0; ///< Per token (gpt) or per image (vit, dino).
  double trainFlops = 0;   ///< Forward + backward, same unit.
  const char *flopsUnit = "token";
};

/// A verified spec.
struct Spec {
  std::string name;        ///< name (default: the file's stem)
  std::string description; ///< description
  ModelSpec model;
  AttentionSpec attention;
  bool hasTrain = false; ///< whether a `train` section was given
  TrainSpec train;
  DerivedSpec derived;
  /// Where each setting was written, by dotted path ("model.layers").
  std::map<std::string, Loc> locations;

  /// The location of `path`, or of its nearest written ancestor.
  Loc locationOf(const std::string &path) const;
  /// Whether `path` was written in the spec (not defaulted).
  bool given(const std::string &path) const { return locations.count(path); }
};

} // namespace lap::dsl

#endif // LAP_DSL_SPEC_H
