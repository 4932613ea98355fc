//===- Suggest.cpp - "Did you mean" for names -------------------*- C++ -*-===//

#include "dsl/Suggest.h"

#include <algorithm>
#include <cctype>

using namespace lap::dsl;

/// Levenshtein distance, case-insensitive, with a cap that keeps hostile
/// (very long) words cheap.
static size_t editDistance(std::string_view a, std::string_view b) {
  if (a.size() > 64 || b.size() > 64)
    return std::max(a.size(), b.size());
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      bool same = std::tolower((unsigned char)a[i - 1]) ==
                  std::tolower((unsigned char)b[j - 1]);
      row[j] =
          std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string
lap::dsl::closestMatch(std::string_view word,
                       const std::vector<std::string_view> &candidates) {
  std::string_view best;
  size_t bestDistance = std::max<size_t>(2, (word.size() + 1) / 2) + 1;
  for (std::string_view c : candidates) {
    size_t d = editDistance(word, c);
    // A prefix of a long name ("embed" for "embedding_norm") is also a match.
    if (word.size() >= 3 && c.substr(0, word.size()) == word)
      d = std::min<size_t>(d, 1);
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return std::string(best);
}

std::string
lap::dsl::listChoices(const std::vector<std::string_view> &choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i)
      out += i + 1 == choices.size() ? " or " : ", ";
    out += "'" + std::string(choices[i]) + "'";
  }
  return out;
}

std::string
lap::dsl::didYouMean(std::string_view word,
                     const std::vector<std::string_view> &candidates) {
  std::string match = closestMatch(word, candidates);
  return match.empty() ? "" : "; did you mean '" + match + "'?";
}
