//===- spec-fuzzer.cpp - libFuzzer target over the spec front end -*- C++ -*-===//
//
// Feeds arbitrary bytes to the parser and verifier. Beyond "no crash, no
// hang, no leak" (the sanitizers' part), it checks the front end's promises:
// no internal errors, every error located, and every accepted spec printing
// to canonical text that reads back to the same text.
//
//   lap-spec-fuzzer -max_total_time=600 -dict=spec.dict CORPUS_DIR ../specs
//
//===----------------------------------------------------------------------===//

#include "dsl/SpecParser.h"
#include "dsl/SpecPrinter.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

static void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "spec-fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  lap::dsl::Diagnostics diags;
  auto spec = lap::dsl::parseSpec(text, "fuzz.yaml", diags);
  for (const auto &d : diags.all()) {
    if (diags.hasInternalError())
      fail("internal error", d.message);
    if (d.loc.line == 0 && d.message.rfind("cannot read spec", 0) != 0)
      fail("unlocated error", d.message);
  }
  if (spec && diags.hasErrors())
    fail("a spec was returned along with errors", diags.all()[0].message);
  if (!spec)
    return 0;
  std::string canonical = lap::dsl::printSpec(*spec);
  lap::dsl::Diagnostics again;
  auto reread = lap::dsl::parseSpec(canonical, "fuzz.yaml", again);
  if (!reread)
    fail("canonical form does not read back",
         canonical + "\n" + again.all()[0].message);
  if (lap::dsl::printSpec(*reread) != canonical)
    fail("canonical form is not a fixed point", canonical);
  return 0;
}
