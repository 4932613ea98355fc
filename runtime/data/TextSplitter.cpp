//===- TextSplitter.cpp - Text cut into chunks by a regex -----------------===//

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "runtime/data/TextSplitter.h"

#include "runtime/platform/Errors.h"

#include <new>

namespace lap::data {

namespace {

struct MatchDataDeleter {
  void operator()(pcre2_match_data *m) const { pcre2_match_data_free(m); }
};

} // namespace

TextSplitter::TextSplitter(const std::string &pattern) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  // MATCH_INVALID_UTF: invalid bytes never match, so they fall into the gaps
  // between matches instead of making pcre2_match fail.
  pcre2_code *code = pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof(buf));
    platform::fail("tokenizer split pattern",
                   std::string(reinterpret_cast<char *>(buf)) + " at offset " +
                       std::to_string(offset));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); // Interpreter if this fails.
  code_.reset(code, pcre2_code_free);
}

void TextSplitter::split(std::string_view text,
                         void (*f)(void *, std::string_view),
                         void *context) const {
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> md(
      pcre2_match_data_create_from_pattern(code_.get(), nullptr));
  if (!md)
    throw std::bad_alloc();
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0, n = text.size();
  while (pos < n) {
    int rc = pcre2_match(code_.get(), subject, n, pos, 0, md.get(), nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) // Huge chunk: the interpreter copes.
      rc = pcre2_match(code_.get(), subject, n, pos, PCRE2_NO_JIT, md.get(),
                       nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) {
      f(context, text.substr(pos));
      return;
    }
    if (rc < 0) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(rc, buf, sizeof(buf));
      platform::fail("tokenizer split",
                     std::string(reinterpret_cast<char *>(buf)));
    }
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md.get());
    size_t start = ov[0], end = ov[1];
    if (start > pos)
      f(context, text.substr(pos, start - pos));
    if (end == start) {
      // Custom patterns may match empty: take one character and go on.
      end = start + 1;
      while (end < n && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
        ++end;
    }
    f(context, text.substr(start, end - start));
    pos = end;
  }
}

} // namespace lap::data
