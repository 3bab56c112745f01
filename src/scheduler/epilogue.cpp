// Reading an epilogue as post-ops. Each node's body is read from its result down to the
// load of the value before it (the chain value y): every op on the way must have a
// post-op, and its other operand must be a constant or a tensor read from memory. The
// activations that use y more than once (gelu, silu, hardswish, leaky_relu, elu,
// square) are recognized whole, in the shape lowering builds them (lowering/pointwise.cpp).
#include "scheduler/epilogue.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "scheduler/reindex.h"
#include "support/error.h"

namespace coil::sched {
namespace {

using ir::Body;
using ir::BufferId;
using ir::Expr;
using ir::Instr;
using ir::Node;
using ir::Op;

constexpr double kInf = std::numeric_limits<double>::infinity();

bool is_low_float(DType t) { return t == DType::BF16 || t == DType::F16; }

PostOp eltwise(PostOpKind kind, double alpha = 0, double beta = 0) { return PostOp{kind, alpha, beta, {}}; }
PostOp with_tensor(PostOpKind kind, const ir::View &t) { return PostOp{kind, 0, 0, t}; }

// The view of `buffer` that index `at` reads over a space of `dims`: strides from the
// coefficients of x0, x1, ...; nothing when the index is not affine in them.
std::optional<ir::View> strided_view(BufferId buffer, const Expr &at, const SymShape &dims) {
  Expr e = ir::simplify(at, ranges_of(dims));
  std::vector<Expr> strides(dims.size(), Expr(0));
  for (const ir::Term &t : e.terms()) {
    int d = -1;
    Expr stride(t.coeff);  // a number, or a product of sizes (`s0`, `(s1 + 1) // 2`)
    for (const ir::Atom &a : t.factors) {
      if (a.kind() == ir::AtomKind::Var && d < 0) d = a.var().id;
      else if (a.kind() != ir::AtomKind::Var && ir::vars_of(Expr(a)).empty()) stride = stride * Expr(a);
      else return std::nullopt;
    }
    if (d < 0 || d >= int(dims.size())) return std::nullopt;
    strides[size_t(d)] = strides[size_t(d)] + stride;
  }
  std::shared_ptr<SizeGuards> guards;
  for (const SymInt &s : dims)
    if (s.symbolic()) guards = s.guards();
  ir::View v{buffer, dims, {}, e.constant()};
  for (const Expr &s : strides) {
    if (!s.as_constant() && !guards) return std::nullopt;  // strides of sizes the space does not name
    v.strides.push_back(sym_of(s, guards));
  }
  return v;
}

bool commutative(Op op) { return op == Op::Add || op == Op::Mul || op == Op::Maximum || op == Op::Minimum; }

// Reads one node's body as the post-ops that compute its result from the chain value.
class ChainReader {
 public:
  ChainReader(const ir::Program &p, const Node &n, BufferId chain, const Expr &chain_at, const std::set<BufferId> &earlier)
      : p_(p), n_(n), body_(n.body), chain_(chain), chain_at_(chain_at), earlier_(earlier),
        depends_(body_.instrs.size(), -1) {}

  /// Appends the node's post-ops to `ops`; the reason when its body is no chain of them.
  std::optional<std::string> read(std::vector<PostOp> &ops) {
    int result = body_.results[0];
    if (!depends(result)) return str_cat("does not read ", name(chain_));
    return match(result, ops);
  }

 private:
  const Instr &at(int v) const { return body_.at(v); }
  int arg(int v, int k) const { return at(v).args[size_t(k)]; }
  std::string name(BufferId b) const { return p_.buffer(b).name; }

  // Whether value v is computed from the chain value (or an earlier one of the chain).
  bool depends(int v) {
    int8_t &memo = depends_[size_t(v)];
    if (memo >= 0) return memo;
    const Instr &i = at(v);
    bool d = i.op == Op::Load && (i.buffer == chain_ || earlier_.count(i.buffer));
    for (int a : i.args)
      if (a >= 0 && depends(a)) d = true;
    memo = d;
    return d;
  }

  std::optional<double> constant(int v) const {
    if (at(v).op != Op::Constant) return std::nullopt;
    return at(v).value;
  }

  // Constants compare as the f32 values the kernel computes with.
  bool is_constant(int v, double c) const {
    auto k = constant(v);
    return k && float(*k) == float(c);
  }

