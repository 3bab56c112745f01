// The C++ kernel driver: loops of each kernel kind, reductions, stores, and the wrapper
// with the entry points of coil/artifact.h. The op table is cpp_ops.cpp.
#include "codegen/cpp/cpp_codegen.h"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "codegen/common/access.h"
#include "codegen/common/writer.h"
#include "codegen/cpp/cpp_extern.h"
#include "codegen/cpp/cpp_ops.h"
#include "codegen/cpp/cpp_wrapper.h"
#include "scheduler/reindex.h"
#include "support/error.h"

namespace coil::codegen {
namespace {

using ir::BufferId;
using ir::Expr;
using ir::Instr;
using ir::Kernel;
using ir::Node;
using ir::Op;
using ir::VarId;

/// Emits one kernel function.
class KernelEmitter {
 public:
  KernelEmitter(const ir::Program &p, const Kernel &k, const Storage &storage, const CppOptions &o, Writer &w)
      : p_(p),
        k_(k),
        storage_(storage),
        w_(w),
        ranges_(sched::ranges_of(k.ranges, k.reduction_ranges)),
        kernel_lanes_(o.lanes ? o.lanes : o.vector_bytes / 4),
        prefault_on_(o.prefault) {}

  /// The buffers passed to the kernel, in parameter order.
  std::vector<BufferId> params() const { return params_; }

  // The dialect's decisions for this kernel, in words (DESIGN.md, decision 6).
  std::string layout() const {
    switch (k_.kind) {
      case ir::KernelKind::Pointwise:
        if (tile_last_two_dims()) {
          if (tile_lanes() == 0) return "32x32 tiles of the last two dims (a load walks them transposed), omp simd in a tile";
          std::string edges = k_.ranges[k_.ranges.size() - 1] % kTile || k_.ranges[k_.ranges.size() - 2] % kTile
                                  ? "; tiles at the edges in scalar code" : "";
          return "32x32 tiles of the last two dims: " + std::to_string(transposed_loads().size()) +
                 " transposed load(s) copied into a tile first, transposed; rows of the tile in vectors of " +
                 std::to_string(tile_lanes()) + " lanes" + edges;
        }
        return "threads over the outer loops; " + simd_words(k_.ranges, int(0));
      case ir::KernelKind::Reduction: {
        if (tile_over_last_kept_dim())
          return "rows in blocks of 64 lanes of " + var(VarId{int(k_.ranges.size()) - 1}) +
                 " (neighbouring rows are contiguous), omp simd across the lanes";
        std::string scalar_passes;
        for (const ir::Step &step : k_.steps)
          for (int n : step.nodes) {
            ir::ReduceOp op = p_.nodes[size_t(n)].reduce_op;
            if (p_.nodes[size_t(n)].kind == ir::NodeKind::Reduction && (op == ir::ReduceOp::ArgMax || op == ir::ReduceOp::ArgMin))
              scalar_passes = "; the pass of " + p_.nodes[size_t(n)].origin + " is scalar (first-index tie rule)";
          }
        std::string threads = checked_numel(k_.ranges) == 1 ? "the reduced elements split across threads, partials combined in order"
                                                           : "threads over rows";
        return threads + "; " + simd_words(k_.reduction_ranges, int(k_.ranges.size()), checked_numel(k_.ranges) == 1) +
               scalar_passes;
      }
      case ir::KernelKind::Scan: return "threads over rows, each scanned in order";
      case ir::KernelKind::Scatter: return "the copy, then the writes in order";
      case ir::KernelKind::Extern: return extern_library(p_, k_);
    }
    return "";
  }

  void emit() {
    collect_params();
    plan_prefault();
    std::string sig = "static void " + k_.name + "(";
    for (size_t i = 0; i < params_.size(); ++i) sig += param_decl(params_[i]) + ", ";
    sig += "coil_rt::Error &err)";
    w_.line("// layout: " + layout());
    w_.open(sig);
    switch (k_.kind) {
      case ir::KernelKind::Pointwise: emit_pointwise(); break;
      case ir::KernelKind::Reduction: emit_reduction(); break;
      case ir::KernelKind::Scan: emit_scan(); break;
      case ir::KernelKind::Scatter: emit_scatter(); break;
      case ir::KernelKind::Extern: emit_extern_kernel(p_, k_, names_, w_); break;
    }
    w_.close();
  }

 private:
  // How the innermost of `sizes` (variables from `first`) runs, in words.
  std::string simd_words(const Shape &sizes, int first, bool chunks = false) const {
    int inner = int(sizes.size()) - 1;
    while (inner >= 0 && sizes[size_t(inner)] == 1) --inner;
    if (inner < 0) return "one element, no loop";
    std::string x = var(VarId{first + inner}), size = std::to_string(sizes[size_t(inner)]);
    if (kernel_lanes_ == 0) return x + " (" + size + ") in scalar code under omp simd (the ISA has no vectors)";
    int lanes = lanes_for(sizes);
    if (lanes == 0)
      return x + " (" + size + ") in scalar code under omp simd (shorter than a vector of " + std::to_string(kernel_lanes_) + ")";
    int64_t tail = sizes[size_t(inner)] % lanes;
    if (chunks && inner == 0) return x + " (" + size + ") in vectors of " + std::to_string(lanes) + " lanes, each thread's chunk with a scalar tail";
    return x + " (" + size + ") in vectors of " + std::to_string(lanes) + " lanes" +
           (tail ? ", a scalar tail of " + std::to_string(tail) : std::string(", no tail"));
  }


  // ---- parameters ------------------------------------------------------------------------

  void collect_params() {
    KernelParams params = kernel_params(p_, k_);
    params_ = std::move(params.order);
    names_ = std::move(params.names);
  }


  bool written(BufferId b) const { return contains(k_.stores, b); }

  // Two parameters on the same memory (a write in place) may not be __restrict__.
  bool shares_memory(BufferId b) const {
    for (BufferId o : params_)
      if (o != b && storage_.key.at(o) == storage_.key.at(b)) return true;
    return false;
  }

  std::string param_decl(BufferId b) const {
    std::string t = storage_type(p_.buffer(b).type.dtype);
    std::string restrict_ = shares_memory(b) ? " " : " __restrict__ ";
    return (written(b) ? t + " *" : "const " + t + " *") + restrict_ + names_.at(b);
  }

  // ---- scopes: CSE of values and the values of internal buffers ---------------------------

  void push() { scopes_.emplace_back(); }
  void pop() { scopes_.pop_back(); }

  std::string var(VarId v) const {
    int n = int(k_.ranges.size());
    std::string name = v.id < n ? "x" + std::to_string(v.id) : "r" + std::to_string(v.id - n);
    return lane_index_ && v == vvar_ ? "(" + name + " + l)" : name;
  }

  std::string index(const Expr &e) const {
    return cpp_index(ir::simplify(e, ranges_), [&](VarId v) { return var(v); }, ranges_);
  }

  // `type tmpN = rhs;` unless an enclosing scope computed rhs already.
  std::string def(const std::string &type, const std::string &rhs) {
    std::string key = type + " " + rhs;
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->values.find(key); f != it->values.end()) return f->second;
    std::string name = "tmp" + std::to_string(next_tmp_++);
    w_.line(type + " " + name + " = " + rhs + ";");
    scopes_.back().values[key] = name;
    if (type.rfind("Vec<", 0) == 0) vector_values_.insert(name);
    return name;
  }

  // ---- SIMD: vector loops, loads and stores ------------------------------------------------

  /// The type of a value of `t` in the code being emitted: a vector inside a vector loop.
  std::string vt(DType t) const { return vector_type(t, vlanes_); }

  /// `value` (of dtype t) as a vector: values computed outside the vector loop (a row's
  /// max, say) are splatted once.
  std::string as_vector(const std::string &value, DType t) {
    if (vector_values_.count(value)) return value;
    std::string v = def(vt(t), vt(t) + "(" + value + ")");
    splat_of_[v] = value;
    return v;
  }

  /// Lanes of the vector loop over the innermost of `sizes`, or 0 when that loop has
  /// fewer elements than a vector (or the ISA has none).
  int lanes_for(const Shape &sizes) const {
    for (auto it = sizes.rbegin(); it != sizes.rend(); ++it)
      if (*it != 1) return kernel_lanes_ > 0 && *it >= kernel_lanes_ ? kernel_lanes_ : 0;
    return 0;
  }

