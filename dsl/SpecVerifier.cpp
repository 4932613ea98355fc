//===- SpecVerifier.cpp - Rules that relate settings to each other -*- C++ -*-===//
//
// Each rule reports at the setting the user is most likely to change, and
// says what would satisfy it.
//
//===----------------------------------------------------------------------===//

#include "dsl/SpecVerifier.h"
#include "dsl/Scalars.h"
#include "runtime/platform/FileNames.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

using namespace lap::dsl;

namespace {

class Verifier {
public:
  Verifier(const Spec &spec, const std::set<std::string> &invalid,
           Diagnostics &diags)
      : spec(spec), m(spec.model), t(spec.train), invalid(invalid),
        diags(diags) {}

  void run() {
    verifyName();
    if (!spec.given("model") || !usable({"model.family"}))
      return;
    verifyShape();
    if (m.family != Family::GPT)
      verifyImage();
    if (spec.hasTrain && usable({"train.regime"}))
      verifyTrain();
  }

private:
  /// Whether every named setting read cleanly (so a rule on them is fair).
  bool usable(std::initializer_list<const char *> paths) const {
    for (const char *p : paths)
      if (invalid.count(p))
        return false;
    return true;
  }

  void error(const std::string &path, std::string message) {
    diags.error(spec.locationOf(path), std::move(message));
  }

  /// The name becomes file names (a sweep's specs, libraries and runs).
  void verifyName() {
    std::string why = lap::platform::fileNameProblem(spec.name);
    if (why.empty() || !usable({"name"}))
      return;
    error(spec.given("name") ? "name" : "",
          "the spec's name '" + spec.name + "' " + why +
              ": it names files (a sweep's variants), so it must be a plain "
              "file name" +
              (spec.given("name") ? ""
                                  : " (here the spec file's; give a name:)"));
  }

  void verifyShape() {
    if (!usable({"model.width", "model.heads", "model.head_dim",
                 "model.kv_heads"}) ||
        m.width <= 0 || m.heads <= 0)
      return;
    if (!spec.given("model.head_dim") && m.width % m.heads != 0)
      error("model.heads", "width " + std::to_string(m.width) +
                               " is not divisible by heads " +
                               std::to_string(m.heads) + nearbyDivisors() +
                               ", or set head_dim");
    if (m.kvHeads > m.heads || m.heads % m.kvHeads != 0)
      error("model.kv_heads",
            "kv_heads " + std::to_string(m.kvHeads) + " must divide heads " +
                std::to_string(m.heads) +
                " (each kv head serves a group of query heads)");
    // Keeps every parameter count within int64 (see the bounds in
    // SpecSchema.h).
    constexpr int64_t maxFeatures = 1 << 20;
    if (m.heads * m.headDim > maxFeatures && usable({"model.head_dim"}))
      error("model.head_dim",
            "heads x head_dim = " + std::to_string(m.heads * m.headDim) +
                " exceeds " + std::to_string(maxFeatures));
    if (m.mlpHidden < 1 && usable({"model.mlp_ratio"}))
      error("model.mlp_ratio", "width " + std::to_string(m.width) +
                                   " * mlp_ratio gives no hidden units");
    if (m.mlpHidden > maxFeatures && usable({"model.mlp_ratio"}))
      error("model.mlp_ratio", "the MLP hidden size " +
                                   std::to_string(m.mlpHidden) + " exceeds " +
                                   std::to_string(maxFeatures));
    if (usable({"model.mlp_ratio", "model.mlp_hidden"}) &&
        !spec.given("model.mlp_hidden")) {
      double hidden = double(m.width) * m.mlpRatio;
      if (std::fabs(hidden - std::round(hidden)) > 1e-9)
        error("model.mlp_ratio", "width " + std::to_string(m.width) +
                                     " * mlp_ratio is not a whole number of "
                                     "hidden units; set mlp_hidden");
    }
    if (m.norm.type == NormType::RMSNorm && m.norm.bias &&
        usable({"model.norm.bias"}))
      error("model.norm.bias", "RMSNorm has no bias; remove 'bias' or use "
                               "type: layernorm");
    if (m.positions.type == PositionType::Rope && m.headDim % 2 != 0)
      error("model.positions.type",
            "RoPE rotates pairs of channels: head_dim " +
                std::to_string(m.headDim) + " must be even");
  }

  /// ", e.g. heads: 8 or 10" — head counts near the given one that divide
  /// width.
  std::string nearbyDivisors() const {
    std::vector<int64_t> found;
    for (int64_t delta = 1; delta <= m.heads && found.size() < 2; ++delta)
      for (int64_t h : {m.heads - delta, m.heads + delta})
        if (h > 0 && m.width % h == 0 && found.size() < 2)
          found.push_back(h);
    if (found.empty())
      return "";
    std::string out = "; e.g. heads: " + std::to_string(found[0]);
    if (found.size() > 1)
      out += " or " + std::to_string(found[1]);
    return out;
  }

