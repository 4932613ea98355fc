//===- ConversationsTest.cpp - nanochat's chat template -------------------===//
//
// Conversations render as nanochat's render_conversation does, written out
// here piece by piece for every role and part: the ids, and the mask of
// what the assistant is trained to say. Malformed conversations are errors
// saying what is wrong, with the file and line when read from a file.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Conversations.h"

#include "test/unit/TempDir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace lap::data;

namespace {

const Tokenizer &tokenizer() {
  static const std::string text =
      "What is 6 times 7? Let me compute. The answer is 42. Thanks! You are "
      "a calculator. 6*7 hello world";
  static const Tokenizer t = Tokenizer::train({text}, 320);
  return t;
}

/// The expected rendering, built from the template piece by piece.
struct Expected {
  std::vector<uint32_t> ids;
  std::vector<uint8_t> trained;
  Expected &special(const char *name, bool learn) {
    ids.push_back(*tokenizer().specialId(name));
    trained.push_back(learn);
    return *this;
  }
  Expected &text(const std::string &s, bool learn) {
    for (uint32_t id : tokenizer().encode(s)) {
      ids.push_back(id);
      trained.push_back(learn);
    }
    return *this;
  }
};

Conversation parse(const char *json) {
  return conversationOf(nlohmann::json::parse(json));
}

TEST(Conversations, RenderEveryRoleAndPartAsNanochat) {
  Conversation c = parse(R"({"messages": [
    {"role": "system", "content": "You are a calculator."},
    {"role": "user", "content": "What is 6 times 7?"},
    {"role": "assistant", "content": [
      {"type": "text", "text": "Let me compute. "},
      {"type": "python", "text": "6*7"},
      {"type": "python_output", "text": "42"},
      {"type": "text", "text": "The answer is 42."}]},
    {"role": "user", "content": "Thanks!"},
    {"role": "assistant", "content": "hello world"}]})");
  Expected e;
  e.special("<|bos|>", false)
      .special("<|user_start|>", false)
      .text("You are a calculator.\n\nWhat is 6 times 7?", false)
      .special("<|user_end|>", false)
      .special("<|assistant_start|>", false)
      .text("Let me compute. ", true)
      .special("<|python_start|>", true)
      .text("6*7", true)
      .special("<|python_end|>", true)
      .special("<|output_start|>", false)
      .text("42", false)
      .special("<|output_end|>", false)
      .text("The answer is 42.", true)
      .special("<|assistant_end|>", true)
      .special("<|user_start|>", false)
      .text("Thanks!", false)
      .special("<|user_end|>", false)
      .special("<|assistant_start|>", false)
      .text("hello world", true)
      .special("<|assistant_end|>", true);
  RenderedConversation r = renderConversation(c, tokenizer());
  EXPECT_EQ(r.ids, e.ids);
  EXPECT_EQ(r.trained, e.trained);

  // Cut to a length, as nanochat's max_tokens.
  RenderedConversation cut = renderConversation(c, tokenizer(), 5);
  EXPECT_EQ(cut.ids, std::vector<uint32_t>(e.ids.begin(), e.ids.begin() + 5));
  EXPECT_EQ(cut.trained.size(), 5u);

  // The prompt for the last answer: everything before it, then
  // <|assistant_start|>.
  std::vector<uint32_t> prompt = renderForCompletion(c, tokenizer());
  size_t answer = tokenizer().encode("hello world").size() + 1;
  std::vector<uint32_t> expected(e.ids.begin(), e.ids.end() - answer);
  EXPECT_EQ(prompt, expected);
  EXPECT_EQ(prompt.back(), *tokenizer().specialId("<|assistant_start|>"));
}

void expectInvalid(const char *json, const std::string &needle) {
  try {
    parse(json);
    ADD_FAILURE() << "accepted " << json;
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << e.what();
  }
}

TEST(Conversations, MalformedConversationsSayWhatIsWrong) {
  expectInvalid(R"({"messages": []})", "needs \"messages\"");
  expectInvalid(R"({"messages": [{"role": "assistant", "content": "x"}]})",
                "message 1 is from \"assistant\" but should be from the user");
  expectInvalid(R"({"messages": [{"role": "user", "content": "a"},
                                 {"role": "user", "content": "b"}]})",
                "message 2 is from \"user\" but should be from the assistant");
  expectInvalid(R"({"messages": [{"role": "system", "content": "s"},
                                 {"role": "assistant", "content": "b"}]})",
                "a system message must be followed by a user message");
  expectInvalid(R"({"messages": [{"role": "user", "content": [
                  {"type": "text", "text": "x"}]}]})",
                "message 1's content must be a string");
  expectInvalid(R"({"messages": [{"role": "user", "content": "a"},
                  {"role": "assistant", "content": [{"type": "image",
                  "text": "x"}]}]})",
                "a part of type \"image\"");
  expectInvalid(R"({"messages": [{"role": "user"}]})",
                "message 1 needs \"role\" and \"content\"");
}

TEST(Conversations, FileErrorsNameTheLine) {
  lap::test::TempDir dir;
  std::string path = dir.file("chat.jsonl");
  std::ofstream(path) << R"({"messages": [{"role": "user", "content": "hi"}]})"
                      << "\n\n"
                      << R"({"messages": [{"role": "user", "content": 3}]})"
                      << "\n";
  try {
    readConversations(path);
    ADD_FAILURE() << "accepted a number as content";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find(path + ":3: message 1's content "
                                                "must be a string"),
              std::string::npos)
        << e.what();
  }
}

TEST(Conversations, ATokenizerWithoutChatTokensIsNamed) {
  std::vector<std::string> ranks;
  for (int b = 0; b < 256; ++b)
    ranks.push_back(std::string(1, char(b)));
  Tokenizer gpt2 = Tokenizer::fromRanks(ranks, {{"<|endoftext|>", 256}});
  Conversation c = parse(R"({"messages": [{"role": "user", "content": "a"}]})");
  try {
    renderConversation(c, gpt2);
    ADD_FAILURE() << "rendered without <|user_start|>";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("no <|user_start|> token"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
