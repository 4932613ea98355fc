//===- SpecSchema.h - The spec language, key by key -------------*- C++ -*-===//
//
// One description of the language, walked by two visitors: the parser (which
// reads and checks YAML into a Spec) and the printer (which writes a Spec in
// canonical form). Keeping both on one walk means the canonical form can
// always be read back, and a new setting is one line here plus its field in
// Spec.h.
//
// A visitor provides:
//   section(key, applies, body)     a nested mapping
//   optionalSection(key, applies, on, body)  one printed only while `on`
//   field(key, value, rule, applies, required)
//   range(key, lo, hi, rule, applies)      a [low, high] pair
//   pair(key, a, b, rule)                  any two numbers
//   floatOrWord(key, value, isWord, word, rule)  a number or one keyword
//   strings(key, values, allowed)          a list of names
//   weights(key, entries, rule, applies)   a mapping of names to numbers
//
//===----------------------------------------------------------------------===//

#ifndef LAP_DSL_SPECSCHEMA_H
#define LAP_DSL_SPECSCHEMA_H

#include "dsl/Spec.h"

#include <limits>
#include <string_view>
#include <utility>
#include <vector>

namespace lap::dsl::schema {

/// Allowed numeric range; `what` names it in messages (null: "between
/// min and max").
struct Rule {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool minExclusive = false;
  const char *what = nullptr;
  bool maxExclusive = false;

