// remove_noops: assertions go; aliases, identity views and identity copies are replaced
// by the value they reproduce.
//
// A view is an identity when its output has its input's type (dtype, sizes, strides)
// and starts at the same place in their shared storage: then every index reads the same
// element. Views are followed up through chains of views, so unsqueeze(squeeze(x)) can
// be x. A copy is an identity when its output has its input's type; it stays when it
// keeps a graph output from aliasing a graph input, a constant or another output.
#include <set>

#include "graph/registry.h"
#include "passes/graph_rewrite.h"
#include "passes/passes.h"

namespace coil::passes {
namespace {

bool is_assertion(const Node &n) { return n.op->schema.name.starts_with("_assert") && n.outputs.empty(); }

/// The tensor a copy op copies, for the copies that make an equal tensor when the types
/// agree (copy writes src into a tensor of self's type).
std::optional<ValueId> copied_value(const Node &n) {
  static const std::map<std::string, std::string, std::less<>> kCopies = {
      {"aten._to_copy.default", "self"},
      {"aten.clone.default", "self"},
      {"aten.copy.default", "src"},
      {"aten.lift_fresh_copy.default", "self"},
  };
  auto it = kCopies.find(n.target());
  if (it == kCopies.end()) return std::nullopt;
  const Arg &a = n.args[size_t(n.op->schema.find_arg(it->second))];
  if (!a.is<ValueId>()) return std::nullopt;
  return a.as<ValueId>();
}

class NoopRemover {
 public:
  NoopRemover(const Graph &g, PassLog *log)
      : g_(g), log_(log), absolute_reads_(read_at_absolute_offset(g)), read_(g.values().size(), false) {
    for (ValueId v : g.outputs()) exposed_roots_.insert(placement(v).root.index);
    for (ValueId v : g.outputs()) read_[size_t(v.index)] = true;
    for (const Node &n : g.nodes())
      for (ValueId v : g.node_inputs(n)) read_[size_t(v.index)] = true;
  }

  Graph run() {
    for (size_t i = 0; i < g_.nodes().size(); ++i) visit(int(i), g_.nodes()[i]);
    return rebuild(g_, edit_);
  }

 private:
  void visit(int i, const Node &n) {
    if (is_assertion(n)) {
      edit_.drop(i);
      note(str_cat("noop: removed ", n.name, " (assertion)"));
      return;
    }
    if (auto copied = copied_value(n)) {
      remove_identity_copy(i, n, *copied);
      return;
    }
    remove_identity_views(i, n);
  }

  // clone(x) -> x, when clone's type is x's
  void remove_identity_copy(int i, const Node &n, ValueId copied) {
    ValueId out = n.outputs[0], in = edit_.replacements.resolve(copied);
    if (!(g_.type(out) == g_.type(in)) || absolute_reads_[size_t(out.index)]) return;
    if (exposed_roots_.count(out.index)) {
      // The copy's storage is (part of) a graph output: without the copy, that output
      // would share memory with whatever `in` lives in.
      ValueId root = placement(in).root;
      if (g_.value(root).kind != Value::Kind::NodeOutput || exposed_roots_.count(root.index)) return;
      exposed_roots_.insert(root.index);
    }
    replace(out, in, "identity copy");
    edit_.drop(i);
  }

  // view(x, same layout) -> x, also through chains: squeeze(unsqueeze(x, 0), 0) -> x
  void remove_identity_views(int i, const Node &n) {
    size_t replaced = 0, read = 0;
    for (ValueId out : n.outputs) {
      if (!view_start(g_, n, g_.value(out).output_index)) return;
      if (!read_[size_t(out.index)]) continue;  // nothing to replace; DCE's to remove
      ++read;
      auto same = identical_ancestor(out);
      if (!same) continue;
      replace(out, *same, n.target() == "aten.alias.default" ? "alias" : "identity view");
      ++replaced;
    }
    if (replaced > 0 && replaced == read) edit_.drop(i);
  }

  void replace(ValueId out, ValueId in, const char *why) {
    edit_.replacements.replace(out, in);
    note(str_cat("noop: ", describe(out), " is ", describe(in), " (", why, ")"));
  }

  /// The furthest value up v's chain of views that v reproduces element for element.
  std::optional<ValueId> identical_ancestor(ValueId v) const {
    SymInt start = placement(v).start;
    std::optional<ValueId> found;
    for (ValueId a = v;;) {
      const Node *p = producer_of(g_, a);
      if (!p || !view_start(g_, *p, g_.value(a).output_index)) return found;
      a = edit_.replacements.resolve(view_base(*p));
      if (g_.type(a) == g_.type(v) && placement(a).start.same(start)) found = a;
    }
  }

  Placement placement(ValueId v) const {
    v = edit_.replacements.resolve(v);
    const Node *p = producer_of(g_, v);
    auto start = p ? view_start(g_, *p, g_.value(v).output_index) : std::nullopt;
    if (!start) return {v, 0};
    Placement base = placement(view_base(*p));
    return {base.root, start->absolute ? start->offset : base.start + start->offset};
  }

  std::string describe(ValueId v) const {
    const Value &value = g_.value(v);
    if (!value.name.empty()) return value.name;
    return str_cat(g_.producer(v).name, "[", value.output_index, "]");
  }

  void note(std::string line) {
    if (log_) log_->lines.push_back(std::move(line));
  }

  const Graph &g_;
  PassLog *log_;
  std::vector<bool> absolute_reads_;
  std::vector<bool> read_;  // by value: read by a node or returned
  std::set<int> exposed_roots_;  // values whose storage a graph output shows
  GraphEdit edit_;
};

}  // namespace

Graph remove_noops(const Graph &g, PassLog *log) { return NoopRemover(g, log).run(); }

}  // namespace coil::passes
