//===- Chat.cpp - lapc-run chat -----------------------------------*- C++ -*-===//
//
// A conversation with a fine-tuned chat model, as nanochat's chat_cli: each
// line of stdin is a user message; the assistant's answer streams as it is
// drawn (ChatEngine: KV-cached, with the calculator tool), and both join
// the conversation the next answer continues. "clear" starts a new
// conversation, "quit" (or the end of input) ends; --prompt answers one
// message.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Conversations.h"
#include "runtime/tools/lapc-run/Commands.h"
#include "runtime/tools/lapc-run/ModelInstance.h"
#include "runtime/train/ChatEngine.h"
#include "runtime/train/LmRegime.h"
#include "runtime/train/SpecConfig.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <cstdio>
#include <iostream>

using namespace lap;

int lap::cli::chat(const ChatOptions &options) {
  ModelInstance run(options.model, options.device);
  dsl::Spec spec = train::specOf(run.model);
  data::Tokenizer tokenizer = train::requireRunTokenizer(spec, options.runDir);
  run.restore(train::checkpointOf(options.runDir, options.checkpoint));
  train::ChatEngine engine(run.calls, run.params.data(), tokenizer);
  auto special = [&](const char *name) {
    return data::conversationToken(tokenizer, name);
  };
  const uint32_t userStart = special("<|user_start|>"),
                 userEnd = special("<|user_end|>"),
                 assistantStart = special("<|assistant_start|>"),
                 assistantEnd = special("<|assistant_end|>");
  train::SampleOptions draw;
  draw.temperature = options.temperature;
  draw.topK = options.topK;
  draw.maxTokens = options.maxTokens;
  draw.seed = options.seed;

  const bool talk = options.prompt.empty();
  if (talk)
    fmt::print("chat with {}: a message a line; 'clear' starts anew, "
               "'quit' ends\n",
               spec.name);
  std::vector<uint32_t> conversation{tokenizer.bosId()};
  std::string line;
  while (true) {
    if (talk) {
      fmt::print("\nUser: ");
      std::fflush(stdout);
      if (!std::getline(std::cin, line) || line == "quit" || line == "exit")
        break;
      if (line == "clear") {
        conversation = {tokenizer.bosId()};
        fmt::print("(a new conversation)\n");
        continue;
      }
      if (line.empty())
        continue;
    } else {
      line = options.prompt;
    }
    std::vector<uint32_t> prompt = conversation;
    prompt.push_back(userStart);
    for (uint32_t id : tokenizer.encode(line))
      prompt.push_back(id);
    prompt.push_back(userEnd);
    prompt.push_back(assistantStart);
    if (int64_t(prompt.size()) >= run.model.maxSeq()) {
      std::string full =
          fmt::format("the conversation fills the model's context of {} tokens",
                      run.model.maxSeq());
      if (!talk)
        throw std::runtime_error("--prompt: " + full);
      fmt::print("({}; 'clear' starts anew)\n", full);
      continue;
    }
    fmt::print("{}", talk ? "Assistant: " : "");
    std::fflush(stdout);
    std::vector<uint32_t> answer =
        engine.answer(prompt, draw, [&](uint32_t id) {
          std::string bytes = tokenizer.decode({id});
          std::fwrite(bytes.data(), 1, bytes.size(), stdout);
          std::fflush(stdout);
        });
    fmt::print("\n");
    conversation = prompt;
    conversation.insert(conversation.end(), answer.begin(), answer.end());
    conversation.push_back(assistantEnd);
    ++draw.seed;
    if (!talk)
      break;
  }
  return 0;
}
