#include "lowering/lowering.h"

#include "graph/registry.h"
#include "graph/strides.h"
#include "ir/specialize.h"
#include "support/options.h"

namespace coil::lowering {

using ir::Expr;

const TensorRef &Lowering::ref(ValueId v) const {
  auto it = refs_.find(v.index);
  COIL_ASSERT(it != refs_.end(), "value ", g_.value(v).name, " used before it was lowered");
  return it->second;
}

TensorRef Lowering::new_buffer(const TensorType &type) {
  ir::Buffer b;
  b.name = "buf" + std::to_string(p_.buffers.size());
  b.kind = ir::Buffer::Kind::Computed;
  b.type = type;
  b.producer = int(p_.nodes.size());
  ir::BufferId id = p_.add_buffer(b);
  return TensorRef{id, type.dtype, type.sizes, type.strides, 0};
}

Expr Lowering::offset(const TensorRef &r, const std::vector<Expr> &index) {
  return ir::offset_of(index, r.strides, r.offset);
}

int Lowering::load_broadcast(ir::BodyBuilder &b, const TensorRef &r, const std::vector<Expr> &out_index) {
  COIL_ASSERT(out_index.size() >= r.sizes.size(), "broadcast to a lower rank");
  size_t lead = out_index.size() - r.sizes.size();
  std::vector<Expr> index;
  for (size_t d = 0; d < r.sizes.size(); ++d) index.push_back(r.sizes[d] == 1 ? Expr(0) : out_index[lead + d]);
  return b.load(r.buffer, offset(r, index), r.dtype);
}

namespace {

std::vector<Expr> vars(int first, size_t n) {
  std::vector<Expr> out;
  for (size_t i = 0; i < n; ++i) out.push_back(Expr(ir::VarId{first + int(i)}));
  return out;
}

}  // namespace

TensorRef Lowering::scan(const TensorType &out, int dim, ir::ScanOp op, const std::string &origin, const BodyFn &fn) {
  TensorRef result = new_buffer(out);
  ir::Node node;
  node.kind = ir::NodeKind::Scan;
  node.origin = origin;
  node.ranges = out.sizes;
  node.scan_op = op;
  node.scan_dim = dim;
  ir::BodyBuilder b;
  b.add_result(fn(b, vars(0, out.sizes.size())));
  node.body = b.finish();
  node.outputs = {result.buffer};
  p_.nodes.push_back(std::move(node));
  return result;
}

TensorRef Lowering::scatter(const std::string &origin, const TensorType &out, const TensorRef &init, const SymShape &ranges,
                            bool accumulate, const ScatterFn &fn,
                            const std::function<Expr(const std::vector<Expr> &x)> &offset, ir::Op combine) {
  TensorRef result = new_buffer(out);
  ir::Node node;
  node.kind = ir::NodeKind::Scatter;
  node.origin = origin;
  node.ranges = ranges;
  node.accumulate = accumulate;
  node.combine = combine;
  node.operands = {ir::View{init.buffer, init.sizes, init.strides, init.offset}};
  ir::BodyBuilder b;
  auto [value, indices] = fn(b, vars(0, ranges.size()));
  b.add_result(b.cast(value, out.dtype));
  for (int i : indices) b.add_result(i);
  node.body = b.finish();
  node.scatter_index = offset(vars(0, ranges.size()));
  node.outputs = {result.buffer};
  p_.nodes.push_back(std::move(node));
  return result;
}

int64_t Lowering::reserve_draws(int64_t count, const Device &device) {
  if (random_state_ < 0) {
    ir::Buffer b;
    b.name = kRandomStateName;
    b.kind = ir::Buffer::Kind::Input;
    b.type = TensorType{DType::I64, {2}, {1}, device};
    random_state_ = p_.add_buffer(b);
    p_.inputs.push_back(random_state_);
  }
  int64_t first = draws_;
  draws_ += count;
  return first;
}

int Lowering::draw(ir::BodyBuilder &b, ir::Op op, DType dtype, int64_t first, const std::vector<Expr> &x,
                   const SymShape &sizes, const TensorRef *state) {
  Expr linear = ir::offset_of(x, contiguous_strides(sizes));
  COIL_ASSERT(state || random_state_ >= 0, "a draw before its counters were reserved");
  // (seed, offset): the state operand's two elements, or the call's random state.
  ir::BufferId from = state ? state->buffer : random_state_;
  auto at = [&](int64_t i) { return state ? offset(*state, {Expr(i)}) : Expr(i); };
  int seed = b.load(from, at(0), DType::I64), first_counter = b.load(from, at(1), DType::I64);
  int counter = b.binary(ir::Op::Add, first_counter, b.index(linear + first, DType::I64), DType::I64);
  return b.binary(op, seed, counter, dtype);
}

TensorRef Lowering::pointwise(const TensorType &type, const std::string &origin, const BodyFn &fn) {
  TensorRef out = new_buffer(type);
  ir::Node n;
  n.kind = ir::NodeKind::Pointwise;
  n.origin = origin;
  n.ranges = type.sizes;
  ir::BodyBuilder b;
  b.add_result(b.cast(fn(b, vars(0, type.sizes.size())), type.dtype));
  n.body = b.finish();
  n.outputs = {out.buffer};
  p_.nodes.push_back(std::move(n));
  return out;
}

TensorRef Lowering::fill(const TensorType &type, const std::string &origin, double value) {
  return pointwise(type, origin, [&](ir::BodyBuilder &b, const std::vector<Expr> &) { return b.constant(value, type.dtype); });
}

std::vector<TensorRef> Lowering::reduction(
    const TensorType &out, const SymShape &reduced, ir::ReduceOp op, const std::string &origin,
    const std::function<int(ir::BodyBuilder &, const std::vector<Expr> &, const std::vector<Expr> &)> &fn) {
  ir::Node n;
  n.kind = ir::NodeKind::Reduction;
  n.reduce_op = op;
  n.origin = origin;
  n.ranges = out.sizes;
  n.reduction_ranges = reduced;
  ir::BodyBuilder b;
  b.add_result(fn(b, vars(0, out.sizes.size()), vars(int(out.sizes.size()), reduced.size())));
  n.body = b.finish();
  std::vector<TensorRef> refs;
  int outputs = op == ir::ReduceOp::Welford ? 3 : 1;
  for (int k = 0; k < outputs; ++k) {
    refs.push_back(new_buffer(out));
    n.outputs.push_back(refs.back().buffer);
  }
  p_.nodes.push_back(std::move(n));
  return refs;
}

const Arg &arg(const Node &n, std::string_view name) {
  int i = n.op->schema.find_arg(name);
  COIL_ASSERT(i >= 0, n.target(), " has no argument '", name, "'");
  return n.args[size_t(i)];
}

double number(const Arg &a) { return a.number(); }

const TensorRef &tensor_arg(Lowering &l, const Node &n, const char *name) { return l.ref(arg(n, name).as<ValueId>()); }

int load_argument(Lowering &l, ir::BodyBuilder &b, const Node &n, const std::string &name, const std::vector<Expr> &index) {
  const Arg &a = arg(n, name);
  if (a.is<ValueId>()) return Lowering::load_broadcast(b, l.ref(a.as<ValueId>()), index);
  if (a.is<double>()) return b.constant(a.as<double>(), DType::F64);
  if (a.is<bool>()) return b.constant(a.as<bool>(), DType::Bool);
  return size_value(b, a.as<SymInt>(), DType::I64);
}

int size_value(ir::BodyBuilder &b, const SymInt &v, DType dtype) {
  if (!v.symbolic()) return b.constant(double(v.hint()), dtype);
  return b.cast(b.index(v.expr(), DType::I64), dtype);
}

std::vector<int64_t> ints_of(const Arg &a) {
  std::vector<int64_t> out;
  for (const Arg &v : a.as<ArgList>()) out.push_back(v.integer());
  return out;
}

std::vector<Expr> unravel(const Expr &flat, const SymShape &sizes) {
  std::vector<Expr> at(sizes.size());
  SymInt stride = 1;  // of dim d: the sizes after it
  for (size_t d = sizes.size(); d-- > 0;) {
    Expr q = ir::floor_div(flat, stride.expr());
    // The first dim's coordinate needs no remainder, flat being less than numel.
    if (d == 0 && sizes[d].symbolic()) {
      at[d] = q;
      continue;
    }
    // A size of symbols divides as one (SizeDiv, SizeMod); an empty dim's coordinate is 0.
    SymInt size = sizes[d].symbolic() ? sizes[d] : SymInt(std::max<int64_t>(sizes[d].hint(), 1));
    at[d] = ir::mod(q, size.expr());
    stride = stride * size;
  }
  return at;
}

const std::map<std::string, LowerFn, std::less<>> &lowerings() {
  static const auto table = [] {
    std::map<std::string, LowerFn, std::less<>> t;
    add_pointwise_lowerings(t);
    add_view_lowerings(t);
    add_reduction_lowerings(t);
    add_norm_lowerings(t);
    add_extern_lowerings(t);
    add_creation_lowerings(t);
    add_pooling_lowerings(t);
    add_grid_sampler_lowerings(t);
    add_indexing_lowerings(t);
    add_histogram_lowerings(t);
    add_random_lowerings(t);
    add_special_lowerings(t);
    add_integer_lowerings(t);
    add_sorting_lowerings(t);
    return t;
  }();
  return table;
}

namespace {

ir::BufferId add_graph_buffer(ir::Program &p, const Value &v, ir::Buffer::Kind kind) {
  ir::Buffer b;
  b.name = v.name;
  b.kind = kind;
  b.type = v.type;
  return p.add_buffer(b);
}

}  // namespace

LowerOptions LowerOptions::from_registry() {
  LowerOptions o;
  o.align_product_rows = options::get_string("extern.align_product_rows");
  o.conv_weight_grad_call = options::get_string("extern.conv_weight_grad") == "library";
  return o;
}

ir::Program lower_symbolic(const Graph &g, const LowerOptions &o) {
  Lowering l(g, o);
  ir::Program &p = l.program();
  for (const auto &[ids, kind] : {std::pair{g.inputs(), ir::Buffer::Kind::Input},
                                  std::pair{g.constants(), ir::Buffer::Kind::Constant}}) {
    for (ValueId id : ids) {
      GuardActivity what("lowering input", g.value(id).name);
      ir::BufferId b = add_graph_buffer(p, g.value(id), kind);
      p.inputs.push_back(b);
      l.bind(id, TensorRef{b, g.type(id).dtype, g.type(id).sizes, g.type(id).strides, 0});
    }
  }
  const auto &table = lowerings();
  for (const Node &n : g.nodes()) {
    auto it = table.find(n.target());
    if (it == table.end())
      throw UserError(str_cat("node '", n.name, "' (", n.target(), "): coil cannot lower this op yet"), n.loc);
    std::vector<TensorRef> outs;
    GuardActivity what("lowering node", n.name, n.target());
    try {
      outs = it->second(l, n);
    } catch (const UserError &e) {
      throw UserError(str_cat("node '", n.name, "' (", n.target(), "): ", e.message()), e.has_loc() ? e.loc() : n.loc);
    }
    COIL_ASSERT(outs.size() == n.outputs.size(), n.target(), " lowered to ", outs.size(), " values, expected ",
                n.outputs.size());
    for (size_t i = 0; i < outs.size(); ++i) l.bind(n.outputs[i], outs[i]);
  }
  // Outputs are returned as they are, views included (aliasing inputs as PyTorch does).
  GuardActivity what("lowering the outputs");
  for (ValueId v : g.outputs()) {
    const TensorRef &r = l.ref(v);
    p.outputs.push_back(r.buffer);
    p.output_views.push_back(ir::View{r.buffer, r.sizes, r.strides, r.offset});
  }
  return std::move(p);
}

ir::Program lower(const Graph &g, const LowerOptions &o, std::string_view why) {
  ir::Program p = lower_symbolic(g, o);
  std::shared_ptr<SizeGuards> guards = size_guards_of(g);
  if (!guards) return p;
  guards->fix(ir::symbols_of(p), why);
  return ir::specialize(p, guards->values());
}

}  // namespace coil::lowering
