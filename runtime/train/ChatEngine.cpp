//===- ChatEngine.cpp - An assistant's answers, with its tool -------------===//

#include "runtime/train/ChatEngine.h"

#include "runtime/data/Conversations.h"
#include "runtime/train/Calculator.h"

namespace lap::train {

namespace {

int32_t special(const data::Tokenizer &tokenizer, const char *name) {
  return int32_t(data::conversationToken(tokenizer, name));
}

} // namespace

ChatEngine::ChatEngine(ModelCalls &calls, const float *params,
                       const data::Tokenizer &tokenizer)
    : tokenizer(tokenizer), sampler(calls, params),
      assistantEnd(special(tokenizer, "<|assistant_end|>")),
      bos(int32_t(tokenizer.bosId())),
      pythonStart(special(tokenizer, "<|python_start|>")),
      pythonEnd(special(tokenizer, "<|python_end|>")),
      outputStart(special(tokenizer, "<|output_start|>")),
      outputEnd(special(tokenizer, "<|output_end|>")) {}

std::vector<uint32_t>
ChatEngine::answer(const std::vector<uint32_t> &prompt, SampleOptions options,
                   const std::function<void(uint32_t)> &onToken) {
  std::vector<int32_t> ids(prompt.begin(), prompt.end());
  options.drawable = tokenizer.vocabSize();
  options.stop = {assistantEnd, bos};
  bool inCall = false;
  std::vector<uint32_t> call, out;
  auto inject = [&](int32_t drawn) -> std::vector<int32_t> {
    if (drawn == pythonStart) {
      inCall = true;
      call.clear();
    } else if (drawn == pythonEnd && inCall) {
      inCall = false;
      std::optional<std::string> value = calculate(tokenizer.decode(call));
      if (value) {
        std::vector<int32_t> forced{outputStart};
        for (uint32_t id : tokenizer.encode(*value))
          forced.push_back(int32_t(id));
        forced.push_back(outputEnd);
        return forced;
      }
    } else if (inCall) {
      call.push_back(uint32_t(drawn));
    }
    return {};
  };
  sampler.generate(
      ids, options,
      [&](int32_t id) {
        out.push_back(uint32_t(id));
        if (onToken)
          onToken(uint32_t(id));
      },
      inject);
  return out;
}

std::string ChatEngine::text(const std::vector<uint32_t> &answer) const {
  return tokenizer.decode(answer);
}

} // namespace lap::train
