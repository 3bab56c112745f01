#include "ir/loop_ir.h"

#include <algorithm>
#include <sstream>

#include "support/error.h"

namespace coil::ir {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::ArgMax: return "argmax";
    case ReduceOp::ArgMin: return "argmin";
    case ReduceOp::Any: return "any";
    case ReduceOp::All: return "all";
    case ReduceOp::Welford: return "welford";
  }
  return "?";
}

std::string_view scan_op_name(ScanOp op) {
  switch (op) {
    case ScanOp::Sum: return "sum";
    case ScanOp::Prod: return "prod";
    case ScanOp::Max: return "max";
    case ScanOp::Min: return "min";
    case ScanOp::LogAddExp: return "logaddexp";
  }
  return "?";
}

std::string_view extern_op_name(ExternOp op) {
  switch (op) {
    case ExternOp::Mm: return "mm";
    case ExternOp::Bmm: return "bmm";
    case ExternOp::Addmm: return "addmm";
    case ExternOp::Baddbmm: return "baddbmm";
    case ExternOp::Mv: return "mv";
    case ExternOp::Addmv: return "addmv";
    case ExternOp::Convolution: return "convolution";
    case ExternOp::Attention: return "attention";
  }
  return "?";
}

std::string_view attention_part_name(AttentionPart part) {
  switch (part) {
    case AttentionPart::Forward: return "forward";
    case AttentionPart::Backward: return "backward";
  }
  return "?";
}

AttentionCall attention_call(const Node &n) {
  COIL_ASSERT(n.kind == NodeKind::Extern && n.extern_op == ExternOp::Attention, "not an attention call: ", n.origin);
  AttentionCall c;
  c.part = AttentionPart(n.attrs.at("part").at(0));
  size_t fixed = c.gradient() ? 6 : 3;
  COIL_ASSERT(n.operands.size() == fixed || n.operands.size() == fixed + 1, "attention call ", n.origin, " has ",
              n.operands.size(), " operands");
  COIL_ASSERT(c.gradient() ? n.outputs.size() == 3 : n.outputs.size() == 1 || n.outputs.size() == 2, "attention call ",
              n.origin, " has ", n.outputs.size(), " outputs");
  c.q = &n.operands[0];
  c.k = &n.operands[1];
  c.v = &n.operands[2];
  if (c.gradient()) {
    c.grad_out = &n.operands[3];
    c.lse = &n.operands[4];
    c.delta = &n.operands[5];
  }
  if (n.operands.size() > fixed) c.mask = &n.operands[fixed];
  c.causal = n.attrs.at("causal").at(0) != 0;
  c.group = n.attrs.at("kv_group").at(0);
  c.scale = n.scalars.at("scale");
  c.writes_logsumexp = !c.gradient() && n.outputs.size() == 2;
  return c;
}