  /// Whether `index` of buffer b is aligned to the vector's size (at most 64 bytes) at
  /// every step of the vector loop: an arena buffer (64-byte aligned offsets), a loop
  /// from 0, and every other term and the constant whole multiples of the lanes.
  bool aligned(BufferId b, const Expr &index) const {
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

  /// The vector of a load in a vector loop: contiguous loads are one vector load,
  /// broadcast ones one scalar load splatted, the rest lane by lane.
  std::string vector_load(const Instr &i, const std::vector<std::string> &v) {
    DType t = i.dtype;
    std::string type = vt(t), ptr = names_.at(i.buffer);
    COIL_ASSERT(!contains(k_.internal, i.buffer), k_.name, " reads internal ", p_.buffer(i.buffer).name,
                " where no member computed it");
    if (i.indirect.empty() && i.args[0] < 0) {
      if (auto tile = tiles_.find(forward_key(i.buffer, i.index)); tile != tiles_.end())
        return contiguous_load(tile->second + " + " + tile_position_, t, false);
      ir::AccessFact f = ir::access_of(i.index, vvar_, ranges_);
      if (f.kind == ir::Access::Broadcast) {
        int lanes = std::exchange(vlanes_, 0);
        std::string scalar = def(value_type(t), from_storage(ptr + "[" + index(i.index) + "]", t));
        vlanes_ = lanes;
        return type + "(" + scalar + ")";
      }
      if (f.kind == ir::Access::Contiguous) return contiguous_load(ptr + " + " + offset(i.index), t, aligned(i.buffer, i.index));
    }
    // Lane by lane: strided and irregular indices, indices read from data, masked loads.
    lane_index_ = true;
    std::string at = element_index(i, [&](int arg) { return v[size_t(arg)] + "[l]"; });
    lane_index_ = false;
    std::string value = from_storage(ptr + "[" + at + "]", t);
    if (i.args[0] >= 0) value = v[size_t(i.args[0])] + "[l] ? " + value + " : " + literal(i.value, t);
    return type + "::generate([&](int l) { return " + value + "; })";
  }

  /// One vector of dtype t from `at` onwards, widened from bf16/f16 storage.
  std::string contiguous_load(const std::string &at, DType t, bool is_aligned) const {
    if (t == DType::BF16) return "coil_rt::load_bf16<" + std::to_string(vlanes_) + ">(" + at + ")";
    if (t == DType::F16) return "coil_rt::load_f16<" + std::to_string(vlanes_) + ">(" + at + ")";
    return vt(t) + (is_aligned ? "::load(" : "::loadu(") + at + ")";
  }

  /// The element a load reads: its index, with indices read from data checked.
  std::string element_index(const Instr &i, const std::function<std::string(int)> &value_of) const {
    if (i.indirect.empty()) return index(i.index);
    std::string at = cpp_index(ir::simplify(i.index, ranges_),
                               [&](VarId x) {
                                 if (x.id >= ir::kIndirectBase)
                                   return "int64_t(" + value_of(i.indirect[size_t(x.id - ir::kIndirectBase)]) + ")";
                                 return var(x);
                               },
                               ranges_);
    return "coil_rt::checked_index(" + at + ", " + std::to_string(storage_extent(p_.buffer(i.buffer).type)) + ", err)";
  }

  /// `index` as an offset added to a pointer: bracketed when it subtracts.
  std::string offset(const Expr &e) const {
    std::string at = index(e);
    return at.find(" - ") == std::string::npos ? at : "(" + at + ")";
  }

  /// The values of an index expression in the lanes of a vector loop.
  std::string vector_index(const Expr &e) {
    std::string type = vector_type(DType::I64, vlanes_);
    ir::AccessFact f = ir::access_of(e, vvar_, ranges_);
    if (f.kind == ir::Access::Broadcast) return type + "(" + index(e) + ")";
    if (f.kind != ir::Access::Irregular) return type + "::iota(" + index(e) + ", " + std::to_string(f.stride) + ")";
    lane_index_ = true;
    std::string at = index(e);
    lane_index_ = false;
    return type + "::generate([&](int l) { return " + at + "; })";
  }

  /// Writes vector `value` of dtype t to buffer `out` at `at`.
  void vector_store(BufferId out, const Expr &at, const std::string &value, DType t) {
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

  /// Loops over `sizes` (variables first, first+1, ...) around `body`. With `lanes`, the
  /// innermost loop steps by vectors and the body is emitted twice: once on vectors, once
  /// for the scalar tail. Without, `clauses` (when set) marks the innermost `omp simd`.
  void emit_nest(const Shape &sizes, int first, bool parallel, int64_t work, const std::optional<std::string> &clauses,
                 int lanes, const std::function<void()> &body) {
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
    while (sizes[size_t(inner)] == 1) --inner;
    Shape outer = sizes;
    outer[size_t(inner)] = 1;  // open_loops skips it
    int loops = open_loops(outer, first, parallel, false, work);
    VarId x{first + inner};
    std::string name = var(x);
    int64_t size = sizes[size_t(inner)], main = size / lanes * lanes;
    bool region = parallel && loops == 0 && open_parallel_for("", work);
    w_.open("for (int64_t " + name + " = 0; " + name + " < " + std::to_string(main) + "; " + name + " += " + std::to_string(lanes) + ")");
    if (region) emit_reach({x});
    vector_body(x, lanes, true, body);
    w_.close();
    if (region) w_.close();
    if (main < size) {
      w_.open("for (int64_t " + name + " = " + std::to_string(main) + "; " + name + " < " + std::to_string(size) + "; ++" + name + ")");
      push();
      body();
      pop();
      w_.close();
    }
    close_loops(loops);
  }

  void vector_body(VarId x, int lanes, bool start_aligned, const std::function<void()> &body) {
    vlanes_ = lanes;
    vvar_ = x;
    vector_start_aligned_ = start_aligned;
    push();
    body();
    pop();
    vlanes_ = 0;
  }

  std::string forward_key(BufferId b, const Expr &at) const { return p_.buffer(b).name + "[" + ir::str(ir::simplify(at, ranges_)) + "]"; }

  std::optional<std::string> forwarded(BufferId b, const Expr &at) const {
    std::string key = forward_key(b, at);
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->forwarded.find(key); f != it->forwarded.end()) return f->second;
    return std::nullopt;
  }

  // ---- bodies ---------------------------------------------------------------------------

  std::string load(const ir::Body &body, const Instr &i, const std::vector<std::string> &v) {
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

  std::vector<std::string> emit_body(const ir::Body &body) {
    std::vector<std::string> v(body.instrs.size());
    std::vector<std::string> keys = row_cache_.empty() ? std::vector<std::string>{} : structural_keys(body);
    for (size_t k = 0; k < body.instrs.size(); ++k) {
      const Instr &i = body.instrs[k];
      std::string type = vt(i.dtype), rhs;
      const RowCache *cache = nullptr;
      if (!keys.empty())
        if (auto it = row_cache_.find(keys[k]); it != row_cache_.end()) cache = &it->second;
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
        case Op::Constant: v[k] = vector_literal(i.value, i.dtype, vlanes_); continue;
        case Op::Index:
          rhs = vlanes_ ? cpp_cast(vector_index(i.index), DType::I64, i.dtype, vlanes_) : cpp_cast(index(i.index), DType::I64, i.dtype);
          break;
        default: {
          std::vector<std::string> args;
          for (int a = 0; a < ir::op_arity(i.op); ++a) args.push_back(v[size_t(i.args[size_t(a)])]);
          DType in = i.op == Op::Where ? i.dtype : body.at(i.args[0]).dtype;
          rhs = cpp_op(i.op, in, i.dtype, args, vlanes_);
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
    return v;
  }

  // ---- values passed from one pass over a row to a later one --------------------------------

  /// A value two passes over a row compute alike (softmax's exp(x - max), in the pass that
  /// sums it and the pass that divides by the sum): the first writes it to a row buffer, the
  /// later ones read it back instead of computing it again.
  struct RowCache {
    int step = 0;      // the pass that computes it
    std::string name;  // the row buffer
  };

  /// A key per value of `body` that is equal for values computed alike from the same
  /// memory: loads by buffer and index, ops by op, dtype and operands.
  std::vector<std::string> structural_keys(const ir::Body &body) const {
    std::vector<std::string> keys(body.instrs.size());
    for (size_t k = 0; k < body.instrs.size(); ++k) {
      const Instr &i = body.instrs[k];
      std::string key = std::string(ir::op_name(i.op)) + ":" + std::string(short_name(i.dtype));
      if (i.op == Op::Load) {
        if (!i.indirect.empty() || i.args[0] >= 0) key += "#" + std::to_string(unshared_keys_++);  // never shared
        key += "(" + p_.buffer(i.buffer).name + "[" + ir::str(ir::simplify(i.index, ranges_)) + "])";
      } else if (i.op == Op::Constant) {
        key += "(" + literal(i.value, i.dtype) + ")";
      } else if (i.op == Op::Index) {
        key += "(" + ir::str(ir::simplify(i.index, ranges_)) + ")";
      } else {
        key += "(";
        for (int a = 0; a < ir::op_arity(i.op); ++a) key += (a ? "," : "") + keys[size_t(i.args[size_t(a)])];
        key += ")";
      }
      keys[k] = key;
    }
    return keys;
  }

  static bool costly(Op op) {
    switch (op) {
      case Op::Exp: case Op::Exp2: case Op::Expm1: case Op::Log: case Op::Log1p: case Op::Log2: case Op::Tanh:
      case Op::Sigmoid: case Op::Erf: case Op::Pow: case Op::Sin: case Op::Cos: case Op::Tan: case Op::Atan2: return true;
      default: return false;
    }
  }

  /// The row buffers of a reduction kernel whose rows run on threads: costly values of
  /// floating type that a later pass computes again, while a row of each fits in 32 KiB.
  void plan_row_cache() {
    int64_t rn = checked_numel(k_.reduction_ranges);
    if (rn <= 0) return;
    std::map<std::string, int> first;  // key -> the pass that computes it first
    int step = 0;
    for (const ir::Step &s : k_.steps) {
      ++step;
      if (!s.inner) continue;
      for (int n : s.nodes) {
        const ir::Body &body = p_.nodes[size_t(n)].body;
        std::vector<std::string> keys = structural_keys(body);
        for (size_t k = 0; k < keys.size(); ++k) {
          const Instr &i = body.instrs[k];
          if (!costly(i.op) || !is_floating(i.dtype) || rn * itemsize(i.dtype) > 32768) continue;
          auto [it, inserted] = first.emplace(keys[k], step);
          if (!inserted && it->second < step && !row_cache_.count(keys[k]) && row_cache_.size() < 2) {
            std::string name = "row_value" + std::to_string(row_cache_.size());
            row_cache_[keys[k]] = {it->second, name};
            w_.line("alignas(64) " + value_type(i.dtype) + " " + name + "[" + std::to_string(rn) + "];");
          }
        }
      }
    }
  }

  // Stores value `v` (of dtype `from`) as output `out` of node `n` at its store index.
  void store(const Node &n, BufferId out, const std::string &v, DType from) {
    DType t = p_.buffer(out).type.dtype;
    Expr at = ir::store_index(n, p_.buffer(out));
    std::string value = from == t ? v : def(vt(t), cpp_cast(v, from, t, vlanes_));
    if (lanes_ && row_scope_ >= 0 && !is_inner_member(n)) {
      // A value per row of a tiled kernel: one per lane, kept for the passes after.
      std::string lanes = "row_" + p_.buffer(out).name;
      w_.line(lanes + "[l] = " + value + ";");
      scopes_[size_t(row_scope_)].forwarded[forward_key(out, at)] = lanes + "[l]";
    } else {
      scopes_.back().forwarded[forward_key(out, at)] = value;
    }
    if (contains(k_.internal, out)) return;
    // f32_to_bf16(round_bf16(x)) is f32_to_bf16(x).
    auto unrounded = rounded_from_.find(value);
    std::string stored = unrounded != rounded_from_.end() && (t == DType::BF16 || t == DType::F16) ? unrounded->second : value;
    if (vlanes_) return vector_store(out, at, stored, t);
    w_.line(names_.at(out) + "[" + index(at) + "] = " + to_storage(stored, t) + ";");
  }

  void emit_pointwise_member(const Node &n) {
    auto v = emit_body(n.body);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      store(n, n.outputs[k], v[size_t(n.body.results[k])], n.body.at(n.body.results[k]).dtype);
  }

  // ---- loops ----------------------------------------------------------------------------

  // Nested loops over `sizes` with variables first..; `parallel` puts the outer ones on
  // threads, `simd` marks the innermost as vectorizable. Returns the braces opened: the
  // loops, and the parallel region when it holds each thread's Prefaults.
  int open_loops(const Shape &all_sizes, int first, bool parallel, bool simd, int64_t work,
                 const std::string &simd_clauses = "") {
    bool region = false;
    // A dim of size 1 is no loop: index() folds its variable to 0.
    Shape sizes;
    std::vector<int> vars;
    for (size_t d = 0; d < all_sizes.size(); ++d)
      if (all_sizes[d] != 1) {
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
          w_.line("#pragma omp parallel for simd num_threads(coil_rt::threads_for(" + std::to_string(work) + "))" +
                  simd_clauses);
        } else {
          region = open_parallel_for(collapse, work);
        }
      } else if (innermost && simd) {
        w_.line("#pragma omp simd" + simd_clauses);
      }
      std::string x = var(VarId{vars[d]});
      w_.open("for (int64_t " + x + " = 0; " + x + " < " + std::to_string(sizes[d]) + "; ++" + x + ")");
    }
    if (region) {  // the loops on threads are all but an innermost simd one
      std::vector<VarId> on_threads;
      for (size_t d = 0; d < sizes.size() - (simd ? 1 : 0); ++d) on_threads.push_back(VarId{vars[d]});
      emit_reach(on_threads);
    }
    return int(sizes.size()) + (region ? 1 : 0);
  }

  // ---- the first touch of large outputs --------------------------------------------------

  /// A graph output of at least 1 MiB that a kernel writes, prefaulted by each thread
  /// ahead of its writes (coil_rt::Prefault in prelude.h): the caller owns that memory and
  /// may hand it over freshly mapped. Arena buffers are backed after the first call.
  struct PrefaultOut {
    BufferId buffer;
    std::string name;  // the thread's coil_rt::Prefault
    Expr at;           // the store's index
  };

  void plan_prefault() {
    prefault_.clear();
    if (!prefault_on_) return;
    if (k_.kind != ir::KernelKind::Pointwise && k_.kind != ir::KernelKind::Reduction) return;
    for (BufferId b : params_) {
      if (!written(b) || storage_.in_arena.count(b) || shares_memory(b)) continue;
      const TensorType &t = p_.buffer(b).type;
      if (storage_extent(t) * itemsize(t.dtype) < (int64_t(1) << 20)) continue;
      for (int m : k_.nodes)
        if (contains(p_.nodes[size_t(m)].outputs, b)) {
          prefault_.push_back({b, "prefault" + std::to_string(prefault_.size()), ir::store_index(p_.nodes[size_t(m)], p_.buffer(b))});
          break;
        }
    }
  }

  /// `#pragma omp parallel for` with `clauses` (" collapse(2)"), threads by `work`. With
  /// outputs to prefault it opens a parallel region that gives each thread its Prefaults,
  /// with `#pragma omp for` inside, and returns true: the caller closes one brace more.
  bool open_parallel_for(const std::string &clauses, int64_t work) {
    std::string threads = " num_threads(coil_rt::threads_for(" + std::to_string(work) + "))";
    if (prefault_.empty()) {
      w_.line("#pragma omp parallel for" + clauses + threads);
      return false;
    }
    w_.line("#pragma omp parallel" + threads);
    w_.open("");
    for (const PrefaultOut &o : prefault_) {
      const TensorType &t = p_.buffer(o.buffer).type;
      w_.line("coil_rt::Prefault " + o.name + "(" + names_.at(o.buffer) + ", " +
              std::to_string(storage_extent(t) * itemsize(t.dtype)) + ");");
    }
    w_.line("#pragma omp for" + clauses);
    return true;
  }

  /// Each prefaulted output reached for the span one iteration of the loops on threads
  /// writes: the variables `on_threads` as they are, every other from its first value
  /// (lo) to its last (hi).
  void emit_reach(const std::vector<VarId> &on_threads, const std::map<int, std::string> &tile_start = {}) {
    auto at = [&](const Expr &index, bool last) {
      Expr fixed = ir::substitute(index, [&](VarId v) -> std::optional<Expr> {
        if (tile_start.count(v.id) || std::find(on_threads.begin(), on_threads.end(), v) != on_threads.end()) return std::nullopt;
        return Expr(last ? std::max<int64_t>(ranges_.size_of(v).value_or(1) - 1, 0) : 0);
      });
      return cpp_index(ir::simplify(fixed, ranges_), [&](VarId v) -> std::string {
        auto t = tile_start.find(v.id);
        if (t == tile_start.end()) return var(v);
        if (!last) return t->second;
        return "std::min<int64_t>(" + t->second + " + " + std::to_string(kTile - 1) + ", " +
               std::to_string(ranges_.size_of(v).value_or(1) - 1) + ")";
      }, ranges_);
    };
    for (const PrefaultOut &o : prefault_)
      w_.line(o.name + ".reach(" + names_.at(o.buffer) + " + " + at(o.at, false) + ", " + names_.at(o.buffer) + " + " +
              at(o.at, true) + ");");
  }

  void close_loops(int n) {
    for (int i = 0; i < n; ++i) w_.close();
  }

  int64_t body_work() const {
    int64_t ops = 0;
    for (int n : k_.nodes) ops += int64_t(p_.nodes[size_t(n)].body.instrs.size());
    return std::max<int64_t>(ops, 1);
  }

  // When a load walks the last two dims the other way round from the store (x + y.t()),
  // both are cut into square tiles, so that the lines of both stay in cache.
  bool tile_last_two_dims() const { return loads_transposed_in_last_two_dims(p_, k_); }
  static constexpr int64_t kTile = 32;

  /// Whether the tiles run on vectors: each transposed load is first copied into a tile of
  /// its own, transposed (coil_rt::transpose_tile), which the rows of the tile then read
  /// as vectors like any contiguous load. Tiles at the edges run in scalar code.
  int tile_lanes() const { return kernel_lanes_ > 0 && kTile % kernel_lanes_ == 0 ? kernel_lanes_ : 0; }

  /// The loads to transpose through a tile: direct loads of the kernel's inputs that are
  /// contiguous along the second last dim and strided along the last, each distinct one
  /// once, at most four (the rest are read lane by lane).
  std::vector<const Instr *> transposed_loads() const {
    int n = int(k_.ranges.size());
    std::vector<const Instr *> out;
    std::set<std::string> seen;
    for (int m : k_.nodes)
      for (const Instr &i : p_.nodes[size_t(m)].body.instrs) {
        if (i.op != Op::Load || !i.indirect.empty() || i.args[0] >= 0) continue;
        if (contains(k_.internal, i.buffer) || written(i.buffer)) continue;
        ir::AccessFact last = ir::access_of(i.index, VarId{n - 1}, ranges_), prev = ir::access_of(i.index, VarId{n - 2}, ranges_);
        if (prev.kind != ir::Access::Contiguous || last.kind != ir::Access::Affine) continue;
        if (out.size() < 4 && seen.insert(forward_key(i.buffer, i.index)).second) out.push_back(&i);
      }
    return out;
  }

  void emit_tiled_pointwise() {
    int n = int(k_.ranges.size());
    std::string tile = std::to_string(kTile);
    push();
    std::vector<std::pair<std::string, int64_t>> loops;  // loop variable, trip count
    for (int d = 0; d < n - 2; ++d)
      if (k_.ranges[size_t(d)] > 1) loops.push_back({var(VarId{d}), k_.ranges[size_t(d)]});
    for (int d = n - 2; d < n; ++d) loops.push_back({var(VarId{d}) + "t", (k_.ranges[size_t(d)] + kTile - 1) / kTile});
    bool region = open_parallel_for(" collapse(" + std::to_string(loops.size()) + ")", checked_numel(k_.ranges) * body_work());
    for (const auto &[x, count] : loops) w_.open("for (int64_t " + x + " = 0; " + x + " < " + std::to_string(count) + "; ++" + x + ")");
    std::string row = var(VarId{n - 2}), col = var(VarId{n - 1});
    int64_t rows = k_.ranges[size_t(n - 2)], cols = k_.ranges[size_t(n - 1)];
    w_.line("const int64_t " + row + "s = " + row + "t * " + tile + ", " + col + "s = " + col + "t * " + tile + ";");
    if (region) {
      std::vector<VarId> outer;
      for (int d = 0; d < n - 2; ++d) outer.push_back(VarId{d});
      emit_reach(outer, {{n - 2, row + "s"}, {n - 1, col + "s"}});
    }
    int lanes = tile_lanes();
    if (lanes > 0) {
      bool edges = rows % kTile != 0 || cols % kTile != 0;
      if (edges)
        w_.open("if (" + row + "s + " + tile + " <= " + std::to_string(rows) + " && " + col + "s + " + tile + " <= " +
                std::to_string(cols) + ")");
      push();
      emit_vector_tile(lanes);
      pop();
      if (edges) {
        w_.close();
        w_.open("else");
      }
    }
    if (lanes == 0 || rows % kTile != 0 || cols % kTile != 0) {
      push();
      emit_scalar_tile();
      pop();
      if (lanes > 0) w_.close();
    }
    close_loops(int(loops.size()) + (region ? 1 : 0));
    pop();
  }

  // A whole tile: the transposed loads into tiles of their own, then rows of vectors.
  void emit_vector_tile(int lanes) {
    int n = int(k_.ranges.size());
    std::string tile = std::to_string(kTile), row = var(VarId{n - 2}), col = var(VarId{n - 1});
    auto at_tile_start = [&](VarId v) { return v.id == n - 2 ? row + "s" : v.id == n - 1 ? col + "s" : var(v); };
    for (const Instr *i : transposed_loads()) {
      std::string name = "tile" + std::to_string(tiles_.size()), type = storage_type(p_.buffer(i->buffer).type.dtype);
      int64_t stride = ir::access_of(i->index, VarId{n - 1}, ranges_).stride;
      w_.line("alignas(64) " + type + " " + name + "[" + std::to_string(kTile * kTile) + "];");
      w_.line("coil_rt::transpose_tile<" + type + ", " + tile + ">(" + names_.at(i->buffer) + " + " +
              cpp_index(ir::simplify(i->index, ranges_), at_tile_start, ranges_) + ", " + std::to_string(stride) + ", " + name + ");");
      tiles_[forward_key(i->buffer, i->index)] = name;
    }
    tile_position_ = "(" + row + " - " + row + "s) * " + tile + " + " + col + " - " + col + "s";
    w_.open("for (int64_t " + row + " = " + row + "s; " + row + " < " + row + "s + " + tile + "; ++" + row + ")");
    w_.open("for (int64_t " + col + " = " + col + "s; " + col + " < " + col + "s + " + tile + "; " + col + " += " +
            std::to_string(lanes) + ")");
    vector_body(VarId{n - 1}, lanes, false, [&] {
      for (int m : k_.nodes) emit_pointwise_member(p_.nodes[size_t(m)]);
    });
    close_loops(2);
    tiles_.clear();
  }

  // A tile in scalar code under omp simd, cut at the edges of the last two dims.
  void emit_scalar_tile() {
    int n = int(k_.ranges.size());
    for (int d = n - 2; d < n; ++d) {
      std::string x = var(VarId{d}), size = std::to_string(k_.ranges[size_t(d)]);
      if (d == n - 1) w_.line("#pragma omp simd");
      w_.open("for (int64_t " + x + " = " + x + "s; " + x + " < std::min<int64_t>(" + size + ", " + x + "s + " +
              std::to_string(kTile) + "); ++" + x + ")");
    }
    push();
    for (int m : k_.nodes) emit_pointwise_member(p_.nodes[size_t(m)]);
    pop();
    close_loops(2);
  }

  void emit_pointwise() {
    if (tile_last_two_dims()) return emit_tiled_pointwise();
    push();
    emit_nest(k_.ranges, 0, true, checked_numel(k_.ranges) * body_work(), std::string(), lanes_for(k_.ranges), [&] {
      for (int n : k_.nodes) emit_pointwise_member(p_.nodes[size_t(n)]);
    });
    pop();
  }

  // ---- reductions -------------------------------------------------------------------------

  struct Acc {
    const Node *node;
    std::string a, b, c;  // value (or mean); index (or m2); NaN flag (or count)
    DType in;
    std::string shift;    // Welford as shifted sums: the row's first element
    std::string va, vb, vc;  // the vector accumulators of a vectorized pass (lanes: vlanes)
    int vlanes = 0;
  };

  Acc start(const Node &n) {
    std::string base = "acc" + std::to_string(next_acc_++);
    DType in = n.body.at(n.body.results[0]).dtype;
    std::string T = value_type(in);
    bool fl = is_floating(in);
    auto lowest = fl ? "-std::numeric_limits<" + T + ">::infinity()" : "std::numeric_limits<" + T + ">::lowest()";
    auto highest = fl ? "std::numeric_limits<" + T + ">::infinity()" : "std::numeric_limits<" + T + ">::max()";
    std::vector<std::array<std::string, 3>> vars;  // type, name, initial value
    switch (n.reduce_op) {
      case ir::ReduceOp::Sum: vars = {{T, base, "0"}}; break;
      case ir::ReduceOp::Prod: vars = {{T, base, "1"}}; break;
      case ir::ReduceOp::Max:
      case ir::ReduceOp::Min:
        vars = {{T, base, n.reduce_op == ir::ReduceOp::Max ? lowest : highest}};
        if (fl) vars.push_back({"int", base + "_n", "0"});  // a NaN was seen: the result is NaN
        break;
      case ir::ReduceOp::Any: vars = {{"bool", base, "false"}}; break;
      case ir::ReduceOp::All: vars = {{"bool", base, "true"}}; break;
      case ir::ReduceOp::ArgMax:
      case ir::ReduceOp::ArgMin: vars = {{T, base, "0"}, {"int64_t", base + "_i", "-1"}}; break;
      case ir::ReduceOp::Welford: vars = {{"double", base, "0"}, {"double", base + "_i", "0"}, {"int64_t", base + "_n", "0"}}; break;
    }
    // In a kernel tiled over lanes of the last kept dim, each lane has its accumulator.
    std::string lane = lanes_ ? "[l]" : "";
    for (const auto &[type, name, init] : vars)
      w_.line(type + " " + name + (lanes_ ? "[" + std::to_string(lanes_) + "]" : " = " + init) + ";");
    if (lanes_) {
      w_.open("for (int64_t l = 0; l < " + std::to_string(lanes_) + "; ++l)");
      for (const auto &[type, name, init] : vars) w_.line(name + "[l] = " + init + ";");
      w_.close();
    }
    return Acc{&n, base + lane, base + "_i" + lane, base + "_n" + lane, in, "", "", "", "", 0};
  }

  void accumulate(const Acc &acc, const std::string &x) {
    if (vlanes_) return accumulate_vector(acc, x);
    std::string T = value_type(acc.in);
    bool fl = is_floating(acc.in);
    switch (acc.node->reduce_op) {
      case ir::ReduceOp::Sum:
        w_.line(acc.a + " = " + (fl ? acc.a + " + " + x : "coil_rt::add_w<" + T + ">(" + acc.a + ", " + x + ")") + ";");
        return;
      case ir::ReduceOp::Prod:
        w_.line(acc.a + " = " + (fl ? acc.a + " * " + x : "coil_rt::mul_w<" + T + ">(" + acc.a + ", " + x + ")") + ";");
        return;
      case ir::ReduceOp::Max:
      case ir::ReduceOp::Min: {
        // max/min without NaN, and NaN on the side: both are reductions OpenMP vectorizes.
        std::string cmp = acc.node->reduce_op == ir::ReduceOp::Max ? " > " : " < ";
        w_.line(acc.a + " = " + x + cmp + acc.a + " ? " + x + " : " + acc.a + ";");
        if (fl) w_.line(acc.c + " = " + acc.c + " | int(" + x + " != " + x + ");");
        return;
      }
      case ir::ReduceOp::Any: w_.line(acc.a + " = " + acc.a + " || " + "(" + x + " != 0);"); return;
      case ir::ReduceOp::All: w_.line(acc.a + " = " + acc.a + " && " + "(" + x + " != 0);"); return;
      case ir::ReduceOp::ArgMax:
      case ir::ReduceOp::ArgMin: {
        // PyTorch's rule: the first extreme wins, and NaN counts as the extreme.
        std::string cmp = acc.node->reduce_op == ir::ReduceOp::ArgMax ? " > " : " < ";
        std::string better = fl ? "(" + x + " != " + x + " || " + x + cmp + acc.a + ")" : "(" + x + cmp + acc.a + ")";
        std::string stuck = fl ? acc.a + " != " + acc.a : "false";
        w_.line("if (" + acc.b + " < 0 || (!(" + stuck + ") && " + better + ")) { " + acc.a + " = " + x + "; " + acc.b +
                " = " + position() + "; }");
        return;
      }
      case ir::ReduceOp::Welford:
        if (!acc.shift.empty()) {
          // Sums of (x - K) and (x - K)^2 in double, K the row's first element: plain
          // sums vectorize, and with K within the data's spread nothing cancels.
          w_.line("{ const double d_ = double(" + x + ") - " + acc.shift + "; " + acc.a + " += d_; " + acc.b + " += d_ * d_; ++" +
                  acc.c + "; }");
          return;
        }
        w_.line("{ double x_ = double(" + x + "); ++" + acc.c + "; double d_ = x_ - " + acc.a + "; " + acc.a +
                " += d_ / double(" + acc.c + "); " + acc.b + " += d_ * (x_ - " + acc.a + "); }");
        return;
    }
  }

  // ---- vector accumulators ------------------------------------------------------------------

  /// Whether every reduction of a pass has a vector form: argmax's first-index tie rule
  /// and Welford's running mean are sequential, and keep the pass scalar.
  static bool vector_forms(const std::vector<Acc> &accs) {
    for (const Acc &acc : accs) {
      ir::ReduceOp op = acc.node->reduce_op;
      if (op == ir::ReduceOp::ArgMax || op == ir::ReduceOp::ArgMin) return false;
      if (op == ir::ReduceOp::Welford && acc.shift.empty()) return false;
    }
    return true;
  }

  /// Declares the vector accumulators of `acc`, one partial result per lane.
  void start_vector(Acc &acc, int lanes) {
    acc.vlanes = lanes;
    acc.va = acc.a + "_v";
    std::string T = value_type(acc.in), V = vector_type(acc.in, lanes), B = vector_type(DType::Bool, lanes);
    bool fl = is_floating(acc.in);
    switch (acc.node->reduce_op) {
      case ir::ReduceOp::Sum: w_.line(V + " " + acc.va + "(0);"); return;
      case ir::ReduceOp::Prod: w_.line(V + " " + acc.va + "(1);"); return;
      case ir::ReduceOp::Max:
      case ir::ReduceOp::Min: {
        bool max = acc.node->reduce_op == ir::ReduceOp::Max;
        std::string init = fl ? std::string(max ? "-" : "") + "std::numeric_limits<" + T + ">::infinity()"
                              : "std::numeric_limits<" + T + ">::" + (max ? "lowest()" : "max()");
        w_.line(V + " " + acc.va + "(" + init + ");");
        if (fl) {
          acc.vc = acc.a + "_nv";
          w_.line(B + " " + acc.vc + "(false);");
        }
        return;
      }
      case ir::ReduceOp::Any: w_.line(B + " " + acc.va + "(false);"); return;
      case ir::ReduceOp::All: w_.line(B + " " + acc.va + "(true);"); return;
      case ir::ReduceOp::Welford:
        acc.vb = acc.a + "_v2";
        w_.line(vector_type(DType::F64, lanes) + " " + acc.va + "(0.0), " + acc.vb + "(0.0);");
        return;
      case ir::ReduceOp::ArgMax:
      case ir::ReduceOp::ArgMin: break;
    }
    COIL_ASSERT(false, "no vector form for ", acc.node->origin);
  }

  void accumulate_vector(const Acc &acc, const std::string &x) {
    std::string T = value_type(acc.in), V = vector_type(acc.in, vlanes_);
    bool fl = is_floating(acc.in);
    switch (acc.node->reduce_op) {
      case ir::ReduceOp::Sum:
        w_.line(acc.va + " = " + (fl ? acc.va + " + " + x : "coil_rt::add_w<" + T + ">(" + acc.va + ", " + x + ")") + ";");
        return;
      case ir::ReduceOp::Prod:
        w_.line(acc.va + " = " + (fl ? acc.va + " * " + x : "coil_rt::mul_w<" + T + ">(" + acc.va + ", " + x + ")") + ";");
        return;
      case ir::ReduceOp::Max:
      case ir::ReduceOp::Min: {
        std::string cmp = acc.node->reduce_op == ir::ReduceOp::Max ? " > " : " < ";
        w_.line(acc.va + " = coil_rt::where(" + x + cmp + acc.va + ", " + x + ", " + acc.va + ");");
        if (fl) w_.line(acc.vc + " = " + acc.vc + " || coil_rt::isnan(" + x + ");");
        return;
      }
      case ir::ReduceOp::Any:
      case ir::ReduceOp::All: {
        std::string truth = acc.in == DType::Bool ? x : "(" + x + " != " + V + "(0))";
        w_.line(acc.va + " = " + acc.va + (acc.node->reduce_op == ir::ReduceOp::Any ? " || " : " && ") + truth + ";");
        return;
      }
      case ir::ReduceOp::Welford: {
        std::string D = vector_type(DType::F64, vlanes_);
        w_.line("{ const " + D + " d_ = coil_rt::cast<double>(" + x + ") - " + D + "(" + acc.shift + "); " + acc.va + " = " +
                acc.va + " + d_; " + acc.vb + " = " + acc.vb + " + d_ * d_; " + acc.c + " += " + std::to_string(vlanes_) +
                "; }");
        return;
      }
      case ir::ReduceOp::ArgMax:
      case ir::ReduceOp::ArgMin: break;
    }
    COIL_ASSERT(false, "no vector form for ", acc.node->origin);
  }

  /// Folds the lanes of the vector accumulators into the scalar ones, lane 0 first: the
  /// same order on every run.
  void fold_vector(const Acc &acc) {
    if (!acc.vlanes) return;
    std::string T = value_type(acc.in), lanes = std::to_string(acc.vlanes);
    bool fl = is_floating(acc.in);
    switch (acc.node->reduce_op) {
      case ir::ReduceOp::Sum:
        w_.line(acc.a + " = " + (fl ? acc.a + " + coil_rt::hsum(" + acc.va + ")" : "coil_rt::add_w<" + T + ">(" + acc.a + ", coil_rt::hsum(" + acc.va + "))") + ";");
        return;
      case ir::ReduceOp::Prod:
        w_.line(acc.a + " = " + (fl ? acc.a + " * coil_rt::hprod(" + acc.va + ")" : "coil_rt::mul_w<" + T + ">(" + acc.a + ", coil_rt::hprod(" + acc.va + "))") + ";");
        return;
      case ir::ReduceOp::Welford:
        w_.line(acc.a + " += coil_rt::hsum(" + acc.va + "); " + acc.b + " += coil_rt::hsum(" + acc.vb + ");");
        return;
      default: break;
    }
    // max, min, any, all: the scalar merge, lane by lane.
    Acc lane = acc;
    lane.a = acc.va + "[l]";
    lane.c = acc.vc.empty() ? "" : "int(" + acc.vc + "[l])";
    w_.open("for (int l = 0; l < " + lanes + "; ++l)");
    merge(acc, lane);
    w_.close();
  }

  // The shift of a Welford reduction of `step`: its value at the row's first element.
  std::string emit_shift(const ir::Step &step, const Node &welford, const std::string &name) {
    w_.line("double " + name + " = 0;");
    if (checked_numel(k_.reduction_ranges) == 0) return name;
    w_.open("");
    for (size_t d = 0; d < k_.reduction_ranges.size(); ++d)
      w_.line("const int64_t " + var(VarId{int(k_.ranges.size() + d)}) + " = 0;");
    push();
    for (int n : step.nodes) {
      const Node &node = p_.nodes[size_t(n)];
      if (&node == &welford) {
        auto v = emit_body(node.body);
        w_.line(name + " = double(" + v[size_t(node.body.results[0])] + ");");
        break;
      }
      if (node.kind != ir::NodeKind::Reduction) emit_pointwise_member(node);
    }
    pop();
    w_.close();
    return name;
  }

  // The position of the current inner point among the reduced elements, row-major.
  std::string position() const {
    Expr linear(0);
    int n = int(k_.ranges.size());
    for (size_t d = 0; d < k_.reduction_ranges.size(); ++d)
      linear = linear * k_.reduction_ranges[d] + Expr(VarId{n + int(d)});
    return index(linear);
  }

  void finish(const Acc &acc) {
    const Node &n = *acc.node;
    switch (n.reduce_op) {
      case ir::ReduceOp::ArgMax:
      case ir::ReduceOp::ArgMin: store(n, n.outputs[0], acc.b, DType::I64); return;
      case ir::ReduceOp::Welford:
        if (!acc.shift.empty()) {
          std::string count = "double(" + acc.c + ")";
          store(n, n.outputs[0],
                def("double", acc.c + " ? " + acc.shift + " + " + acc.a + " / " + count + " : std::numeric_limits<double>::quiet_NaN()"),
                DType::F64);
          store(n, n.outputs[1], def("double", acc.c + " ? std::max(0.0, " + acc.b + " - " + acc.a + " * " + acc.a + " / " + count + ") : 0.0"),
                DType::F64);
          store(n, n.outputs[2], def("double", count), DType::F64);
          return;
        }
        store(n, n.outputs[0], def("double", acc.c + " ? " + acc.a + " : std::numeric_limits<double>::quiet_NaN()"), DType::F64);
        store(n, n.outputs[1], acc.b, DType::F64);
        store(n, n.outputs[2], def("double", "double(" + acc.c + ")"), DType::F64);
        return;
      case ir::ReduceOp::Any:
      case ir::ReduceOp::All: store(n, n.outputs[0], acc.a, DType::Bool); return;
      case ir::ReduceOp::Max:
      case ir::ReduceOp::Min:
        if (is_floating(acc.in)) {
          store(n, n.outputs[0],
                def(value_type(acc.in),
                    acc.c + " ? std::numeric_limits<" + value_type(acc.in) + ">::quiet_NaN() : " + acc.a),
                acc.in);
          return;
        }
        store(n, n.outputs[0], acc.a, acc.in);
        return;
      case ir::ReduceOp::Sum:
      case ir::ReduceOp::Prod: store(n, n.outputs[0], acc.a, acc.in); return;
    }
  }

  // `reduction(...)` clauses that let the pass over a row run as SIMD, or nothing when a
  // reduction of the pass has no such form (argmax's tie rule, Welford).
  static std::optional<std::string> simd_clauses(const std::vector<Acc> &accs) {
    std::string out;
    for (const Acc &acc : accs) {
      bool fl = is_floating(acc.in);
      switch (acc.node->reduce_op) {
        case ir::ReduceOp::Sum: out += " reduction(+:" + acc.a + ")"; break;
        case ir::ReduceOp::Prod: out += " reduction(*:" + acc.a + ")"; break;
        case ir::ReduceOp::Any: out += " reduction(||:" + acc.a + ")"; break;
        case ir::ReduceOp::All: out += " reduction(&&:" + acc.a + ")"; break;
        case ir::ReduceOp::Max:
        case ir::ReduceOp::Min:
          out += std::string(" reduction(") + (acc.node->reduce_op == ir::ReduceOp::Max ? "max:" : "min:") + acc.a + ")";
          if (fl) out += " reduction(|:" + acc.c + ")";
          break;
        case ir::ReduceOp::Welford:
          if (acc.shift.empty()) return std::nullopt;
          out += " reduction(+:" + acc.a + ") reduction(+:" + acc.b + ") reduction(+:" + acc.c + ")";
          break;
        case ir::ReduceOp::ArgMax:
        case ir::ReduceOp::ArgMin: return std::nullopt;
      }
    }
    return out;
  }

  static bool is_inner_member(const Node &n) {
    return n.kind == ir::NodeKind::Pointwise && !n.reduction_ranges.empty();
  }

  // Lanes of the last kept dim run side by side in each pass when the reduced elements are
  // far apart in memory and neighbouring rows are contiguous (a sum over dim 0): the pass
  // then reads whole cache lines and vectorizes across rows.
  bool tile_over_last_kept_dim() const {
    return !k_.ranges.empty() && k_.ranges.back() >= 16 && rows_contiguous_across_reduction(p_, k_);
  }

  void open_lanes(int64_t block) {
    w_.line("#pragma omp simd");
    w_.open("for (int64_t l = 0; l < lanes; ++l)");
    std::string x = var(VarId{int(k_.ranges.size()) - 1});
    w_.line("const int64_t " + x + " = " + x + "b * " + std::to_string(block) + " + l;");
    push();
  }

  void close_lanes() {
    pop();
    w_.close();
  }

  void emit_tiled_reduction() {
    const int64_t block = 64;
    int n = int(k_.ranges.size());
    int64_t last = k_.ranges.back(), blocks = (last + block - 1) / block;
    int64_t work = checked_numel(k_.ranges) * std::max<int64_t>(checked_numel(k_.reduction_ranges), 1) * body_work();
    push();
    Shape outer(k_.ranges.begin(), k_.ranges.end() - 1);
    outer.push_back(blocks);
    int loops = 0;
    std::vector<int> dims;
    for (size_t d = 0; d < outer.size(); ++d)
      if (outer[d] > 1 || d + 1 == outer.size()) dims.push_back(int(d));
    w_.line("#pragma omp parallel for" + (dims.size() > 1 ? " collapse(" + std::to_string(dims.size()) + ")" : std::string()) +
            " num_threads(coil_rt::threads_for(" + std::to_string(work) + "))");
    for (int d : dims) {
      std::string x = var(VarId{d}) + (d == n - 1 ? "b" : "");
      w_.open("for (int64_t " + x + " = 0; " + x + " < " + std::to_string(outer[size_t(d)]) + "; ++" + x + ")");
      ++loops;
    }
    std::string xb = var(VarId{n - 1}) + "b";
    w_.line("const int64_t lanes = std::min<int64_t>(" + std::to_string(block) + ", " + std::to_string(last) + " - " + xb +
            " * " + std::to_string(block) + ");");
    lanes_ = block;
    for (int m : k_.nodes) {
      const Node &node = p_.nodes[size_t(m)];
      if (is_inner_member(node)) continue;
      for (BufferId b : node.outputs)
        w_.line(value_type(p_.buffer(b).type.dtype) + " row_" + p_.buffer(b).name + "[" + std::to_string(block) + "];");
    }
    push();
    row_scope_ = int(scopes_.size()) - 1;
    for (const ir::Step &step : k_.steps) {
      if (!step.inner) {
        open_lanes(block);
        for (int m : step.nodes) emit_pointwise_member(p_.nodes[size_t(m)]);
        close_lanes();
        continue;
      }
      std::vector<Acc> accs;
      for (int m : step.nodes)
        if (p_.nodes[size_t(m)].kind == ir::NodeKind::Reduction) accs.push_back(start(p_.nodes[size_t(m)]));
      int inner = open_loops(k_.reduction_ranges, n, false, false, 0);
      open_lanes(block);
      size_t next = 0;
      for (int m : step.nodes) {
        const Node &node = p_.nodes[size_t(m)];
        if (node.kind != ir::NodeKind::Reduction) {
          emit_pointwise_member(node);
          continue;
        }
        auto v = emit_body(node.body);
        accumulate(accs[next++], v[size_t(node.body.results[0])]);
      }
      close_lanes();
      close_loops(inner);
      if (accs.empty()) continue;
      w_.open("for (int64_t l = 0; l < lanes; ++l)");
      w_.line("const int64_t " + var(VarId{n - 1}) + " = " + xb + " * " + std::to_string(block) + " + l;");
      push();
      for (const Acc &acc : accs) finish(acc);
      pop();
      w_.close();
    }
    pop();
    row_scope_ = -1;
    lanes_ = 0;
    close_loops(loops);
    pop();
  }

  // into <- into merged with from (fields are expressions: lane or thread partials).
  void merge(const Acc &into, const Acc &from) {
    std::string T = value_type(into.in);
    bool fl = is_floating(into.in);
    switch (into.node->reduce_op) {
      case ir::ReduceOp::Welford:
        w_.line("{ const int64_t nb = " + from.c + "; if (nb > 0) { const double na = double(" + into.c +
                "), n = na + double(nb), d = " + from.a + " - " + into.a + "; " + into.b + " = " + into.b + " + " + from.b +
                " + d * d * na * double(nb) / n; " + into.a + " = " + into.a + " + d * double(nb) / n; " + into.c + " += nb; } }");
        return;
      case ir::ReduceOp::Sum: w_.line(into.a + " = " + (fl ? into.a + " + " + from.a : "coil_rt::add_w<" + T + ">(" + into.a + ", " + from.a + ")") + ";"); return;
      case ir::ReduceOp::Prod: w_.line(into.a + " = " + (fl ? into.a + " * " + from.a : "coil_rt::mul_w<" + T + ">(" + into.a + ", " + from.a + ")") + ";"); return;
      case ir::ReduceOp::Any: w_.line(into.a + " = " + into.a + " || " + from.a + ";"); return;
      case ir::ReduceOp::All: w_.line(into.a + " = " + into.a + " && " + from.a + ";"); return;
      case ir::ReduceOp::Max:
      case ir::ReduceOp::Min: {
        std::string cmp = into.node->reduce_op == ir::ReduceOp::Max ? " > " : " < ";
        w_.line(into.a + " = " + from.a + cmp + into.a + " ? " + from.a + " : " + into.a + ";");
        if (fl) w_.line(into.c + " = " + into.c + " | " + from.c + ";");
        return;
      }
      case ir::ReduceOp::ArgMax:
      case ir::ReduceOp::ArgMin: COIL_ASSERT(false, "argmax partials are not merged");
    }
  }

  void emit_reduction() {
    if (tile_over_last_kept_dim()) return emit_tiled_reduction();
    push();
    int64_t work = checked_numel(k_.ranges) * std::max<int64_t>(checked_numel(k_.reduction_ranges), 1) * body_work();
    int outer = open_loops(k_.ranges, 0, true, false, work);
    if (outer == 0) w_.open("");
    push();
    if (outer > 0) plan_row_cache();  // a row per thread: its buffers on the thread's stack
    step_index_ = 0;
    for (const ir::Step &step : k_.steps) {
      ++step_index_;
      if (!step.inner) {
        for (int n : step.nodes) emit_pointwise_member(p_.nodes[size_t(n)]);
        continue;
      }
      if (outer == 0 && split_across_threads(step)) {
        emit_split_step(step, work);
        continue;
      }
      std::vector<Acc> accs;
      for (int n : step.nodes)
        if (p_.nodes[size_t(n)].kind == ir::NodeKind::Reduction) accs.push_back(start(p_.nodes[size_t(n)]));
      for (Acc &acc : accs)
        if (acc.node->reduce_op == ir::ReduceOp::Welford) acc.shift = emit_shift(step, *acc.node, acc.a + "_k");
      int lanes = vector_forms(accs) ? lanes_for(k_.reduction_ranges) : 0;
      for (Acc &acc : accs)
        if (lanes) start_vector(acc, lanes);
      emit_nest(k_.reduction_ranges, int(k_.ranges.size()), false, 0, simd_clauses(accs), lanes, [&] { emit_pass(step, accs); });
      for (const Acc &acc : accs) fold_vector(acc);
      for (const Acc &acc : accs) finish(acc);
    }
    row_cache_.clear();
    pop();
    if (outer == 0) w_.close();
    close_loops(outer);
    pop();
  }

  // One pass of `step` over the reduced elements: its members in order, each reduction
  // adding to its accumulator.
  void emit_pass(const ir::Step &step, const std::vector<Acc> &accs) {
    size_t next = 0;
    for (int n : step.nodes) {
      const Node &node = p_.nodes[size_t(n)];
      if (node.kind != ir::NodeKind::Reduction) {
        emit_pointwise_member(node);
        continue;
      }
      auto v = emit_body(node.body);
      accumulate(accs[next++], v[size_t(node.body.results[0])]);
    }
  }

  // A reduction to a single row (x.sum()) runs on one thread unless its elements are
  // split: chunks of the first reduced dim go to threads, and their partial results are
  // combined after the parallel loop in a fixed order, so a run gives the same result
  // every time with the same thread count.
  bool split_across_threads(const ir::Step &step) const {
    std::vector<Acc> probe;
    for (int n : step.nodes) {
      const Node &node = p_.nodes[size_t(n)];
      if (node.kind != ir::NodeKind::Reduction) continue;
      probe.push_back(Acc{&node, "a", "b", "c", node.body.at(node.body.results[0]).dtype, "", "", "", "", 0});
    }
    bool welford = std::any_of(probe.begin(), probe.end(), [](const Acc &a) { return a.node->reduce_op == ir::ReduceOp::Welford; });
    return !probe.empty() && !welford && simd_clauses(probe).has_value() && !k_.reduction_ranges.empty() &&
           k_.reduction_ranges[0] > 1;
  }

  void emit_split_step(const ir::Step &step, int64_t work) {
    std::string nt = "nt" + std::to_string(next_acc_);
    w_.line("const int " + nt + " = coil_rt::threads_for(" + std::to_string(work) + ");");
    std::vector<const Node *> reductions;
    for (int n : step.nodes)
      if (p_.nodes[size_t(n)].kind == ir::NodeKind::Reduction) reductions.push_back(&p_.nodes[size_t(n)]);
    // Partials are named after the per-thread accumulators, which start() numbers next.
    int first = next_acc_;
    for (size_t i = 0; i < reductions.size(); ++i) {
      std::string a = "acc" + std::to_string(first + int(i));
      DType in = reductions[i]->body.at(reductions[i]->body.results[0]).dtype;
      std::string T = reductions[i]->reduce_op == ir::ReduceOp::Any || reductions[i]->reduce_op == ir::ReduceOp::All ? "char" : value_type(in);
      w_.line(T + " " + a + "_part[coil_rt::kMaxThreads];");
      if (is_floating(in) && (reductions[i]->reduce_op == ir::ReduceOp::Max || reductions[i]->reduce_op == ir::ReduceOp::Min))
        w_.line("int " + a + "_n_part[coil_rt::kMaxThreads];");
    }
    w_.line("#pragma omp parallel for schedule(static, 1) num_threads(" + nt + ")");
    w_.open("for (int t = 0; t < " + nt + "; ++t)");
    push();
    std::vector<Acc> accs;
    for (const Node *n : reductions) accs.push_back(start(*n));
    std::string clauses = *simd_clauses(accs);
    int n0 = int(k_.ranges.size());
    std::string r0 = var(VarId{n0}), size0 = std::to_string(k_.reduction_ranges[0]);
    Shape rest(k_.reduction_ranges.begin() + 1, k_.reduction_ranges.end());
    // The thread's chunk of the first reduced dim; when it is the only one, its loop steps
    // by vectors (from the chunk's start: loads unaligned) and ends with a scalar tail.
    int lanes = checked_numel(rest) == 1 ? lanes_for({k_.reduction_ranges[0]}) : lanes_for(rest);
    for (Acc &acc : accs)
      if (lanes) start_vector(acc, lanes);
    w_.line("const int64_t " + r0 + "_begin = " + size0 + " * t / " + nt + ", " + r0 + "_end = " + size0 + " * (t + 1) / " + nt + ";");
    if (checked_numel(rest) == 1 && lanes) {
      std::string l = std::to_string(lanes);
      w_.line("const int64_t " + r0 + "_split = " + r0 + "_begin + (" + r0 + "_end - " + r0 + "_begin) / " + l + " * " + l + ";");
      w_.open("for (int64_t " + r0 + " = " + r0 + "_begin; " + r0 + " < " + r0 + "_split; " + r0 + " += " + l + ")");
      vector_body(VarId{n0}, lanes, false, [&] { emit_pass(step, accs); });
      w_.close();
      w_.open("for (int64_t " + r0 + " = " + r0 + "_split; " + r0 + " < " + r0 + "_end; ++" + r0 + ")");
    } else {
      if (checked_numel(rest) == 1) w_.line("#pragma omp simd" + clauses);
      w_.open("for (int64_t " + r0 + " = " + r0 + "_begin; " + r0 + " < " + r0 + "_end; ++" + r0 + ")");
    }
    if (checked_numel(rest) == 1) {
      push();
      emit_pass(step, accs);
      pop();
    } else {
      emit_nest(rest, n0 + 1, false, 0, clauses, lanes, [&] { emit_pass(step, accs); });
    }
    w_.close();
    for (const Acc &acc : accs) fold_vector(acc);
    for (const Acc &acc : accs) {
      w_.line(acc.a + "_part[t] = " + acc.a + ";");
      if (is_floating(acc.in) && (acc.node->reduce_op == ir::ReduceOp::Max || acc.node->reduce_op == ir::ReduceOp::Min))
        w_.line(acc.a + "_n_part[t] = " + acc.c + ";");
    }
    pop();
    w_.close();
    std::vector<Acc> total;
    for (const Node *n : reductions) total.push_back(start(*n));
    w_.open("for (int t = 0; t < " + nt + "; ++t)");
    for (size_t i = 0; i < total.size(); ++i) {
      Acc part = accs[i];
      part.a = accs[i].a + "_part[t]";
      part.c = accs[i].a + "_n_part[t]";
      merge(total[i], part);
    }
    w_.close();
    for (const Acc &acc : total) finish(acc);
  }

  // ---- scans, scatters, extern calls ---------------------------------------------------

  void emit_scan() {
    const Node &first = p_.nodes[size_t(k_.nodes[0])];
    int dim = first.scan_dim;
    Shape rows = k_.ranges;
    push();
    // Rows: every dim but the scanned one, in parallel; the scan runs in order.
    std::vector<int> dims;
    for (size_t d = 0; d < rows.size(); ++d)
      if (int(d) != dim) dims.push_back(int(d));
    int64_t work = checked_numel(k_.ranges) * body_work();
    for (size_t i = 0; i < dims.size(); ++i) {
      if (i == 0) w_.line("#pragma omp parallel for" + (dims.size() > 1 ? " collapse(" + std::to_string(dims.size()) + ")" : std::string()) +
                          " num_threads(coil_rt::threads_for(" + std::to_string(work) + "))");
      std::string x = var(VarId{dims[i]});
      w_.open("for (int64_t " + x + " = 0; " + x + " < " + std::to_string(rows[size_t(dims[i])]) + "; ++" + x + ")");
    }
    if (dims.empty()) w_.open("");
    std::vector<std::string> accs;
    for (int n : k_.nodes) {
      DType in = p_.nodes[size_t(n)].body.at(p_.nodes[size_t(n)].body.results[0]).dtype;
      accs.push_back("scan" + std::to_string(accs.size()));
      w_.line((is_floating(in) ? std::string("double ") : "int64_t ") + accs.back() + " = 0;");
    }
    std::string x = var(VarId{dim});
    w_.open("for (int64_t " + x + " = 0; " + x + " < " + std::to_string(rows[size_t(dim)]) + "; ++" + x + ")");
    push();
    for (size_t m = 0; m < k_.nodes.size(); ++m) {
      const Node &n = p_.nodes[size_t(k_.nodes[m])];
      auto v = emit_body(n.body);
      DType in = n.body.at(n.body.results[0]).dtype;
      const std::string &value = v[size_t(n.body.results[0])];
      w_.line(accs[m] + " = " +
              (is_floating(in) ? accs[m] + " + double(" + value + ")" : "coil_rt::add_w<int64_t>(" + accs[m] + ", int64_t(" + value + "))") +
              ";");
      store(n, n.outputs[0], cpp_cast(accs[m], is_floating(in) ? DType::F64 : DType::I64, in), in);
    }
    pop();
    w_.close();
    if (dims.empty()) w_.close();
    for (size_t i = 0; i < dims.size(); ++i) w_.close();
    pop();
  }

  void emit_scatter() {
    const Node &n = p_.nodes[size_t(k_.nodes[0])];
    const ir::View &init = n.operands[0];
    BufferId out = n.outputs[0];
    const TensorType &ot = p_.buffer(out).type;
    DType it = p_.buffer(init.buffer).type.dtype;
    push();
    // First the copy of the initial tensor, then the writes in iteration order (the last
    // write to an element wins, as on PyTorch's CPU).
    Shape sizes = ot.sizes;
    int loops = 0;
    for (size_t d = 0; d < sizes.size(); ++d) {
      std::string x = "c" + std::to_string(d);
      w_.open("for (int64_t " + x + " = 0; " + x + " < " + std::to_string(sizes[d]) + "; ++" + x + ")");
      ++loops;
    }
    std::vector<std::string> c;
    std::string dst = "0";
    for (size_t d = 0; d < sizes.size(); ++d) {
      c.push_back("c" + std::to_string(d));
      dst += " + c" + std::to_string(d) + "*" + std::to_string(ot.strides[d]);
    }
    w_.line(names_.at(out) + "[" + dst + "] = " + to_storage(cpp_cast(strided_element(p_, init, names_.at(init.buffer), c), it, ot.dtype), ot.dtype) + ";");
    for (int i = 0; i < loops; ++i) w_.close();
    int opened = open_loops(n.ranges, 0, false, false, 0);
    if (opened == 0) w_.open("");
    push();
    auto v = emit_body(n.body);
    std::string at = cpp_index(ir::simplify(n.scatter_index, ranges_),
                               [&](VarId x) {
                                 if (x.id >= ir::kIndirectBase)
                                   return "int64_t(" + v[size_t(n.body.results[size_t(x.id - ir::kIndirectBase + 1)])] + ")";
                                 return var(x);
                               },
                               ranges_);
    std::string o = def("int64_t", "coil_rt::checked_index(" + at + ", " + std::to_string(storage_extent(ot)) + ", err)");
    DType vt = n.body.at(n.body.results[0]).dtype;
    std::string value = def(value_type(ot.dtype), cpp_cast(v[size_t(n.body.results[0])], vt, ot.dtype));
    std::string current = from_storage(names_.at(out) + "[" + o + "]", ot.dtype);
    std::string written = n.accumulate ? cpp_op(Op::Add, ot.dtype, ot.dtype, {current, value}) : value;
    w_.line(names_.at(out) + "[" + o + "] = " + to_storage(written, ot.dtype) + ";");
    pop();
    if (opened == 0) w_.close();
    close_loops(opened);
    pop();
  }

  struct Scope {
    std::map<std::string, std::string> values;     // "type rhs" -> tmp
    std::map<std::string, std::string> forwarded;  // "buf[index]" -> tmp holding the element
  };

  const ir::Program &p_;
  const Kernel &k_;
  const Storage &storage_;
  Writer &w_;
  ir::Ranges ranges_;
  std::vector<BufferId> params_;
  std::map<BufferId, std::string> names_;
  std::vector<Scope> scopes_;
  int next_tmp_ = 0, next_acc_ = 0;
  std::map<std::string, RowCache> row_cache_;        // structural key -> its row buffer
  int step_index_ = 0;                               // the pass being emitted, from 1
  mutable int unshared_keys_ = 0;                    // keys of loads that no other value shares
  std::map<std::string, std::string> splat_of_;      // vector tmp -> the scalar in every lane
  std::map<std::string, std::string> rounded_from_;  // tmp = round_bf16/f16(source): tmp -> source
  int64_t lanes_ = 0;   // > 0: a reduction tiled over this many lanes of the last kept dim
  int kernel_lanes_;    // lanes of this kernel's vectors: the ISA's register of floats (0: scalar code)
  int vlanes_ = 0;      // > 0 while the body of a vector loop is emitted
  VarId vvar_{-1};      // the variable that loop steps
  bool vector_start_aligned_ = false;  // the loop starts at 0 (not at a thread's chunk)
  bool lane_index_ = false;            // indices are printed for lane l: vvar_ is (x + l)
  std::set<std::string> vector_values_;  // tmps that hold vectors
  int row_scope_ = -1;  // the scope of one row (one block of rows when tiled)
  std::map<std::string, std::string> tiles_;  // transposed load (forward key) -> its tile, in a vector tile
  std::string tile_position_;                 // the element of a tile that a vector tile's lane 0 reads
  bool prefault_on_;                          // the option cpp.prefault
  std::vector<PrefaultOut> prefault_;         // outputs each thread prefaults ahead of its writes
};

}  // namespace

std::vector<std::string> kernel_layouts(const sched::Schedule &s, const CppOptions &o) {
  Storage st = place_buffers(s);
  Writer unused;
  std::vector<std::string> out;
  for (const Kernel &k : s.ir.kernels) out.push_back(KernelEmitter(s.ir.program, k, st, o, unused).layout());
  return out;
}

std::string generate_cpp(const sched::Schedule &s, const CppOptions &o) {
  const ir::Program &p = s.ir.program;
  Storage st = place_buffers(s);
  Writer w;
  w.line("// Generated by coil: one function per kernel, then the entry points of coil/artifact.h.");
  w.line("#include <algorithm>");
  w.line("#include <cstdlib>");
  w.line("#include <mutex>");
  w.line("#include <vector>");
  w.line("#include \"coil/artifact.h\"");
  w.line("#include \"coil/extern_loops.h\"");
  w.line("#include \"coil/prelude.h\"");
  w.line("");
  w.line("using coil_rt::Vec;");
  w.line("");
  std::vector<std::pair<std::string, std::vector<BufferId>>> calls;
  for (const Kernel &k : s.ir.kernels) {
    w.line("// " + k.name + ": " + kernel_summary(p, k));
    KernelEmitter e(p, k, st, o, w);
    e.emit();
    w.line("");
    calls.push_back({k.name, e.params()});
  }
  emit_wrapper(s, st, calls, o.profile, w);
  return w.str();
}

}  // namespace coil::codegen