  void verifyImage() {
    if (usable({"model.image_size", "model.patch"}) && m.patch > 0 &&
        m.imageSize % m.patch != 0)
      error("model.patch", "image_size " + std::to_string(m.imageSize) +
                               " is not divisible by patch " +
                               std::to_string(m.patch));
    if (m.positions.type == PositionType::Rope)
      error("model.positions.type",
            "RoPE positions apply to family 'gpt'; image "
            "models use 'learned' or 'none'");
    if (m.family == Family::ViT && m.classes < 1 && usable({"model.classes"}))
      error("model.classes", "a vit classifies: 'classes' must be at least 1");
    if (m.pool == Pool::Cls && !m.clsToken)
      error("model.pool", "pool: cls needs cls_token: true; use pool: mean or "
                          "attentive");
    if (m.pool == Pool::Attentive && m.poolHeads > 0 &&
        m.width % m.poolHeads != 0)
      error("model.pool_heads", "width " + std::to_string(m.width) +
                                    " is not divisible by pool_heads " +
                                    std::to_string(m.poolHeads));
    if (m.pool != Pool::Attentive && spec.given("model.pool_heads"))
      error("model.pool_heads", "'pool_heads' applies to pool: attentive");
  }

  void verifyTrain() {
    Regime expected = m.family == Family::GPT   ? Regime::LM
                      : m.family == Family::ViT ? Regime::Supervised
                                                : Regime::DINO;
    if (t.regime != expected)
      error("train.regime", "regime " + inQuotes(spelling(t.regime)) +
                                " does not train this model's family; use " +
                                inQuotes(spelling(expected)));
    if (usable({"train.batch_size", "train.micro_batch_size"}) &&
        t.microBatchSize > 0 && t.batchSize % t.microBatchSize != 0)
      error("train.micro_batch_size",
            "batch_size " + std::to_string(t.batchSize) +
                " is not a multiple of micro_batch_size " +
                std::to_string(t.microBatchSize) +
                " (gradient accumulation runs whole micro-batches)");
    if (t.regime == Regime::LM && m.family == Family::GPT &&
        t.seqLen > m.context && usable({"train.seq_len", "model.context"}))
      error("train.seq_len", "seq_len " + std::to_string(t.seqLen) +
                                 " exceeds the model's context " +
                                 std::to_string(m.context));
    bool steps = spec.given("train.steps"), epochs = spec.given("train.epochs");
    if (steps && epochs)
      error("train.epochs", "give either 'steps' or 'epochs', not both");
    else if (!steps && !epochs)
      error("train",
            "say how long to train: set 'steps' or 'epochs' in 'train'");
    if (t.schedule.warmupSteps > 0 && t.schedule.warmupEpochs > 0)
      error("train.schedule.warmup_epochs",
            "give either 'warmup_steps' or 'warmup_epochs', not both");
    if (steps && t.schedule.warmupSteps > t.steps)
      error("train.schedule.warmup_steps",
            "warmup_steps " + std::to_string(t.schedule.warmupSteps) +
                " exceeds steps " + std::to_string(t.steps));
    if (epochs && t.schedule.warmupEpochs > t.epochs)
      error("train.schedule.warmup_epochs", "warmup_epochs exceeds epochs");
    if (t.schedule.minLr > t.optimizer.lr && usable({"train.schedule.min_lr"}))
      error("train.schedule.min_lr", "min_lr is above the peak lr");
    if (t.optimizer.weightDecayEnd > 0 && t.optimizer.weightDecay == 0 &&
        usable({"train.optimizer.weight_decay_end"}))
      error("train.optimizer.weight_decay_end",
            "weight_decay_end schedules the weight decay from weight_decay, "
            "which is 0; set weight_decay to the starting value");
    if (t.eval.everySteps > 0 && t.eval.everyEpochs > 0)
      error("train.eval.every_epochs",
            "give either 'every_steps' or 'every_epochs', not both");
    if (t.checkpoint.everySteps > 0 && t.checkpoint.everyEpochs > 0)
      error("train.checkpoint.every_epochs",
            "give either 'every_steps' or 'every_epochs', not both");
    verifyData();
    if (t.regime == Regime::DINO)
      verifyDino();
    if (spec.given("train.lora"))
      verifyLora();
  }

  void verifyLora() {
    if (t.lora.rank == 0)
      error(spec.given("train.lora.rank") ? "train.lora.rank" : "train.lora",
            "low-rank adapters need a rank of at least 1 (lora.rank; "
            "e.g. 16, with alpha 32)");
    else if (t.lora.targets.empty())
      error("train.lora.targets",
            "name the linear layers that get adapters: qkv, proj, fc1, fc2");
    bool head = std::find(t.lora.train.begin(), t.lora.train.end(), "head") !=
                t.lora.train.end();
    if (head && m.family == Family::GPT && m.tiedEmbeddings)
      error("train.lora.train",
            "with tied_embeddings the head is the embedding: train "
            "'embedding'");
  }

