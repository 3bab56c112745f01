// One op's meta function in a graph of its own: the helpers of the meta tests
// (meta_test.cpp, meta_reductions_nn_test.cpp, meta_creation_indexing_test.cpp).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "frontend/parser.h"
#include "graph/registry.h"
#include "graph/strides.h"
#include "support/error.h"

namespace coil::test {

using Types = std::vector<std::string>;
using Kwargs = std::vector<std::pair<std::string, Arg>>;

inline Arg i(int64_t v) { return Arg(v); }
inline Arg f(double v) { return Arg(v); }
inline Arg none() { return Arg(NoneArg{}); }
inline Arg list(std::vector<Arg> items) { return Arg(ArgList(std::move(items))); }
inline Arg ints(const std::vector<int64_t> &v) {
  ArgList l;
  for (int64_t x : v) l.push_back(Arg(x));
  return Arg(l);
}

/// Runs one op on inputs given as annotations (contiguous when no strides are written),
/// followed by the `extra` arguments; returns each output's type as text. An input
/// written "None" is a None; one written "name=ANNOTATION" is passed as a keyword.
inline Types meta(const std::string &target, const Types &inputs, std::vector<Arg> extra = {}, Kwargs kw = {}) {
  GraphBuilder b;
  std::vector<Arg> args;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k] == "None") {
      args.push_back(Arg(NoneArg{}));
      continue;
    }
    size_t eq = inputs[k].find('=');
    std::string annotation = eq == std::string::npos ? inputs[k] : inputs[k].substr(eq + 1);
    TensorType t = frontend::parse_annotation(annotation, {}).type;
    if (t.strides.empty() && !t.sizes.empty()) t.strides = contiguous_strides(t.sizes);
    Arg value(b.add_input("in" + std::to_string(k), t));
    if (eq == std::string::npos) {
      args.push_back(std::move(value));
    } else {
      kw.emplace_back(inputs[k].substr(0, eq), std::move(value));
    }
  }
  for (Arg &a : extra) args.push_back(std::move(a));
  const OpDef *op = Registry::get().find(target);
  if (!op) throw std::runtime_error("no op " + target);
  int n = b.add_node("out", *op, std::move(args), std::move(kw));
  Types out;
  for (ValueId id : b.graph().nodes()[size_t(n)].outputs) out.push_back(b.graph().type(id).str());
  return out;
}

/// The message of the UserError that running the op throws, without the "node 'out'
/// (target): " prefix every node error carries; "(no error)" when it throws none.
inline std::string meta_error(const std::string &target, const Types &inputs, std::vector<Arg> extra = {},
                              Kwargs kw = {}) {
  try {
    meta(target, inputs, std::move(extra), std::move(kw));
  } catch (const UserError &e) {
    std::string prefix = "node 'out' (" + target + "): ";
    const std::string &m = e.message();
    return m.rfind(prefix, 0) == 0 ? m.substr(prefix.size()) : m;
  }
  return "(no error)";
}

}  // namespace coil::test