  /// Whether `v` lies in the range.
  constexpr bool admits(double v) const {
    return v >= min && v <= max && !(minExclusive && v == min) &&
           !(maxExclusive && v == max);
  }
  /// The same for an integer, compared as an integer: the bounds are whole
  /// numbers or infinite, and a double would round v first.
  constexpr bool admitsInteger(int64_t v) const {
    auto below = [](double bound, int64_t x) { // bound < x, exactly
      return bound < -9.2e18 || (bound < 9.2e18 && int64_t(bound) < x);
    };
    auto equal = [](double bound, int64_t x) {
      return bound > -9.2e18 && bound < 9.2e18 && int64_t(bound) == x;
    };
    bool aboveMin = below(min, v) || (!minExclusive && equal(min, v));
    bool belowMax = !(below(max, v) || (maxExclusive && equal(max, v)));
    return aboveMin && belowMax;
  }
};
inline constexpr Rule any{};
inline constexpr Rule positive{1, std::numeric_limits<double>::infinity(),
                               false, "at least 1"};
inline constexpr Rule nonNegative{0, std::numeric_limits<double>::infinity(),
                                  false, "at least 0"};
inline constexpr Rule greaterThanZero{
    0, std::numeric_limits<double>::infinity(), true, "greater than 0"};
inline constexpr Rule probability{0, 1, false, "a probability in [0, 1]"};
inline constexpr Rule fraction{0, 1, true, "in (0, 1]"};
/// Dropout-like rates: 1 would divide by zero when rescaling.
inline constexpr Rule dropRate{0, 1, false, "a probability in [0, 1)", true};
/// ZeRO stages lap implements: 0 (off) and 1 (optimizer state sharded).
inline constexpr Rule zeroStage{0, 1, false, "0 or 1"};
/// A count from 1 to `max`; the bounds keep every derived size in range.
constexpr Rule upTo(double max) { return {1, max, false, nullptr}; }
inline constexpr Rule layerCount = upTo(4096);      // layers, heads
inline constexpr Rule featureCount = upTo(1 << 20); // widths, hidden sizes
inline constexpr Rule itemCount = upTo(1 << 24);    // vocab, classes, tokens

/// Which families and regimes a key belongs to (bit masks).
struct Applies {
  unsigned families = 0b111;  ///< 1 << Family
  unsigned regimes = 0b111;   ///< 1 << Regime
  unsigned optimizers = 0b11; ///< 1 << OptimizerType
  unsigned precisions = 0b11; ///< 1 << Precision (train.precision)
};
inline constexpr unsigned bit(Family f) { return 1u << unsigned(f); }
inline constexpr unsigned bit(Regime r) { return 1u << unsigned(r); }
inline constexpr unsigned bit(OptimizerType o) { return 1u << unsigned(o); }
inline constexpr unsigned bit(Precision p) { return 1u << unsigned(p); }
inline constexpr Applies always{};
inline constexpr Applies gptOnly{bit(Family::GPT)};
inline constexpr Applies imageOnly{bit(Family::ViT) | bit(Family::DINO)};
inline constexpr Applies dinoOnly{bit(Family::DINO)};
inline constexpr Applies lmOnly{0b111, bit(Regime::LM)};
inline constexpr Applies supervisedOnly{0b111, bit(Regime::Supervised)};
inline constexpr Applies dinoRegimeOnly{0b111, bit(Regime::DINO)};
inline constexpr Applies imageRegimes{0b111, bit(Regime::Supervised) |
                                                 bit(Regime::DINO)};
inline constexpr Applies notDino{0b111,
                                 bit(Regime::LM) | bit(Regime::Supervised)};
inline constexpr Applies muonOnly{0b111, 0b111, bit(OptimizerType::Muon)};
inline constexpr Applies fp32Only{0b111, 0b111, 0b11, bit(Precision::FP32)};
inline constexpr bool required = true;

/// Spelling of every enum value, in documentation order.
template <class E> const std::vector<std::pair<std::string_view, E>> &names();

#define LAP_ENUM_NAMES(E, ...)                                                 \
  template <>                                                                  \
  inline const std::vector<std::pair<std::string_view, E>> &names<E>() {       \
    static const std::vector<std::pair<std::string_view, E>> table = {         \
        __VA_ARGS__};                                                          \
    return table;                                                              \
  }
LAP_ENUM_NAMES(Family, {"gpt", Family::GPT}, {"vit", Family::ViT},
               {"dino", Family::DINO})
LAP_ENUM_NAMES(Activation, {"gelu_tanh", Activation::GeluTanh},
               {"gelu", Activation::Gelu}, {"relu2", Activation::ReLU2})
LAP_ENUM_NAMES(NormType, {"layernorm", NormType::LayerNorm},
               {"rmsnorm", NormType::RMSNorm})
LAP_ENUM_NAMES(PositionType, {"learned", PositionType::Learned},
               {"rope", PositionType::Rope}, {"none", PositionType::None})
LAP_ENUM_NAMES(Pool, {"cls", Pool::Cls}, {"mean", Pool::Mean},
               {"attentive", Pool::Attentive})
LAP_ENUM_NAMES(InitDistribution, {"normal", InitDistribution::Normal},
               {"trunc_normal", InitDistribution::TruncNormal},
               {"uniform", InitDistribution::Uniform})
LAP_ENUM_NAMES(Regime, {"lm", Regime::LM}, {"supervised", Regime::Supervised},
               {"dino", Regime::DINO})
LAP_ENUM_NAMES(OptimizerType, {"adamw", OptimizerType::AdamW},
               {"muon", OptimizerType::Muon})
LAP_ENUM_NAMES(Decay, {"constant", Decay::Constant}, {"cosine", Decay::Cosine},
               {"linear", Decay::Linear})
LAP_ENUM_NAMES(SupervisedLoss, {"ce", SupervisedLoss::CrossEntropy},
               {"bce", SupervisedLoss::BCE})
LAP_ENUM_NAMES(Precision, {"fp32", Precision::FP32}, {"bf16", Precision::BF16})
LAP_ENUM_NAMES(Crop, {"random_resized", Crop::RandomResized},
               {"simple_random", Crop::SimpleRandom}, {"none", Crop::None})
LAP_ENUM_NAMES(DataFormat, {"shards", DataFormat::Shards},
               {"text", DataFormat::Text},
               {"conversations", DataFormat::Conversations},
               {"idx", DataFormat::IDX}, {"cifar10", DataFormat::CIFAR10},
               {"cifar100", DataFormat::CIFAR100},
               {"imagefolder", DataFormat::ImageFolder})
LAP_ENUM_NAMES(Packing, {"none", Packing::None},
               {"documents", Packing::Documents}, {"padded", Packing::Padded})
#undef LAP_ENUM_NAMES

/// Parameter groups that `optimizer.no_decay` may name.
inline const std::vector<std::string_view> &parameterGroupNames() {
  static const std::vector<std::string_view> groups = {
      "bias",      "norm",   "layer_scale", "embedding",
      "positions", "tokens", "head"};
  return groups;
}

/// The linear layers of a block that `lora.targets` may name.
inline const std::vector<std::string_view> &loraTargetNames() {
  static const std::vector<std::string_view> targets = {"qkv", "proj", "fc1",
                                                        "fc2"};
  return targets;
}

/// The modules `lora.train` may name.
inline const std::vector<std::string_view> &loraModuleNames() {
  static const std::vector<std::string_view> modules = {"embedding", "head"};
  return modules;
}

/// `M` is ModelSpec for the parser and const ModelSpec for the printer.
template <class V, class M> void visitModel(V &v, M &m) {
  v.field("family", m.family, any, always, required);
  v.field("layers", m.layers, layerCount, always, required);
  v.field("width", m.width, featureCount, always, required);
  v.field("heads", m.heads, layerCount, always, required);
  v.field("head_dim", m.headDim, featureCount);
  v.field("kv_heads", m.kvHeads, layerCount);
  v.field("mlp_ratio", m.mlpRatio, Rule{0, 1024, true, nullptr});
  v.field("mlp_hidden", m.mlpHidden, featureCount);
  v.field("activation", m.activation);
  v.section("norm", always, [&] {
    v.field("type", m.norm.type);
    v.field("weight", m.norm.weight);
    v.field("bias", m.norm.bias);
    v.field("eps", m.norm.eps, greaterThanZero);
  });
  v.field("embedding_norm", m.embeddingNorm);
  v.field("final_norm", m.finalNorm);
  v.section("positions", always, [&] {
    v.field("type", m.positions.type);
    v.field("rope_base", m.positions.ropeBase, greaterThanZero);
    v.field("patches_only", m.positions.patchesOnly, any, imageOnly);
  });
  v.field("qk_norm", m.qkNorm);
  v.field("bias", m.bias);
  v.field("dropout", m.dropout, dropRate);
  v.field("vocab", m.vocab, upTo(2147483647.0), gptOnly, required);
  v.field("context", m.context, itemCount, gptOnly, required);
  v.field("tied_embeddings", m.tiedEmbeddings, any, gptOnly);
  v.field("logit_softcap", m.logitSoftcap, nonNegative, gptOnly);
  v.field("image_size", m.imageSize, upTo(1 << 16), imageOnly, required);
  v.field("patch", m.patch, upTo(1 << 16), imageOnly, required);
  v.field("channels", m.channels, upTo(256), imageOnly);
  v.field("classes", m.classes, Rule{0, 1 << 24, false, nullptr}, imageOnly);
  v.field("cls_token", m.clsToken, any, imageOnly);
  v.field("registers", m.registers, Rule{0, 1 << 16, false, nullptr},
          imageOnly);
  v.field("layer_scale", m.layerScale, nonNegative, imageOnly);
  v.field("drop_path", m.dropPath, dropRate, imageOnly);
  v.field("pool", m.pool, any, imageOnly);
  v.field("pool_heads", m.poolHeads, layerCount, imageOnly);
  v.section("dino_head", dinoOnly, [&] {
    v.field("layers", m.dinoHead.layers, upTo(64));
    v.field("hidden", m.dinoHead.hidden, featureCount);
    v.field("bottleneck", m.dinoHead.bottleneck, featureCount);
    v.field("prototypes", m.dinoHead.prototypes, itemCount);
    v.field("norm_last_layer", m.dinoHead.normLastLayer);
  });
  v.section("init", always, [&] {
    v.field("distribution", m.init.distribution);
    v.floatOrWord("std", m.init.std, m.init.stdFanIn, "fan_in", nonNegative);
    v.field("embedding_std", m.init.embeddingStd, nonNegative);
    v.field("position_std", m.init.positionStd, nonNegative);
    v.field("head_std", m.init.headStd, nonNegative);
    v.field("zero_out_proj", m.init.zeroOutProj);
    v.field("zero_head", m.init.zeroHead);
  });
}

/// `T` is TrainSpec for the parser and const TrainSpec for the printer.
template <class V, class T> void visitTrain(V &v, T &t) {
  v.field("regime", t.regime, any, always, required);
  v.field("seed", t.seed, nonNegative);
  v.field("batch_size", t.batchSize, upTo(1 << 30), always, required);
  v.field("micro_batch_size", t.microBatchSize, upTo(1 << 30));
  v.field("seq_len", t.seqLen, itemCount, lmOnly);
  v.field("steps", t.steps, positive);
  v.field("epochs", t.epochs, greaterThanZero);
  v.field("grad_clip", t.gradClip, nonNegative);
  v.field("zero", t.zero, zeroStage);
  v.field("precision", t.precision);
  v.field("matmul_precision", t.matmulPrecision, any, fp32Only);
  v.field("log_every", t.logEvery, positive);
  v.section("optimizer", always, [&] {
    auto &o = t.optimizer;
    v.field("type", o.type);
    v.field("lr", o.lr, nonNegative);
    v.field("lr_reference_batch", o.lrReferenceBatch, nonNegative);
    v.field("init_lr_frac", o.initLrFrac, greaterThanZero);
    v.pair("betas", o.beta1, o.beta2, probability);
    v.field("eps", o.eps, greaterThanZero);
    v.field("weight_decay", o.weightDecay, nonNegative);
    v.field("weight_decay_end", o.weightDecayEnd, nonNegative);
    v.strings("no_decay", o.noDecay, parameterGroupNames());
    v.field("head_coefficient_lr", o.headCoefficientLr, nonNegative);
    v.field("momentum", o.momentum, probability, muonOnly);
    v.field("nesterov", o.nesterov, any, muonOnly);
    v.field("ns_steps", o.nsSteps, positive, muonOnly);
    v.field("embedding_lr", o.embeddingLr, nonNegative, muonOnly);
    v.field("unembedding_lr", o.unembeddingLr, nonNegative, muonOnly);
    v.field("scalar_lr", o.scalarLr, nonNegative, muonOnly);
    v.field("scale_lr_by_width", o.scaleLrByWidth, any, muonOnly);
  });
  v.section("schedule", always, [&] {
    auto &s = t.schedule;
    v.field("warmup_steps", s.warmupSteps, nonNegative);
    v.field("warmup_epochs", s.warmupEpochs, nonNegative);
    v.field("warmup_lr", s.warmupLr, nonNegative);
    v.field("decay", s.decay);
    v.field("decay_fraction", s.decayFraction, probability);
    v.field("min_lr", s.minLr, nonNegative);
  });
  v.section("data", always, [&] {
    auto &d = t.data;
    v.field("format", d.format);
    v.field("train", d.train);
    v.field("val", d.val);
    v.weights("mixture", d.mixture, greaterThanZero, lmOnly);
    v.field("val_fraction", d.valFraction, probability, lmOnly);
    v.field("tokenizer", d.tokenizer, any, lmOnly);
    v.field("packing", d.packing, any, lmOnly);
    v.field("bos", d.bos, nonNegative, lmOnly);
    v.field("workers", d.workers, nonNegative, imageRegimes);
    v.field("strict", d.strict, any, imageRegimes);
  });
  v.section("eval", always, [&] {
    v.field("every_steps", t.eval.everySteps, nonNegative);
    v.field("every_epochs", t.eval.everyEpochs, nonNegative);
    v.field("batches", t.eval.batches, nonNegative);
  });
  v.section("checkpoint", always, [&] {
    v.field("every_steps", t.checkpoint.everySteps, nonNegative);
    v.field("every_epochs", t.checkpoint.everyEpochs, nonNegative);
    v.field("dir", t.checkpoint.dir);
    v.field("keep", t.checkpoint.keep, positive);
  });
  v.optionalSection("lora", notDino, t.lora.enabled(), [&] {
    v.field("rank", t.lora.rank, Rule{0, 1 << 20, false, nullptr});
    v.field("alpha", t.lora.alpha, greaterThanZero);
    v.strings("targets", t.lora.targets, loraTargetNames());
    v.strings("train", t.lora.train, loraModuleNames());
  });
  v.section("augment", supervisedOnly, [&] {
    auto &a = t.augment;
    v.field("crop", a.crop);
    v.range("crop_scale", a.scaleMin, a.scaleMax, fraction);
    v.range("crop_ratio", a.ratioMin, a.ratioMax, greaterThanZero);
    v.field("hflip", a.hflip, probability);
    v.field("three_augment", a.threeAugment);
    v.field("color_jitter", a.colorJitter, nonNegative);
    v.field("mixup", a.mixup, nonNegative);
    v.field("cutmix", a.cutmix, nonNegative);
    v.field("mix_prob", a.mixProb, probability);
    v.field("switch_prob", a.switchProb, probability);
  });
  v.field("loss", t.loss, any, supervisedOnly);
  v.field("label_smoothing", t.labelSmoothing, probability, supervisedOnly);
  v.section("dino", dinoRegimeOnly, [&] {
    auto &d = t.dino;
    v.field("global_crops", d.globalCrops, upTo(64));
    v.field("global_crop_size", d.globalCropSize, upTo(1 << 16));
    v.range("global_crop_scale", d.globalScaleMin, d.globalScaleMax, fraction);
    v.field("local_crops", d.localCrops, Rule{0, 64, false, nullptr});
    v.field("local_crop_size", d.localCropSize, upTo(1 << 16));
    v.range("local_crop_scale", d.localScaleMin, d.localScaleMax, fraction);
    v.field("student_temp", d.studentTemp, greaterThanZero);
    v.field("teacher_temp", d.teacherTemp, greaterThanZero);
    v.field("warmup_teacher_temp", d.warmupTeacherTemp, greaterThanZero);
    v.field("warmup_teacher_temp_epochs", d.warmupTeacherTempEpochs,
            nonNegative);
    v.field("teacher_momentum", d.teacherMomentum, probability);
    v.field("teacher_momentum_end", d.teacherMomentumEnd, probability);
    v.field("center_momentum", d.centerMomentum, probability);
    v.field("freeze_last_layer_epochs", d.freezeLastLayerEpochs, nonNegative);
  });
}

} // namespace lap::dsl::schema

#endif // LAP_DSL_SPECSCHEMA_H