  void verifyData() {
    bool text = t.data.format == DataFormat::Shards ||
                t.data.format == DataFormat::Text ||
                t.data.format == DataFormat::Conversations;
    if (text != (t.regime == Regime::LM))
      error("train.data.format",
            text ? "token or text data trains language models; "
                   "image regimes read idx, cifar10, cifar100 "
                   "or imagefolder"
                 : "image data trains vit and dino; regime "
                   "'lm' reads shards, text or conversations");
    if (t.data.format == DataFormat::Conversations)
      verifyConversations();
    else if (!t.data.mixture.empty())
      error("train.data.mixture",
            "a mixture of files is read by 'format: conversations'");
    if (t.data.format == DataFormat::Text && t.data.tokenizer.empty())
      error("train.data.format", "text data needs a tokenizer: set "
                                 "data.tokenizer to a file, or to 'train'");
    // 256 bytes and nanochat's 9 special tokens (Tokenizer::train).
    constexpr int64_t kSmallestTrainedVocab = 265;
    if (t.data.format == DataFormat::Text && t.data.tokenizer == "train" &&
        m.vocab < kSmallestTrainedVocab && usable({"model.vocab"}))
      error("model.vocab",
            "a trained tokenizer holds 256 bytes and 9 special tokens: "
            "vocab must be at least " +
                std::to_string(kSmallestTrainedVocab));
    if (spec.given("train.data.bos") && t.data.packing == Packing::None)
      error("train.data.bos", "'bos' marks where documents start, for "
                              "'packing: documents' or 'padded'");
    else if (t.data.packing != Packing::None && t.data.bos >= m.vocab &&
             usable({"model.vocab"}))
      error(spec.given("train.data.bos") ? "train.data.bos"
                                         : "train.data.packing",
            "the token that starts a document, " + std::to_string(t.data.bos) +
                ", is not in the vocabulary of " + std::to_string(m.vocab) +
                " tokens");
  }

  /// Fine-tuning on conversations: the pretrained model's tokenizer, and
  /// one file or a mixture of them.
  void verifyConversations() {
    const DataSpec &d = t.data;
    if (d.tokenizer.empty() || d.tokenizer == "train")
      error("train.data.format",
            "conversations are rendered with the pretrained model's "
            "tokenizer: set data.tokenizer to its file (a run's "
            "data/tokenizer.tiktoken)");
    if (d.train.empty() == d.mixture.empty())
      error(d.mixture.empty() ? "train.data.format" : "train.data.mixture",
            "give the conversations as 'train' (one file) or 'mixture' "
            "(files and their epochs), not both");
  }

  void verifyDino() {
    const DinoSpec &d = t.dino;
    if (d.globalCropSize != m.imageSize &&
        usable({"train.dino.global_crop_size"}))
      error("train.dino.global_crop_size",
            "global crops are the model's images: "
            "global_crop_size must equal image_size " +
                std::to_string(m.imageSize));
    if (m.patch > 0 && d.localCropSize % m.patch != 0)
      error("train.dino.local_crop_size",
            "local_crop_size " + std::to_string(d.localCropSize) +
                " is not divisible by patch " + std::to_string(m.patch));
    if (d.localCrops > 0 && d.localCropSize > d.globalCropSize)
      error("train.dino.local_crop_size",
            "local crops are smaller views: local_crop_size " +
                std::to_string(d.localCropSize) +
                " is larger than global_crop_size " +
                std::to_string(d.globalCropSize));
    // Each view learns from the global views other than itself: one
    // global view alone leaves no (teacher, student) pair.
    if (d.globalCrops == 1 && d.localCrops == 0 &&
        usable({"train.dino.global_crops", "train.dino.local_crops"}))
      error(spec.given("train.dino.local_crops") ? "train.dino.local_crops"
                                                 : "train.dino.global_crops",
            "one global crop and no local crops leave no (teacher, student) "
            "pair to learn from: add a global crop or local crops");
    if (d.teacherMomentumEnd < d.teacherMomentum)
      error("train.dino.teacher_momentum_end",
            "teacher momentum rises during training: teacher_momentum_end "
            "must be at least teacher_momentum");
  }

  const Spec &spec;
  const ModelSpec &m;
  const TrainSpec &t;
  const std::set<std::string> &invalid;
  Diagnostics &diags;
};

} // namespace

void lap::dsl::verifySpec(const Spec &spec,
                          const std::set<std::string> &invalid,
                          Diagnostics &diags) {
  Verifier(spec, invalid, diags).run();
}