  // x when v = op(x, c), or op(c, x) for a commutative op.
  std::optional<int> with_constant(int v, Op op, double c) const {
    if (v < 0 || at(v).op != op) return std::nullopt;
    if (is_constant(arg(v, 1), c)) return arg(v, 0);
    if (commutative(op) && is_constant(arg(v, 0), c)) return arg(v, 1);
    return std::nullopt;
  }

  // The operands of v = op(a, b) in both orders (one for a non-commutative op).
  std::vector<std::pair<int, int>> operands(int v, Op op) const {
    if (at(v).op != op) return {};
    if (!commutative(op)) return {{arg(v, 0), arg(v, 1)}};
    return {{arg(v, 0), arg(v, 1)}, {arg(v, 1), arg(v, 0)}};
  }

  // A tensor read from memory, widened to f32 or not: its view over the result's dims.
  std::optional<ir::View> tensor(int v) const {
    const Instr *i = &at(v);
    if (i->op == Op::Cast && i->dtype == DType::F32 && is_low_float(at(i->args[0]).dtype)) i = &at(i->args[0]);
    if (i->op != Op::Load || i->args[0] >= 0 || !i->indirect.empty() || !is_floating(i->dtype)) return std::nullopt;
    return strided_view(i->buffer, i->index, n_.ranges);
  }

  // ---- activations that use y more than once, as lowering builds them -----------------

  // mul(mul(x, 0.5), add(erf(mul(x, 1/sqrt(2))), 1)) -> gelu_erf(x)
  std::optional<int> gelu_erf(int v) const {
    for (auto [half, one_plus] : operands(v, Op::Mul)) {
      auto x = with_constant(half, Op::Mul, 0.5);
      auto e = with_constant(one_plus, Op::Add, 1);
      if (x && e && at(*e).op == Op::Erf && with_constant(arg(*e, 0), Op::Mul, M_SQRT1_2) == x) return x;
    }
    return std::nullopt;
  }

  // mul(mul(x, 0.5), add(tanh(mul(add(x, mul(mul(mul(x, x), x), 0.044715)), sqrt(2/pi))), 1)) -> gelu_tanh(x)
  std::optional<int> gelu_tanh(int v) const {
    for (auto [half, one_plus] : operands(v, Op::Mul)) {
      auto x = with_constant(half, Op::Mul, 0.5);
      auto t = with_constant(one_plus, Op::Add, 1);
      if (!x || !t || at(*t).op != Op::Tanh) continue;
      auto poly = with_constant(arg(*t, 0), Op::Mul, std::sqrt(2.0 / M_PI));
      if (!poly) continue;
      for (auto [y, cube_term] : operands(*poly, Op::Add)) {
        auto cube = with_constant(cube_term, Op::Mul, 0.044715);
        if (y != *x || !cube) continue;
        for (auto [square, z] : operands(*cube, Op::Mul))
          if (z == *x && operands(square, Op::Mul).size() == 2 && arg(square, 0) == *x && arg(square, 1) == *x) return x;
      }
    }
    return std::nullopt;
  }

  // mul(x, sigmoid(x)) -> silu(x)
  std::optional<int> silu(int v) const {
    for (auto [x, s] : operands(v, Op::Mul))
      if (at(s).op == Op::Sigmoid && arg(s, 0) == x) return x;
    return std::nullopt;
  }

  // mul(x, truediv(minimum(maximum(add(x, 3), 0), 6), 6)) -> hardswish(x)
  std::optional<int> hardswish(int v) const {
    for (auto [x, h] : operands(v, Op::Mul)) {
      auto m = with_constant(h, Op::TrueDiv, 6);
      auto lo = m ? with_constant(*m, Op::Minimum, 6) : std::nullopt;
      auto shifted = lo ? with_constant(*lo, Op::Maximum, 0) : std::nullopt;
      if (shifted && with_constant(*shifted, Op::Add, 3) == x) return x;
    }
    return std::nullopt;
  }

  // mul(x, x) -> square(x)
  std::optional<int> square(int v) const {
    if (at(v).op == Op::Mul && arg(v, 0) == arg(v, 1)) return arg(v, 0);
    return std::nullopt;
  }

  // where(gt(x, 0), x, mul(x, slope)) -> relu(x) with negative slope `slope`
  std::optional<std::pair<int, PostOp>> leaky_relu(int v) const {
    if (at(v).op != Op::Where) return std::nullopt;
    auto x = with_constant(arg(v, 0), Op::Gt, 0);
    if (!x || arg(v, 1) != *x || at(arg(v, 2)).op != Op::Mul) return std::nullopt;
    for (auto [y, slope] : operands(arg(v, 2), Op::Mul))
      if (y == *x && constant(slope)) return std::pair{*x, eltwise(PostOpKind::Relu, *constant(slope))};
    return std::nullopt;
  }

