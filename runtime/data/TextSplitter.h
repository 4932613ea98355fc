//===- TextSplitter.h - Text cut into chunks by a regex ---------*- C++ -*-===//
//
// A BPE tokenizer first cuts text into chunks (words, numbers, runs of
// spaces, as its pattern says) and merges bytes only within a chunk. The
// pattern is a PCRE2 regex (Unicode properties, possessive quantifiers),
// JIT-compiled where PCRE2 can; invalid UTF-8 never matches, so each run of
// it between matches becomes a chunk of its own.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_DATA_TEXTSPLITTER_H
#define LAP_RUNTIME_DATA_TEXTSPLITTER_H

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

struct pcre2_real_code_8; // pcre2_code, as pcre2.h declares it

namespace lap::data {

class TextSplitter {
public:
  /// Throws std::runtime_error naming the pattern's error and its offset.
  explicit TextSplitter(const std::string &pattern);

  /// Calls `f(chunk)` on consecutive chunks covering all of `text`.
  template <typename F> void forEachChunk(std::string_view text, F &&f) const {
    auto call = [](void *f, std::string_view chunk) {
      (*static_cast<std::remove_reference_t<F> *>(f))(chunk);
    };
    split(text, call, &f);
  }

private:
  void split(std::string_view text, void (*f)(void *, std::string_view),
             void *context) const;

  std::shared_ptr<pcre2_real_code_8> code_;
};

} // namespace lap::data

#endif // LAP_RUNTIME_DATA_TEXTSPLITTER_H
