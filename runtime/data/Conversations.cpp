//===- Conversations.cpp - Chat conversations and their template ----------===//

#include "runtime/data/Conversations.h"

#include "runtime/data/JsonLines.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace lap::data {

namespace {

MessagePart::Kind partKind(const std::string &type) {
  if (type == "text")
    return MessagePart::Kind::Text;
  if (type == "python")
    return MessagePart::Kind::Python;
  if (type == "python_output")
    return MessagePart::Kind::PythonOutput;
  throw std::invalid_argument("a part of type \"" + type +
                              "\" (types: text, python, python_output)");
}

} // namespace

uint32_t conversationToken(const Tokenizer &tokenizer, const char *name) {
  if (auto id = tokenizer.specialId(name))
    return *id;
  throw std::runtime_error(
      std::string("the tokenizer has no ") + name +
      " token, which conversations need (lap's trained tokenizers reserve "
      "nanochat's nine special tokens)");
}

Conversation conversationOf(const nlohmann::json &record) {
  if (!record.contains("messages") || !record["messages"].is_array() ||
      record["messages"].empty())
    throw std::invalid_argument("needs \"messages\", a list of one or more");
  const nlohmann::json &messages = record["messages"];
  size_t first = 0;
  std::string system;
  if (messages[0].value("role", "") == "system") {
    if (messages.size() < 2 || messages[1].value("role", "") != "user")
      throw std::invalid_argument(
          "a system message must be followed by a user message");
    system = messages[0].at("content").get<std::string>() + "\n\n";
    first = 1;
  }
  Conversation c;
  for (size_t i = first; i < messages.size(); ++i) {
    const nlohmann::json &m = messages[i];
    std::string where = "message " + std::to_string(i + 1);
    if (!m.is_object() || !m.contains("role") || !m.contains("content"))
      throw std::invalid_argument(where + " needs \"role\" and \"content\"");
    std::string role = m["role"].get<std::string>();
    bool user = (i - first) % 2 == 0;
    if (role != (user ? "user" : "assistant"))
      throw std::invalid_argument(where + " is from \"" + role +
                                  "\" but should be from " +
                                  (user ? "the user" : "the assistant") +
                                  " (roles alternate, the user first)");
    Message message;
    message.role = user ? Message::Role::User : Message::Role::Assistant;
    const nlohmann::json &content = m["content"];
    if (content.is_string()) {
      message.parts.push_back(
          {MessagePart::Kind::Text,
           (i == first ? system : "") + content.get<std::string>()});
    } else if (!user && content.is_array()) {
      for (const nlohmann::json &part : content) {
        if (!part.is_object() || !part.contains("type") ||
            !part.contains("text"))
          throw std::invalid_argument(where +
                                      ": a part needs \"type\" and \"text\"");
        message.parts.push_back({partKind(part["type"].get<std::string>()),
                                 part["text"].get<std::string>()});
      }
    } else {
      throw std::invalid_argument(where + "'s content must be a string" +
                                  (user ? "" : " or a list of parts"));
    }
    c.messages.push_back(std::move(message));
  }
  return c;
}

std::vector<Conversation> readConversations(const std::string &path) {
  std::vector<Conversation> conversations;
  readJsonLines(path, "conversations", [&](const nlohmann::json &record, int) {
    conversations.push_back(conversationOf(record));
  });
  return conversations;
}

RenderedConversation renderConversation(const Conversation &conversation,
                                        const Tokenizer &tokenizer,
                                        size_t maxTokens) {
  RenderedConversation r;
  auto add = [&](uint32_t id, bool trained) {
    r.ids.push_back(id);
    r.trained.push_back(trained);
  };
  auto addText = [&](const std::string &text, bool trained) {
    for (uint32_t id : tokenizer.encode(text))
      add(id, trained);
  };
  add(tokenizer.bosId(), false);
  for (const Message &m : conversation.messages) {
    if (m.role == Message::Role::User) {
      add(conversationToken(tokenizer, "<|user_start|>"), false);
      addText(m.parts.front().text, false);
      add(conversationToken(tokenizer, "<|user_end|>"), false);
      continue;
    }
    add(conversationToken(tokenizer, "<|assistant_start|>"), false);
    for (const MessagePart &part : m.parts) {
      switch (part.kind) {
      case MessagePart::Kind::Text:
        addText(part.text, true);
        break;
      case MessagePart::Kind::Python:
        add(conversationToken(tokenizer, "<|python_start|>"), true);
        addText(part.text, true);
        add(conversationToken(tokenizer, "<|python_end|>"), true);
        break;
      case MessagePart::Kind::PythonOutput:
        add(conversationToken(tokenizer, "<|output_start|>"), false);
        addText(part.text, false);
        add(conversationToken(tokenizer, "<|output_end|>"), false);
        break;
      }
    }
    add(conversationToken(tokenizer, "<|assistant_end|>"), true);
  }
  if (r.ids.size() > maxTokens) {
    r.ids.resize(maxTokens);
    r.trained.resize(maxTokens);
  }
  return r;
}

std::vector<uint32_t> renderForCompletion(const Conversation &conversation,
                                          const Tokenizer &tokenizer) {
  if (conversation.messages.empty() ||
      conversation.messages.back().role != Message::Role::Assistant)
    throw std::invalid_argument(
        "a conversation to complete ends with the assistant's message");
  Conversation prompt = conversation;
  prompt.messages.pop_back();
  return renderPrompt(prompt, tokenizer);
}

std::vector<uint32_t> renderPrompt(const Conversation &conversation,
                                   const Tokenizer &tokenizer) {
  std::vector<uint32_t> ids = renderConversation(conversation, tokenizer).ids;
  ids.push_back(conversationToken(tokenizer, "<|assistant_start|>"));
  return ids;
}

} // namespace lap::data