std::vector<BufferId> Node::reads() const {
  std::vector<BufferId> out;
  auto add = [&](BufferId b) {
    if (b >= 0 && std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  };
  for (const Instr &i : body.instrs)
    if (i.op == Op::Load) add(i.buffer);
  for (const View &v : operands) add(v.buffer);
  return out;
}

std::string Node::var_name(VarId v) const {
  if (v.id >= kIndirectBase) return "i" + std::to_string(v.id - kIndirectBase);
  int n = int(ranges.size());
  return v.id < n ? "x" + std::to_string(v.id) : "r" + std::to_string(v.id - n);
}

BufferId Program::add_buffer(Buffer b) {
  buffers.push_back(std::move(b));
  return BufferId(buffers.size() - 1);
}

std::vector<std::vector<int>> Program::users() const {
  std::vector<std::vector<int>> out(buffers.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (BufferId b : nodes[n].reads()) out[size_t(b)].push_back(int(n));
  for (BufferId b : outputs) out[size_t(b)].push_back(-1);
  return out;
}

Expr offset_of(const std::vector<Expr> &index, const SymShape &strides, const SymInt &storage_offset) {
  COIL_ASSERT(index.size() == strides.size(), "index of rank ", index.size(), " for strides of rank ",
              strides.size());
  Expr e = storage_offset.expr();
  for (size_t d = 0; d < index.size(); ++d) e = e + index[d] * strides[d].expr();
  return e;
}

Ranges ranges_of(const SymShape &ranges, const SymShape &reduction_ranges) {
  Ranges r;
  int v = 0;
  bool symbols = false;
  for (const SymShape *shape : {&ranges, &reduction_ranges})
    for (const SymInt &s : *shape) {
      if (s.symbolic() && !symbols) {  // the symbols' ranges, from the graph's guards
        Ranges with = s.guards()->ranges();
        for (int u = 0; u < v; ++u) with.set(VarId{u}, *r.extent_of(VarId{u}));
        r = std::move(with);
        symbols = true;
      }
      r.set(VarId{v++}, s.symbolic() ? s.expr() : Expr(s.hint()));
    }
  return r;
}

bool reads_rows_side_by_side(const std::vector<const Node *> &nodes, const SymShape &ranges, const SymShape &reduction_ranges,
                             const std::function<bool(BufferId)> &in_memory) {
  if (ranges.empty() || reduction_ranges.empty()) return false;
  int n = int(ranges.size()), rr = -1;
  for (size_t d = 0; d < reduction_ranges.size(); ++d)
    if (reduction_ranges[d] > 1) rr = n + int(d);
  if (rr < 0) return false;
  Ranges r = ranges_of(ranges, reduction_ranges);
  for (const Node *node : nodes)
    for (const Instr &i : node->body.instrs) {
      if (i.op != Op::Load || !i.indirect.empty() || !in_memory(i.buffer)) continue;
      AccessFact fx = access_of(i.index, VarId{n - 1}, r), fr = access_of(i.index, VarId{rr}, r);
      if (fx.kind == Access::Contiguous && fr.kind != Access::Contiguous) return true;
    }
  return false;
}

Expr store_index(const Node &node, const Buffer &out) {
  // A 0-d output has one element, stored at 0 in whatever loops the node was moved into
  // (its explicit index is empty as well: a sum to 0-d fused into a softmax's rows of [1]).
  if (!node.output_index.empty() || out.type.rank() == 0) return offset_of(node.output_index, out.type.strides);
  std::vector<Expr> index;
  for (size_t d = 0; d < node.ranges.size(); ++d) index.push_back(Expr(node.x(int(d))));
  return offset_of(index, out.type.strides);
}

bool scatter_copies_in_place_layout(const Program &p, const Node &n) {
  const View &init = n.operands.at(0);
  const TensorType &out = p.buffer(n.outputs.at(0)).type;
  return init.offset == 0 && init.sizes == out.sizes && init.strides == out.strides &&
         p.buffer(init.buffer).type.dtype == out.dtype;
}

View output_view(const Program &p, size_t k) {
  if (k < p.output_views.size()) return p.output_views[k];
  const TensorType &t = p.buffer(p.outputs[k]).type;
  return {p.outputs[k], t.sizes, t.strides, 0};
}

std::pair<int64_t, int64_t> output_allocation(const Program &p, const View &v, const std::map<std::string, int64_t> &values) {
  // In integers first: an extent in symbols would compare them (`s0 == 0`).
  auto extent = [&](const SymShape &sizes, const SymShape &strides) {
    return storage_extent(TensorType{DType::F32, at_sizes(sizes, values), at_sizes(strides, values), {}}).hint();
  };
  const TensorType &buffer = p.buffer(v.buffer).type;
  if (std::find(p.inputs.begin(), p.inputs.end(), v.buffer) != p.inputs.end()) return {0, extent(v.sizes, v.strides)};
  return {values.empty() ? v.offset.hint() : at_sizes(v.offset, values).hint(), extent(buffer.sizes, buffer.strides)};
}

int64_t max_reduction_size(const Program &p, BufferId b) {
  std::vector<bool> seen(p.buffers.size(), false);
  std::vector<BufferId> work = {b};
  int64_t largest = 1;
  while (!work.empty()) {
    BufferId cur = work.back();
    work.pop_back();
    if (seen[size_t(cur)] || p.buffer(cur).producer < 0) continue;
    seen[size_t(cur)] = true;
    const Node &n = p.nodes.at(size_t(p.buffer(cur).producer));
    int64_t size = 1;
    for (const SymInt &s : n.reduction_ranges) size *= s.hint();
    if (n.kind == NodeKind::Scan) size = n.ranges[size_t(n.scan_dim)].hint();
    if (n.kind == NodeKind::Extern && n.attrs.count("reduction_size")) size = n.attrs.at("reduction_size")[0];
    if (n.kind == NodeKind::Scatter && n.accumulate) {
      // One element combines at most the writes whose loop vars its offset does not name.
      std::vector<VarId> named = vars_of(n.scatter_index);
      for (size_t d = 0; d < n.ranges.size(); ++d)
        if (std::find(named.begin(), named.end(), VarId{int(d)}) == named.end()) size *= n.ranges[d].hint();
    }
    largest = std::max(largest, size);
    for (BufferId r : n.reads()) work.push_back(r);
  }
  return largest;
}

namespace {

std::string kind_name(const Node &n) {
  switch (n.kind) {
    case NodeKind::Pointwise: return "pointwise";
    case NodeKind::Reduction: return "reduction " + std::string(reduce_op_name(n.reduce_op));
    case NodeKind::Scan: return "scan " + std::string(scan_op_name(n.scan_op)) + " over dim " + std::to_string(n.scan_dim);
    case NodeKind::Extern: return "extern " + std::string(extern_op_name(n.extern_op));
    case NodeKind::Scatter: return n.accumulate ? "scatter " + std::string(op_name(n.combine)) : "scatter";
  }
  return "?";
}

void print_node(std::ostringstream &os, const Program &p, const Node &n) {
  auto buf = [&](BufferId b) { return b < 0 ? std::string("None") : p.buffer(b).name; };
  os << "  ";
  for (size_t i = 0; i < n.outputs.size(); ++i) os << (i ? ", " : "") << buf(n.outputs[i]);
  os << " = " << kind_name(n) << "  # " << n.origin << "\n";
  if (n.kind == NodeKind::Scatter)
    os << "    into a copy of " << buf(n.operands[0].buffer) << " at ["
       << str(n.scatter_index, [&](VarId v) { return n.var_name(v); }) << "]\n";
  if (n.kind == NodeKind::Extern) {
    for (const View &v : n.operands)
      os << "    operand " << buf(v.buffer) << shape_str(v.sizes) << shape_str(v.strides) << "+" << v.offset << "\n";
    for (const auto &[k, v] : n.attrs) os << "    " << k << ": " << shape_str(v) << "\n";
    for (const auto &[k, v] : n.scalars) os << "    " << k << ": " << v << "\n";
    return;
  }
  os << "    ranges: " << shape_str(n.ranges);
  if (!n.reduction_ranges.empty()) os << "  reduction: " << shape_str(n.reduction_ranges);
  if (!n.output_index.empty() && !n.outputs.empty())
    os << "\n    stores at: " << str(store_index(n, p.buffer(n.outputs[0])), [&](VarId v) { return n.var_name(v); });
  os << "\n    reads:";
  for (BufferId b : n.reads()) os << " " << buf(b);
  os << "\n" << str(n.body, buf, [&](VarId v) { return n.var_name(v); });
}

}  // namespace

std::string buffers_str(const Program &p) {
  std::ostringstream os;
  os << "buffers:\n";
  for (const Buffer &b : p.buffers) {
    const char *kind = b.kind == Buffer::Kind::Input ? "input" : b.kind == Buffer::Kind::Constant ? "constant" : "computed";
    os << "  " << b.name << ": " << b.type.str() << "  " << kind << (b.compared ? ", compared" : "")
       << "\n";
  }
  return os.str();
}

std::string str(const Program &p, const Node &n) {
  std::ostringstream os;
  print_node(os, p, n);
  return os.str();
}

std::string str(const Program &p) {
  std::ostringstream os;
  os << buffers_str(p);
  os << "nodes:\n";
  for (const Node &n : p.nodes) print_node(os, p, n);
  os << "outputs:";
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    os << " " << p.buffer(p.outputs[i]).name;
    if (i < p.output_views.size()) {
      const View &v = p.output_views[i];
      const TensorType &t = p.buffer(v.buffer).type;
      if (v.sizes != t.sizes || v.strides != t.strides || v.offset != 0)
        os << " as view" << shape_str(v.sizes) << shape_str(v.strides) << "+" << v.offset;
    }
  }
  os << "\n";
  return os.str();
}

}  // namespace coil::ir
