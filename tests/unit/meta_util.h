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

/// A graph under construction for one node: `in` adds graph inputs from annotations
/// (contiguous when no strides are written), `run` adds the node and returns its outputs'
/// types as text.
class OneNode {
 public:
  Arg in(const std::string &annotation) {
    TensorType t = frontend::parse_annotation(annotation, {}).type;
    if (t.strides.empty() && !t.sizes.empty()) t.strides = contiguous_strides(t.sizes);
    return Arg(b_.add_input("in" + std::to_string(inputs_++), t));
  }

  Types run(const std::string &target, std::vector<Arg> args, Kwargs kw = {}) {
    const OpDef *op = Registry::get().find(target);
    if (!op) throw std::runtime_error("no op " + target);
    int n = b_.add_node("out", *op, std::move(args), std::move(kw));
    Types out;
    for (ValueId id : b_.graph().nodes()[size_t(n)].outputs) out.push_back(b_.graph().type(id).str());
    return out;
  }

  /// The message of the UserError that adding the node throws, without the "node 'out'
  /// (target): " prefix every node error carries; "(no error)" when it throws none.
  std::string error(const std::string &target, std::vector<Arg> args, Kwargs kw = {}) {
    try {
      run(target, std::move(args), std::move(kw));
    } catch (const UserError &e) {
      std::string prefix = "node 'out' (" + target + "): ";
      const std::string &m = e.message();
      return m.rfind(prefix, 0) == 0 ? m.substr(prefix.size()) : m;
    }
    return "(no error)";
  }

  /// The arguments of a node over inputs given as annotations, then `extra`: an input
  /// written "None" is a None; one written "name=ANNOTATION" goes to `kw`.
  std::vector<Arg> arguments(const Types &inputs, std::vector<Arg> extra, Kwargs &kw) {
    std::vector<Arg> args;
    for (const std::string &input : inputs) {
      size_t eq = input.find('=');
      if (input == "None") {
        args.push_back(Arg(NoneArg{}));
      } else if (eq == std::string::npos) {
        args.push_back(in(input));
      } else {
        kw.emplace_back(input.substr(0, eq), in(input.substr(eq + 1)));
      }
    }
    for (Arg &a : extra) args.push_back(std::move(a));
    return args;
  }

 private:
  GraphBuilder b_;
  int inputs_ = 0;
};

/// Runs one op on inputs given as annotations (OneNode::arguments), followed by the
/// `extra` arguments; returns each output's type as text.
inline Types meta(const std::string &target, const Types &inputs, std::vector<Arg> extra = {}, Kwargs kw = {}) {
  OneNode g;
  std::vector<Arg> args = g.arguments(inputs, std::move(extra), kw);
  return g.run(target, std::move(args), std::move(kw));
}

/// The message of the UserError that running the op throws (OneNode::error).
inline std::string meta_error(const std::string &target, const Types &inputs, std::vector<Arg> extra = {},
                              Kwargs kw = {}) {
  OneNode g;
  std::vector<Arg> args = g.arguments(inputs, std::move(extra), kw);
  return g.error(target, std::move(args), std::move(kw));
}

}  // namespace coil::test
