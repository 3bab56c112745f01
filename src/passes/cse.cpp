// eliminate_common_subexpressions: a node with the same op and the same arguments as an
// earlier one (arguments compared after earlier duplicates are replaced) is the earlier
// one; each of its outputs is replaced by the matching output of the first.
//
//   _to_copy = aten._to_copy.default(a_0, dtype = torch.float32)
//   _to_copy_1 = aten._to_copy.default(a_0, dtype = torch.float32)   ->  uses read _to_copy
//
// Random ops are never merged. Nor are two nodes that are both returned: the caller gets
// two distinct tensors, as from eager.
#include <bit>
#include <set>

#include "graph/registry.h"
#include "passes/graph_rewrite.h"
#include "passes/passes.h"

namespace coil::passes {
namespace {

class CommonSubexpressions {
 public:
  CommonSubexpressions(const Graph &g, PassLog *log) : g_(g), log_(log) {
    for (ValueId v : g.outputs()) returned_.insert(v.index);
  }

  Graph run() {
    for (size_t i = 0; i < g_.nodes().size(); ++i) visit(int(i), g_.nodes()[i]);
    return rebuild(g_, edit_);
  }

 private:
  void visit(int i, const Node &n) {
    if (is_random(*n.op)) return;
    auto [first, added] = seen_.emplace(key(n), i);
    if (added) return;
    const Node &kept = g_.nodes()[size_t(first->second)];
    if (returned(kept) && returned(n)) return;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      edit_.replacements.replace(n.outputs[k], kept.outputs[k]);
      if (returned_.count(n.outputs[k].index)) returned_.insert(kept.outputs[k].index);
    }
    edit_.drop(i);
    if (log_) log_->lines.push_back(str_cat("cse: ", n.name, " is ", kept.name));
  }

  bool returned(const Node &n) const {
    for (ValueId v : n.outputs)
      if (returned_.count(v.index)) return true;
    return false;
  }

  /// The op and its arguments as text that is equal exactly when they are: floats by
  /// their bits (so 0.0 and -0.0 differ), tensors by the value they stand for now.
  std::string key(const Node &n) const {
    std::string k = n.target() + "(";
    for (const Arg &a : n.args) k += arg_key(a) + ",";
    return k + ")";
  }

  std::string arg_key(const Arg &a) const {
    if (a.is<ValueId>()) return str_cat("v", edit_.replacements.resolve(a.as<ValueId>()).index);
    if (a.is<ArgList>()) {
      std::string k = "[";
      for (const Arg &item : a.as<ArgList>()) k += arg_key(item) + ",";
      return k + "]";
    }
    if (a.is_none()) return "N";
    if (a.is<bool>()) return a.as<bool>() ? "T" : "F";
    if (a.is_int()) return str_cat("i", str(a.as<SymInt>()));  // a symbolic size by its expression
    if (a.is<double>()) return str_cat("d", std::bit_cast<uint64_t>(a.as<double>()));
    if (a.is<std::string>()) return str_cat("s", a.as<std::string>().size(), ":", a.as<std::string>());
    if (a.is<DType>()) return str_cat("t", int(a.as<DType>()));
    if (a.is<Device>()) return str_cat("D", int(a.as<Device>().kind), ":", a.as<Device>().index);
    if (a.is<Layout>()) return str_cat("L", int(a.as<Layout>()));
    COIL_ASSERT(a.is<MemoryFormat>(), "an argument of unknown kind ", a.kind_name());
    return str_cat("M", int(a.as<MemoryFormat>()));
  }

  const Graph &g_;
  PassLog *log_;
  std::map<std::string, int> seen_;  // key -> the first node with it
  std::set<int> returned_;           // values the output tree reads, after replacement
  GraphEdit edit_;
};

}  // namespace

Graph eliminate_common_subexpressions(const Graph &g, PassLog *log) { return CommonSubexpressions(g, log).run(); }

}  // namespace coil::passes
