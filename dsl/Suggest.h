//===- Suggest.h - "Did you mean" for names ---------------------*- C++ -*-===//

#ifndef LAP_DSL_SUGGEST_H
#define LAP_DSL_SUGGEST_H

#include <string>
#include <string_view>
#include <vector>

namespace lap::dsl {

/// The candidate closest to `word` by edit distance, or "" when none is close
/// enough to be a plausible typo.
std::string closestMatch(std::string_view word,
                         const std::vector<std::string_view> &candidates);

/// "'a', 'b' or 'c'", for listing valid choices in messages.
std::string listChoices(const std::vector<std::string_view> &choices);

/// "; did you mean 'x'?" or "" — appended to messages.
std::string didYouMean(std::string_view word,
                       const std::vector<std::string_view> &candidates);

} // namespace lap::dsl

#endif // LAP_DSL_SUGGEST_H
