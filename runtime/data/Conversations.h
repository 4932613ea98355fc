//===- Conversations.h - Chat conversations and their template --*- C++ -*-===//
//
// Conversations for fine-tuning and chat evaluation, as nanochat keeps them:
// JSONL, one `{"messages": [{"role": ..., "content": ...}, ...]}` a line.
//  - Roles alternate user, assistant, user, ...; a first "system" message
//    is merged into the user message after it ("system\n\nuser").
//  - A user's content is a string. An assistant's is a string or a list of
//    parts `{"type": "text" | "python" | "python_output", "text": ...}`:
//    text, a calculator/python tool call, and the tool's output.
//
// Rendering follows nanochat's template (nanochat/tokenizer.py
// render_conversation):
//
//   <|bos|> <|user_start|> user <|user_end|>
//   <|assistant_start|> text <|python_start|> code <|python_end|>
//     <|output_start|> output <|output_end|> text <|assistant_end|> ...
//
// with a mask of the tokens the model learns to produce: the assistant's
// text, its tool calls with their delimiters, and <|assistant_end|>; not
// the user's messages, <|assistant_start|> or tool outputs (which come
// from the tool at inference).
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_CONVERSATIONS_H
#define LAP_RUNTIME_DATA_CONVERSATIONS_H

#include "runtime/data/Tokenizer.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace lap::data {

struct MessagePart {
  enum class Kind { Text, Python, PythonOutput };
  Kind kind = Kind::Text;
  std::string text;
};

struct Message {
  enum class Role { User, Assistant };
  Role role = Role::User;
  std::vector<MessagePart> parts; ///< a user's: one Text part
};

struct Conversation {
  std::vector<Message> messages; ///< user first, roles alternating
};

/// The id of conversation token `name` (`<|user_start|>`, ...); throws
/// naming it when `tokenizer` lacks it.
uint32_t conversationToken(const Tokenizer &tokenizer, const char *name);

/// A conversation from its JSON object; throws std::invalid_argument
/// saying what is wrong (roles out of order, a part of an unknown type).
Conversation conversationOf(const nlohmann::json &record);

/// Reads a JSONL file of conversations; errors name the file and line.
std::vector<Conversation> readConversations(const std::string &path);

struct RenderedConversation {
  std::vector<uint32_t> ids;
  std::vector<uint8_t> trained; ///< 1 where the model learns the token
};

/// The conversation's tokens and mask (see above), cut to `maxTokens`.
/// Throws naming a special token `tokenizer` lacks.
RenderedConversation renderConversation(const Conversation &conversation,
                                        const Tokenizer &tokenizer,
                                        size_t maxTokens = SIZE_MAX);

/// The conversation followed by <|assistant_start|>: the prompt for the
/// assistant's next answer.
std::vector<uint32_t> renderPrompt(const Conversation &conversation,
                                   const Tokenizer &tokenizer);

/// The conversation without its last message, an assistant's, as a prompt
/// (renderPrompt): what the model answers in its place.
std::vector<uint32_t> renderForCompletion(const Conversation &conversation,
                                          const Tokenizer &tokenizer);

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_CONVERSATIONS_H
