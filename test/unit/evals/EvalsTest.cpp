//===- EvalsTest.cpp - Scoring generative tasks ---------------------------===//
//
// GSM8K's answer extraction (the regular expression of the data set's own
// code), HumanEval's programs in both harnesses' forms, and pass@1 over
// problems with unequal numbers of samples.
//
//===----------------------------------------------------------------------===//

#include "runtime/evals/Gsm8k.h"
#include "runtime/evals/HumanEval.h"

#include <gtest/gtest.h>

using namespace lap::evals;

namespace {

TEST(Gsm8kAnswer, TheNumberAfterTheFirstMarker) {
  EXPECT_EQ(gsm8kAnswer("so 3*6=<<3*6=18>>18\n#### 18"), "18");
  EXPECT_EQ(gsm8kAnswer("#### 1,234.5 dollars"), "1234.5");
  EXPECT_EQ(gsm8kAnswer("#### -3"), "-3");
  EXPECT_EQ(gsm8kAnswer("#### 7 and later #### 8"), "7");
  // A marker without a number is passed over, as the regex's search does.
  EXPECT_EQ(gsm8kAnswer("#### x then #### 9"), "9");
  EXPECT_EQ(gsm8kAnswer("#### - 4"), std::nullopt);
  EXPECT_EQ(gsm8kAnswer("#### $5"), std::nullopt);
  EXPECT_EQ(gsm8kAnswer("the answer is 5"), std::nullopt);
  EXPECT_EQ(gsm8kAnswer("####5"), std::nullopt);
  // Commas alone match the pattern and leave nothing.
  EXPECT_EQ(gsm8kAnswer("#### ,"), "");
}

CodingProblem problem() {
  return {"HumanEval/9",
          "import math\n# helper\nfrom typing import List\n\n\ndef "
          "f(x: List[int]) -> int:\n    \"\"\"doc\"\"\"\n",
          "f", "\ndef check(candidate):\n    assert candidate([1]) == 1\n"};
}

TEST(HumanEvalProgram, ABodyContinuesThePrompt) {
  CodingProblem p = problem();
  EXPECT_EQ(humanEvalProgram(p, "    return x[0]\n"),
            p.prompt + "    return x[0]\n" + "\n" + p.test + "\n" + "check(f)");
}

TEST(HumanEvalProgram, AWholeFunctionGetsThePromptsImports) {
  CodingProblem p = problem();
  std::string answer = "Sure:\n```python\ndef f(x):\n    return x[0]\n```\n"
                       "It returns the first.";
  EXPECT_EQ(completionCode(answer), "def f(x):\n    return x[0]");
  EXPECT_EQ(humanEvalProgram(p, answer),
            "import math\nfrom typing import List\n\ndef f(x):\n    return "
            "x[0]\n\n" +
                p.test + "\ncheck(f)");
  // A block without a language, and a definition of another name, which
  // continues the prompt instead.
  EXPECT_EQ(completionCode("```\nprint(1)\n```"), "print(1)");
  EXPECT_EQ(humanEvalProgram(p, "def ff(x):\n    pass\n"),
            p.prompt + "def ff(x):\n    pass\n\n" + p.test + "\ncheck(f)");
}

TEST(TaskScore, PassAt1IsTheMeanOverProblems) {
  TaskScore score{"humaneval", 3, 0, {}};
  // Problem 0: 1 of 4 passed; problem 1: 1 of 1; problem 2: 0 of 2.
  for (bool passed : {true, false, false, false})
    score.samples.push_back({"A", 0, passed, "", "", ""});
  score.samples.push_back({"B", 1, true, "", "", ""});
  score.samples.push_back({"C", 2, false, "", "", ""});
  score.samples.push_back({"C", 2, false, "", "", ""});
  EXPECT_DOUBLE_EQ(score.passAt1(), (0.25 + 1 + 0) / 3);
  EXPECT_EQ(score.passed(), 2u);
  EXPECT_EQ(score.toJson()["samples"], 7);
}

} // namespace
