//===- ChatEngine.h - An assistant's answers, with its tool -----*- C++ -*-===//
//
// Generates a chat model's answer as nanochat's engine does: from a prompt
// rendered up to <|assistant_start|>, tokens until <|assistant_end|> or
// <|bos|> (neither kept), the token limit or the context. When the model
// closes a tool call (<|python_start|> expression <|python_end|>), the
// calculator (Calculator.h) computes it and its value follows as
// <|output_start|> value <|output_end|>, fed to the model without being
// drawn; a call without a value gets no output.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_CHATENGINE_H
#define LAP_RUNTIME_TRAIN_CHATENGINE_H

#include "runtime/data/Tokenizer.h"
#include "runtime/train/Sampler.h"

#include <functional>
#include <string>
#include <vector>

namespace lap::train {

class ChatEngine {
public:
  /// Decodes through `calls` with `params`; `tokenizer` must hold the
  /// conversation tokens (throws naming one it lacks).
  ChatEngine(ModelCalls &calls, const float *params,
             const data::Tokenizer &tokenizer);

  /// The answer's tokens (tool outputs included), each passed to
  /// `onToken` as it comes.
  std::vector<uint32_t>
  answer(const std::vector<uint32_t> &prompt, SampleOptions options,
         const std::function<void(uint32_t)> &onToken = {});

  /// The answer as text: its bytes, special tokens by name, as nanochat's
  /// evaluation decodes it.
  std::string text(const std::vector<uint32_t> &answer) const;

private:
  const data::Tokenizer &tokenizer;
  Sampler sampler;
  int32_t assistantEnd, bos, pythonStart, pythonEnd, outputStart, outputEnd;
};

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_CHATENGINE_H