  // where(gt(x, 0), x, mul(expm1(x), alpha)) -> elu(x) (scale and input_scale 1, each
  // maybe still a multiplication by 1)
  std::optional<std::pair<int, PostOp>> elu(int v) const {
    if (at(v).op != Op::Where) return std::nullopt;
    auto x = with_constant(arg(v, 0), Op::Gt, 0);
    if (!x) return std::nullopt;
    auto is_x = [&](int w) { return w == *x || with_constant(w, Op::Mul, 1) == x; };
    if (!is_x(arg(v, 1)) || at(arg(v, 2)).op != Op::Mul) return std::nullopt;
    for (auto [e, alpha] : operands(arg(v, 2), Op::Mul))
      if (at(e).op == Op::Expm1 && is_x(arg(e, 0)) && constant(alpha))
        return std::pair{*x, eltwise(PostOpKind::Elu, *constant(alpha))};
    return std::nullopt;
  }

  std::optional<std::pair<int, PostOp>> activation(int v) const {
    if (auto x = gelu_erf(v)) return std::pair{*x, eltwise(PostOpKind::GeluErf)};
    if (auto x = gelu_tanh(v)) return std::pair{*x, eltwise(PostOpKind::GeluTanh)};
    if (auto x = silu(v)) return std::pair{*x, eltwise(PostOpKind::Silu)};
    if (auto x = hardswish(v)) return std::pair{*x, eltwise(PostOpKind::Hardswish)};
    if (auto x = square(v)) return std::pair{*x, eltwise(PostOpKind::Square)};
    if (auto r = leaky_relu(v)) return r;
    return elu(v);
  }

  // ---- one op of y at a time ------------------------------------------------------------

  // op(y) -> its post-op.
  static std::optional<PostOp> of_unary(Op op) {
    static const std::pair<Op, PostOp> table[] = {
        {Op::Neg, eltwise(PostOpKind::Linear, -1, 0)},  {Op::Exp, eltwise(PostOpKind::Exp)},
        {Op::Log, eltwise(PostOpKind::Log)},            {Op::Abs, eltwise(PostOpKind::Abs)},
        {Op::Sqrt, eltwise(PostOpKind::Sqrt)},          {Op::Tanh, eltwise(PostOpKind::Tanh)},
        {Op::Sigmoid, eltwise(PostOpKind::Sigmoid)},    {Op::Reciprocal, eltwise(PostOpKind::Pow, 1, -1)},
        {Op::Rsqrt, eltwise(PostOpKind::Pow, 1, -0.5)},
    };
    for (const auto &[o, post] : table)
      if (o == op) return post;
    return std::nullopt;
  }

  // op(y, c) or op(c, y) -> its post-op.
  static std::optional<PostOp> of_scalar(Op op, bool y_first, double c) {
    if (op == Op::Add) return eltwise(PostOpKind::Linear, 1, c);
    if (op == Op::Sub) return y_first ? eltwise(PostOpKind::Linear, 1, -c) : eltwise(PostOpKind::Linear, -1, c);
    if (op == Op::Mul) return eltwise(PostOpKind::Linear, c, 0);
    if (op == Op::TrueDiv) return y_first ? eltwise(PostOpKind::Linear, 1 / c, 0) : eltwise(PostOpKind::Pow, c, -1);
    if (op == Op::Maximum) return c == 0 ? eltwise(PostOpKind::Relu) : eltwise(PostOpKind::Clip, c, kInf);
    if (op == Op::Minimum) return eltwise(PostOpKind::Clip, -kInf, c);
    if (op == Op::Pow && y_first) return eltwise(PostOpKind::Pow, 1, c);
    return std::nullopt;
  }

  // op(y, t) or op(t, y) with a tensor t -> its post-ops.
  static std::vector<PostOp> of_tensor(Op op, bool y_first, const ir::View &t) {
    if (op == Op::Add) return {with_tensor(PostOpKind::Add, t)};
    if (op == Op::Mul) return {with_tensor(PostOpKind::Mul, t)};
    if (op == Op::Sub && y_first) return {with_tensor(PostOpKind::Sub, t)};
    if (op == Op::Sub) return {eltwise(PostOpKind::Linear, -1, 0), with_tensor(PostOpKind::Add, t)};  // t - y
    if (op == Op::TrueDiv && y_first) return {with_tensor(PostOpKind::Div, t)};
    if (op == Op::TrueDiv) return {eltwise(PostOpKind::Pow, 1, -1), with_tensor(PostOpKind::Mul, t)};  // t / y
    return {};
  }

