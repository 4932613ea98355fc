//===- main.cpp - lapc-run: runs models that lapc compiled ------*- C++ -*-===//
//
// Exit codes: 0 success, 1 a failed run or check, 2 bad input (arguments,
// model files). Under an MPI launcher (mpirun -np N lapc-run train ...)
// each process is one rank; an error on any rank ends the whole job.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Communicator.h"
#include "runtime/interchange/Interchange.h"
#include "runtime/kernels/cpu/Parallel.h"
#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/train/RunSignals.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <thread>

namespace {

/// Integers >= least that fit 64 bits, with a short message (CLI11's number
/// checks print the largest double, and its conversion saturates).
CLI::Validator atLeast(int64_t least) {
  return CLI::Validator(
      [least](std::string &text) -> std::string {
        int64_t value = 0;
        const char *end = text.data() + text.size();
        auto [stop, error] = std::from_chars(text.data(), end, value);
        if (error == std::errc() && stop == end && value >= least)
          return {};
        return "must be an integer >= " + std::to_string(least) + ", got " +
               text;
      },
      "INT>=" + std::to_string(least));
}

/// Ranks × threads within the host's cores: each rank of a job takes its
/// share of them unless OMP_NUM_THREADS says otherwise.
void shareCores(const lap::comm::Communicator &comm) {
  if (comm.localSize() > 1 && !std::getenv("OMP_NUM_THREADS"))
    omp_set_num_threads(std::max(1, int(std::thread::hardware_concurrency()) /
                                        comm.localSize()));
}

} // namespace

