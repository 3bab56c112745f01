#include "codegen/triton/triton_ops.h"

#include <climits>
#include <cmath>
#include <cstdio>
#include <map>

#include "codegen/common/access.h"
#include "coil/polynomials.h"
#include "support/error.h"

namespace coil::codegen {

using ir::Op;

std::string triton_type(DType t) {
  switch (t) {
    case DType::F64: return "tl.float64";
    case DType::F32:
    case DType::F16:
    case DType::BF16: return "tl.float32";
    case DType::I64: return "tl.int64";
    case DType::I32: return "tl.int32";
    case DType::I16: return "tl.int16";
    case DType::I8: return "tl.int8";
    case DType::U8: return "tl.uint8";
    case DType::Bool: return "tl.int1";
  }
  return "?";
}

std::string triton_storage_type(DType t) {
  if (t == DType::F16) return "tl.float16";
  if (t == DType::BF16) return "tl.bfloat16";
  return triton_type(t);
}

std::string as_storage(const std::string &v, DType t) {
  return t == DType::F16 || t == DType::BF16 ? "(" + v + ").to(" + triton_storage_type(t) + ")" : v;
}

std::string triton_pointer_type(DType t) {
  switch (t) {
    case DType::F64: return "*fp64";
    case DType::F32: return "*fp32";
    case DType::F16: return "*fp16";
    case DType::BF16: return "*bf16";
    case DType::I64: return "*i64";
    case DType::I32: return "*i32";
    case DType::I16: return "*i16";
    case DType::I8: return "*i8";
    case DType::U8: return "*u8";
    case DType::Bool: return "*i1";
  }
  return "?";
}

namespace {

// Whether Triton types the Python float `v` as f32 by itself: zero, inf, nan and the
// normal f32 range. Subnormals and values past f32's range would become f64.
bool python_float_is_f32(double v) {
  double a = std::fabs(v);
  return a == 0 || std::isinf(v) || std::isnan(v) || (a >= 0x1p-126 && a <= 0x1.fffffep127);
}

}  // namespace

std::string triton_literal(double v, DType t) {
  char buf[64];
  if (is_floating(t)) {
    // Triton makes any constant equal to 0 a +0.0: -0.0 is the bit pattern of its sign.
    if (v == 0 && std::signbit(v))
      return t == DType::F64 ? "tl.full([], -9223372036854775808, tl.int64).to(tl.float64, bitcast=True)"
                             : "tl.full([], -2147483648, tl.int32).to(tl.float32, bitcast=True)";
    std::string s;
    if (std::isnan(v)) s = "float('nan')";
    else if (std::isinf(v)) s = v < 0 ? "float('-inf')" : "float('inf')";
    else {
      std::snprintf(buf, sizeof buf, "%.17g", v);  // 17 digits: the double exactly
      s = buf;
      if (s.find_first_of(".en") == std::string::npos) s += ".0";
    }
    // A Python float meets f32 tensors as f32 where Triton types it f32; other values
    // and every f64 value are typed explicitly.
    if (t == DType::F64) return "tl.full([], " + s + ", tl.float64)";
    return python_float_is_f32(v) ? s : "tl.full([], " + s + ", tl.float32)";
  }
  if (t == DType::Bool) return std::string("tl.full([], ") + (v != 0 ? "1" : "0") + ", tl.int1)";
  // As the reference converts: NaN is 0, out of range saturates to int64, then wraps to t.
  long long i = std::isnan(v)                 ? 0
                : v >= 9.2233720368547758e18  ? LLONG_MAX
                : v <= -9.2233720368547758e18 ? LLONG_MIN
                                              : (long long)v;
  std::snprintf(buf, sizeof buf, "%lld", i);
  if (t == DType::I32 && i >= INT_MIN && i <= INT_MAX) return buf;  // a Python int is an i32
  return std::string("tl.full([], ") + buf + ", " + triton_type(t) + ")";
}

namespace {

std::string atom(const ir::Atom &a, const std::function<std::string(ir::VarId)> &name, const ir::Ranges &r,
                 std::set<std::string> &helpers) {
  auto nonneg = [&](const ir::Expr &e) { return ir::bounds(e, r).lo >= 0; };
  auto sub = [&](const ir::Expr &e) { return triton_index(e, name, r, helpers); };
  switch (a.kind()) {
    case ir::AtomKind::Var: return name(a.var());
    case ir::AtomKind::Symbol: return a.symbol();
    case ir::AtomKind::FloorDiv:
      // Triton's integer // truncates: the same as Python's when the dividend is >= 0.
      if (nonneg(a.arg())) return "((" + sub(a.arg()) + ") // " + std::to_string(a.divisor()) + ")";
      helpers.insert("floordiv_int");
      return "_floordiv_int(" + sub(a.arg()) + ", " + std::to_string(a.divisor()) + ")";
    case ir::AtomKind::Mod:
      if (nonneg(a.arg())) return "((" + sub(a.arg()) + ") % " + std::to_string(a.divisor()) + ")";
      helpers.insert("remainder_int");
      return "_remainder_int(" + sub(a.arg()) + ", " + std::to_string(a.divisor()) + ")";
    case ir::AtomKind::Min: return "tl.minimum(" + sub(a.arg()) + ", " + sub(a.other()) + ")";
    case ir::AtomKind::Max: return "tl.maximum(" + sub(a.arg()) + ", " + sub(a.other()) + ")";
    case ir::AtomKind::SizeDiv:
      if (nonneg(a.arg())) return "((" + sub(a.arg()) + ") // (" + sub(a.other()) + "))";
      helpers.insert("floordiv_int");
      return "_floordiv_int(" + sub(a.arg()) + ", " + sub(a.other()) + ")";
    case ir::AtomKind::SizeMod:
      if (nonneg(a.arg())) return "((" + sub(a.arg()) + ") % (" + sub(a.other()) + "))";
      helpers.insert("remainder_int");
      return "_remainder_int(" + sub(a.arg()) + ", " + sub(a.other()) + ")";
  }
  return "?";
}

bool low_precision(DType t) { return t == DType::BF16 || t == DType::F16; }

// The value rounded to what dtype `t` holds, when `t` is bf16 or f16.
std::string rounded(const std::string &v, DType t) {
  if (t == DType::BF16) return "(" + v + ").to(tl.bfloat16).to(tl.float32)";
  if (t == DType::F16) return "(" + v + ").to(tl.float16).to(tl.float32)";
  return v;
}

std::string truthy(const std::string &v, DType t) { return t == DType::Bool ? v : "(" + v + " != 0)"; }

std::string libdevice(const char *fn, const std::string &x) { return std::string("libdevice.") + fn + "(" + x + ")"; }

// The square root rounded to nearest: tl.sqrt_rn takes f32 only; f64's tl.sqrt is exact.
std::string sqrt_rn(const std::string &x, DType t) { return (t == DType::F64 ? "tl.sqrt(" : "tl.sqrt_rn(") + x + ")"; }

// a / b rounded to nearest: Triton's / on f32 is approximate, tl.div_rn takes f32 only.
std::string div_rn(const std::string &a, const std::string &b, DType t) {
  return t == DType::F64 ? "(" + a + " / (" + b + "))" : "tl.div_rn(" + a + ", " + b + ")";
}

std::string float_unary(Op op, const std::string &x, DType t, std::set<std::string> &helpers) {
  switch (op) {
    // Triton's unary minus is 0 - x, which gives +0.0 for +0.0: a product by -1 flips the sign
    // of zeros too, exactly, as eager's negation does.
    case Op::Neg: return "(" + x + " * -1.0)";
    case Op::Abs: return "tl.abs(" + x + ")";
    case Op::Exp: return "tl.exp(" + x + ")";
    case Op::Exp2: return "tl.exp2(" + x + ")";
    case Op::Expm1: return libdevice("expm1", x);
    case Op::Log: return "tl.log(" + x + ")";
    case Op::Log1p: return libdevice("log1p", x);
    case Op::Log2: return "tl.log2(" + x + ")";
    case Op::Sqrt: return sqrt_rn(x, t);
    case Op::Rsqrt: return div_rn(triton_literal(1, t), sqrt_rn(x, t), t);
    case Op::Reciprocal: return div_rn(triton_literal(1, t), x, t);
    case Op::Sin: return "tl.sin(" + x + ")";
    case Op::Cos: return "tl.cos(" + x + ")";
    case Op::Tan: return libdevice("tan", x);
    case Op::Tanh: return libdevice("tanh", x);
    case Op::Sigmoid: return div_rn(triton_literal(1, t), triton_literal(1, t) + " + tl.exp(-" + x + ")", t);
    case Op::Erf: return "tl.erf(" + x + ")";
    case Op::Floor: return "tl.floor(" + x + ")";
    case Op::Ceil: return "tl.ceil(" + x + ")";
    case Op::Round: return libdevice("nearbyint", x);
    case Op::Trunc: return libdevice("trunc", x);
    case Op::Sign:
      helpers.insert("sign_float");
      return "_sign_float(" + x + ")";
    case Op::Acos: return libdevice("acos", x);
    case Op::Asin: return libdevice("asin", x);
    case Op::Atan: return libdevice("atan", x);
    case Op::Acosh: return libdevice("acosh", x);
    case Op::Asinh: return libdevice("asinh", x);
    case Op::Atanh: return libdevice("atanh", x);
    case Op::Cosh: return libdevice("cosh", x);
    case Op::Sinh: return libdevice("sinh", x);
    case Op::Log10: return libdevice("log10", x);
    default: break;
  }
  COIL_ASSERT(false, ir::op_name(op), " is not a floating unary op");
}

std::string int_unary(Op op, const std::string &x, DType t) {
  switch (op) {
    case Op::Neg: return "-" + x;
    case Op::Abs: return "tl.where(" + x + " < 0, -" + x + ", " + x + ")";
    case Op::Floor:
    case Op::Ceil:
    case Op::Round:
    case Op::Trunc: return x;
    case Op::Sign:
      return "((" + x + " > 0).to(" + triton_type(t) + ") - (" + x + " < 0).to(" + triton_type(t) + "))";
    case Op::BitwiseNot: return t == DType::U8 ? "(" + x + " ^ 255)" : "~" + x;
    default: break;
  }
  COIL_ASSERT(false, ir::op_name(op), " is not an integer unary op");
}

std::string float_binary(Op op, const std::string &a, const std::string &b, DType t, std::set<std::string> &helpers) {
  switch (op) {
    case Op::Add: return a + " + " + b;
    case Op::Sub: return a + " - " + b;
    case Op::Mul: return a + " * " + b;
    case Op::TrueDiv: return div_rn(a, b, t);
    case Op::FloorDiv:
      if (t == DType::F64) {
        helpers.insert("floordiv_double");
        return "_floordiv_double(" + a + ", " + b + ")";
      }
      helpers.insert("floordiv_float");
      return "_floordiv_float(" + a + ", " + b + ")";
    case Op::TruncDiv: return libdevice("trunc", div_rn(a, b, t));
    case Op::Remainder: helpers.insert("remainder_float"); return "_remainder_float(" + a + ", " + b + ")";
    // C's fmod, exact. Not Triton's float %: on the GPU that is a - trunc(a / b) * b, off by
    // up to b for large quotients, and a (not NaN) for an infinite a over an infinite b.
    case Op::Fmod: return "libdevice.fmod(" + a + ", " + b + ")";
    case Op::Pow: return "libdevice.pow(" + a + ", " + b + ")";
    case Op::Maximum: return "tl.maximum(" + a + ", " + b + ", propagate_nan=tl.PropagateNan.ALL)";
    case Op::Minimum: return "tl.minimum(" + a + ", " + b + ", propagate_nan=tl.PropagateNan.ALL)";
    case Op::Atan2: return "libdevice.atan2(" + a + ", " + b + ")";
    case Op::Copysign: return "libdevice.copysign(" + a + ", " + b + ")";
    case Op::Fmax: helpers.insert("fmax_float"); return "_fmax_float(" + a + ", " + b + ")";
    case Op::Fmin: helpers.insert("fmin_float"); return "_fmin_float(" + a + ", " + b + ")";
    case Op::Hypot: return "libdevice.hypot(" + a + ", " + b + ")";
    case Op::Ldexp: helpers.insert("ldexp"); return "_ldexp(" + a + ", " + b + ")";
    case Op::Igamma: helpers.insert("gamma_inc"); return "_gamma_inc(" + a + ", " + b + ", False)";
    case Op::Igammac: helpers.insert("gamma_inc"); return "_gamma_inc(" + a + ", " + b + ", True)";
    case Op::Zeta: helpers.insert("zeta"); return "_zeta(" + a + ", " + b + ")";
    default: break;
  }
  if (ir::is_polynomial(op)) {
    // coil/polynomials.h's recurrence, its row of coefficients spelled at the call.
    helpers.insert("polynomial");
    const coil_rt::Recurrence &r = coil_rt::kRecurrences[ir::polynomial_family(op)];
    std::string call = "_polynomial(" + a + ", " + b;
    for (double c : {r.p1, r.p0, r.a1, r.a0, r.b1, r.b0, r.c1, r.c0, r.d1, r.d0}) call += ", " + triton_literal(c, t);
    return call + ")";
  }
  COIL_ASSERT(false, ir::op_name(op), " is not a floating binary op");
}

std::string int_binary(Op op, const std::string &a, const std::string &b, DType t, std::set<std::string> &helpers) {
  switch (op) {
    case Op::Add: return a + " + " + b;
    case Op::Sub: return a + " - " + b;
    case Op::Mul: return a + " * " + b;
    // Division by zero is undefined on the GPU (the C++ dialect reports it).
    case Op::FloorDiv: helpers.insert("floordiv_int"); return "_floordiv_int(" + a + ", " + b + ")";
    case Op::TruncDiv: return a + " // " + b;  // Triton's integer // truncates, as C's /
    case Op::Remainder: helpers.insert("remainder_int"); return "_remainder_int(" + a + ", " + b + ")";
    case Op::Fmod: return a + " % " + b;
    case Op::Pow: helpers.insert("pow_int"); return "_pow_int(" + a + ", " + b + ")";
    case Op::Maximum:
    case Op::Fmax: return "tl.maximum(" + a + ", " + b + ")";
    case Op::Minimum:
    case Op::Fmin: return "tl.minimum(" + a + ", " + b + ")";
    case Op::BitwiseAnd: return a + " & " + b;
    case Op::BitwiseOr: return a + " | " + b;
    case Op::BitwiseXor: return a + " ^ " + b;
    default: break;
  }
  (void)t;
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

std::string triton_index(const ir::Expr &index, const std::function<std::string(ir::VarId)> &name,
                         const ir::Ranges &ranges, std::set<std::string> &helpers) {
  return sum_of_terms(index, [&](const ir::Atom &a) { return atom(a, name, ranges, helpers); });
}

std::string triton_size(const SymInt &s) {
  if (!s.symbolic()) return std::to_string(s.hint());
  std::set<std::string> helpers;
  std::string text = triton_index(s.expr(), [](ir::VarId v) -> std::string {
    COIL_ASSERT(false, "a size names loop variable ", v.id);
    return "";
  }, s.guards()->ranges(), helpers);
  COIL_ASSERT(helpers.empty(), "size ", str(s), " needs helpers: it may be negative");
  bool name = text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
  return name ? text : "(" + text + ")";
}

bool blocks_may_overrun(const SymInt &n, int64_t block) {
  if (!n.symbolic()) return n.hint() % block != 0 || n.hint() == 0;
  return !(ir::mod(n.expr(), block) == ir::Expr(0)) || ir::bounds(n.expr(), n.guards()->ranges()).lo < 1;
}

SymInt triton_blocks(const SymInt &n, int64_t block) { return sym_floor_div(n + (block - 1), block); }

// A float (f32 or f64) to int32 or int64 as the GPU's conversion (cvt.rzi) gives it: toward
// zero, saturating; NaN to 0 from f32 to int32, else to the integer's minimum (as CUDA eager
// gives them on an H200: op_to_copy_special's expected_cuda.safetensors). Spelled with
// conversions of in-range values only: LLVM takes an out-of-range conversion as poison and folds it to anything where the
// value is a constant (x * nan, the log of a padded zero), so the value is clamped first.
static std::string saturating_to_int(const std::string &v, DType from, DType to) {
  bool i64 = to == DType::I64;
  // The largest value of `from` below 2^31 (2^63): what a value at or above 2^31 (2^63) clamps to
  // before the conversion, and then the integer's maximum replaces it.
  const char *below = i64 ? (from == DType::F64 ? "9223372036854774784.0" : "9223371487098961920.0")
                          : (from == DType::F64 ? "2147483647.0" : "2147483520.0");
  const char *limit = i64 ? "9223372036854775808.0" : "2147483648.0";
  const char *max = i64 ? "9223372036854775807" : "2147483647";
  std::string nan = !i64 && from != DType::F64 ? "0.0" : str_cat("-", limit);
  std::string clamped = "tl.minimum(tl.maximum(tl.where(" + v + " != " + v + ", " + nan + ", " + v + "), -" + limit +
                        "), " + below + ")";
  return "tl.where(" + v + " >= " + limit + ", " + max + ", " + clamped + ".to(" + triton_type(to) + "))";
}

std::string triton_cast(const std::string &v, DType from, DType to) {
  if (from == to) return v;
  // bf16 and f16 values are f32 already rounded: widening them is no work.
  if (low_precision(from) && to == DType::F32) return v;
  if (to == DType::Bool) return "(" + v + " != 0)";
  if (is_floating(to)) {
    if (low_precision(to)) return rounded(v, to);  // from f32, f64 or an integer
    return "(" + v + ").to(" + triton_type(to) + ")";
  }
  // Float to integer truncates toward zero as the GPU's conversion does (saturating_to_int),
  // as CUDA's eager kernels convert: int8 and int16 through int32 and then wrapping,
  // uint8 through int64 as c10's static_cast_with_inter_type does on every device (a
  // negative value wraps instead of saturating to 0). Checked against CUDA eager on an
  // H200 (scripts/cuda_eager_expected.py, op_to_copy_special). Integers wrap.
  if (is_floating(from)) {
    DType via = to == DType::I64 || to == DType::U8 ? DType::I64 : DType::I32;
    std::string converted = saturating_to_int(v, from, via);
    return to == via ? converted : "(" + converted + ").to(" + triton_type(to) + ")";
  }
  return "(" + v + ").to(" + triton_type(to) + ")";
}

std::string triton_op(Op op, DType in, DType out, const std::vector<std::string> &args, std::set<std::string> &helpers) {
  const std::string &a = args.at(0);
  bool fl = is_floating(in);
  switch (op) {
    case Op::Cast: return triton_cast(a, in, out);
    case Op::Where: return "tl.where(" + a + ", " + args.at(1) + ", " + args.at(2) + ")";
    case Op::LogicalNot: return "(" + a + " == 0)";
    case Op::IsNan: return "(" + a + " != " + a + ")";
    case Op::IsInf: return fl ? "(tl.abs(" + a + ") == float('inf'))" : "(" + a + " != " + a + ")";
    case Op::LogicalAnd: return "(" + truthy(a, in) + " & " + truthy(args.at(1), in) + ")";
    case Op::LogicalOr: return "(" + truthy(a, in) + " | " + truthy(args.at(1), in) + ")";
    case Op::LogicalXor: return "(" + truthy(a, in) + " != " + truthy(args.at(1), in) + ")";
    case Op::Rand:
    case Op::Randn:
    case Op::RandBits: {
      std::string name = op == Op::RandBits ? "randbits"
                         : str_cat(op == Op::Rand ? "rand" : "randn", out == DType::F64 ? "_f64" : "_f32");
      helpers.insert("philox");
      helpers.insert(name);
      return "_" + name + "(" + a + ", " + args.at(1) + ")";
    }
    default: break;
  }
  if (op == Op::BitwiseNot && in == DType::Bool) return "(" + a + " == 0)";
  if (std::string c = comparison(op); !c.empty()) return "(" + a + c + args.at(1) + ")";
  if (in == DType::Bool && (op == Op::BitwiseAnd || op == Op::BitwiseOr || op == Op::BitwiseXor)) {
    std::string sym = op == Op::BitwiseAnd ? " & " : op == Op::BitwiseOr ? " | " : " ^ ";
    return "(" + a + sym + args.at(1) + ")";
  }
  if (in == DType::Bool) {
    // Arithmetic on bools happens on integers and is stored back as != 0, as the
    // reference computes it.
    std::vector<std::string> wide;
    for (const auto &x : args) wide.push_back("(" + x + ").to(tl.int64)");
    return triton_cast(triton_op(op, DType::I64, DType::I64, wide, helpers), DType::I64, out);
  }
  if (ir::op_arity(op) == 1) return fl ? rounded(float_unary(op, a, in, helpers), out) : int_unary(op, a, out);
  if (fl) return rounded(float_binary(op, a, args.at(1), in, helpers), out);
  if (op == Op::TrueDiv)
    return triton_cast("((" + a + ").to(tl.float64) / (" + args.at(1) + ").to(tl.float64))", DType::F64, out);
  return int_binary(op, a, args.at(1), in, helpers);
}

namespace {

// PyTorch's floor_divide of floats: from fmod, so that a // b * b + a % b == a. The
// division is spelled div_open + x + div_sep + y + div_close.
std::string floordiv_helper(const std::string &name, const std::string &div_open, const std::string &div_sep,
                            const std::string &div_close) {
  auto div = [&](const std::string &x, const std::string &y) { return div_open + x + div_sep + y + div_close; };
  return "@triton.jit\n"
         "def " + name + "(a, b):\n"
         "    m = libdevice.fmod(a, b)\n"
         "    d = " + div("a - m", "b") + "\n"
         "    d = tl.where((m != 0) & ((b < 0) != (m < 0)), d - 1.0, d)\n"
         "    f = tl.floor(d)\n"
         "    f = tl.where(d - f > 0.5, f + 1.0, f)\n"
         "    zero = " + div("a", "b") + " * 0.0\n"  // a zero of the quotient's sign (a -0.0 literal is +0.0)
         "    f = tl.where(d == 0, zero, f)\n"
         "    return tl.where(b == 0, " + div("a", "b") + ", f)\n";
}

}  // namespace

std::string triton_helpers(const std::set<std::string> &helpers) {
  // Each helper computes what PyTorch computes, from ops every Triton target (and Triton's
  // interpreter) runs.
  static const std::map<std::string, std::string> kHelpers = {
      {"floordiv_int",
       "@triton.jit\n"
       "def _floordiv_int(a, b):\n"
       "    # Python's a // b from Triton's truncating one. The remainder comes from the\n"
       "    # quotient: with a // b and a % b both, sm_90 code gave wrong quotients (Triton 3.6)\n"
       "    q = a // b\n"
       "    r = a - q * b\n"
       "    return tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)\n"},
      {"remainder_int",
       "@triton.jit\n"
       "def _remainder_int(a, b):\n"
       "    # Python's a % b: the sign of b (the remainder from the quotient, as _floordiv_int)\n"
       "    r = a - (a // b) * b\n"
       "    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)\n"},
      {"remainder_float",
       "@triton.jit\n"
       "def _remainder_float(a, b):\n"
       "    r = libdevice.fmod(a, b)\n"
       "    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)\n"},
      {"floordiv_float", floordiv_helper("_floordiv_float", "tl.div_rn(", ", ", ")")},
      {"floordiv_double", floordiv_helper("_floordiv_double", "((", ") / (", "))")},
      {"fmax_float",
       "@triton.jit\n"
       "def _fmax_float(a, b):\n"
       "    # a NaN operand gives the other; equal operands (0 and -0) give the first\n"
       "    return tl.where(a != a, b, tl.where(b != b, a, tl.where(a < b, b, a)))\n"},
      {"fmin_float",
       "@triton.jit\n"
       "def _fmin_float(a, b):\n"
       "    return tl.where(a != a, b, tl.where(b != b, a, tl.where(b < a, b, a)))\n"},
      // coil/philox.h's generator, word for word: Philox4x32-10 of the counter (lo, hi, 0, 0)
      // under the key (seed's lo, hi), then the same maps to numbers.
      {"philox",
       "@triton.jit\n"
       "def _philox(seed, counter):\n"
       "    seed = seed.to(tl.int64)\n"
       "    counter = counter.to(tl.int64)\n"
       "    c0 = counter.to(tl.uint32)\n"
       "    c1 = (counter >> 32).to(tl.uint32)\n"
       "    c2 = c0 * 0\n"
       "    c3 = c0 * 0\n"
       "    k0 = seed.to(tl.uint32) + c2\n"
       "    k1 = (seed >> 32).to(tl.uint32) + c2\n"
       "    for _ in tl.static_range(10):\n"
       "        h0 = tl.umulhi(c0, 0xD2511F53)\n"
       "        l0 = c0 * 0xD2511F53\n"
       "        h1 = tl.umulhi(c2, 0xCD9E8D57)\n"
       "        l1 = c2 * 0xCD9E8D57\n"
       "        c0, c1, c2, c3 = h1 ^ c1 ^ k0, l1, h0 ^ c3 ^ k1, l0\n"
       "        k0 = k0 + 0x9E3779B9\n"
       "        k1 = k1 + 0xBB67AE85\n"
       "    return c0, c1, c2, c3\n"
       "\n\n"
       "@triton.jit\n"
       "def _unit_f32(w):\n"
       "    return (w >> 8).to(tl.float32) * 5.9604644775390625e-08\n"
       "\n\n"
       "@triton.jit\n"
       "def _unit_f64(hi, lo):\n"
       "    bits = (hi.to(tl.uint64) << 21) | (lo >> 11).to(tl.uint64)\n"
       "    return bits.to(tl.float64) * 1.1102230246251565e-16\n"},
      {"rand_f32",
       "@triton.jit\n"
       "def _rand_f32(seed, counter):\n"
       "    w0, w1, w2, w3 = _philox(seed, counter)\n"
       "    return _unit_f32(w0)\n"},
      {"rand_f64",
       "@triton.jit\n"
       "def _rand_f64(seed, counter):\n"
       "    w0, w1, w2, w3 = _philox(seed, counter)\n"
       "    return _unit_f64(w0, w1)\n"},
      {"randn_f32",
       "@triton.jit\n"
       "def _randn_f32(seed, counter):\n"
       "    w0, w1, w2, w3 = _philox(seed, counter)\n"
       "    u1 = 1.0 - _unit_f32(w0)\n"
       "    return tl.sqrt(-2.0 * tl.log(u1)) * tl.cos(6.2831855 * _unit_f32(w1))\n"},
      {"randn_f64",
       "@triton.jit\n"
       "def _randn_f64(seed, counter):\n"
       "    w0, w1, w2, w3 = _philox(seed, counter)\n"
       "    u1 = 1.0 - _unit_f64(w0, w1)\n"
       "    return tl.sqrt(-2.0 * tl.log(u1)) * tl.cos(6.283185307179586 * _unit_f64(w2, w3))\n"},
      {"randbits",
       "@triton.jit\n"
       "def _randbits(seed, counter):\n"
       "    w0, w1, w2, w3 = _philox(seed, counter)\n"
       "    return (((w0.to(tl.uint64) << 32) | w1.to(tl.uint64)) >> 1).to(tl.int64)\n"},
      // coil/polynomials.h's loop, to the block's largest degree (masked lanes load 0), each
      // lane keeping its own P_n once k reaches n. x or n may be a number or 0-d: both are
      // broadcast, and the largest degree is taken over at least one dim.
      {"polynomial",
       "@triton.jit\n"
       "def _polynomial(x, n, p1, p0, a1, a0, b1, b0, c1, c0, d1, d0):\n"
       "    x, n = tl.broadcast(x, n)\n"
       "    p = x * 0.0 + 1.0\n"
       "    q = p1 * x + p0\n"
       "    top = tl.max(tl.where(n == n, n, 0.0) + tl.zeros([1], n.dtype))\n"
       "    k = top * 0.0 + 1.0\n"
       "    while k < top:\n"
       "        r = (((a1 * k + a0) * x + (b1 * k + b0)) * q - (c1 * k + c0) * p) / (d1 * k + d0)\n"
       "        live = k < n\n"
       "        p = tl.where(live, q, p)\n"
       "        q = tl.where(live, r, q)\n"
       "        k += 1.0\n"
       "    return tl.where(n >= 1, q, 1.0)\n"},
      // coil/series.h's igamma, igammac and zeta, its loops run for every lane until the last
      // lane's series converges (the others keep their sums). In f64 throughout: every
      // constant is typed f64, since a Python float would be an f32 first. lgamma of a
      // positive argument: the argument raised past 10 by a product, then Stirling's series.
      {"gamma_inc",
       "@triton.jit\n"
       "def _lgamma_pos(a):\n"
       "    z = a\n"
       "    shift = a * 0.0 + 1.0\n"
       "    for _ in tl.static_range(10):\n"
       "        low = z < 10.0\n"
       "        shift = tl.where(low, shift * z, shift)\n"
       "        z = tl.where(low, z + 1.0, z)\n"
       "    r = 1.0 / (z * z)\n"
       "    series = (tl.full([], 0.08333333333333333, tl.float64) + r * (tl.full([], -0.002777777777777778, tl.float64) + r * (tl.full([], 0.0007936507936507937, tl.float64) + r * (tl.full([], -0.0005952380952380953, tl.float64) + r * (tl.full([], 0.0008417508417508417, tl.float64) + r * tl.full([], -0.0019175269175269176, tl.float64)))))) / z\n"
       "    return (z - 0.5) * tl.log(z) - z + tl.full([], 0.9189385332046728, tl.float64) + series - tl.log(shift)\n"
       "\n\n"
       "@triton.jit\n"
       "def _gamma_inc(a_in, x_in, upper: tl.constexpr):\n"
       "    a_in, x_in = tl.broadcast(a_in, x_in)\n"
       "    a = a_in.to(tl.float64)\n"
       "    x = x_in.to(tl.float64)\n"
       "    inf = float('inf')\n"
       "    bad = (a != a) | (x != x) | (a < 0) | (x < 0) | ((a == 0) & (x == 0)) | ((a == inf) & (x == inf))\n"
       "    special = bad | (a == 0) | (x == 0) | (a == inf) | (x == inf)\n"
       "    p_special = tl.where(a == 0, 1.0, tl.where((x == 0) | (a == inf), 0.0, 1.0)).to(tl.float64)\n"
       "    sa = tl.where(special, 1.0, a)\n"
       "    sx = tl.where(special, 1.0, x)\n"
       "    prefactor = tl.exp(sa * tl.log(sx) - sx - _lgamma_pos(sa))\n"
       "    series = sx < sa + 1.0\n"
       "    # P's series where x < a + 1\n"
       "    term = 1.0 / sa\n"
       "    total = term\n"
       "    k = tl.max(sa + tl.zeros([1], tl.float64)) * 0.0 + 1.0\n"
       "    live = series & (term == term)\n"
       "    while (tl.max(live.to(tl.int32) + tl.zeros([1], tl.int32)) > 0) & (k < tl.full([], 100000.0, tl.float64)):\n"
       "        term = tl.where(live, term * (sx / (sa + k)), term)\n"
       "        total = tl.where(live, total + term, total)\n"
       "        live = live & (tl.abs(term) >= tl.abs(total) * tl.full([], 1e-17, tl.float64))\n"
       "        k += 1.0\n"
       "    # Q's continued fraction elsewhere (modified Lentz)\n"
       "    b = sx + 1.0 - sa\n"
       "    c = b * 0.0 + 1.0 / tl.full([], 1e-300, tl.float64)\n"
       "    d = 1.0 / b\n"
       "    h = d\n"
       "    k = k * 0.0 + 1.0\n"
       "    live = (series == 0) & (b == b)\n"
       "    while (tl.max(live.to(tl.int32) + tl.zeros([1], tl.int32)) > 0) & (k < tl.full([], 100000.0, tl.float64)):\n"
       "        an = -k * (k - sa)\n"
       "        nb = b + 2.0\n"
       "        nd = an * d + nb\n"
       "        nd = tl.where(tl.abs(nd) < tl.full([], 1e-300, tl.float64), tl.full([], 1e-300, tl.float64), nd)\n"
       "        nc = nb + an / c\n"
       "        nc = tl.where(tl.abs(nc) < tl.full([], 1e-300, tl.float64), tl.full([], 1e-300, tl.float64), nc)\n"
       "        nd = 1.0 / nd\n"
       "        step = nd * nc\n"
       "        b = tl.where(live, nb, b)\n"
       "        c = tl.where(live, nc, c)\n"
       "        d = tl.where(live, nd, d)\n"
       "        h = tl.where(live, h * step, h)\n"
       "        live = live & (tl.abs(step - 1.0) > tl.full([], 4.5e-16, tl.float64))\n"
       "        k += 1.0\n"
       "    p = tl.where(series, total * prefactor, 1.0 - prefactor * h)\n"
       "    q = tl.where(series, 1.0 - total * prefactor, prefactor * h)\n"
       "    r = tl.where(special, p_special, p)\n"
       "    if upper:\n"
       "        r = tl.where(special, 1.0 - p_special, q)\n"
       "    return tl.where(bad, float('nan'), r).to(a_in.dtype)\n"},
      {"zeta",
       "@triton.jit\n"
       "def _zeta(s_in, q_in):\n"
       "    s_in, q_in = tl.broadcast(s_in, q_in)\n"
       "    s = s_in.to(tl.float64)\n"
       "    q = q_in.to(tl.float64)\n"
       "    nan = (s != s) | (q != q) | (s < 1.0) | ((q <= 0.0) & (q != tl.floor(q)) & (s != tl.floor(s)))\n"
       "    pole = (s == 1.0) | ((q <= 0.0) & (q == tl.floor(q)))\n"
       "    ss = tl.where(nan | pole, 2.0, s)\n"
       "    w = tl.where(nan | pole, 1.0, q)\n"
       "    total = w * 0.0\n"
       "    k = tl.max(w + tl.zeros([1], tl.float64)) * 0.0\n"
       "    live = w == w\n"
       "    while (tl.max(live.to(tl.int32) + tl.zeros([1], tl.int32)) > 0) & (k < tl.full([], 100000.0, tl.float64)):\n"
       "        total = tl.where(live, total + libdevice.pow(w, -ss), total)\n"
       "        w = tl.where(live, w + 1.0, w)\n"
       "        k += 1.0\n"
       "        live = live & (((w * 0.0 + k) < 10.0) | (w < 10.0))\n"
       "    w_s = libdevice.pow(w, -ss)\n"
       "    tail = w * w_s / (ss - 1.0) + 0.5 * w_s\n"
       "    rising = ss\n"
       "    power = w_s / w\n"
       "    tail = tail + tl.full([], 0.08333333333333333, tl.float64) * rising * power\n"
       "    rising = rising * ((ss + 1.0) * (ss + 2.0))\n"
       "    power = power / (w * w)\n"
       "    tail = tail + tl.full([], -0.001388888888888889, tl.float64) * rising * power\n"
       "    rising = rising * ((ss + 3.0) * (ss + 4.0))\n"
       "    power = power / (w * w)\n"
       "    tail = tail + tl.full([], 3.306878306878307e-05, tl.float64) * rising * power\n"
       "    rising = rising * ((ss + 5.0) * (ss + 6.0))\n"
       "    power = power / (w * w)\n"
       "    tail = tail + tl.full([], -8.267195767195768e-07, tl.float64) * rising * power\n"
       "    rising = rising * ((ss + 7.0) * (ss + 8.0))\n"
       "    power = power / (w * w)\n"
       "    tail = tail + tl.full([], 2.08767569878681e-08, tl.float64) * rising * power\n"
       "    rising = rising * ((ss + 9.0) * (ss + 10.0))\n"
       "    power = power / (w * w)\n"
       "    tail = tail + tl.full([], -5.284190138687493e-10, tl.float64) * rising * power\n"
       "    rising = rising * ((ss + 11.0) * (ss + 12.0))\n"
       "    power = power / (w * w)\n"
       "    tail = tail + tl.full([], 1.3382536530684679e-11, tl.float64) * rising * power\n"
       "    rising = rising * ((ss + 13.0) * (ss + 14.0))\n"
       "    power = power / (w * w)\n"
       "    tail = tail + tl.full([], -3.3896802963225827e-13, tl.float64) * rising * power\n"
       "    r = tl.where(pole, float('inf'), total + tail)\n"
       "    return tl.where(nan, float('nan'), r).to(s_in.dtype)\n"},
      // C's ldexp from exponent bits (Triton's interpreter has no libdevice.ldexp): a 2^k as
      // a f64 product by two halves of 2^k, each a normal f64 built from its bits, so only
      // the result rounds; then a's dtype.
      {"ldexp",
       "@triton.jit\n"
       "def _pow2(k):\n"
       "    e = tl.minimum(tl.maximum(k, -1022.0), 1023.0) + 1023.0\n"
       "    return (e.to(tl.int64) << 52).to(tl.float64, bitcast=True)\n"
       "\n\n"
       "@triton.jit\n"
       "def _ldexp(a, k):\n"
       "    k = tl.minimum(tl.maximum(k.to(tl.float64), -2200.0), 2200.0)\n"
       "    h = tl.floor(k * 0.5)\n"
       "    return (a.to(tl.float64) * _pow2(h) * _pow2(k - h)).to(a.dtype)\n"},
      {"sign_float",
       "@triton.jit\n"
       "def _sign_float(x):\n"
       "    # (0 < x) - (x < 0), as PyTorch: NaN gives 0\n"
       "    return ((x > 0).to(x.dtype) - (x < 0).to(x.dtype))\n"},
      {"pow_int",
       "@triton.jit\n"
       "def _pow_int(a, b):\n"
       "    # by squaring, wrapping as integer multiplication does; a negative exponent\n"
       "    # gives 1 / a**-b in integer arithmetic (1, -1 or 0), as PyTorch's powi\n"
       "    r = tl.full(a.shape, 1, a.dtype) + 0 * b.to(a.dtype)\n"
       "    base = a + 0 * r\n"
       "    e = b + 0 * r.to(b.dtype)\n"
       "    for _ in tl.static_range(64):\n"
       "        r = tl.where((e & 1) != 0, r * base, r)\n"
       "        base = base * base\n"
       "        e = e >> 1\n"
       "    odd = (b % 2) != 0\n"
       "    inverse = tl.where(a == 1, 1, tl.where(a == -1, tl.where(odd, -1, 1), 0)).to(a.dtype)\n"
       "    return tl.where(b < 0, inverse, r)\n"},
      // Combine functions of tl.reduce and tl.associative_scan.
      {"max_nan",
       "@triton.jit\n"
       "def _max_nan(a, b):\n"
       "    # NaN wins, as in torch.max\n"
       "    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)\n"},
      {"min_nan",
       "@triton.jit\n"
       "def _min_nan(a, b):\n"
       "    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)\n"},
      {"prod",
       "@triton.jit\n"
       "def _prod(a, b):\n"
       "    return a * b\n"},
      // log(exp(a) + exp(b)) from the larger operand (coil_rt::log_add_exp): a NaN stays; an
      // infinite larger operand is the result (two infinities of one sign differ by NaN).
      {"log_add_exp",
       "@triton.jit\n"
       "def _log_add_exp(a, b):\n"
       "    hi = tl.where(a > b, a, b)\n"
       "    lo = tl.where(a > b, b, a)\n"
       "    s = tl.where((hi == float('inf')) | (hi == float('-inf')), hi, hi + libdevice.log1p(tl.exp(lo - hi)))\n"
       "    return tl.where((a != a) | (b != b), a + b, s)\n"},
      {"argmax_pick",
       "@triton.jit\n"
       "def _argmax_pick(a, ia, b, ib):\n"
       "    # whether (a, ia) wins: the larger value, NaN the largest, the first index on a tie\n"
       "    a_nan = a != a\n"
       "    b_nan = b != b\n"
       "    larger = (a > b) | (a_nan & (b_nan == 0))\n"
       "    tie = (a == b) | (a_nan & b_nan)\n"
       "    return larger | (tie & (ia < ib))\n"},
      {"argmin_pick",
       "@triton.jit\n"
       "def _argmin_pick(a, ia, b, ib):\n"
       "    # whether (a, ia) wins: the smaller value, NaN the smallest, the first index on a tie\n"
       "    a_nan = a != a\n"
       "    b_nan = b != b\n"
       "    smaller = (a < b) | (a_nan & (b_nan == 0))\n"
       "    tie = (a == b) | (a_nan & b_nan)\n"
       "    return smaller | (tie & (ia < ib))\n"},
      {"argmax_combine",
       "@triton.jit\n"
       "def _argmax_combine(a, ia, b, ib):\n"
       "    pick = _argmax_pick(a, ia, b, ib)\n"
       "    return tl.where(pick, a, b), tl.where(pick, ia, ib)\n"},
      {"argmin_combine",
       "@triton.jit\n"
       "def _argmin_combine(a, ia, b, ib):\n"
       "    pick = _argmin_pick(a, ia, b, ib)\n"
       "    return tl.where(pick, a, b), tl.where(pick, ia, ib)\n"},
      {"welford_combine",
       "@triton.jit\n"
       "def _welford_combine(mean_a, m2_a, weight_a, mean_b, m2_b, weight_b):\n"
       "    # Chan et al.'s merge of two partial (mean, sum of squared deviations, count)\n"
       "    weight = weight_a + weight_b\n"
       "    delta = mean_b - mean_a\n"
       "    share = tl.where(weight == 0.0, 0.0, weight_b / tl.where(weight == 0.0, 1.0, weight))\n"
       "    return mean_a + delta * share, m2_a + m2_b + delta * delta * weight_a * share, weight\n"},
  };
  std::string out;
  for (const std::string &h : helpers) {
    auto it = kHelpers.find(h);
    COIL_ASSERT(it != kHelpers.end(), "no Triton helper ", h);
    out += "\n\n" + it->second;
  }
  return out;
}

}  // namespace coil::codegen
