// The core of the Triton kernel emitter (triton_kernel.h): parameters, the module, signature
// and launch of each generated kernel, block shapes and masks, values named tmpN and computed
// once per scope, indices, loads, stores and bodies, and the configs worth timing. Kernels
// of each kind: triton_pointwise.cpp, triton_reduction.cpp.
#include "codegen/triton/triton_kernel.h"

#include <algorithm>
#include <string_view>
#include <tuple>
#include <utility>

#include "codegen/common/access.h"
#include "codegen/cpp/cpp_wrapper.h"
#include "codegen/triton/triton_kernel_plan.h"
#include "codegen/triton/triton_ops.h"
#include "support/error.h"

namespace coil::codegen::detail {

TritonEmitter::TritonEmitter(const ir::Program &p, const Kernel &k, const TritonKernelPlan &plan)
    : p_(p), k_(k), plan_(plan), ranges_(ir::ranges_of(k.ranges, k.reduction_ranges)) {}

std::vector<GpuKernel> TritonEmitter::emit(std::vector<std::vector<int>> &args, std::map<int, std::pair<DType, SymInt>> &scratch,
                                           int &next_scratch) {
  collect_params();
  next_scratch_ = &next_scratch;
  scratch_ = &scratch;
  switch (k_.kind) {
    case ir::KernelKind::Pointwise: emit_pointwise(); break;
    case ir::KernelKind::Reduction: emit_reduction(); break;
    case ir::KernelKind::Scan: emit_scan(); break;
    case ir::KernelKind::Scatter: emit_scatter(); break;
    case ir::KernelKind::Extern: COIL_ASSERT(false, "extern kernels are host steps");
  }
  args = std::move(out_args_);
  return std::move(out_);
}

// ---- parameters ------------------------------------------------------------------------

void TritonEmitter::collect_params() {
  KernelParams params = kernel_params(p_, k_);
  params_ = std::move(params.order);
  names_ = std::move(params.names);
}

void TritonEmitter::set_index_bits() {
  // Each extent compared at the sizes compiled for: the kernel's int32 indices are guarded
  // to fit at every size it serves.
  std::vector<SymInt> extents = {checked_numel(k_.ranges) * checked_numel(k_.reduction_ranges)};
  for (BufferId b : params_) extents.push_back(storage_extent(p_.buffer(b).type));
  index_bits_ = 31;
  for (const SymInt &e : extents)
    if (e >= (int64_t(1) << 31)) index_bits_ = 63;
}

// ---- sizes ---------------------------------------------------------------------------------

std::string TritonEmitter::size(const SymInt &s) {
  if (!s.symbolic()) return std::to_string(s.hint());
  take_symbols(s.expr());
  return triton_size(s);
}

void TritonEmitter::take_symbols(const Expr &e) { ir::collect_symbols(e, symbols_); }

std::string TritonEmitter::kernel_name(const std::string &suffix) const {
  std::string name = k_.name;
  if (!plan_.variant.empty()) name += "_" + plan_.variant;
  return suffix.empty() ? name : name + "_" + suffix;
}

// ---- one generated kernel ------------------------------------------------------------------

void TritonEmitter::begin(const std::string &name, const Layout &l) {
  w_ = Writer();
  l_ = l;
  helpers_.clear();
  scopes_.clear();
  vars_.clear();
  next_tmp_ = 0;
  kernel_name_ = name;
  mask0_.clear();
  mask1_.clear();
  symbols_.clear();
  w_.indent();
  push();
}

void TritonEmitter::end(const std::vector<std::pair<int, std::string>> &params, int num_warps, std::array<SymInt, 3> grid,
                        std::map<std::string, std::string> attrs) {
  GpuKernel g;
  g.name = kernel_name_;
  std::vector<int> ids;
  std::string sig;
  for (const auto &[id, name] : params) {
    g.signature.push_back({name, triton_pointer_type(dtype_of(id))});
    sig += name + ", ";
    ids.push_back(id);
  }
  // The symbols as 32-bit integers where the indices are (set_index_bits guards them to fit).
  for (const std::string &symbol : symbols_) {
    g.signature.push_back({symbol, index_bits_ > 31 ? "i64" : "i32"});
    g.sizes.push_back(symbol);
    sig += symbol + ", ";
  }
  std::vector<std::string> blocks = {l_.b0};
  if (l_.two_d) blocks.push_back(l_.b1);
  for (size_t i = 0; i < blocks.size(); ++i) {
    g.signature.push_back({blocks[i], "constexpr"});
    g.constexprs[blocks[i]] = i == 0 ? l_.block0 : l_.block1;
    sig += blocks[i] + ": tl.constexpr" + (i + 1 < blocks.size() ? ", " : "");
  }
  g.sizes_by_16 = plan_.sizes_by_16 && !g.sizes.empty();
  if (g.sizes_by_16) attrs["sizes"] = "multiples of 16 where launched (Triton told so)";
  g.num_warps = num_warps;
  g.num_stages = plan_.stages;
  g.grid = grid;
  attrs["num_warps"] = std::to_string(num_warps);
  attrs["grid"] = str(grid[0]) + "x" + str(grid[1]) + "x" + str(grid[2]);
  g.attrs = attrs;
  std::string head = "# " + ir::kernel_summary(p_, k_) + "\n";
  for (const auto &[key, value] : attrs) head += "# " + key + ": " + value + "\n";
  g.source = head + "import triton\nimport triton.language as tl\nfrom triton.language.extra.cuda import libdevice\n" +
             triton_helpers(helpers_) + "\n\n@triton.jit\ndef " + kernel_name_ + "(" + sig + "):\n" + w_.str();
  out_.push_back(std::move(g));
  out_args_.push_back(ids);
}

DType TritonEmitter::dtype_of(int id) const {
  if (id < int(p_.buffers.size())) return p_.buffer(id).type.dtype;
  return scratch_->at(id).first;
}

std::vector<std::pair<int, std::string>> TritonEmitter::buffer_params() const {
  std::vector<std::pair<int, std::string>> out;
  for (BufferId b : params_) out.push_back({b, names_.at(b)});
  return out;
}

// ---- shapes and masks ----------------------------------------------------------------------

std::string TritonEmitter::shape(int dims) const {
  if (!l_.two_d) return "[" + l_.b0 + "]";
  if (dims == kA0) return "[" + l_.b0 + ", 1]";
  if (dims == kA1) return "[1, " + l_.b1 + "]";
  return "[" + l_.b0 + ", " + l_.b1 + "]";
}

std::string TritonEmitter::mask(int dims) const {
  std::string m0 = (dims & kA0) && !mask0_.empty() ? mask0_ : "", m1 = (dims & kA1) && !mask1_.empty() ? mask1_ : "";
  if (!m0.empty() && !m1.empty()) return m0 + " & " + m1;
  return m0.empty() ? m1 : m0;
}

std::string TritonEmitter::and_masks(const std::string &a, const std::string &b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return "(" + a + ") & (" + b + ")";
}

std::string TritonEmitter::broadcast(const Value &v, int dims, DType t) {
  if (v.dims == dims && !v.literal) return v.name;
  if (v.literal) return "tl.full(" + shape(dims) + ", " + v.name + ", " + triton_type(t) + ")";
  return "tl.broadcast_to(" + v.name + ", " + shape(dims) + ")";
}

void TritonEmitter::decompose(const std::string &index, const std::vector<std::pair<VarId, SymInt>> &vars, int dims) {
  int outermost = -1;
  for (size_t i = 0; i < vars.size(); ++i)
    if (!known_eq(vars[i].second, 1)) {
      outermost = int(i);
      break;
    }
  SymInt stride = 1;
  for (int i = int(vars.size()) - 1; i >= 0; --i) {
    const auto &[v, extent] = vars[size_t(i)];
    if (known_eq(extent, 1)) {
      vars_[v.id] = {"0", kNone, true};
      continue;
    }
    std::string e = known_eq(stride, 1) ? index : "(" + index + " // " + size(stride) + ")";
    if (i != outermost) e += " % " + size(extent);
    std::string name = var_name(v);
    w_.line(name + " = " + e);
    vars_[v.id] = {name, dims, false};
    stride *= extent;
  }
}

std::string TritonEmitter::var_name(VarId v) const {
  int n = int(k_.ranges.size());
  return v.id < n ? "x" + std::to_string(v.id) : "r" + std::to_string(v.id - n);
}

void TritonEmitter::emit_prologue() {
  std::string idx0 = l_.b0 == "YBLOCK" ? "yindex" : "xindex", off0 = l_.b0 == "YBLOCK" ? "yoffset" : "xoffset";
  std::string pid = "tl.program_id(" + std::to_string(l_.program_axis0) + ")";
  std::string arange0 = "tl.arange(0, " + l_.b0 + ")" + std::string(l_.two_d ? "[:, None]" : "");
  // Indices in int32 unless an offset may not fit.
  w_.line(off0 + " = " + pid + (index_bits_ > 31 ? ".to(tl.int64)" : "") + " * " + l_.b0);
  w_.line(idx0 + " = " + off0 + " + " + arange0);
  if (blocks_may_overrun(l_.n0, l_.block0)) {
    mask0_ = idx0 == "yindex" ? "ymask" : "xmask";
    w_.line(mask0_ + " = " + idx0 + " < " + size(l_.n0));
  }
  decompose(idx0, l_.vars0, kA0);
  if (l_.two_d && !l_.looped) open_axis1("");
}

void TritonEmitter::open_axis1(const std::string &offset) {
  bool tiled_pointwise = l_.b1 == "XBLOCK";
  std::string idx = tiled_pointwise ? "xindex" : "rindex";
  std::string arange = "tl.arange(0, " + l_.b1 + ")[None, :]";
  if (tiled_pointwise) {
    w_.line("xoffset = tl.program_id(0) * XBLOCK");
    w_.line("xindex = xoffset + " + arange);
  } else if (!offset.empty()) {
    w_.line("rindex = " + offset + " + rbase");
  } else {
    w_.line("rindex = " + arange);
  }
  mask1_.clear();
  if (blocks_may_overrun(l_.n1, l_.block1) || r_limit_) {
    mask1_ = tiled_pointwise ? "xmask" : "rmask";
    w_.line(mask1_ + " = " + idx + " < " + size(r_limit_ ? *r_limit_ : l_.n1));
  }
  decompose(idx, l_.vars1, kA1);
}

// ---- scopes: CSE of values and the values of internal buffers ---------------------------

Value TritonEmitter::def(const std::string &rhs, int dims) {
  if (const Value *f = scopes_.find(rhs)) return *f;
  Value v{"tmp" + std::to_string(next_tmp_++), dims, false};
  w_.line(v.name + " = " + rhs);
  scopes_.remember(rhs, v);
  return v;
}

std::string TritonEmitter::forward_key(BufferId b, const Expr &at) const { return element_key(p_, b, at, ranges_); }

std::optional<Value> TritonEmitter::forwarded(BufferId b, const Expr &at) const {
  return scopes_.forwarded(forward_key(b, at));
}

// ---- indices -----------------------------------------------------------------------------

std::pair<std::string, int> TritonEmitter::index(const Expr &e, const std::function<Value(int)> &indirect) {
  int dims = kNone;
  Expr simplified = ir::simplify(e, ranges_);
  take_symbols(simplified);
  std::string text = triton_index(simplified,
                                  [&](VarId v) -> std::string {
                                    if (v.id >= ir::kIndirectBase) {
                                      Value x = indirect(v.id - ir::kIndirectBase);
                                      dims |= x.dims;
                                      return x.name;
                                    }
                                    auto it = vars_.find(v.id);
                                    COIL_ASSERT(it != vars_.end(), k_.name, ": no index variable ", var_name(v));
                                    dims |= it->second.dims;
                                    return it->second.name;
                                  },
                                  ranges_, helpers_);
  return {text, dims};
}

std::string TritonEmitter::pointer(const std::string &ptr, const std::string &idx, int idx_dims, int dims) {
  if (idx_dims == dims) return ptr + " + (" + idx + ")";
  // A constant index (negative where a masked-off load of a cat or pad would read before its
  // input: never read) is a full block; tl.broadcast_to takes a tensor, not a Python int.
  std::string_view digits = idx.starts_with('-') ? std::string_view(idx).substr(1) : std::string_view(idx);
  if (idx_dims == kNone && !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos)
    return ptr + " + tl.full(" + shape(dims) + ", " + idx + (digits.size() > 9 ? ", tl.int64)" : ", tl.int32)");
  return ptr + " + tl.broadcast_to(" + idx + ", " + shape(dims) + ")";
}

// ---- bodies ---------------------------------------------------------------------------

// A bool scalar of a comparison of float scalars, typed bool. Triton's interpreter gives
// such a comparison the operands' type, so the scalar, once splat to a block, is a float
// block that `|` refuses. A select of typed bool literals has the bool type; the compiler
// folds it. Integer 0/1 blocks combine as bools do, and ops of bools keep the bool type.
static std::string bool_scalar(const std::string &compared) {
  return "tl.where(" + compared + ", tl.full([], 1, tl.int1), tl.full([], 0, tl.int1))";
}

std::vector<Value> TritonEmitter::emit_body(const ir::Body &body) {
  std::vector<Value> v(body.instrs.size());
  for (size_t k = 0; k < body.instrs.size(); ++k) {
    const Instr &i = body.instrs[k];
    switch (i.op) {
      case Op::Load: v[k] = load(i, v); break;
      case Op::Constant: v[k] = {triton_literal(i.value, i.dtype), kNone, true}; break;
      case Op::Index: {
        auto [text, dims] = index(i.index);
        if (std::optional<int64_t> c = ir::simplify(i.index, ranges_).as_constant(); c && dims == kNone) {
          v[k] = {triton_literal(double(*c), i.dtype), kNone, true};
          break;
        }
        v[k] = def(triton_cast("(" + text + ")", index_bits_ > 31 ? DType::I64 : DType::I32, i.dtype), dims);
        break;
      }
      default: {
        std::vector<std::string> args;
        int dims = kNone;
        bool literal = true;
        for (int a = 0; a < ir::op_arity(i.op); ++a) {
          const Value &x = v[size_t(i.args[size_t(a)])];
          args.push_back(x.name);
          dims |= x.dims;
          literal = literal && x.literal;
        }
        DType in = i.op == Op::Where ? i.dtype : body.at(i.args[0]).dtype;
        // A logical op tests each operand for truth by the operand's own dtype.
        bool logical = ir::is_logical(i.op);
        auto own = [&](int a) { return body.at(i.args[size_t(a)]).dtype; };
        auto operands = [&](std::vector<std::string> xs) {
          for (int a = 0; logical && a < 2; ++a) {
            std::string truth = triton_cast(xs[size_t(a)], own(a), DType::Bool);
            bool scalar = v[size_t(i.args[size_t(a)])].dims == kNone;
            xs[size_t(a)] = scalar && is_floating(own(a)) ? bool_scalar(truth) : truth;
          }
          return xs;
        };
        if (logical) in = DType::Bool;
        std::string rhs = triton_op(i.op, in, i.dtype, operands(args), helpers_);
        if (rhs == args[0]) {  // a cast that changes nothing
          v[k] = v[size_t(i.args[0])];
          break;
        }
        // Literals become typed scalars where a Python number would not do: casts, helper
        // calls, and ops of literals only.
        bool needs_types = i.op == Op::Cast || rhs.find("_") == 0 || rhs.find("(_") != std::string::npos ||
                           (literal && dims == kNone);
        if (needs_types) {
          std::vector<std::string> typed = args;
          for (int a = 0; a < ir::op_arity(i.op); ++a) {
            const Value &x = v[size_t(i.args[size_t(a)])];
            DType at = logical ? own(a) : i.op == Op::Where && a == 0 ? DType::Bool : i.op == Op::Where ? i.dtype : in;
            if (x.literal && x.name.rfind("tl.full", 0) != 0) typed[size_t(a)] = "tl.full([], " + x.name + ", " + triton_type(at) + ")";
          }
          rhs = triton_op(i.op, in, i.dtype, operands(typed), helpers_);
        }
        if (i.dtype == DType::Bool && dims == kNone && is_floating(in)) rhs = bool_scalar(rhs);
        v[k] = def(rhs, dims);
        if (i.op == Op::Cast && (i.dtype == DType::BF16 || i.dtype == DType::F16) && in == DType::F32)
          rounded_from_[v[k].name] = {args[0], i.dtype};
        break;
      }
    }
  }
  return v;
}

Value TritonEmitter::load(const Instr &i, const std::vector<Value> &v) {
  if (i.indirect.empty() && i.args[0] < 0)
    if (auto f = forwarded(i.buffer, i.index)) return *f;
  COIL_ASSERT(!contains(k_.internal, i.buffer), k_.name, " reads internal ", p_.buffer(i.buffer).name,
              " where no member computed it");
  auto [idx, dims] = index(i.index, [&](int k) { return v[size_t(i.indirect[size_t(k)])]; });
  std::string m;
  int pdims = dims;
  if (i.args[0] >= 0) {
    const Value &cond = v[size_t(i.args[0])];
    pdims |= cond.dims;
    m = cond.name;
  }
  if (pdims == kNone) pdims = kA0;  // a block of one address: no 0-d tensors
  // An inner member over no reduced element loads nothing, whatever its index.
  if (inner_ && l_.two_d && known_eq(l_.n1, 0)) pdims |= kA1;
  m = and_masks(m, mask(pdims));
  std::string ptr = pointer(names_.at(i.buffer), idx, dims, pdims);
  std::string call = "tl.load(" + ptr + (m.empty() ? "" : ", " + m) +
                     (i.args[0] >= 0 ? ", other=" + triton_literal(i.value, i.dtype) : std::string()) + ")";
  if (i.dtype == DType::BF16 || i.dtype == DType::F16) call += ".to(tl.float32)";
  return def(call, pdims);
}

void TritonEmitter::store(const Node &n, BufferId out, const Value &v, DType from) {
  DType t = p_.buffer(out).type.dtype;
  Expr at = ir::store_index(n, p_.buffer(out));
  Value value = v;
  if (from != t && !v.literal) {
    value = def(triton_cast(v.name, from, t), v.dims);
    if ((t == DType::BF16 || t == DType::F16) && from == DType::F32) rounded_from_[value.name] = {v.name, t};
  }
  if (from != t && v.literal) value = {triton_cast("tl.full([], " + v.name + ", " + triton_type(from) + ")", from, t), kNone, false};
  scopes_.forward(forward_key(out, at), value);
  if (contains(k_.internal, out) || forward_only_) return;
  auto [idx, dims] = index(at);
  int pdims = dims | value.dims;
  if (pdims == kNone) pdims = kA0;  // a block of one address: no 0-d tensors
  std::string stored = value.name;
  if (v.literal && from == t) stored = "tl.full(" + shape(pdims) + ", " + v.name + ", " + triton_type(t) + ")";
  // The unrounded value, when the store rounds to the very dtype the value was rounded to.
  if (auto r = rounded_from_.find(value.name); r != rounded_from_.end() && r->second.second == t) stored = r->second.first;
  stored = as_storage(stored, t);
  std::string m = mask(pdims);
  w_.line("tl.store(" + pointer(names_.at(out), idx, dims, pdims) + ", " + stored + (m.empty() ? "" : ", " + m) + ")");
}

void TritonEmitter::emit_pointwise_member(const Node &n) {
  auto v = emit_body(n.body);
  for (size_t k = 0; k < n.outputs.size(); ++k)
    store(n, n.outputs[k], v[size_t(n.body.results[k])], n.body.at(n.body.results[k]).dtype);
}

}  // namespace coil::codegen::detail
