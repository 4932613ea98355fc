//===- CalculatorTest.cpp - The chat model's calculator -------------------===//
//
// Values as Python's str(eval(expression)) writes them (the expected texts
// are Python 3.11's), and the expressions nanochat's calculator refuses.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Calculator.h"

#include <gtest/gtest.h>

using lap::train::calculate;

namespace {

TEST(Calculator, ComputesAsPythonWrites) {
  const std::pair<const char *, const char *> cases[] = {
      {"6*7", "42"},
      {"7/2", "3.5"},
      {"4/2", "2.0"},
      {"1,234+1", "1235"}, // commas in numbers are dropped
      {"(1+2)*3", "9"},
      {"1/3", "0.3333333333333333"},
      {"0.1+0.2", "0.30000000000000004"},
      {"10/100000", "0.0001"},
      {"1/100000", "1e-05"},
      {"3*1.5", "4.5"},
      {"10000000000000000.0*1", "1e+16"},
      {"-3+1", "-2"},
      {" 123456789 * 1000 ", "123456789000"},
      {"1.", "1.0"},
      {".5*2", "1.0"},
      {"-(2-5)*2", "6"},
      {"'strawberry'.count('r')", "3"},
      {"\"banana\".count(\"an\")", "2"},
  };
  for (const auto &[expression, value] : cases)
    EXPECT_EQ(calculate(expression), value) << expression;
}

TEST(Calculator, RefusesWhatNanochatRefuses) {
  for (const char *expression :
       {"2**10", "1/0", "open('x')", "__import__('os')", "2 3", "", "007",
        "(1+2", "9223372036854775807+1", "'a'.upper()", "x+1"})
    EXPECT_EQ(calculate(expression), std::nullopt) << expression;
}

} // namespace
