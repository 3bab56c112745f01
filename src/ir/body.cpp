#include "ir/body.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "support/python_repr.h"
#include "ir/scalar_math.h"
#include "support/error.h"
#include "support/hash.h"

namespace coil::ir {
namespace {

struct OpInfo {
  Op op;
  std::string_view name;
  int arity;
};

constexpr OpInfo kOps[] = {
    {Op::Load, "load", 0},         {Op::Constant, "const", 0},      {Op::Index, "index", 0},
    {Op::Cast, "cast", 1},         {Op::Neg, "neg", 1},             {Op::Abs, "abs", 1},
    {Op::Exp, "exp", 1},           {Op::Exp2, "exp2", 1},           {Op::Expm1, "expm1", 1},
    {Op::Log, "log", 1},           {Op::Log1p, "log1p", 1},         {Op::Log2, "log2", 1},
    {Op::Sqrt, "sqrt", 1},         {Op::Rsqrt, "rsqrt", 1},         {Op::Reciprocal, "reciprocal", 1},
    {Op::Sin, "sin", 1},           {Op::Cos, "cos", 1},             {Op::Tan, "tan", 1},
    {Op::Tanh, "tanh", 1},         {Op::Sigmoid, "sigmoid", 1},     {Op::Erf, "erf", 1},
    {Op::Floor, "floor", 1},       {Op::Ceil, "ceil", 1},           {Op::Round, "round", 1},
    {Op::Trunc, "trunc", 1},       {Op::Sign, "sign", 1},           {Op::LogicalNot, "logical_not", 1},
    {Op::BitwiseNot, "bitwise_not", 1}, {Op::IsNan, "isnan", 1},    {Op::IsInf, "isinf", 1},
    {Op::Acos, "acos", 1},         {Op::Asin, "asin", 1},           {Op::Atan, "atan", 1},
    {Op::Acosh, "acosh", 1},       {Op::Asinh, "asinh", 1},         {Op::Atanh, "atanh", 1},
    {Op::Cosh, "cosh", 1},         {Op::Sinh, "sinh", 1},           {Op::Log10, "log10", 1},
    {Op::Add, "add", 2},           {Op::Sub, "sub", 2},             {Op::Mul, "mul", 2},
    {Op::TrueDiv, "truediv", 2},   {Op::FloorDiv, "floordiv", 2},   {Op::TruncDiv, "truncdiv", 2},
    {Op::Remainder, "remainder", 2}, {Op::Fmod, "fmod", 2},         {Op::Pow, "pow", 2},
    {Op::Maximum, "maximum", 2},   {Op::Minimum, "minimum", 2},     {Op::Atan2, "atan2", 2},
    {Op::Copysign, "copysign", 2}, {Op::Fmax, "fmax", 2},           {Op::Fmin, "fmin", 2},
    {Op::Hypot, "hypot", 2},       {Op::Ldexp, "ldexp", 2},
    {Op::Igamma, "igamma", 2},     {Op::Igammac, "igammac", 2},     {Op::Zeta, "zeta", 2},
    {Op::ChebyshevT, "chebyshev_t", 2}, {Op::ChebyshevU, "chebyshev_u", 2},
    {Op::ChebyshevV, "chebyshev_v", 2}, {Op::ChebyshevW, "chebyshev_w", 2}, {Op::HermiteH, "hermite_h", 2},
    {Op::HermiteHe, "hermite_he", 2}, {Op::LaguerreL, "laguerre_l", 2}, {Op::LegendreP, "legendre_p", 2},       {Op::Rand, "rand", 2},           {Op::Randn, "randn", 2},
    {Op::RandBits, "randbits", 2},
    {Op::Eq, "eq", 2},             {Op::Ne, "ne", 2},               {Op::Lt, "lt", 2},
    {Op::Le, "le", 2},             {Op::Gt, "gt", 2},               {Op::Ge, "ge", 2},
    {Op::LogicalAnd, "logical_and", 2}, {Op::LogicalOr, "logical_or", 2},
    {Op::LogicalXor, "logical_xor", 2}, {Op::BitwiseAnd, "bitwise_and", 2},
    {Op::BitwiseOr, "bitwise_or", 2}, {Op::BitwiseXor, "bitwise_xor", 2}, {Op::Where, "where", 3},
};

const OpInfo &info(Op op) {
  for (const auto &i : kOps)
    if (i.op == op) return i;
  COIL_ASSERT(false, "op without an entry in kOps: ", int(op));
}

size_t hash_double(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  return std::hash<uint64_t>{}(bits);
}

}  // namespace

std::string_view op_name(Op op) { return info(op).name; }
int op_arity(Op op) { return info(op).arity; }

bool is_logical(Op op) { return op == Op::LogicalAnd || op == Op::LogicalOr || op == Op::LogicalXor; }
bool is_random(Op op) { return op == Op::Rand || op == Op::Randn || op == Op::RandBits; }
bool is_polynomial(Op op) { return op >= Op::ChebyshevT && op <= Op::LegendreP; }
int polynomial_family(Op op) { return int(op) - int(Op::ChebyshevT); }

size_t Instr::hash() const {
  size_t h = hash_mix(size_t(op), size_t(dtype));
  for (int a : args) h = hash_mix(h, size_t(a + 1));
  h = hash_mix(h, size_t(buffer + 1));
  h = hash_mix(h, index.hash());
  for (int v : indirect) h = hash_mix(h, size_t(v + 1));
  return hash_mix(h, hash_double(value));
}

size_t Body::hash() const {
  size_t h = 0;
  for (const Instr &i : instrs) h = hash_mix(h, i.hash());
  for (int r : results) h = hash_mix(h, size_t(r));
  return h;
}

int BodyBuilder::add(Instr instr) {
  for (int a : instr.args)
    COIL_ASSERT(a < int(body_.instrs.size()), "operand %", a, " is not defined yet");
  for (int a : instr.indirect)
    COIL_ASSERT(a >= 0 && a < int(body_.instrs.size()), "indirect operand %", a, " is not defined yet");
  size_t h = instr.hash();
  auto &same = by_hash_[h];
  for (int v : same)
    if (body_.instrs[size_t(v)] == instr) return v;
  body_.instrs.push_back(std::move(instr));
  int v = int(body_.instrs.size() - 1);
  same.push_back(v);
  return v;
}

int BodyBuilder::load(BufferId buffer, const Expr &index, DType dtype) {
  Instr i;
  i.op = Op::Load;
  i.dtype = dtype;
  i.buffer = buffer;
  i.index = index;
  return add(std::move(i));
}

int BodyBuilder::masked_load(BufferId buffer, const Expr &index, DType dtype, int mask, double fill) {
  COIL_ASSERT(this->dtype(mask) == DType::Bool, "a load mask must be bool");
  Instr i;
  i.op = Op::Load;
  i.dtype = dtype;
  i.buffer = buffer;
  i.index = index;
  i.args[0] = mask;
  i.value = fill;
  return add(std::move(i));
}

int BodyBuilder::indirect_load(BufferId buffer, const Expr &index, DType dtype, std::vector<int> indirect) {
  for (int v : indirect) COIL_ASSERT(is_integral(this->dtype(v)), "an indirect index must be an integer value");
  Instr i;
  i.op = Op::Load;
  i.dtype = dtype;
  i.buffer = buffer;
  i.index = index;
  i.indirect = std::move(indirect);
  return add(std::move(i));
}

int BodyBuilder::constant(double value, DType dtype) {
  Instr i;
  i.op = Op::Constant;
  i.dtype = dtype;
  i.value = value;
  return add(std::move(i));
}

int BodyBuilder::index(const Expr &e, DType dtype) {
  if (auto c = e.as_constant()) return constant(double(*c), dtype);
  Instr i;
  i.op = Op::Index;
  i.dtype = dtype;
  i.index = e;
  return add(std::move(i));
}

int BodyBuilder::cast(int v, DType dtype) {
  if (this->dtype(v) == dtype) return v;
  // cast(const c) -> const c', rounded as the cast would round it.
  const Instr &arg = body_.at(v);
  if (arg.op == Op::Constant && std::isfinite(arg.value))
    return constant(::coil::ir::cast(Scalar::of(arg.value, arg.dtype), arg.dtype, dtype).as_double(dtype), dtype);
  return unary(Op::Cast, v, dtype);
}

int BodyBuilder::unary(Op op, int v, DType dtype) {
  COIL_ASSERT(op_arity(op) == 1, op_name(op), " is not unary");
  Instr i;
  i.op = op;
  i.dtype = dtype;
  i.args[0] = v;
  return add(std::move(i));
}

// An int64 index value or constant as an index expression, when its numbers are small
// enough that a sum or a product with another never overflows.
static std::optional<Expr> small_index(const Instr &x) {
  constexpr int64_t kSmall = int64_t(1) << 30;
  if (x.dtype != DType::I64) return std::nullopt;
  if (x.op == Op::Constant && x.value == std::floor(x.value) && std::fabs(x.value) < double(kSmall))
    return Expr(int64_t(x.value));
  if (x.op != Op::Index || std::llabs(x.index.constant()) >= kSmall) return std::nullopt;
  for (const Term &t : x.index.terms())
    if (std::llabs(t.coeff) >= kSmall || t.factors.size() != 1 || t.factors[0].kind() != AtomKind::Var) return std::nullopt;
  return x.index;
}

int BodyBuilder::binary(Op op, int a, int b, DType dtype) {
  COIL_ASSERT(op_arity(op) == 2, op_name(op), " is not binary");
  // Integer arithmetic of index values stays one index expression (arange's start + i *
  // step, a causal mask's column - row), which the code generators see as affine.
  if (dtype == DType::I64 && (op == Op::Add || op == Op::Sub || op == Op::Mul)) {
    auto x = small_index(body_.at(a)), y = small_index(body_.at(b));
    if (x && y && !(x->as_constant() && y->as_constant()) && (op != Op::Mul || x->as_constant() || y->as_constant()))
      return index(op == Op::Add ? *x + *y : op == Op::Sub ? *x - *y : *x * *y, DType::I64);
  }
  Instr i;
  i.op = op;
  i.dtype = dtype;
  i.args = {a, b, -1};
  return add(std::move(i));
}

int BodyBuilder::where(int cond, int a, int b, DType dtype) {
  COIL_ASSERT(this->dtype(cond) == DType::Bool, "where's condition must be bool");
  Instr i;
  i.op = Op::Where;
  i.dtype = dtype;
  i.args = {cond, a, b};
  return add(std::move(i));
}

std::string str(const Body &body, const std::function<std::string(BufferId)> &buffer_name,
                const std::function<std::string(VarId)> &var_name) {
  std::ostringstream os;
  for (size_t v = 0; v < body.instrs.size(); ++v) {
    const Instr &i = body.instrs[v];
    std::string rhs(op_name(i.op));
    switch (i.op) {
      case Op::Load:
        rhs += " " + buffer_name(i.buffer) + "[" + str(i.index, var_name) + "]";
        if (i.args[0] >= 0) rhs += " if %" + std::to_string(i.args[0]) + " else " + python_float_repr(i.value);
        for (size_t k = 0; k < i.indirect.size(); ++k)
          rhs += (k ? ", " : " with ") + var_name(indirect_var(int(k))) + " = %" + std::to_string(i.indirect[k]);
        break;
      case Op::Constant: rhs += " " + python_float_repr(i.value); break;
      case Op::Index: rhs += " " + str(i.index, var_name); break;
      default:
        for (int k = 0; k < op_arity(i.op); ++k) rhs += (k ? ", %" : " %") + std::to_string(i.args[size_t(k)]);
    }
    os << "    %" << v << " = " << rhs << "  " << short_name(i.dtype) << "\n";
  }
  os << "    ->";
  for (int r : body.results) os << " %" << r;
  os << "\n";
  return os.str();
}

Body prune_dead_values(const Body &body) {
  std::vector<bool> live(body.instrs.size(), false);
  for (int r : body.results) live[size_t(r)] = true;
  for (size_t v = body.instrs.size(); v-- > 0;) {
    if (!live[v]) continue;
    const Instr &i = body.instrs[v];
    for (int a : i.args)
      if (a >= 0) live[size_t(a)] = true;
    for (int a : i.indirect) live[size_t(a)] = true;
  }
  Body out;
  std::vector<int> map(body.instrs.size(), -1);
  for (size_t v = 0; v < body.instrs.size(); ++v) {
    if (!live[v]) continue;
    Instr i = body.instrs[v];
    for (int &a : i.args)
      if (a >= 0) a = map[size_t(a)];
    for (int &a : i.indirect) a = map[size_t(a)];
    map[v] = int(out.instrs.size());
    out.instrs.push_back(std::move(i));
  }
  for (int r : body.results) out.results.push_back(map[size_t(r)]);
  return out;
}

std::vector<int> copy_body(const Body &body, BodyBuilder &out, const std::function<Expr(const Expr &)> &reindex,
                           const InlineLoadFn &inline_load, const DivisorFn &guard_divisor) {
  std::vector<int> map(body.instrs.size(), -1);
  for (size_t v = 0; v < body.instrs.size(); ++v) {
    Instr i = body.instrs[v];
    for (int &a : i.args)
      if (a >= 0) a = map[size_t(a)];
    for (int &a : i.indirect) a = map[size_t(a)];
    if (i.op == Op::Load || i.op == Op::Index) i.index = reindex(i.index);
    if (i.op == Op::Load && inline_load) {
      if (auto inlined = inline_load(int(v), i)) {
        map[v] = *inlined;
        continue;
      }
    }
    switch (i.op) {
      case Op::Load:
        if (!i.indirect.empty()) {
          map[v] = out.indirect_load(i.buffer, i.index, i.dtype, i.indirect);
        } else {
          map[v] = i.args[0] >= 0 ? out.masked_load(i.buffer, i.index, i.dtype, i.args[0], i.value)
                                  : out.load(i.buffer, i.index, i.dtype);
        }
        break;
      case Op::Constant: map[v] = out.constant(i.value, i.dtype); break;
      case Op::Index: map[v] = out.index(i.index, i.dtype); break;
      case Op::Where: map[v] = out.where(i.args[0], i.args[1], i.args[2], i.dtype); break;
      default: {
        bool integer_division = (i.op == Op::FloorDiv || i.op == Op::TruncDiv || i.op == Op::Remainder ||
                                 i.op == Op::Fmod) &&
                                is_integral(out.dtype(i.args[1]), true);
        if (integer_division && guard_divisor) i.args[1] = guard_divisor(i.args[1]);
        map[v] = op_arity(i.op) == 1 ? out.unary(i.op, i.args[0], i.dtype)
                                     : out.binary(i.op, i.args[0], i.args[1], i.dtype);
      }
    }
  }
  return map;
}

}  // namespace coil::ir