  // Appends the post-ops that compute value v (which depends on y) from y.
  std::optional<std::string> match(int v, std::vector<PostOp> &ops) {
    const Instr &i = at(v);
    if (i.op == Op::Load) {
      if (i.buffer != chain_) return str_cat("reads ", name(i.buffer), ", an earlier value of the epilogue");
      if (i.args[0] >= 0 || !i.indirect.empty() || ir::simplify(i.index, ranges_of(n_.ranges)) != chain_at_)
        return str_cat("reads ", name(chain_), " at another element than the one it computes");
      return std::nullopt;
    }
    if (i.op == Op::Cast) {
      DType from = at(i.args[0]).dtype;
      bool widens = is_low_float(from) && i.dtype == DType::F32;
      bool rounds_at_store = from == DType::F32 && is_low_float(i.dtype) && v == body_.results[0];
      if (!widens && !rounds_at_store) return str_cat("casts ", short_name(from), " to ", short_name(i.dtype));
      return match(i.args[0], ops);
    }
    if (i.dtype != DType::F32)
      return str_cat("computes ", ir::op_name(i.op), " in ", short_name(i.dtype), ", and post-ops compute in f32");
    if (auto act = activation(v)) return append(act->first, {act->second}, ops);
    int arity = ir::op_arity(i.op);
    if (arity == 1) {
      if (auto post = of_unary(i.op)) return append(i.args[0], {*post}, ops);
      return str_cat("applies ", ir::op_name(i.op), ", which has no post-op");
    }
    if (arity != 2) return str_cat("applies ", ir::op_name(i.op), ", which has no post-op");
    bool y_first = depends(i.args[0]);
    int y = y_first ? i.args[0] : i.args[1], other = y_first ? i.args[1] : i.args[0];
    if (depends(other))
      return str_cat("applies ", ir::op_name(i.op), " to two values made from ", name(chain_), ", which no post-op does");
    if (auto c = constant(other)) {
      if (auto post = of_scalar(i.op, y_first, *c)) return append(y, {*post}, ops);
      return str_cat("applies ", ir::op_name(i.op), " with a constant, which has no post-op");
    }
    auto t = tensor(other);
    if (!t) return str_cat("takes the other operand of ", ir::op_name(i.op), " from a computation, not from memory");
    std::vector<PostOp> posts = of_tensor(i.op, y_first, *t);
    if (posts.empty()) return str_cat("applies ", ir::op_name(i.op), " with a tensor, which has no post-op");
    return append(y, posts, ops);
  }

  // The post-ops of y's value x, then `posts`.
  std::optional<std::string> append(int x, const std::vector<PostOp> &posts, std::vector<PostOp> &ops) {
    if (auto why = match(x, ops)) return why;
    for (const PostOp &post : posts) push(post, ops);
    return std::nullopt;
  }

  // relu then clip(-inf, hi) -> clip(0, hi); clip(lo, inf) then clip(-inf, hi) -> clip(lo, hi)
  static void push(const PostOp &post, std::vector<PostOp> &ops) {
    bool upper_only = post.kind == PostOpKind::Clip && post.alpha == -kInf;
    if (upper_only && !ops.empty()) {
      PostOp &last = ops.back();
      if (last.kind == PostOpKind::Relu && last.alpha == 0) {
        last = eltwise(PostOpKind::Clip, 0, post.beta);
        return;
      }
      if (last.kind == PostOpKind::Clip && last.beta == kInf) {
        last.beta = post.beta;
        return;
      }
    }
    ops.push_back(post);
  }

