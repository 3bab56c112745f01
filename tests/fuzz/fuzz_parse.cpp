// libFuzzer target for the FX text frontend: any bytes either parse or give a
// UserError; a graph that parses must print, and its print must parse back to the
// same text. Anything else (a crash, a sanitizer report, an InternalError, a round
// trip that differs) is a finding. Corpus: examples/*/graph.py; see scripts/test.sh.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "frontend/parser.h"
#include "frontend/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  coil::Graph g;
  try {
    g = coil::frontend::parse_graph(text, "fuzz.py");
  } catch (const coil::UserError &) {
    return 0;
  }
  std::string once = coil::frontend::print_graph(g);
  std::string twice;
  try {
    twice = coil::frontend::print_graph(coil::frontend::parse_graph(once, "printed.py"));
  } catch (const coil::UserError &e) {
    std::fprintf(stderr, "printed graph does not parse: %s\n%s", e.render().c_str(), once.c_str());
    std::abort();
  }
  if (once != twice) {
    std::fprintf(stderr, "round trip differs:\n%s\n---\n%s", once.c_str(), twice.c_str());
    std::abort();
  }
  return 0;
}
