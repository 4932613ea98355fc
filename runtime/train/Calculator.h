//===- Calculator.h - The tool a chat model calls ---------------*- C++ -*-===//
//
// nanochat's calculator (engine.py use_calculator), computed natively: an
// arithmetic expression of numbers, + - * / and parentheses (commas in
// numbers dropped, no `**`), or a string's `.count` of another, as
// `"strawberry".count("r")`. The value is written as Python's str() writes
// it: integers exactly, a quotient or a decimal as a float ("3.5", "2.0",
// "1e-05"). Anything else, a division by zero, or an integer beyond 64
// bits has no value, and the model gets no output, as nanochat's does.
//
//===----------------------------------------------------------------------===//

#ifndef LAP_RUNTIME_TRAIN_CALCULATOR_H
#define LAP_RUNTIME_TRAIN_CALCULATOR_H

#include <optional>
#include <string>
#include <string_view>

namespace lap::train {

/// The value of `expression` as text, or nullopt (see above).
std::optional<std::string> calculate(std::string_view expression);

} // namespace lap::train

#endif // LAP_RUNTIME_TRAIN_CALCULATOR_H
