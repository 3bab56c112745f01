#include "codegen/cpp/cpp_ops.h"

#include <cmath>
#include <climits>
#include <cstdio>

#include "codegen/common/access.h"
#include "support/error.h"

namespace coil::codegen {

using ir::Op;

std::string value_type(DType t) {
  switch (t) {
    case DType::F64: return "double";
    case DType::F32:
    case DType::F16:
    case DType::BF16: return "float";
    case DType::I64: return "int64_t";
    case DType::I32: return "int32_t";
    case DType::I16: return "int16_t";
    case DType::I8: return "int8_t";
    case DType::U8: return "uint8_t";
    case DType::Bool: return "bool";
  }
  return "?";
}

std::string vector_type(DType t, int lanes) {
  return lanes ? "Vec<" + value_type(t) + ", " + std::to_string(lanes) + ">" : value_type(t);
}

std::string storage_type(DType t) {
  if (t == DType::F16 || t == DType::BF16) return "uint16_t";
  return value_type(t);
}

std::string literal(double v, DType t) {
  char buf[64];
  if (is_floating(t)) {
    std::string type = value_type(t);
    if (std::isnan(v)) return "std::numeric_limits<" + type + ">::quiet_NaN()";
    if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + "std::numeric_limits<" + type + ">::infinity()";
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return type == "float" ? s + "f" : s;
  }
  if (t == DType::Bool) return v != 0 ? "true" : "false";
  // As the reference converts: NaN is 0, out of range saturates to int64, then wraps to t.
  long long i = std::isnan(v) ? 0 : v >= 9.2233720368547758e18 ? LLONG_MAX : v <= -9.2233720368547758e18 ? LLONG_MIN : (long long)v;
  if (i == LLONG_MIN) return value_type(t) + "(std::numeric_limits<int64_t>::min())";
  std::snprintf(buf, sizeof buf, "%lld", i);
  if (t == DType::I64) return std::string("int64_t(") + buf + "LL)";
  return value_type(t) + "(" + buf + "LL)";
}

namespace {

std::string atom(const ir::Atom &a, const std::function<std::string(ir::VarId)> &name, const ir::Ranges &r) {
  auto nonneg = [&](const ir::Expr &e) { return ir::bounds(e, r).lo >= 0; };
  switch (a.kind()) {
    case ir::AtomKind::Var: return name(a.var());
    case ir::AtomKind::Symbol: return a.symbol();
    case ir::AtomKind::FloorDiv:
      if (nonneg(a.arg())) return "(" + cpp_index(a.arg(), name, r) + ") / " + std::to_string(a.divisor());
      return "coil_rt::floordiv_idx(" + cpp_index(a.arg(), name, r) + ", " + std::to_string(a.divisor()) + ")";
    case ir::AtomKind::Mod:
      if (nonneg(a.arg())) return "(" + cpp_index(a.arg(), name, r) + ") % " + std::to_string(a.divisor());
      return "coil_rt::mod_idx(" + cpp_index(a.arg(), name, r) + ", " + std::to_string(a.divisor()) + ")";
    case ir::AtomKind::Min:
      return "std::min<int64_t>(" + cpp_index(a.arg(), name, r) + ", " + cpp_index(a.other(), name, r) + ")";
    case ir::AtomKind::Max:
      return "std::max<int64_t>(" + cpp_index(a.arg(), name, r) + ", " + cpp_index(a.other(), name, r) + ")";
    case ir::AtomKind::SizeDiv:
      if (nonneg(a.arg())) return "(" + cpp_index(a.arg(), name, r) + ") / (" + cpp_index(a.other(), name, r) + ")";
      return "coil_rt::floordiv_idx(" + cpp_index(a.arg(), name, r) + ", " + cpp_index(a.other(), name, r) + ")";
    case ir::AtomKind::SizeMod:
      if (nonneg(a.arg())) return "(" + cpp_index(a.arg(), name, r) + ") % (" + cpp_index(a.other(), name, r) + ")";
      return "coil_rt::mod_idx(" + cpp_index(a.arg(), name, r) + ", " + cpp_index(a.other(), name, r) + ")";
  }
  return "?";
}

bool low_precision(DType t) { return t == DType::BF16 || t == DType::F16; }

// Scalar code names some functions in std::; vectors have theirs in coil_rt (vec.h).
std::string fn(const char *name, int lanes) { return (lanes ? "coil_rt::" : "std::") + std::string(name); }

// The value rounded to what dtype `t` holds, when `t` is bf16 or f16.
std::string rounded(const std::string &v, DType t) {
  if (t == DType::BF16) return "coil_rt::round_bf16(" + v + ")";
  if (t == DType::F16) return "coil_rt::round_f16(" + v + ")";
  return v;
}

std::string truthy(const std::string &v, DType t, int lanes) {
  if (t == DType::Bool) return v;
  return "(" + v + " != " + (lanes ? vector_type(t, lanes) + "(0)" : "0") + ")";
}

std::string float_unary(Op op, const std::string &x, int lanes) {
  switch (op) {
    case Op::Neg: return "-" + x;
    case Op::Abs: return (lanes ? "coil_rt::abs(" : "std::fabs(") + x + ")";
    case Op::Exp: return "coil_rt::exp(" + x + ")";
    case Op::Exp2: return "coil_rt::exp2(" + x + ")";
    case Op::Expm1: return "coil_rt::expm1(" + x + ")";
    case Op::Log: return "coil_rt::log(" + x + ")";
    case Op::Log1p: return "coil_rt::log1p(" + x + ")";
    case Op::Log2: return "coil_rt::log2(" + x + ")";
    case Op::Sqrt: return fn("sqrt", lanes) + "(" + x + ")";
    case Op::Rsqrt: return "1 / " + fn("sqrt", lanes) + "(" + x + ")";
    case Op::Reciprocal: return "1 / " + x;
    case Op::Sin: return "coil_rt::sin(" + x + ")";
    case Op::Cos: return "coil_rt::cos(" + x + ")";
    case Op::Tan: return "coil_rt::tan(" + x + ")";
    case Op::Tanh: return "coil_rt::tanh(" + x + ")";
    case Op::Sigmoid: return "coil_rt::sigmoid(" + x + ")";
    case Op::Erf: return "coil_rt::erf(" + x + ")";
    case Op::Floor: return fn("floor", lanes) + "(" + x + ")";
    case Op::Ceil: return fn("ceil", lanes) + "(" + x + ")";
    case Op::Round: return fn("nearbyint", lanes) + "(" + x + ")";
    case Op::Trunc: return fn("trunc", lanes) + "(" + x + ")";
    case Op::Sign: return "coil_rt::sign_f(" + x + ")";
    case Op::Acos: return "coil_rt::acos(" + x + ")";
    case Op::Asin: return "coil_rt::asin(" + x + ")";
    case Op::Atan: return "coil_rt::atan(" + x + ")";
    case Op::Acosh: return "coil_rt::acosh(" + x + ")";
    case Op::Asinh: return "coil_rt::asinh(" + x + ")";
    case Op::Atanh: return "coil_rt::atanh(" + x + ")";
    case Op::Cosh: return "coil_rt::cosh(" + x + ")";
    case Op::Sinh: return "coil_rt::sinh(" + x + ")";
    case Op::Log10: return "coil_rt::log10(" + x + ")";
    default: break;
  }
  COIL_ASSERT(false, ir::op_name(op), " is not a floating unary op");
}

std::string int_unary(Op op, const std::string &x, DType t, int lanes) {
  std::string T = value_type(t);
  switch (op) {
    case Op::Neg: return "coil_rt::neg_w<" + T + ">(" + x + ")";
    case Op::Abs: return "coil_rt::abs_w<" + T + ">(" + x + ")";
    case Op::Floor:
    case Op::Ceil:
    case Op::Round:
    case Op::Trunc: return x;
    case Op::Sign: return "coil_rt::sign_i<" + T + ">(" + x + ")";
    case Op::BitwiseNot: return lanes ? "~" + x : T + "(~" + x + ")";
    default: break;
  }
  COIL_ASSERT(false, ir::op_name(op), " is not an integer unary op");
}

std::string float_binary(Op op, const std::string &a, const std::string &b, int lanes) {
  switch (op) {
    case Op::Add: return a + " + " + b;
    case Op::Sub: return a + " - " + b;
    case Op::Mul: return a + " * " + b;
    case Op::TrueDiv: return a + " / " + b;
    case Op::FloorDiv: return "coil_rt::floor_div_f(" + a + ", " + b + ")";
    case Op::TruncDiv: return fn("trunc", lanes) + "(" + a + " / " + b + ")";
    case Op::Remainder: return "coil_rt::remainder_f(" + a + ", " + b + ")";
    case Op::Fmod: return fn("fmod", lanes) + "(" + a + ", " + b + ")";
    case Op::Pow: return "coil_rt::pow(" + a + ", " + b + ")";
    case Op::Maximum: return "coil_rt::max_nan(" + a + ", " + b + ")";
    case Op::Minimum: return "coil_rt::min_nan(" + a + ", " + b + ")";
    case Op::Atan2: return "coil_rt::atan2(" + a + ", " + b + ")";
    case Op::Copysign: return fn("copysign", lanes) + "(" + a + ", " + b + ")";
    case Op::Fmax: return "coil_rt::fmax_f(" + a + ", " + b + ")";
    case Op::Fmin: return "coil_rt::fmin_f(" + a + ", " + b + ")";
    case Op::Hypot: return "coil_rt::hypot(" + a + ", " + b + ")";
    case Op::Ldexp: return "coil_rt::ldexp(" + a + ", " + b + ")";
    case Op::Igamma: return "coil_rt::igamma(" + a + ", " + b + ")";
    case Op::Igammac: return "coil_rt::igammac(" + a + ", " + b + ")";
    case Op::Zeta: return "coil_rt::zeta(" + a + ", " + b + ")";
    default: break;
  }
  if (ir::is_polynomial(op))
    return "coil_rt::polynomial(coil_rt::Polynomial(" + std::to_string(ir::polynomial_family(op)) + "), " + a + ", " + b + ")";
  COIL_ASSERT(false, ir::op_name(op), " is not a floating binary op");
}

std::string int_binary(Op op, const std::string &a, const std::string &b, DType t, int lanes) {
  std::string T = value_type(t), args = "(" + a + ", " + b + ")", err_args = "(" + a + ", " + b + ", err)";
  switch (op) {
    case Op::Add: return "coil_rt::add_w<" + T + ">" + args;
    case Op::Sub: return "coil_rt::sub_w<" + T + ">" + args;
    case Op::Mul: return "coil_rt::mul_w<" + T + ">" + args;
    case Op::FloorDiv: return "coil_rt::floor_div_i<" + T + ">" + err_args;
    case Op::TruncDiv: return "coil_rt::trunc_div_i<" + T + ">" + err_args;
    case Op::Remainder: return "coil_rt::remainder_i<" + T + ">" + err_args;
    case Op::Fmod: return "coil_rt::fmod_i<" + T + ">" + err_args;
    case Op::Pow: return "coil_rt::pow_i<" + T + ">" + err_args;
    case Op::Maximum:
    case Op::Fmax: return lanes ? "coil_rt::maximum" + args : "std::max<" + T + ">" + args;
    case Op::Minimum:
    case Op::Fmin: return lanes ? "coil_rt::minimum" + args : "std::min<" + T + ">" + args;
    case Op::BitwiseAnd: return lanes ? "(" + a + " & " + b + ")" : T + "(" + a + " & " + b + ")";
    case Op::BitwiseOr: return lanes ? "(" + a + " | " + b + ")" : T + "(" + a + " | " + b + ")";
    case Op::BitwiseXor: return lanes ? "(" + a + " ^ " + b + ")" : T + "(" + a + " ^ " + b + ")";
    default: break;
  }
  COIL_ASSERT(false, ir::op_name(op), " is not an integer binary op");
}

std::string comparison(Op op) {
  switch (op) {
    case Op::Eq: return " == ";
    case Op::Ne: return " != ";
    case Op::Lt: return " < ";
    case Op::Le: return " <= ";
    case Op::Gt: return " > ";
    case Op::Ge: return " >= ";
    default: return "";
  }
}

}  // namespace

std::string cpp_index(const ir::Expr &index, const std::function<std::string(ir::VarId)> &name,
                      const ir::Ranges &ranges) {
  return sum_of_terms(index, [&](const ir::Atom &a) { return atom(a, name, ranges); });
}

std::string cpp_size(const ir::Expr &e, const ir::Ranges &ranges) {
  std::string text = cpp_index(e, [](ir::VarId v) -> std::string {
    COIL_ASSERT(false, "a size names loop variable ", v.id);
    return "";
  }, ranges);
  bool name = text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
  return name ? text : "(" + text + ")";
}

std::string cpp_size(const SymInt &s) {
  if (!s.symbolic()) return std::to_string(s.hint());
  return cpp_size(s.expr(), s.guards() ? s.guards()->ranges() : ir::Ranges{});
}

std::string cpp_cast(const std::string &v, DType from, DType to, int lanes) {
  if (from == to) return v;
  bool ff = is_floating(from), ft = is_floating(to);
  // bf16 and f16 values are floats already rounded: widening them is no work.
  if (low_precision(from) && to == DType::F32) return v;
  if (lanes) {
    // Vectors convert lane by lane as the scalar forms below (vec.h: coil_rt::cast).
    std::string widened = value_type(from) == value_type(to) ? v : "coil_rt::cast<" + value_type(to) + ">(" + v + ")";
    return low_precision(to) ? rounded(widened, to) : widened;
  }
  if (ff && ft) {
    if (low_precision(to)) return rounded(from == DType::F64 ? "float(" + v + ")" : v, to);
    return value_type(to) + "(" + v + ")";
  }
  if (ft) return rounded(value_type(to) + "(" + v + ")", to);
  if (to == DType::Bool) return "(" + v + " != 0)";
  if (ff) return "coil_rt::to_int<" + value_type(to) + ">(" + v + ")";
  return value_type(to) + "(" + v + ")";
}

std::string vector_literal(double v, DType t, int lanes) {
  return lanes ? vector_type(t, lanes) + "(" + literal(v, t) + ")" : literal(v, t);
}

std::string from_storage(const std::string &element, DType t) {
  if (t == DType::BF16) return "coil_rt::bf16_to_f32(" + element + ")";
  if (t == DType::F16) return "coil_rt::f16_to_f32(" + element + ")";
  return element;
}

std::string to_storage(const std::string &v, DType t) {
  if (t == DType::BF16) return "coil_rt::f32_to_bf16(" + v + ")";
  if (t == DType::F16) return "coil_rt::f32_to_f16(" + v + ")";
  return v;
}

std::string cpp_op(Op op, DType in, DType out, const std::vector<std::string> &args, int lanes) {
  const std::string &a = args.at(0);
  bool fl = is_floating(in);
  std::string no = lanes ? vector_type(DType::Bool, lanes) + "(false)" : "false";
  switch (op) {
    case Op::Cast: return cpp_cast(a, in, out, lanes);
    case Op::Where:
      if (lanes) return "coil_rt::where(" + a + ", " + args.at(1) + ", " + args.at(2) + ")";
      return "(" + a + " ? " + args.at(1) + " : " + args.at(2) + ")";
    case Op::LogicalNot: return "!" + truthy(a, in, lanes);
    case Op::IsNan: return fl ? fn("isnan", lanes) + "(" + a + ")" : no;
    case Op::IsInf: return fl ? fn("isinf", lanes) + "(" + a + ")" : no;
    case Op::LogicalAnd: return truthy(a, in, lanes) + " && " + truthy(args.at(1), in, lanes);
    case Op::LogicalOr: return truthy(a, in, lanes) + " || " + truthy(args.at(1), in, lanes);
    case Op::LogicalXor: return truthy(a, in, lanes) + " != " + truthy(args.at(1), in, lanes);
    case Op::Rand: return "coil_rt::philox_uniform<" + value_type(out) + ">(" + a + ", " + args.at(1) + ")";
    case Op::Randn: return "coil_rt::philox_normal<" + value_type(out) + ">(" + a + ", " + args.at(1) + ")";
    case Op::RandBits: return "coil_rt::philox_bits(" + a + ", " + args.at(1) + ")";
    default: break;
  }
  if (op == Op::BitwiseNot && in == DType::Bool) return "!" + a;
  if (std::string c = comparison(op); !c.empty()) return a + c + args.at(1);
  if (in == DType::Bool && (op == Op::BitwiseAnd || op == Op::BitwiseOr || op == Op::BitwiseXor)) {
    std::string sym = op == Op::BitwiseAnd ? " & " : op == Op::BitwiseOr ? " | " : " ^ ";
    return lanes ? "(" + a + sym + args.at(1) + ")" : "bool(" + a + sym + args.at(1) + ")";
  }
  if (in == DType::Bool) {
    // Arithmetic on bools happens on integers and is stored back as != 0, as the
    // reference computes it.
    std::vector<std::string> wide;
    for (const auto &x : args) wide.push_back(lanes ? "coil_rt::cast<int64_t>(" + x + ")" : "int64_t(" + x + ")");
    return cpp_cast(cpp_op(op, DType::I64, DType::I64, wide, lanes), DType::I64, out, lanes);
  }
  if (ir::op_arity(op) == 1) return fl ? rounded(float_unary(op, a, lanes), out) : int_unary(op, a, out, lanes);
  if (fl) return rounded(float_binary(op, a, args.at(1), lanes), out);
  if (op == Op::TrueDiv) {
    if (lanes)
      return cpp_cast("coil_rt::cast<double>(" + a + ") / coil_rt::cast<double>(" + args.at(1) + ")", DType::F64, out, lanes);
    return cpp_cast("double(" + a + ") / double(" + args.at(1) + ")", DType::F64, out);
  }
  return int_binary(op, a, args.at(1), in, lanes);
}

}  // namespace coil::codegen
