// The emitter of a kernel function (cpp_kernel.h): the layout words, the signature and
// its parameters, values named tmpN and computed once per scope, vector loads and stores,
// bodies, values passed from one pass over a row to a later one, loops, and the
// prefaulting of large outputs. Kernels of each kind: cpp_pointwise.cpp, cpp_reduction.cpp.
#include "codegen/cpp/cpp_kernel.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "codegen/common/access.h"
#include "codegen/cpp/cpp_extern.h"
#include "ir/specialize.h"
#include "support/error.h"

namespace coil::codegen::detail {

KernelEmitter::KernelEmitter(const ir::Program &p, const Kernel &k, const CppKernelPlan &plan, const Storage &storage,
                             Writer &w)
    : p_(p), k_(k), plan_(plan), storage_(storage), w_(w), ranges_(ir::ranges_of(k.ranges, k.reduction_ranges)) {}

void KernelEmitter::emit() {
  collect_params();
  collect_prefault();
  std::string sig = "static void " + k_.name + "(";
  for (size_t i = 0; i < params_.size(); ++i) sig += param_decl(params_[i]) + ", ";
  for (const std::string &symbol : symbols_) sig += "int64_t " + symbol + ", ";
  sig += "coil_rt::Error &err)";
  w_.line("// layout: " + describe(plan_));
  w_.open(sig);
  switch (k_.kind) {
    case ir::KernelKind::Pointwise: emit_pointwise(); break;
    case ir::KernelKind::Reduction: emit_reduction(); break;
    case ir::KernelKind::Scan: emit_scan(); break;
    case ir::KernelKind::Scatter: emit_scatter(); break;
    case ir::KernelKind::Extern: emit_extern_kernel(p_, k_, names_, symbols_, w_); break;
  }
  w_.close();
}

// ---- parameters ------------------------------------------------------------------------

void KernelEmitter::collect_params() {
  KernelParams params = kernel_params(p_, k_);
  params_ = std::move(params.order);
  names_ = std::move(params.names);
  std::set<std::string> symbols = ir::symbols_of(p_, k_);
  symbols_.assign(symbols.begin(), symbols.end());
}

bool KernelEmitter::shares_memory(BufferId b) const {
  for (BufferId o : params_)
    if (o != b && storage_.key.at(o) == storage_.key.at(b)) return true;
  return false;
}

std::string KernelEmitter::param_decl(BufferId b) const {
  std::string t = storage_type(p_.buffer(b).type.dtype);
  std::string restrict_ = shares_memory(b) ? " " : " __restrict__ ";
  return (written(b) ? t + " *" : "const " + t + " *") + restrict_ + names_.at(b);
}

// ---- scopes: CSE of values and the values of internal buffers ---------------------------

std::string KernelEmitter::var(VarId v) const {
  int n = int(k_.ranges.size());
  std::string name = v.id < n ? "x" + std::to_string(v.id) : "r" + std::to_string(v.id - n);
  return lane_index_ && v == vvar_ ? "(" + name + " + l)" : name;
}

std::string KernelEmitter::index(const Expr &e) const {
  return cpp_index(ir::simplify(e, ranges_), [&](VarId v) { return var(v); }, ranges_);
}

std::string KernelEmitter::def(const std::string &type, const std::string &rhs) {
  std::string key = type + " " + rhs;
  if (const std::string *f = scopes_.find(key)) return *f;
  std::string name = "tmp" + std::to_string(next_tmp_++);
  w_.line(type + " " + name + " = " + rhs + ";");
  scopes_.remember(key, name);
  if (type.rfind("Vec<", 0) == 0) vector_values_.insert(name);
  return name;
}

// ---- SIMD: vector loops, loads and stores ------------------------------------------------

std::string KernelEmitter::as_vector(const std::string &value, DType t) {
  if (vector_values_.count(value)) return value;
  std::string v = def(vt(t), vt(t) + "(" + value + ")");
  splat_of_[v] = value;
  return v;
}

bool KernelEmitter::aligned(BufferId b, const Expr &index) const {
  if (!vector_start_aligned_ || !storage_.in_arena.count(b)) return false;
  int64_t bytes = itemsize(p_.buffer(b).type.dtype);
  int64_t unit = std::min<int64_t>(vlanes_, 64 / bytes);  // elements per alignment unit
  Expr e = ir::simplify(index, ranges_);
  if (e.constant() % unit != 0) return false;
  for (const ir::Term &t : e.terms()) {
    bool is_lane_var = t.factors.size() == 1 && t.factors[0].kind() == ir::AtomKind::Var && t.factors[0].var() == vvar_;
    if (is_lane_var ? t.coeff != 1 : t.coeff % unit != 0) return false;
  }
  return true;
}

std::string KernelEmitter::vector_load(const Instr &i, const std::vector<std::string> &v) {
  DType t = i.dtype;
  std::string type = vt(t), ptr = names_.at(i.buffer);
  COIL_ASSERT(!contains(k_.internal, i.buffer), k_.name, " reads internal ", p_.buffer(i.buffer).name,
              " where no member computed it");
  if (i.indirect.empty() && i.args[0] < 0) {
    if (auto tile = tiles_.find(forward_key(i.buffer, i.index)); tile != tiles_.end())
      return contiguous_load(tile->second + " + " + tile_position_, t, false);
    if (ir::access_of(i.index, vvar_, ranges_).kind == ir::Access::Broadcast) {
      int lanes = std::exchange(vlanes_, 0);
      std::string scalar = def(value_type(t), from_storage(ptr + "[" + index(i.index) + "]", t));
      vlanes_ = lanes;
      return type + "(" + scalar + ")";
    }
    return vector_load_expr(i);
  }
  if (i.indirect.empty() && uniform_.size() > size_t(i.args[0]) && uniform_[size_t(i.args[0])]) {
    Instr whole = i;
    whole.args[0] = -1;
    return "(" + uniform_scalars_[size_t(i.args[0])] + " ? " + vector_load_expr(whole) + " : " + type + "(" +
           literal(i.value, t) + "))";
  }
  // Lane by lane: irregular indices, indices read from data, masks that differ by lane.
  lane_index_ = true;
  std::string at = element_index(i, [&](int arg) { return v[size_t(arg)] + "[l]"; });
  lane_index_ = false;
  std::string value = from_storage(ptr + "[" + at + "]", t);
  if (i.args[0] >= 0) value = v[size_t(i.args[0])] + "[l] ? " + value + " : " + literal(i.value, t);
  return type + "::generate([&](int l) { return " + value + "; })";
}

std::string KernelEmitter::vector_load_expr(const Instr &i) {
  DType t = i.dtype;
  std::string type = vt(t), ptr = names_.at(i.buffer);
  ir::AccessFact f = ir::access_of(i.index, vvar_, ranges_);
  switch (f.kind) {
    case ir::Access::Broadcast: return type + "(" + from_storage(ptr + "[" + index(i.index) + "]", t) + ")";
    case ir::Access::Contiguous: return contiguous_load(ptr + " + " + offset(i.index), t, aligned(i.buffer, i.index));
    case ir::Access::Affine:
      if (from_storage("v", t) == "v")  // stored as computed: a gather of the elements themselves
        return "coil_rt::strided<" + std::to_string(vlanes_) + ">(" + ptr + " + " + offset(i.index) + ", " +
               std::to_string(f.stride) + ")";
      break;
    case ir::Access::Irregular: break;
  }
  lane_index_ = true;
  std::string at = index(i.index);
  lane_index_ = false;
  return type + "::generate([&](int l) { return " + from_storage(ptr + "[" + at + "]", t) + "; })";
}

// A constant as the vector loop spells it, known as a vector: a store forwards it to the
// members after, which must not take it for a scalar.
std::string KernelEmitter::vector_constant(const Instr &i) {
  std::string v = vector_literal(i.value, i.dtype, vlanes_);
  if (vlanes_) vector_values_.insert(v);
  return v;
}

std::vector<bool> KernelEmitter::uniform_values(const ir::Body &body) const {
  std::vector<bool> u(body.instrs.size(), false);
  for (size_t k = 0; k < body.instrs.size(); ++k) {
    const Instr &i = body.instrs[k];
    switch (i.op) {
      case Op::Constant: u[k] = true; break;
      case Op::Index: u[k] = ir::access_of(i.index, vvar_, ranges_).kind == ir::Access::Broadcast; break;
      case Op::Load:
        if (auto f = forwarded(i.buffer, i.index); f && i.indirect.empty() && i.args[0] < 0)
          u[k] = !vector_values_.count(*f);  // a row's value that an earlier pass computed
        else
          u[k] = i.indirect.empty() && (i.args[0] < 0 || u[size_t(i.args[0])]) &&
                 ir::access_of(i.index, vvar_, ranges_).kind == ir::Access::Broadcast;
        break;
      default:
        u[k] = true;
        for (int a = 0; a < ir::op_arity(i.op); ++a) u[k] = u[k] && u[size_t(i.args[size_t(a)])];
    }
  }
  return u;
}

std::string KernelEmitter::contiguous_load(const std::string &at, DType t, bool is_aligned) const {
  if (t == DType::BF16) return "coil_rt::load_bf16<" + std::to_string(vlanes_) + ">(" + at + ")";
  if (t == DType::F16) return "coil_rt::load_f16<" + std::to_string(vlanes_) + ">(" + at + ")";
  return vt(t) + (is_aligned ? "::load(" : "::loadu(") + at + ")";
}

std::string KernelEmitter::element_index(const Instr &i, const std::function<std::string(int)> &value_of) const {
  if (i.indirect.empty()) return index(i.index);
  std::string at = cpp_index(ir::simplify(i.index, ranges_),
                             [&](VarId x) {
                               if (x.id >= ir::kIndirectBase)
                                 return "int64_t(" + value_of(i.indirect[size_t(x.id - ir::kIndirectBase)]) + ")";
                               return var(x);
                             },
                             ranges_);
  return "coil_rt::checked_index(" + at + ", " + cpp_size(storage_extent(p_.buffer(i.buffer).type)) + ", err)";
}

std::string KernelEmitter::offset(const Expr &e) const {
  std::string at = index(e);
  return at.find(" - ") == std::string::npos ? at : "(" + at + ")";
}

std::string KernelEmitter::vector_index(const Expr &e) {
  std::string type = vector_type(DType::I64, vlanes_);
  ir::AccessFact f = ir::access_of(e, vvar_, ranges_);
  if (f.kind == ir::Access::Broadcast) return type + "(" + index(e) + ")";
  if (f.kind != ir::Access::Irregular) return type + "::iota(" + index(e) + ", " + std::to_string(f.stride) + ")";
  lane_index_ = true;
  std::string at = index(e);
  lane_index_ = false;
  return type + "::generate([&](int l) { return " + at + "; })";
}

void KernelEmitter::vector_store(BufferId out, const Expr &at, const std::string &value, DType t) {
  std::string ptr = names_.at(out);
  if (ir::access_of(at, vvar_, ranges_).kind == ir::Access::Contiguous) {
    std::string p = ptr + " + " + offset(at);
    if (t == DType::BF16) w_.line("coil_rt::store_bf16(" + p + ", " + value + ");");
    else if (t == DType::F16) w_.line("coil_rt::store_f16(" + p + ", " + value + ");");
    else w_.line(value + (aligned(out, at) ? ".store(" : ".storeu(") + p + ");");
    return;
  }
  lane_index_ = true;
  std::string idx = index(at);
  lane_index_ = false;
  w_.line("for (int l = 0; l < " + std::to_string(vlanes_) + "; ++l) " + ptr + "[" + idx + "] = " +
          to_storage(value + "[l]", t) + ";");
}

void KernelEmitter::emit_nest(const SymShape &sizes, int first, bool parallel, const SymInt &work,
                              const std::optional<std::string> &clauses, int lanes, const std::function<void()> &body) {
  if (lanes == 0) {
    int loops = open_loops(sizes, first, parallel, clauses.has_value(), work, clauses.value_or(""));
    if (loops == 0) w_.open("");
    push();
    body();
    pop();
    if (loops == 0) w_.close();
    close_loops(loops);
    return;
  }
  int inner = int(sizes.size()) - 1;
  while (known_eq(sizes[size_t(inner)], 1)) --inner;
  SymShape outer = sizes;
  outer[size_t(inner)] = 1;  // open_loops skips it
  int loops = open_loops(outer, first, parallel, false, work);
  VarId x{first + inner};
  std::string name = var(x);
  // The vector loop's trip count and the scalar tail after it: numbers for a size known
  // now, else expressions of the kernel's size arguments (and always a tail loop).
  const SymInt &size = sizes[size_t(inner)];
  SymInt main = sym_floor_div(size, lanes) * lanes;
  bool region = parallel && loops == 0 && open_parallel_for("", work);
  w_.open("for (int64_t " + name + " = 0; " + name + " < " + cpp_size(main) + "; " + name + " += " + std::to_string(lanes) + ")");
  if (region) emit_reach({x});
  vector_body(x, lanes, true, body);
  w_.close();
  if (region) w_.close();
  if (size.symbolic() || main.hint() < size.hint()) {
    w_.open("for (int64_t " + name + " = " + cpp_size(main) + "; " + name + " < " + cpp_size(size) + "; ++" + name + ")");
    push();
    body();
    pop();
    w_.close();
  }
  close_loops(loops);
}

void KernelEmitter::vector_body(VarId x, int lanes, bool start_aligned, const std::function<void()> &body) {
  vlanes_ = lanes;
  vvar_ = x;
  vector_start_aligned_ = start_aligned;
  push();
  body();
  pop();
  vlanes_ = 0;
}

std::string KernelEmitter::forward_key(BufferId b, const Expr &at) const { return element_key(p_, b, at, ranges_); }

std::optional<std::string> KernelEmitter::forwarded(BufferId b, const Expr &at) const {
  return scopes_.forwarded(forward_key(b, at));
}

// ---- bodies ---------------------------------------------------------------------------

std::string KernelEmitter::load(const ir::Body &body, const Instr &i, const std::vector<std::string> &v) {
  DType t = i.dtype;
  std::string value;
  if (auto f = forwarded(i.buffer, i.index); f && i.indirect.empty()) {
    value = *f;
  } else {
    COIL_ASSERT(!contains(k_.internal, i.buffer), k_.name, " reads internal ", p_.buffer(i.buffer).name,
                " where no member computed it");
    std::string at = element_index(i, [&](int arg) { return v[size_t(arg)]; });
    value = from_storage(names_.at(i.buffer) + "[" + at + "]", t);
  }
  if (i.args[0] >= 0) return "(" + v[size_t(i.args[0])] + " ? " + value + " : " + literal(i.value, t) + ")";
  (void)body;
  return value;
}

// The operands of `i` as its op reads them, and the dtype it reads them as: a logical op
// tests each operand for truth by the operand's own dtype (logical_or of an f32 and an i64).
static std::pair<std::vector<std::string>, DType> op_operands(const ir::Body &body, const Instr &i,
                                                              std::vector<std::string> args, int lanes) {
  if (!ir::is_logical(i.op)) return {std::move(args), i.op == Op::Where ? i.dtype : body.at(i.args[0]).dtype};
  for (size_t a = 0; a < 2; ++a) args[a] = cpp_cast(args[a], body.at(i.args[a]).dtype, DType::Bool, lanes);
  return {std::move(args), DType::Bool};
}

std::vector<std::string> KernelEmitter::emit_body(const ir::Body &body) {
  std::vector<std::string> v(body.instrs.size());
  uniform_ = vlanes_ ? uniform_values(body) : std::vector<bool>{};
  uniform_scalars_.assign(uniform_.size(), "");
  std::vector<std::string> keys = row_cache_.empty() ? std::vector<std::string>{} : structural_keys(p_, body, ranges_);
  for (size_t k = 0; k < body.instrs.size(); ++k) {
    const Instr &i = body.instrs[k];
    std::string type = vt(i.dtype), rhs;
    // A value the same in every lane (a row's index, a mask of whole rows, a row's
    // statistic) is computed once as a scalar and splatted where vectors use it.
    if (!uniform_.empty() && uniform_[k]) {
      std::string &scalar = uniform_scalars_[k];
      int lanes = std::exchange(vlanes_, 0);
      switch (i.op) {
        case Op::Constant: scalar = literal(i.value, i.dtype); break;
        case Op::Load:
          if (auto f = forwarded(i.buffer, i.index); f && i.indirect.empty() && i.args[0] < 0) scalar = *f;
          else scalar = def(value_type(i.dtype), load(body, i, uniform_scalars_));
          break;
        case Op::Index: scalar = def(value_type(i.dtype), cpp_cast(index(i.index), DType::I64, i.dtype)); break;
        default: {
          std::vector<std::string> args;
          for (int a = 0; a < ir::op_arity(i.op); ++a) args.push_back(uniform_scalars_[size_t(i.args[size_t(a)])]);
          auto [read, in] = op_operands(body, i, std::move(args), 0);
          scalar = def(value_type(i.dtype), cpp_op(i.op, in, i.dtype, read, 0));
        }
      }
      vlanes_ = lanes;
      if (i.op == Op::Constant) v[k] = vector_constant(i);
      continue;  // splatted when a vector uses it
    }
    splat_operands(body, i, v);
    const CppRowCache *cache = nullptr;
    if (!keys.empty())
      if (auto it = row_cache_.find(keys[k]); it != row_cache_.end()) cache = it->second;
    if (cache && cache->step < step_index_) {  // computed by an earlier pass over this row
      std::string at = position();
      v[k] = def(type, vlanes_ ? type + "::loadu(" + cache->name + " + " + at + ")" : cache->name + "[" + at + "]");
      continue;
    }
    switch (i.op) {
      case Op::Load:
        if (auto f = forwarded(i.buffer, i.index); f && i.indirect.empty() && i.args[0] < 0) {
          v[k] = vlanes_ ? as_vector(*f, i.dtype) : *f;  // the member that computed it is in this loop
          continue;
        }
        rhs = vlanes_ ? vector_load(i, v) : load(body, i, v);
        break;
      case Op::Constant: v[k] = vector_constant(i); continue;
      case Op::Index:
        rhs = vlanes_ ? cpp_cast(vector_index(i.index), DType::I64, i.dtype, vlanes_) : cpp_cast(index(i.index), DType::I64, i.dtype);
        break;
      default: {
        std::vector<std::string> args;
        for (int a = 0; a < ir::op_arity(i.op); ++a) args.push_back(v[size_t(i.args[size_t(a)])]);
        auto [read, in] = op_operands(body, i, args, vlanes_);
        auto compared = vlanes_ ? lane_compare(body, i) : std::nullopt;
        rhs = compared ? *compared : cpp_op(i.op, in, i.dtype, read, vlanes_);
        if (rhs == args[0]) {  // a cast that changes nothing in C++
          v[k] = rhs;
          continue;
        }
        if (i.op == Op::Cast && (i.dtype == DType::BF16 || i.dtype == DType::F16) && in == DType::F32) {
          v[k] = def(type, rhs);
          rounded_from_[v[k]] = args[0];  // a store converts the unrounded value once
          continue;
        }
        // A division by a value of the row (softmax's sum): one reciprocal per row and a
        // product per element, within an ulp and a half of the quotient.
        if (i.op == Op::TrueDiv && vlanes_ && is_floating(i.dtype) && splat_of_.count(args[1])) {
          std::string inverse = def(value_type(i.dtype), literal(1, i.dtype) + " / " + splat_of_.at(args[1]));
          rhs = args[0] + " * " + as_vector(inverse, i.dtype);
        }
      }
    }
    v[k] = def(type, rhs);
    if (cache && cache->step == step_index_) {  // a later pass over this row reads it back
      std::string at = position();
      w_.line(vlanes_ ? v[k] + ".storeu(" + cache->name + " + " + at + ");" : cache->name + "[" + at + "] = " + v[k] + ";");
    }
  }
  for (int r : body.results) splat(body, r, v);
  return v;
}

std::optional<std::string> KernelEmitter::lane_compare(const ir::Body &body, const Instr &i) const {
  static const std::map<Op, std::pair<std::string, Op>> kCompare = {  // C++ operator, the one with sides swapped
      {Op::Lt, {"<", Op::Gt}}, {Op::Le, {"<=", Op::Ge}}, {Op::Gt, {">", Op::Lt}},
      {Op::Ge, {">=", Op::Le}}, {Op::Eq, {"==", Op::Eq}}, {Op::Ne, {"!=", Op::Ne}}};
  auto cmp = kCompare.find(i.op);
  if (cmp == kCompare.end()) return std::nullopt;
  auto moving = [&](int x) -> std::optional<ir::AccessFact> {
    const Instr &m = body.at(x);
    if (m.op != Op::Index || m.dtype != DType::I64) return std::nullopt;
    ir::AccessFact f = ir::access_of(m.index, vvar_, ranges_);
    if (f.kind != ir::Access::Contiguous && f.kind != ir::Access::Affine) return std::nullopt;
    if (std::llabs(f.stride) * vlanes_ >= (int64_t(1) << 30)) return std::nullopt;
    return f;
  };
  auto fixed = [&](int x) { return uniform_[size_t(x)] && body.at(x).dtype == DType::I64; };
  int index_arg = i.args[0], value_arg = i.args[1];
  std::string op = cmp->second.first;
  if (!(moving(index_arg) && fixed(value_arg))) {
    if (!(moving(value_arg) && fixed(index_arg))) return std::nullopt;
    std::swap(index_arg, value_arg);
    op = kCompare.at(cmp->second.second).first;
  }
  std::string lanes = std::to_string(vlanes_);
  return "coil_rt::lane_steps<" + lanes + ">(" + std::to_string(moving(index_arg)->stride) + ") " + op + " Vec<int32_t, " +
         lanes + ">(coil_rt::offset32(" + uniform_scalars_[size_t(value_arg)] + ", " + index(body.at(index_arg).index) + "))";
}

void KernelEmitter::splat(const ir::Body &body, int value, std::vector<std::string> &v) {
  if (v[size_t(value)].empty()) v[size_t(value)] = as_vector(uniform_scalars_[size_t(value)], body.at(value).dtype);
}

void KernelEmitter::splat_operands(const ir::Body &body, const Instr &i, std::vector<std::string> &v) {
  if (uniform_.empty()) return;
  for (int a : i.args)
    if (a >= 0) splat(body, a, v);
  for (int a : i.indirect) splat(body, a, v);
}

// ---- values passed from one pass over a row to a later one --------------------------------

void KernelEmitter::declare_row_cache() {
  for (const CppRowCache &c : plan_.row_cache) {
    row_cache_[c.key] = &c;
    w_.line("alignas(64) " + value_type(c.dtype) + " " + c.name + "[" + std::to_string(c.size) + "];");
  }
}

void KernelEmitter::store(const Node &n, BufferId out, const std::string &v, DType from) {
  DType t = p_.buffer(out).type.dtype;
  Expr at = ir::store_index(n, p_.buffer(out));
  std::string value = from == t ? v : def(vt(t), cpp_cast(v, from, t, vlanes_));
  if (lanes_ && row_scope_ >= 0 && !is_inner_member(n)) {
    // A value per row of a tiled kernel: one per lane, kept for the passes after.
    std::string lanes = "row_" + p_.buffer(out).name;
    w_.line(lanes + "[l] = " + value + ";");
    scopes_.forward(forward_key(out, at), lanes + "[l]", size_t(row_scope_));
  } else {
    scopes_.forward(forward_key(out, at), value);
  }
  if (contains(k_.internal, out)) return;
  // f32_to_bf16(round_bf16(x)) is f32_to_bf16(x).
  auto unrounded = rounded_from_.find(value);
  std::string stored = unrounded != rounded_from_.end() && (t == DType::BF16 || t == DType::F16) ? unrounded->second : value;
  if (vlanes_) return vector_store(out, at, stored, t);
  w_.line(names_.at(out) + "[" + index(at) + "] = " + to_storage(stored, t) + ";");
}

void KernelEmitter::emit_pointwise_member(const Node &n) {
  auto v = emit_body(n.body);
  for (size_t k = 0; k < n.outputs.size(); ++k)
    store(n, n.outputs[k], v[size_t(n.body.results[k])], n.body.at(n.body.results[k]).dtype);
}

// ---- loops ----------------------------------------------------------------------------

int KernelEmitter::open_loops(const SymShape &all_sizes, int first, bool parallel, bool simd, const SymInt &work,
                              const std::string &simd_clauses) {
  bool region = false;
  // A dim of size 1 is no loop: index() folds its variable to 0.
  SymShape sizes;
  std::vector<int> vars;
  for (size_t d = 0; d < all_sizes.size(); ++d)
    if (!known_eq(all_sizes[d], 1)) {
      sizes.push_back(all_sizes[d]);
      vars.push_back(first + int(d));
    }
  for (size_t d = 0; d < sizes.size(); ++d) {
    bool innermost = d + 1 == sizes.size();
    if (d == 0 && parallel) {
      std::string collapse = sizes.size() > (simd ? 2u : 1u)
                                 ? " collapse(" + std::to_string(sizes.size() - (simd ? 1 : 0)) + ")"
                                 : "";
      if (innermost && simd) {
        w_.line("#pragma omp parallel for simd num_threads(coil_rt::threads_for(" + cpp_size(work) + "))" +
                simd_clauses);
      } else {
        region = open_parallel_for(collapse, work);
      }
    } else if (innermost && simd) {
      w_.line("#pragma omp simd" + simd_clauses);
    }
    std::string x = var(VarId{vars[d]});
    w_.open("for (int64_t " + x + " = 0; " + x + " < " + cpp_size(sizes[d]) + "; ++" + x + ")");
  }
  if (region) {  // the loops on threads are all but an innermost simd one
    std::vector<VarId> on_threads;
    for (size_t d = 0; d < sizes.size() - (simd ? 1 : 0); ++d) on_threads.push_back(VarId{vars[d]});
    emit_reach(on_threads);
  }
  return int(sizes.size()) + (region ? 1 : 0);
}

// ---- the first touch of large outputs --------------------------------------------------

void KernelEmitter::collect_prefault() {
  prefault_.clear();
  for (BufferId b : plan_.prefault)
    for (int m : k_.nodes)
      if (contains(p_.nodes[size_t(m)].outputs, b)) {
        prefault_.push_back({b, "prefault" + std::to_string(prefault_.size()), ir::store_index(p_.nodes[size_t(m)], p_.buffer(b))});
        break;
      }
}

bool KernelEmitter::open_parallel_for(const std::string &clauses, const SymInt &work) {
  std::string threads = " num_threads(coil_rt::threads_for(" + cpp_size(work) + "))";
  if (prefault_.empty()) {
    w_.line("#pragma omp parallel for" + clauses + threads);
    return false;
  }
  w_.line("#pragma omp parallel" + threads);
  w_.open("");
  for (const PrefaultOut &o : prefault_) {
    const TensorType &t = p_.buffer(o.buffer).type;
    w_.line("coil_rt::Prefault " + o.name + "(" + names_.at(o.buffer) + ", " +
            cpp_size(storage_extent(t) * itemsize(t.dtype)) + ");");
  }
  w_.line("#pragma omp for" + clauses);
  return true;
}

void KernelEmitter::emit_reach(const std::vector<VarId> &on_threads, const std::map<int, std::string> &tile_start) {
  auto at = [&](const Expr &index, bool last) {
    Expr fixed = ir::substitute(index, [&](VarId v) -> std::optional<Expr> {
      if (tile_start.count(v.id) || std::find(on_threads.begin(), on_threads.end(), v) != on_threads.end()) return std::nullopt;
      if (!last) return Expr(0);
      Expr extent = ranges_.extent_of(v).value_or(Expr(1));
      if (std::optional<int64_t> n = extent.as_constant()) return Expr(std::max<int64_t>(*n - 1, 0));
      return extent - 1;
    });
    return cpp_index(ir::simplify(fixed, ranges_), [&](VarId v) -> std::string {
      auto t = tile_start.find(v.id);
      if (t == tile_start.end()) return var(v);
      if (!last) return t->second;
      return "std::min<int64_t>(" + t->second + " + " + std::to_string(plan_.tile - 1) + ", " +
             cpp_size(ranges_.extent_of(v).value_or(Expr(1)) - 1, ranges_) + ")";
    }, ranges_);
  };
  for (const PrefaultOut &o : prefault_)
    w_.line(o.name + ".reach(" + names_.at(o.buffer) + " + " + at(o.at, false) + ", " + names_.at(o.buffer) + " + " +
            at(o.at, true) + ");");
}

void KernelEmitter::close_loops(int n) {
  for (int i = 0; i < n; ++i) w_.close();
}

int64_t KernelEmitter::body_work() const {
  int64_t ops = 0;
  for (int n : k_.nodes) ops += int64_t(p_.nodes[size_t(n)].body.instrs.size());
  return std::max<int64_t>(ops, 1);
}

}  // namespace coil::codegen::detail