int main(int argc, char **argv) {
  // MPI's threads and the thread pool start before anything else, with the
  // signals a run handles blocked: only the main thread takes them.
  std::unique_ptr<lap::comm::Communicator> comm;
  lap::train::withRunSignalsBlocked([&] {
    comm = lap::comm::worldCommunicator(&argc, &argv);
    shareCores(*comm);
    lap::cpu::startThreadPool();
  });
  CLI::App app{"lapc-run: inspect, check and train models compiled by lapc"};
  app.option_defaults()->always_capture_default();
  app.require_subcommand(1);

  std::string infoModel;
  CLI::App *info = app.add_subcommand(
      "info", "Print a model's manifest: parameters, limits and memory");
  info->add_option("model", infoModel, "model.so built by lapc")->required();

  lap::cli::CheckOptions check;
  CLI::App *checkCmd = app.add_subcommand(
      "check", "Run forward and train_step on random data; print the loss "
               "and gradient norms");
  checkCmd->add_option("model", check.model, "model.so built by lapc")
      ->required();
  checkCmd->add_option("--batch", check.batch,
                       "Batch size (default: the compiled maximum)");
  checkCmd->add_option("--seq", check.seq,
                       "Sequence length (default: the compiled maximum)");
  checkCmd->add_option("--seed", check.seed,
                       "Seed of the parameters and the data");
  checkCmd->add_option("--device", check.device,
                       "cpu, cuda or cuda:N (default: the device the "
                       "library was compiled for)");

  lap::cli::TrainOptions train;
  CLI::App *trainCmd = app.add_subcommand(
      "train",
      "Train a model with its spec's train settings (lm, supervised or dino)");
  trainCmd->add_option("model", train.model, "model.so built by lapc")
      ->required();
  trainCmd->add_option(
      "--run-dir", train.runDir,
      "Checkpoints, metrics and data (default: the spec's checkpoint dir)");
  trainCmd
      ->add_option("--steps", train.steps,
                   "Optimizer steps (default: the spec's)")
      ->check(atLeast(1));
  trainCmd
      ->add_option("--stop-at", train.stopAt,
                   "Stop with a checkpoint after this step; the schedule "
                   "still spans --steps, and --resume continues")
      ->check(atLeast(1));
  trainCmd
      ->add_option("--eval-every", train.evalEvery, "Evaluate every N steps")
      ->check(atLeast(1));
  trainCmd
      ->add_option("--checkpoint-every", train.checkpointEvery,
                   "Write a checkpoint every N steps (and at the end)")
      ->check(atLeast(1));
  trainCmd
      ->add_option("--log-every", train.logEvery,
                   "Show and record every N steps")
      ->check(atLeast(1));
  trainCmd->add_option("--seed", train.seed, "Seed (default: the spec's)")
      ->check(atLeast(1));
  auto *resume = trainCmd->add_flag(
      "--resume", train.resume,
      "Continue from the newest checkpoint in the run directory (there must "
      "be one)");
  auto *resumeIfAny = trainCmd->add_flag(
      "--resume-if-any", train.resumeIfAny,
      "Continue from the newest checkpoint if there is one, else start fresh");
  resume->excludes(resumeIfAny);
  trainCmd->add_flag("--resume-from-other-model", train.resumeFromOtherModel,
                     "Resume from a checkpoint of another model (fine-tuning: "
                     "the tensors must still match)");
  trainCmd->add_flag("--allow-schedule-change", train.allowScheduleChange,
                     "Resume under other steps, batch or learning rates than "
                     "the checkpoint was trained with");
  trainCmd->add_flag("--strict", train.strict,
                     "An image folder entry that is no image file (a dangling "
                     "link, a FIFO, a device) is an error, not a counted skip "
                     "(train.data.strict)");
  trainCmd
      ->add_option("--zero", train.zero,
                   "1: shard the optimizer state over the ranks (ZeRO-1)")
      ->check(CLI::IsMember({0, 1}))
      ->default_str("the spec's train.zero");
  trainCmd
      ->add_option("--comm-timeout", train.commTimeout,
                   "Seconds a rank waits for the others in a collective "
                   "before the job ends with an error")
      ->check(CLI::Range(1.0, 1e6));
  trainCmd->add_option("--device", train.device,
                       "cpu, cuda or cuda:N (default: the device the "
                       "library was compiled for)");
  trainCmd
      ->add_option("--init-from", train.initFrom,
                   "Start a new run from the parameters in DIR/"
                   "model.safetensors: a checkpoint, a run directory (its "
                   "newest checkpoint: fine-tuning), or what lapc-run "
                   "import writes")
      ->excludes(resume)
      ->excludes(resumeIfAny);

  lap::cli::ImportOptions import;
  std::string formatNames;
  for (const lap::interchange::Format &f : lap::interchange::formats())
    formatNames += "\n  " + f.name + ": " + f.description;
  CLI::App *importCmd = app.add_subcommand(
      "import", "Another framework's model as a lap spec and parameters; "
                "formats:" +
                    formatNames);
  importCmd
      ->add_option("format", import.format, "hf-gpt2, timm-vit or nanochat")
      ->required();
  importCmd
      ->add_option("source", import.source,
                   "Its directory (config.json and model.safetensors; "
                   "nanochat's model_<step>.pt and meta_<step>.json), or "
                   "DINO's checkpoint file")
      ->required();
  importCmd
      ->add_option("--out", import.out,
                   "A new directory for spec.yaml and model.safetensors")
      ->required();
  importCmd->add_option("--name", import.name,
                        "The spec's name (default: the source's directory)");

  lap::cli::ExportOptions exportOptions;
  CLI::App *exportCmd = app.add_subcommand(
      "export", "A trained model in another framework's names and layouts, "
                "with its config.json; formats:" +
                    formatNames);
  exportCmd->add_option("format", exportOptions.format, "hf-gpt2 or timm-vit")
      ->required();
  exportCmd->add_option("model", exportOptions.model, "model.so built by lapc")
      ->required();
  exportCmd->add_option("--run-dir", exportOptions.runDir,
                        "The training run (its newest checkpoint)");
  exportCmd->add_option("--checkpoint", exportOptions.checkpoint,
                        "A checkpoint directory (default: the run's "
                        "newest), or an import's directory");
  exportCmd
      ->add_option("--out", exportOptions.out,
                   "A new directory for config.json and model.safetensors")
      ->required();
  exportCmd->add_flag("--with-head-kinds", exportOptions.withHeadKinds,
                      "Export heads of kinds the format lacks anyway, "
                      "recording them in config.json (lap_head_kinds)");

  lap::cli::MergeOptions merge;
  CLI::App *mergeCmd = app.add_subcommand(
      "merge", "Fold a train.lora run's adapters into their layers: the base "
               "model's spec and parameters, and the adapters apart");
  mergeCmd->add_option("model", merge.model, "model.so built by lapc")
      ->required();
  mergeCmd->add_option("--run-dir", merge.runDir,
                       "The training run (its newest checkpoint)");
  mergeCmd->add_option("--checkpoint", merge.checkpoint,
                       "A checkpoint directory (default: the run's newest)");
  mergeCmd
      ->add_option("--out", merge.out,
                   "A new directory for spec.yaml, model.safetensors and "
                   "adapters.safetensors")
      ->required();

  lap::cli::EvalOptions eval;
  CLI::App *evalCmd = app.add_subcommand(
      "eval",
      "Evaluate a trained language model: validation loss, bits per byte, "
      "multiple-choice accuracy");
  auto *evalModel = evalCmd->add_option(
      "model", eval.model, "model.so built by lapc (none with --completions)");
  auto *evalRunDir = evalCmd->add_option(
      "--run-dir", eval.runDir, "The training run (data, checkpoints)");
  evalCmd->add_option("--checkpoint", eval.checkpoint,
                      "A checkpoint directory (default: the run's newest)");
  evalCmd->add_option("--device", eval.device,
                      "cpu, cuda or cuda:N (default: the device the library "
                      "was compiled for)");
  evalCmd
      ->add_option("--batches", eval.batches,
                   "Validation batches (default: all)")
      ->check(atLeast(1));
  evalCmd->add_option(
      "--mc", eval.multipleChoice,
      "ARC- or MMLU-style JSONL files of multiple-choice questions");
  auto *task =
      evalCmd
          ->add_option("--task", eval.task,
                       "segmentation: a linear probe on an image model's "
                       "patch tokens (mIoU); gsm8k, humaneval: a chat "
                       "model's answers or --completions, scored; arc, mmlu: "
                       "a chat model's likeliest letter")
          ->check(CLI::IsMember({"segmentation", "gsm8k", "humaneval", "arc",
                                 "mmlu", "chatcore"}));
  evalCmd
      ->add_option("--data", eval.dataFiles,
                   "Segmentation: a set in ADE20K's layout (images/SPLIT/"
                   "*.jpg, annotations/SPLIT/*.png); gsm8k, humaneval, arc, "
                   "mmlu: the task's JSONL file; chatcore: NAME=FILE, once "
                   "per task (arc-easy=ARC-Easy.jsonl, gsm8k=test.jsonl)")
      ->needs(task);
  auto *completions =
      evalCmd
          ->add_option("--completions", eval.completions,
                       "gsm8k, humaneval: score these completions (JSONL of "
                       "{task_id, completion}) instead of generating them")
          ->needs(task)
          ->excludes(evalModel)
          ->excludes(evalRunDir);
  evalCmd
      ->add_option("--results", eval.results,
                   "gsm8k, humaneval, arc, mmlu: write each sample's "
                   "verdict, its completion and pass@1 to this JSON file")
      ->needs(task);
  evalCmd
      ->add_option("--jobs", eval.jobs,
                   "humaneval: programs run at once (default: the CPUs)")
      ->check(atLeast(1))
      ->needs(task);
  evalCmd
      ->add_option("--problems", eval.problems,
                   "gsm8k, humaneval, arc, mmlu: answer the first N problems "
                   "(default: all)")
      ->check(atLeast(1))
      ->needs(task)
      ->excludes(completions);
  evalCmd
      ->add_option("--max-tokens", eval.maxTokens,
                   "gsm8k, humaneval: tokens per answer at most (default 512)")
      ->check(atLeast(1))
      ->needs(task)
      ->excludes(completions);
  evalCmd
      ->add_option("--classes", eval.classes,
                   "Segmentation: classes of the label maps (ADE20K: 150)")
      ->check(atLeast(2))
      ->needs(task);
  evalCmd
      ->add_option("--layers", eval.layers,
                   "Segmentation: the patch tokens of the last N blocks, "
                   "concatenated (DINOv2's multi-layer probe: 4)")
      ->check(atLeast(1))
      ->needs(task);
  evalCmd
      ->add_option("--images", eval.images,
                   "Segmentation: images per split at most (default: all)")
      ->check(atLeast(1))
      ->needs(task);
  evalCmd
      ->add_option("--train-split", eval.trainSplit,
                   "Segmentation: the split the probe trains on")
      ->needs(task);
  evalCmd
      ->add_option("--val-split", eval.valSplit,
                   "Segmentation: the split it is scored on")
      ->needs(task);
  evalCmd
      ->add_option("--seed", eval.seed,
                   "Segmentation: the probe's shuffling seed")
      ->needs(task);
  evalCmd
      ->add_option("--out", eval.out,
                   "Segmentation: the directory for segmentation.json and "
                   "segmentation.png")
      ->needs(task);

  lap::cli::SampleOptions sample;
  CLI::App *sampleCmd = app.add_subcommand(
      "sample",
      "Continue a prompt with a trained language model (KV-cached decoding)");
  sampleCmd->add_option("model", sample.model, "model.so built by lapc")
      ->required();
  sampleCmd
      ->add_option("--run-dir", sample.runDir,
                   "The training run (tokenizer, checkpoints)")
      ->required();
  sampleCmd->add_option("--checkpoint", sample.checkpoint,
                        "A checkpoint directory (default: the run's newest)");
  sampleCmd->add_option("--device", sample.device,
                        "cpu, cuda or cuda:N (default: the device the "
                        "library was compiled for)");
  sampleCmd->add_option("--prompt", sample.prompt,
                        "Text to continue (default: none)");
  sampleCmd->add_option("--tokens", sample.tokens, "New tokens at most")
      ->check(atLeast(1));
  sampleCmd
      ->add_option("--temperature", sample.temperature,
                   "Softmax temperature; 0: greedy")
      ->check(CLI::Range(0.0, 100.0));
  sampleCmd
      ->add_option("--top-k", sample.topK,
                   "Draw from the k most likely tokens; 0: all")
      ->check(atLeast(0));
  sampleCmd->add_option("--samples", sample.samples, "How many samples")
      ->check(atLeast(1));
  sampleCmd->add_option("--seed", sample.seed,
                        "Seed of the first sample (then +1 each)");

  lap::cli::ChatOptions chat;
  CLI::App *chatCmd = app.add_subcommand(
      "chat", "Talk with a fine-tuned chat model (KV-cached, streaming, "
              "with the calculator tool)");
  chatCmd->add_option("model", chat.model, "model.so built by lapc")
      ->required();
  chatCmd
      ->add_option("--run-dir", chat.runDir,
                   "The training run (tokenizer, checkpoints)")
      ->required();
  chatCmd->add_option("--checkpoint", chat.checkpoint,
                      "A checkpoint directory (default: the run's newest)");
  chatCmd->add_option("--device", chat.device,
                      "cpu, cuda or cuda:N (default: the device the library "
                      "was compiled for)");
  chatCmd->add_option("--prompt", chat.prompt,
                      "Answer this one message and exit (default: talk, a "
                      "message a line from stdin)");
  chatCmd
      ->add_option("--temperature", chat.temperature,
                   "Softmax temperature; 0: greedy (default 0.6)")
      ->check(CLI::Range(0.0, 100.0));
  chatCmd
      ->add_option("--top-k", chat.topK,
                   "Draw from the k most likely tokens; 0: all (default 50)")
      ->check(atLeast(0));
  chatCmd
      ->add_option("--max-tokens", chat.maxTokens,
                   "Tokens per answer at most (default 256)")
      ->check(atLeast(1));
  chatCmd->add_option("--seed", chat.seed, "Seed of the draws");

  lap::cli::AnalyzeOptions analyze;
  CLI::App *analyzeCmd = app.add_subcommand(
      "analyze",
      "Geometry of token representations per layer, for one model or two side "
      "by side");
  analyzeCmd
      ->add_option("models", analyze.models,
                   "One or two model.so built by lapc, or the directory of a "
                   "sweep (lapc-run sweep --out)")
      ->required()
      ->expected(1, 2);
  analyzeCmd->add_option(
      "--run-dir", analyze.runDirs,
      "Each model's training run (its newest checkpoint), in order");
  analyzeCmd
      ->add_option("--samples", analyze.samples,
                   "Images (or token windows) to analyse, from the test split")
      ->check(atLeast(2));
  analyzeCmd
      ->add_option(
          "--top-tokens", analyze.topTokens,
          "Language models: next-token classes for the collapse measures")
      ->check(atLeast(2));
  analyzeCmd->add_option("--out", analyze.out,
                         "Directory for the tables and plots");
  analyzeCmd->add_option("--device", analyze.device,
                         "cpu, cuda or cuda:N (default: the device each "
                         "library was compiled for)");

  lap::cli::SweepOptions sweep;
  CLI::App *sweepCmd = app.add_subcommand(
      "sweep", "Train every variant of a spec's sweep: one library per "
               "distinct model, a table of mean ± std over seeds, plots");
  sweepCmd->add_option("spec", sweep.spec, "A spec with a sweep section")
      ->required();
  sweepCmd
      ->add_option("--out", sweep.out,
                   "Directory of the sweep (specs, models, runs, results); "
                   "the same command continues an interrupted sweep there")
      ->required();
  sweepCmd
      ->add_option("--jobs", sweep.jobs,
                   "Variants trained at once (the cores split between them)")
      ->check(atLeast(1));
  sweepCmd
      ->add_option("--steps", sweep.steps,
                   "Optimizer steps of every variant (default: its spec's)")
      ->check(atLeast(1));
  sweepCmd
      ->add_option("--stop-at", sweep.stopAt,
                   "Stop every variant after this step with a checkpoint")
      ->check(atLeast(1));
  sweepCmd->add_flag(
      "--retrain", sweep.retrain,
      "Train again, from scratch, the variants whose record (model library, "
      "seed, --steps) differs from this sweep's: their run directories are "
      "replaced");
  sweepCmd
      ->add_option("--max-batch", sweep.maxBatch,
                   "lapc --max-batch for every model (default: the spec's "
                   "micro-batch)")
      ->check(atLeast(1));

  lap::cli::TokenizeOptions tokenize;
  CLI::App *tokenizeCmd = app.add_subcommand(
      "tokenize", "Train or load a tokenizer and write token shards of a text");
  tokenizeCmd
      ->add_option("text", tokenize.text, "A text file or a directory of them")
      ->required();
  tokenizeCmd
      ->add_option("--out", tokenize.out,
                   "Directory for the shards and tokenizer")
      ->required();
  tokenizeCmd
      ->add_option("--vocab", tokenize.vocab,
                   "Train a byte-level BPE of this many tokens (9 of them "
                   "special: nanochat's conversation tokens and <|bos|>)")
      ->check(atLeast(265)); // 256 bytes and 9 special tokens
  tokenizeCmd->add_option("--tiktoken", tokenize.tiktoken,
                          "Use a tiktoken ranks file");
  auto *gpt2 =
      tokenizeCmd->add_option("--gpt2", tokenize.gpt2Encoder,
                              "Use GPT-2's encoder.json (with --gpt2-merges)");
  tokenizeCmd
      ->add_option("--gpt2-merges", tokenize.gpt2Merges, "GPT-2's vocab.bpe")
      ->needs(gpt2);
  tokenizeCmd
      ->add_option("--val-fraction", tokenize.valFraction,
                   "Tail of the tokens kept for validation")
      ->check(CLI::Range(0.0, 1.0));

  try {
    app.parse(argc, argv);
    if (*tokenizeCmd && tokenize.vocab == 0 && tokenize.tiktoken.empty() &&
        tokenize.gpt2Encoder.empty())
      throw CLI::ValidationError("tokenize",
                                 "give --vocab, --tiktoken or --gpt2");
    if (*evalCmd) {
      bool generative = eval.task == "gsm8k" || eval.task == "humaneval";
      bool chatTask =
          eval.task == "arc" || eval.task == "mmlu" || eval.task == "chatcore";
      if (eval.dataFiles.size() > 1 && eval.task != "chatcore")
        throw CLI::ValidationError(
            "eval", "--data names one file (several: --task chatcore)");
      if (eval.dataFiles.size() == 1)
        eval.data = eval.dataFiles[0];
      if (chatTask && (eval.dataFiles.empty() || eval.model.empty() ||
                       eval.runDir.empty() || !eval.completions.empty()))
        throw CLI::ValidationError(
            "eval", "--task " + eval.task +
                        " scores a model (give it, --run-dir and --data)");
      if (generative && eval.data.empty())
        throw CLI::ValidationError("eval",
                                   "--task " + eval.task + " needs --data");
      if (generative && eval.completions.empty() &&
          (eval.model.empty() || eval.runDir.empty()))
        throw CLI::ValidationError(
            "eval", "--task " + eval.task +
                        " scores --completions, or a model's answers (give "
                        "the model and --run-dir)");
      if (!generative && !chatTask &&
          (eval.model.empty() || eval.runDir.empty()))
        throw CLI::RequiredError("eval needs a model and --run-dir");
    }
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (comm->size() > 1 && !*trainCmd)
      throw std::runtime_error(
          "only 'lapc-run train' runs as several ranks of an MPI job");
    if (*info)
      return lap::cli::info(infoModel);
    if (*trainCmd)
      return lap::cli::trainModel(train, *comm);
    if (*tokenizeCmd)
      return lap::cli::tokenize(tokenize);
    if (*sweepCmd)
      return lap::cli::sweep(sweep);
    if (*evalCmd)
      return eval.task == "segmentation" ? lap::cli::evaluateSegmentation(eval)
             : !eval.task.empty()        ? lap::cli::evaluateTask(eval)
                                         : lap::cli::evaluate(eval);
    if (*sampleCmd)
      return lap::cli::sample(sample);
    if (*chatCmd)
      return lap::cli::chat(chat);
    if (*analyzeCmd)
      return lap::cli::analyze(analyze);
    if (*importCmd)
      return lap::cli::importModel(import);
    if (*exportCmd)
      return lap::cli::exportModel(exportOptions);
    if (*mergeCmd)
      return lap::cli::mergeAdapters(merge);
    return lap::cli::check(check);
  } catch (const std::exception &e) {
    // One write per message: ranks failing together share stderr, and
    // pieces written one by one would interleave with theirs.
    std::string line = comm->size() == 1
                           ? fmt::format("lapc-run: error: {}\n", e.what())
                           : fmt::format("lapc-run: error: rank {} of {}: {}\n",
                                         comm->rank(), comm->size(), e.what());
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
    if (comm->size() == 1)
      return 2;
    // One rank's error ends every rank: the others would wait for it.
    comm->abort(2);
  }
}