  const ir::Program &p_;
  const Node &n_;
  const Body &body_;
  BufferId chain_;
  Expr chain_at_;
  const std::set<BufferId> &earlier_;
  std::vector<int8_t> depends_;  // -1 unknown
};

std::string number(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string_view post_op_name(PostOpKind k) {
  switch (k) {
    case PostOpKind::Relu: return "relu";
    case PostOpKind::Elu: return "elu";
    case PostOpKind::GeluErf: return "gelu_erf";
    case PostOpKind::GeluTanh: return "gelu_tanh";
    case PostOpKind::Tanh: return "tanh";
    case PostOpKind::Sigmoid: return "sigmoid";
    case PostOpKind::Silu: return "silu";
    case PostOpKind::Hardswish: return "hardswish";
    case PostOpKind::Exp: return "exp";
    case PostOpKind::Log: return "log";
    case PostOpKind::Abs: return "abs";
    case PostOpKind::Sqrt: return "sqrt";
    case PostOpKind::Square: return "square";
    case PostOpKind::Linear: return "linear";
    case PostOpKind::Clip: return "clip";
    case PostOpKind::Pow: return "pow";
    case PostOpKind::Add: return "add";
    case PostOpKind::Sub: return "sub";
    case PostOpKind::Mul: return "mul";
    case PostOpKind::Div: return "div";
  }
  return "?";
}

bool PostOp::binary() const {
  return kind == PostOpKind::Add || kind == PostOpKind::Sub || kind == PostOpKind::Mul || kind == PostOpKind::Div;
}

std::variant<Epilogue, std::string> match_epilogue(const ir::Program &p, const Node &call,
                                                   const std::vector<const Node *> &nodes) {
  COIL_ASSERT(call.kind == ir::NodeKind::Extern, "an epilogue follows an extern call, not ", call.origin);
  const SymShape &dims = call.ranges;
  BufferId chain = call.outputs[0];
  Expr at = ir::simplify(ir::store_index(call, p.buffer(chain)), ranges_of(dims));
  Epilogue e;
  std::optional<ir::View> result = strided_view(chain, at, dims);
  if (!result) return str_cat(call.origin, " stores ", p.buffer(chain).name, " at [", ir::str(at), "], not a strided view");
  e.out = *result;
  std::set<BufferId> earlier;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node &n = *nodes[k];
    COIL_ASSERT(same(n.ranges, dims) && n.reduction_ranges.empty(), n.origin, " is not in the variables of ", call.origin);
    if (n.kind != ir::NodeKind::Pointwise || n.outputs.size() != 1 || n.body.results.size() != 1)
      return str_cat(n.origin, " computes more than one value");
    if (n.semantic_cast && k + 1 < nodes.size())
      return str_cat(n.origin, " rounds to ", short_name(p.buffer(n.outputs[0]).type.dtype),
                     " on purpose, and a post-op keeps its value in f32");
    if (auto why = ChainReader(p, n, chain, at, earlier).read(e.ops)) return str_cat(n.origin, " ", *why);
    earlier.insert(chain);
    chain = n.outputs[0];
    at = ir::simplify(ir::store_index(n, p.buffer(chain)), ranges_of(dims));
    auto out = strided_view(chain, at, dims);
    if (!out) return str_cat(n.origin, " stores ", p.buffer(chain).name, " at [", ir::str(at), "], not a strided view");
    e.out = *out;
  }
  return e;
}

Epilogue epilogue_of(const ir::Program &p, const ir::Kernel &k) {
  COIL_ASSERT(k.kind == ir::KernelKind::Extern, k.name, " is no extern kernel");
  std::vector<const Node *> nodes;
  for (size_t i = 1; i < k.nodes.size(); ++i) nodes.push_back(&p.nodes[size_t(k.nodes[i])]);
  auto e = match_epilogue(p, p.nodes[size_t(k.nodes[0])], nodes);
  if (auto *why = std::get_if<std::string>(&e)) COIL_ASSERT(false, k.name, "'s epilogue is no chain of post-ops: ", *why);
  return std::get<Epilogue>(e);
}

std::string str(const ir::Program &p, const std::vector<PostOp> &ops) {
  std::string out;
  for (const PostOp &op : ops) {
    out += out.empty() ? "" : ", ";
    out += post_op_name(op.kind);
    if (op.binary()) {
      SymShape dims = op.operand.sizes;
      for (size_t d = 0; d < dims.size(); ++d)
        if (op.operand.strides[d].same(0)) dims[d] = 1;
      out += " " + p.buffer(op.operand.buffer).name + shape_str(dims);
      continue;
    }
    bool two = op.kind == PostOpKind::Linear || op.kind == PostOpKind::Clip || op.kind == PostOpKind::Pow;
    bool one = (op.kind == PostOpKind::Relu && op.alpha != 0) || op.kind == PostOpKind::Elu;
    if (two) out += "(" + number(op.alpha) + ", " + number(op.beta) + ")";
    if (one) out += "(" + number(op.alpha) + ")";
  }
  return out;
}

}  // namespace coil::sched
