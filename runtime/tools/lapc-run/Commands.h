//===- Commands.h - lapc-run's subcommands ----------------------*- C++ -*-===//

#ifndef LAP_RUNTIME_TOOLS_LAPCRUN_COMMANDS_H
#define LAP_RUNTIME_TOOLS_LAPCRUN_COMMANDS_H

#include <cstdint>
#include <string>
#include <vector>

namespace lap::comm {
class Communicator;
}

namespace lap::cli {

/// `lapc-run info MODEL`: manifest, parameter table, memory.
int info(const std::string &modelPath);

struct CheckOptions {
  std::string model;
  std::string device;         ///< cpu, cuda or cuda:N; "": the library's
  int64_t batch = 0, seq = 0; ///< 0: the compiled maxima
  uint64_t seed = 1;
};
/// `lapc-run check MODEL`: forward and train_step on random data.
int check(const CheckOptions &options);

struct TrainOptions {
  std::string model, runDir;
  int64_t steps = 0, evalEvery = 0, checkpointEvery = 0,
          logEvery = 0; ///< 0: the spec's
  int64_t stopAt = 0;   ///< 0: run all steps
  uint64_t seed = 0;    ///< 0: the spec's
  bool resume = false, resumeIfAny = false;
  bool resumeFromOtherModel = false, allowScheduleChange = false;
  bool strict = false;      ///< train.data.strict: no image entry skipped
  int64_t zero = -1;        ///< -1: the spec's train.zero
  double commTimeout = 300; ///< seconds
  std::string device;       ///< cpu, cuda or cuda:N; "": the library's
  std::string initFrom;     ///< a directory whose model.safetensors starts it
};
/// `lapc-run train MODEL`: the training loop with the spec's train settings,
/// on the ranks of `comm` (one process, or an MPI job).
int trainModel(const TrainOptions &options, comm::Communicator &comm);

struct TokenizeOptions {
  std::string text, out;
  uint32_t vocab = 0;   ///< train a tokenizer of this many tokens
  std::string tiktoken; ///< or load one
  std::string gpt2Encoder, gpt2Merges;
  double valFraction = 0.05;
};
/// `lapc-run tokenize`: text to a tokenizer and token shards.
int tokenize(const TokenizeOptions &options);

struct EvalOptions {
  std::string model, runDir, checkpoint;
  std::string device;  ///< cpu, cuda or cuda:N; "": the library's
  int64_t batches = 0; ///< validation batches; 0: the whole split
  std::vector<std::string> multipleChoice;
  std::string task; ///< "": the run's regime's; "segmentation", "gsm8k",
                    ///< "humaneval", "arc", "mmlu"
  // --task segmentation
  std::string data, trainSplit = "training", valSplit = "validation",
                    out = "segmentation";
  /// --data as given: one file, or for chatcore NAME=FILE per task.
  std::vector<std::string> dataFiles;
  int64_t classes = 150, images = 0; ///< images: per split; 0: all
  int64_t layers = 1; ///< the last blocks whose patch tokens are concatenated
  uint64_t seed = 0;
  // --task gsm8k / humaneval
  std::string completions, results;
  int64_t jobs = 0;        ///< programs run at once; 0: the CPUs
  int64_t problems = 0;    ///< generating: the first N; 0: all
  int64_t maxTokens = 512; ///< generating: tokens per answer at most
};
/// `lapc-run eval MODEL`: validation loss, bits per byte, multiple choice.
int evaluate(const EvalOptions &options);
/// `lapc-run eval MODEL --task segmentation`: the linear segmentation
/// probe on the model's patch tokens.
int evaluateSegmentation(const EvalOptions &options);
/// `lapc-run eval --task gsm8k|humaneval --data F`: scores the completions
/// given (--completions C) or the model's greedy answers (MODEL --run-dir
/// R); HumanEval's programs run in the sandbox. `--task arc|mmlu`: a chat
/// model's likeliest letter. `--task chatcore --data NAME=F ...`: each
/// task (NAME arc, mmlu, gsm8k or humaneval, or one of them and a suffix:
/// arc-easy), and the mean of their centred scores.
int evaluateTask(const EvalOptions &options);

struct ChatOptions {
  std::string model, runDir, checkpoint, prompt;
  std::string device; ///< cpu, cuda or cuda:N; "": the library's
  int64_t maxTokens = 256, topK = 50;
  double temperature = 0.6;
  uint64_t seed = 1;
};
/// `lapc-run chat MODEL`: a conversation with a fine-tuned model, one user
/// message a line of stdin ("clear" starts anew, "quit" ends), or one
/// answer to --prompt.
int chat(const ChatOptions &options);

struct SampleOptions {
  std::string model, runDir, checkpoint, prompt;
  std::string device; ///< cpu, cuda or cuda:N; "": the library's
  int64_t tokens = 200, topK = 50, samples = 1;
  double temperature = 0.8;
  uint64_t seed = 1;
};

int sample(const SampleOptions &options);

struct SweepOptions {
  std::string spec, out;
  int64_t jobs = 1;     ///< variants trained at once, the cores split
  int64_t steps = 0;    ///< 0: each variant's own
  int64_t stopAt = 0;   ///< stop every variant after this step (a checkpoint)
  int64_t maxBatch = 0; ///< lapc --max-batch; 0: the spec's micro-batch
  bool retrain = false; ///< replace variants trained otherwise than asked
};
/// `lapc-run sweep SPEC --out DIR`: every variant of the spec's sweep,
/// compiled once per distinct model, trained, tabulated and plotted.
int sweep(const SweepOptions &options);

struct AnalyzeOptions {
  std::vector<std::string> models, runDirs;
  std::string out = "analysis";
  std::string device;     ///< cpu, cuda or cuda:N; "": each library's
  int64_t samples = 1000; ///< images, or token windows of a language model
  int64_t topTokens = 20; ///< next-token classes of the language-model collapse
  std::vector<std::string> labels; ///< names in the table; default: the specs'
};

/// `lapc-run analyze MODEL... --run-dir DIR...`, or `lapc-run analyze
/// SWEEP_DIR`: every trained variant of a sweep, each into
/// SWEEP_DIR/analysis/<variant>/.
int analyze(const AnalyzeOptions &options);
int analyzeSweep(const AnalyzeOptions &options);

struct ImportOptions {
  std::string format, source, out, name;
};
/// `lapc-run import FORMAT SOURCE --out DIR`: another framework's model as
/// a lap spec and parameters (runtime/interchange).
int importModel(const ImportOptions &options);

struct ExportOptions {
  std::string format, model, runDir, checkpoint, out;
  bool withHeadKinds = false;
};
/// `lapc-run export FORMAT MODEL --run-dir RUN --out DIR`: a trained model
/// in another framework's names and layouts, with its config.
int exportModel(const ExportOptions &options);

struct MergeOptions {
  std::string model, runDir, checkpoint, out;
};
/// `lapc-run merge MODEL --run-dir RUN --out DIR`: a train.lora run's
/// adapters folded into their layers: the base model's spec.yaml and
/// model.safetensors (what `lapc-run train --init-from` reads), and the
/// adapters alone in adapters.safetensors.
int mergeAdapters(const MergeOptions &options);

} // namespace lap::cli

#endif // LAP_RUNTIME_TOOLS_LAPCRUN_COMMANDS_H
