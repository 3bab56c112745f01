// The Triton kernel driver: the block layout of each kernel kind, reductions (persistent,
// looped, split), scans, scatters, and the host program. The op table is triton_ops.cpp.
#include "codegen/triton/triton_codegen.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <tuple>

#include "codegen/common/access.h"
#include "codegen/common/writer.h"
#include "codegen/cpp/cpp_wrapper.h"
#include "codegen/triton/triton_ops.h"
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
using ir::ReduceOp;
using ir::VarId;

int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The block axes a value varies along: axis 0 and axis 1 of the program's block.
enum Dims : int { kNone = 0, kA0 = 1, kA1 = 2, kBoth = 3 };

struct Value {
  std::string name;
  int dims = kNone;
  bool literal = false;  // a Python literal or tl.full([]): no tensor yet
};

/// How a kernel's iteration space maps onto program blocks.
struct Layout {
  bool two_d = false;            // blocks of B0 x B1 (else one axis of B0)
  std::string b0 = "XBLOCK", b1 = "RBLOCK";
  int64_t block0 = 1, block1 = 1;
  int64_t n0 = 1, n1 = 1;        // elements along each axis
  std::vector<std::pair<VarId, int64_t>> vars0, vars1;  // the loop variables each axis covers, outer first
  bool looped = false;           // axis 1 is walked in a loop of B1 steps
  int program_axis0 = 0;         // which program_id runs along axis 0
};

class TritonEmitter {
 public:
  TritonEmitter(const ir::Program &p, const Kernel &k, const TritonOptions &o)
      : p_(p), k_(k), o_(o), ranges_(sched::ranges_of(k.ranges, k.reduction_ranges)) {
    if (auto it = o.configs.find(k.name); it != o.configs.end()) cfg_ = it->second;
  }

  /// The kernels of this schedule kernel (two for a split reduction or a scatter).
  std::vector<GpuKernel> emit(std::vector<std::vector<int>> &args, std::map<int, std::pair<DType, int64_t>> &scratch,
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

  /// After emit(): the configs worth timing, the one emitted (with every field resolved)
  /// first. See tuning_configs().
  std::vector<TritonConfig> candidates() const {
    std::vector<TritonConfig> out = {resolved_};
    int64_t rows = checked_numel(k_.ranges), rn = checked_numel(k_.reduction_ranges);
    if (rows * std::max<int64_t>(rn, 1) < (int64_t(1) << 16)) return out;
    auto add = [&](TritonConfig c) {
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    };
    const TritonConfig &d = resolved_;
    int64_t rpow = next_pow2(std::max<int64_t>(rn, 1));
    switch (strategy_) {
      case Strategy::Blocks:
        for (auto [b, w] : {std::pair<int64_t, int>{512, 4}, {1024, 4}, {1024, 8}, {2048, 8}, {4096, 8}})
          add({b, 0, w, 1, 0});
        break;
      case Strategy::Tiles:
        for (auto [b0, b1, w] : {std::tuple<int64_t, int64_t, int>{32, 64, 4}, {64, 64, 4}, {64, 64, 8}, {32, 128, 4}, {16, 128, 4}, {64, 128, 8}})
          add({b0, b1, w, 1, 0});
        break;
      case Strategy::Persistent:
        // Rows per program and warps, with 2 to 64 elements per thread and at most 10 configs.
        for (int64_t b0 : {1, 2, 4, 8, 16, 32})
          for (int w : {4, 8, 16})
            if (out.size() < 10 && b0 <= next_pow2(rows) && b0 * rpow <= 16384 && b0 * rpow >= 64 * w &&
                b0 * rpow / (32 * w) <= 64)
              add({b0, rpow, w, 1, 1});
        break;
      case Strategy::Looped:
        for (auto [b1, w, st] : {std::tuple<int64_t, int, int>{1024, 4, 1}, {2048, 4, 1}, {4096, 8, 1}, {4096, 16, 1}, {2048, 8, 2}})
          add({1, b1, w, st, 1});
        break;
      case Strategy::Columns:
      case Strategy::SplitColumns: {
        int64_t sp = d.split;
        for (auto [b0, b1, w] : {std::tuple<int64_t, int64_t, int>{64, 64, 4}, {32, 64, 4}, {128, 32, 8}, {64, 32, 4}})
          add({std::min(b0, next_pow2(rows)), std::min(b1, rpow), w, 1, sp});
        if (splittable() && rn >= 1024)
          for (int64_t f : {sp * 2, sp / 2, sp * 4})
            if (f >= 1 && f <= 64) add({d.block0, d.block1, d.num_warps, 1, f});
        break;
      }
      case Strategy::SplitRows:
        for (auto [b1, w, f] : {std::tuple<int64_t, int, int64_t>{4096, 8, d.split}, {2048, 4, d.split}, {2048, 8, d.split / 2},
                                 {2048, 8, d.split * 2}, {1024, 4, d.split * 2}})
          if (f >= 2 && f <= 1024) add({1, b1, w, 1, f});
        break;
      case Strategy::Fixed: break;
    }
    return out;
  }

 private:
  // ---- parameters ------------------------------------------------------------------------

  void collect_params() {
    KernelParams params = kernel_params(p_, k_);
    params_ = std::move(params.order);
    names_ = std::move(params.names);
  }


  // ---- one generated kernel ------------------------------------------------------------------

  /// Starts kernel `name` over `params` (buffer or scratch ids with their pointer names).
  void begin(const std::string &name, const Layout &l) {
    w_ = Writer();
    l_ = l;
    helpers_.clear();
    scopes_.clear();
    vars_.clear();
    next_tmp_ = 0;
    kernel_name_ = name;
    mask0_.clear();
    mask1_.clear();
    w_.indent();
    push();
  }

  /// Finishes the kernel begun: its module, signature and launch.
  void end(const std::vector<std::pair<int, std::string>> &params, int num_warps, std::array<int64_t, 3> grid,
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
    std::vector<std::string> blocks = {l_.b0};
    if (l_.two_d) blocks.push_back(l_.b1);
    for (size_t i = 0; i < blocks.size(); ++i) {
      g.signature.push_back({blocks[i], "constexpr"});
      g.constexprs[blocks[i]] = i == 0 ? l_.block0 : l_.block1;
      sig += blocks[i] + ": tl.constexpr" + (i + 1 < blocks.size() ? ", " : "");
    }
    g.num_warps = num_warps;
    g.num_stages = stages();
    g.grid = grid;
    attrs["num_warps"] = std::to_string(num_warps);
    attrs["grid"] = std::to_string(grid[0]) + "x" + std::to_string(grid[1]) + "x" + std::to_string(grid[2]);
    g.attrs = attrs;
    std::string head = "# " + kernel_summary(p_, k_) + "\n";
    for (const auto &[key, value] : attrs) head += "# " + key + ": " + value + "\n";
    g.source = head + "import triton\nimport triton.language as tl\nfrom triton.language.extra.cuda import libdevice\n" +
               triton_helpers(helpers_) + "\n\n@triton.jit\ndef " + kernel_name_ + "(" + sig + "):\n" + w_.str();
    out_.push_back(std::move(g));
    out_args_.push_back(ids);
  }

  DType dtype_of(int id) const {
    if (id < int(p_.buffers.size())) return p_.buffer(id).type.dtype;
    return scratch_->at(id).first;
  }

  std::vector<std::pair<int, std::string>> buffer_params() const {
    std::vector<std::pair<int, std::string>> out;
    for (BufferId b : params_) out.push_back({b, names_.at(b)});
    return out;
  }

  // ---- shapes and masks ----------------------------------------------------------------------

  std::string shape(int dims) const {
    if (!l_.two_d) return "[" + l_.b0 + "]";
    if (dims == kA0) return "[" + l_.b0 + ", 1]";
    if (dims == kA1) return "[1, " + l_.b1 + "]";
    return "[" + l_.b0 + ", " + l_.b1 + "]";
  }

  /// The mask of the elements of a block that exist along `dims`, or "" when all do.
  std::string mask(int dims) const {
    std::string m0 = (dims & kA0) && !mask0_.empty() ? mask0_ : "", m1 = (dims & kA1) && !mask1_.empty() ? mask1_ : "";
    if (!m0.empty() && !m1.empty()) return m0 + " & " + m1;
    return m0.empty() ? m1 : m0;
  }

  static std::string and_masks(const std::string &a, const std::string &b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    return "(" + a + ") & (" + b + ")";
  }

  /// `v` as a tensor varying along `dims` (its own or more).
  std::string broadcast(const Value &v, int dims, DType t) {
    if (v.dims == dims && !v.literal) return v.name;
    if (v.literal) return "tl.full(" + shape(dims) + ", " + v.name + ", " + triton_type(t) + ")";
    return "tl.broadcast_to(" + v.name + ", " + shape(dims) + ")";
  }

  /// The loop variables `vars` (outer first) from the flat `index` of their axis: the
  /// innermost is index % size, the outermost needs no %.
  void decompose(const std::string &index, const std::vector<std::pair<VarId, int64_t>> &vars, int dims) {
    int outermost = -1;
    for (size_t i = 0; i < vars.size(); ++i)
      if (vars[i].second != 1) {
        outermost = int(i);
        break;
      }
    int64_t stride = 1;
    for (int i = int(vars.size()) - 1; i >= 0; --i) {
      auto [v, size] = vars[size_t(i)];
      if (size == 1) {
        vars_[v.id] = {"0", kNone, true};
        continue;
      }
      std::string e = stride > 1 ? "(" + index + " // " + std::to_string(stride) + ")" : index;
      if (i != outermost) e += " % " + std::to_string(size);
      std::string name = var_name(v);
      w_.line(name + " = " + e);
      vars_[v.id] = {name, dims, false};
      stride *= size;
    }
  }

  std::string var_name(VarId v) const {
    int n = int(k_.ranges.size());
    return v.id < n ? "x" + std::to_string(v.id) : "r" + std::to_string(v.id - n);
  }

  /// The program's offsets, indices and masks along axis 0 (and 1 unless looped).
  void emit_prologue() {
    std::string idx0 = l_.b0 == "YBLOCK" ? "yindex" : "xindex", off0 = l_.b0 == "YBLOCK" ? "yoffset" : "xoffset";
    std::string pid = "tl.program_id(" + std::to_string(l_.program_axis0) + ")";
    std::string arange0 = "tl.arange(0, " + l_.b0 + ")" + std::string(l_.two_d ? "[:, None]" : "");
    // Indices in int32 unless an offset may not fit.
    w_.line(off0 + " = " + pid + (index_bits_ > 31 ? ".to(tl.int64)" : "") + " * " + l_.b0);
    w_.line(idx0 + " = " + off0 + " + " + arange0);
    if (l_.n0 % l_.block0 != 0 || l_.n0 == 0) {
      mask0_ = idx0 == "yindex" ? "ymask" : "xmask";
      w_.line(mask0_ + " = " + idx0 + " < " + std::to_string(l_.n0));
    }
    decompose(idx0, l_.vars0, kA0);
    if (l_.two_d && !l_.looped) open_axis1("");
  }

  /// Axis 1's index and mask: from `offset` (the loop's) or, with none, from the program.
  void open_axis1(const std::string &offset) {
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
    if (l_.n1 % l_.block1 != 0 || l_.n1 == 0 || r_limit_ >= 0) {
      mask1_ = tiled_pointwise ? "xmask" : "rmask";
      w_.line(mask1_ + " = " + idx + " < " + std::to_string(r_limit_ >= 0 ? r_limit_ : l_.n1));
    }
    decompose(idx, l_.vars1, kA1);
  }

  // ---- scopes: CSE of values and the values of internal buffers ---------------------------

  struct Scope {
    std::map<std::string, Value> values;     // rhs -> tmp
    std::map<std::string, Value> forwarded;  // "buf[index]" -> the element's value
  };

  void push() { scopes_.emplace_back(); }
  void pop() { scopes_.pop_back(); }

  Value def(const std::string &rhs, int dims) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->values.find(rhs); f != it->values.end()) return f->second;
    Value v{"tmp" + std::to_string(next_tmp_++), dims, false};
    w_.line(v.name + " = " + rhs);
    scopes_.back().values[rhs] = v;
    return v;
  }

  std::string forward_key(BufferId b, const Expr &at) const { return p_.buffer(b).name + "[" + ir::str(ir::simplify(at, ranges_)) + "]"; }

  std::optional<Value> forwarded(BufferId b, const Expr &at) const {
    std::string key = forward_key(b, at);
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->forwarded.find(key); f != it->forwarded.end()) return f->second;
    return std::nullopt;
  }

  // ---- indices -----------------------------------------------------------------------------

  /// An index expression with the dims it varies along.
  std::pair<std::string, int> index(const Expr &e, const std::function<Value(int)> &indirect = {}) {
    int dims = kNone;
    std::string text = triton_index(ir::simplify(e, ranges_),
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

  /// `ptr + (index)` as a block of pointers along `dims` (at least the index's own).
  std::string pointer(const std::string &ptr, const std::string &idx, int idx_dims, int dims) {
    if (idx_dims == dims) return ptr + " + (" + idx + ")";
    if (idx_dims == kNone && idx.find_first_not_of("0123456789") == std::string::npos)
      return ptr + " + tl.full(" + shape(dims) + ", " + idx + ", tl.int32)";
    return ptr + " + tl.broadcast_to(" + idx + ", " + shape(dims) + ")";
  }

  // ---- bodies ---------------------------------------------------------------------------

  std::vector<Value> emit_body(const ir::Body &body) {
    std::vector<Value> v(body.instrs.size());
    for (size_t k = 0; k < body.instrs.size(); ++k) {
      const Instr &i = body.instrs[k];
      switch (i.op) {
        case Op::Load: v[k] = load(i, v); break;
        case Op::Constant: v[k] = {triton_literal(i.value, i.dtype), kNone, true}; break;
        case Op::Index: {
          auto [text, dims] = index(i.index);
          if (dims == kNone) {
            v[k] = {triton_literal(double(ir::eval(ir::simplify(i.index, ranges_), {})), i.dtype), kNone, true};
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
          std::string rhs = triton_op(i.op, in, i.dtype, args, helpers_);
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
              DType at = i.op == Op::Where && a == 0 ? DType::Bool : i.op == Op::Where ? i.dtype : in;
              if (x.literal && x.name.rfind("tl.full", 0) != 0) typed[size_t(a)] = "tl.full([], " + x.name + ", " + triton_type(at) + ")";
            }
            rhs = triton_op(i.op, in, i.dtype, typed, helpers_);
          }
          v[k] = def(rhs, dims);
          if (i.op == Op::Cast && (i.dtype == DType::BF16 || i.dtype == DType::F16) && in == DType::F32)
            rounded_from_[v[k].name] = {args[0], i.dtype};
          break;
        }
      }
    }
    return v;
  }

  Value load(const Instr &i, const std::vector<Value> &v) {
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
    if (inner_ && l_.two_d && l_.n1 == 0) pdims |= kA1;
    m = and_masks(m, mask(pdims));
    std::string ptr = pointer(names_.at(i.buffer), idx, dims, pdims);
    std::string call = "tl.load(" + ptr + (m.empty() ? "" : ", " + m) +
                       (i.args[0] >= 0 ? ", other=" + triton_literal(i.value, i.dtype) : std::string()) + ")";
    if (i.dtype == DType::BF16 || i.dtype == DType::F16) call += ".to(tl.float32)";
    return def(call, pdims);
  }

  // Stores value `v` (of dtype `from`) as output `out` of node `n` at its store index,
  // over the elements of `dims` that exist.
  void store(const Node &n, BufferId out, const Value &v, DType from) {
    DType t = p_.buffer(out).type.dtype;
    Expr at = ir::store_index(n, p_.buffer(out));
    Value value = v;
    if (from != t && !v.literal) {
      value = def(triton_cast(v.name, from, t), v.dims);
      if ((t == DType::BF16 || t == DType::F16) && from == DType::F32) rounded_from_[value.name] = {v.name, t};
    }
    if (from != t && v.literal) value = {triton_cast("tl.full([], " + v.name + ", " + triton_type(from) + ")", from, t), kNone, false};
    scopes_.back().forwarded[forward_key(out, at)] = value;
    if (contains(k_.internal, out)) return;
    auto [idx, dims] = index(at);
    int pdims = dims | value.dims;
    if (pdims == kNone) pdims = kA0;  // a block of one address: no 0-d tensors
    std::string stored = value.name;
    if (v.literal && from == t) stored = "tl.full(" + shape(pdims) + ", " + v.name + ", " + triton_type(t) + ")";
    // The unrounded value, when the store rounds to the very dtype the value was rounded to.
    if (auto r = rounded_from_.find(value.name); r != rounded_from_.end() && r->second.second == t) stored = r->second.first;
    if (t == DType::BF16) stored = "(" + stored + ").to(tl.bfloat16)";
    if (t == DType::F16) stored = "(" + stored + ").to(tl.float16)";
    std::string m = mask(pdims);
    w_.line("tl.store(" + pointer(names_.at(out), idx, dims, pdims) + ", " + stored + (m.empty() ? "" : ", " + m) + ")");
  }

  void emit_pointwise_member(const Node &n) {
    auto v = emit_body(n.body);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      store(n, n.outputs[k], v[size_t(n.body.results[k])], n.body.at(n.body.results[k]).dtype);
  }

  // ---- pointwise --------------------------------------------------------------------------

  // When a load walks the last two dims the other way round from the store (x + y.t()),
  // the kernel runs in YBLOCK x XBLOCK tiles, so that loads and stores both coalesce.
  bool tile_last_two_dims() const { return loads_transposed_in_last_two_dims(p_, k_); }

  void set_index_bits() {
    int64_t most = checked_numel(k_.ranges) * std::max<int64_t>(checked_numel(k_.reduction_ranges), 1);
    for (BufferId b : params_) most = std::max(most, storage_extent(p_.buffer(b).type));
    index_bits_ = most >= (int64_t(1) << 31) ? 63 : 31;
  }

  void emit_pointwise() {
    set_index_bits();
    int64_t numel = checked_numel(k_.ranges);
    Layout l;
    std::map<std::string, std::string> attrs;
    int n = int(k_.ranges.size());
    int64_t rows = n >= 2 ? numel / std::max<int64_t>(k_.ranges.back(), 1) : 1;
    int64_t tile_rows = pick(cfg_.block0, std::min<int64_t>(32, next_pow2(rows)));
    if (tile_last_two_dims() && ceil_div(rows, tile_rows) <= 65535) {
      l.two_d = true;
      l.b0 = "YBLOCK";
      l.b1 = "XBLOCK";
      l.block0 = tile_rows;
      l.block1 = pick(cfg_.block1, std::min<int64_t>(64, next_pow2(k_.ranges.back())));
      l.n0 = rows;
      l.n1 = k_.ranges.back();
      for (int d = 0; d < n - 1; ++d) l.vars0.push_back({VarId{d}, k_.ranges[size_t(d)]});
      l.vars1.push_back({VarId{n - 1}, k_.ranges.back()});
      l.program_axis0 = 1;
      attrs["layout"] = "YBLOCK x XBLOCK tiles of the last two dims: a load walks them transposed";
      strategy_ = Strategy::Tiles;
    } else {
      l.block0 = pick(cfg_.block0, std::min<int64_t>(1024, next_pow2(std::max<int64_t>(numel, 1))));
      l.n0 = numel;
      for (int d = 0; d < n; ++d) l.vars0.push_back({VarId{d}, k_.ranges[size_t(d)]});
      attrs["layout"] = "blocks of XBLOCK elements" + std::string(numel % l.block0 ? ", masked" : ", no mask");
      strategy_ = Strategy::Blocks;
    }
    begin(k_.name, l);
    emit_prologue();
    for (int m : k_.nodes) emit_pointwise_member(p_.nodes[size_t(m)]);
    int64_t per_program = l.block0 * (l.two_d ? l.block1 : 1);
    int warps = pick(cfg_.num_warps, int(std::clamp<int64_t>(per_program / 256, 1, 4)));
    std::array<int64_t, 3> grid = l.two_d ? std::array<int64_t, 3>{ceil_div(l.n1, l.block1), ceil_div(l.n0, l.block0), 1}
                                          : std::array<int64_t, 3>{std::max<int64_t>(ceil_div(numel, l.block0), 1), 1, 1};
    if (numel == 0) grid = {0, 1, 1};
    end(buffer_params(), warps, grid, attrs);
    resolved_ = {l.block0, l.two_d ? l.block1 : 0, warps, stages(), 0};
  }

  // ---- reductions -------------------------------------------------------------------------

  static bool is_inner_member(const Node &n) { return n.kind == ir::NodeKind::Pointwise && !n.reduction_ranges.empty(); }

  // When loads are contiguous along the last kept dim and not along the reduced one (a sum
  // over dim 0), a block holds many rows side by side, so that loads coalesce.
  bool rows_side_by_side() const { return rows_contiguous_across_reduction(p_, k_); }

  // Whether the reduced elements of a row may be split across programs: a single pass of
  // combinable reductions (no argmax/argmin, no Welford) whose other members are internal,
  // followed by row values only.
  bool splittable() const {
    if (k_.steps.empty() || !k_.steps[0].inner) return false;
    for (size_t s = 1; s < k_.steps.size(); ++s)
      if (k_.steps[s].inner) return false;
    for (int m : k_.steps[0].nodes) {
      const Node &node = p_.nodes[size_t(m)];
      if (node.kind != ir::NodeKind::Reduction) {
        for (BufferId b : node.outputs)
          if (!contains(k_.internal, b)) return false;  // an element stored at every point
        continue;
      }
      ReduceOp op = node.reduce_op;
      if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin || op == ReduceOp::Welford) return false;
    }
    return true;
  }

  // Programs per row (1: no split). Rows reduced one per program: split when at most 64
  // rows of 65,536 or more would leave the GPU idle, in chunks of about 32,768. Rows side by
  // side (a sum over dim 0): split when fewer than 256 programs (two per multiprocessor of
  // an H100 or H200) would cover the rows, into enough chunks for about 512 programs.
  int64_t default_split(bool columns) const {
    int64_t rows = checked_numel(k_.ranges), rn = checked_numel(k_.reduction_ranges);
    if (!splittable()) return 1;
    if (!columns) return rows > 64 || rn < 65536 ? 1 : std::clamp<int64_t>(next_pow2(ceil_div(rn, 32768)), 2, 1024);
    int64_t programs = ceil_div(rows, std::min<int64_t>(64, next_pow2(rows)));
    if (programs >= 256 || rn < 1024) return 1;
    return std::clamp<int64_t>(next_pow2(ceil_div(512, programs)), 2, std::min<int64_t>(64, next_pow2(ceil_div(rn, 128))));
  }

  int64_t chosen_split(bool columns) const {
    if (cfg_.split > 1 && splittable()) return cfg_.split;
    if (cfg_.split == 1) return 1;
    return default_split(columns);
  }

  void emit_reduction() {
    set_index_bits();
    int64_t rows = checked_numel(k_.ranges), rn = checked_numel(k_.reduction_ranges);
    bool columns = rows_side_by_side();
    if (int64_t split = chosen_split(columns); split > 1) return emit_split(split, columns);
    Layout l;
    l.two_d = true;
    l.n0 = rows;
    l.n1 = rn;
    int n = int(k_.ranges.size());
    for (int d = 0; d < n; ++d) l.vars0.push_back({VarId{d}, k_.ranges[size_t(d)]});
    for (size_t d = 0; d < k_.reduction_ranges.size(); ++d) l.vars1.push_back({VarId{n + int(d)}, k_.reduction_ranges[d]});
    std::map<std::string, std::string> attrs;
    int64_t rpow = next_pow2(std::max<int64_t>(rn, 1));
    if (columns) {
      l.block0 = pick(cfg_.block0, std::min<int64_t>(64, next_pow2(rows)));
      l.block1 = std::min(pick(cfg_.block1, int64_t(64)), rpow);
      l.looped = rn > l.block1;
      attrs["layout"] = std::string(l.looped ? "looped" : "persistent") +
                        ": XBLOCK rows side by side (neighbouring rows are contiguous), RBLOCK reduced elements per step";
      strategy_ = Strategy::Columns;
    } else if (rpow <= o_.max_persistent_rblock) {
      l.block1 = rpow;
      l.block0 = pick(cfg_.block0, std::clamp<int64_t>(1024 / rpow, 1, std::min<int64_t>(64, next_pow2(std::max<int64_t>(rows, 1)))));
      attrs["layout"] = "persistent: a row in one program, RBLOCK the next power of two of " + std::to_string(rn);
      strategy_ = Strategy::Persistent;
    } else {
      l.looped = true;
      l.block0 = 1;
      l.block1 = pick(cfg_.block1, int64_t(2048));
      attrs["layout"] = "looped: a row per program in steps of RBLOCK";
      strategy_ = Strategy::Looped;
    }
    begin(k_.name, l);
    emit_prologue();
    if (l.looped) w_.line("rbase = tl.arange(0, RBLOCK)[None, :]");
    for (const ir::Step &step : k_.steps) {
      if (!step.inner) {
        for (int m : step.nodes) emit_pointwise_member(p_.nodes[size_t(m)]);
        continue;
      }
      emit_step(step);
    }
    int64_t per_program = l.block0 * l.block1;
    int warps = pick(cfg_.num_warps, int(std::clamp<int64_t>(per_program / 256, 1, 8)));
    end(buffer_params(), warps, {std::max<int64_t>(ceil_div(rows, l.block0), 1), 1, 1}, attrs);
    resolved_ = {l.block0, l.block1, warps, stages(), 1};
  }

  struct Acc {
    const Node *node;
    DType in;
    std::vector<std::string> names;  // looped: the accumulators (value; index or m2; count)
  };

  std::string acc_type(const Acc &a) const { return triton_type(a.in); }

  // The identity of a reduction in dtype t, as a Python expression.
  static std::string identity(ReduceOp op, DType t) {
    bool fl = is_floating(t);
    switch (op) {
      case ReduceOp::Sum: return fl ? "0.0" : "0";
      case ReduceOp::Prod: return fl ? "1.0" : "1";
      case ReduceOp::Max:
      case ReduceOp::ArgMax: return fl ? "float('-inf')" : lowest(t);
      case ReduceOp::Min:
      case ReduceOp::ArgMin: return fl ? "float('inf')" : highest(t);
      case ReduceOp::Any: return "0";
      case ReduceOp::All: return "1";
      case ReduceOp::Welford: return "0.0";
    }
    return "0";
  }

  static std::string lowest(DType t) {
    switch (t) {
      case DType::I64: return "-9223372036854775808";
      case DType::I32: return "-2147483648";
      case DType::I16: return "-32768";
      case DType::I8: return "-128";
      default: return "0";
    }
  }
  static std::string highest(DType t) {
    switch (t) {
      case DType::I64: return "9223372036854775807";
      case DType::I32: return "2147483647";
      case DType::I16: return "32767";
      case DType::I8: return "127";
      case DType::U8: return "255";
      default: return "1";
    }
  }

  std::string truth(const Value &x, DType t) {
    return "(" + (t == DType::Bool ? x.name : "(" + x.name + " != 0)") + ").to(tl.int8)";
  }

  /// One pass over the reduced elements: persistent (the block holds the row) or looped.
  void emit_step(const ir::Step &step) {
    std::vector<Acc> accs;
    for (int m : step.nodes) {
      const Node &node = p_.nodes[size_t(m)];
      if (node.kind == ir::NodeKind::Reduction) accs.push_back({&node, node.body.at(node.body.results[0]).dtype, {}});
    }
    std::string all = mask(kBoth);
    if (l_.looped) {
      for (Acc &a : accs) start_looped(a);
      w_.line("for roffset in range(0, " + std::to_string(l_.n1) + ", RBLOCK):");
      w_.indent();
      push();
      open_axis1("roffset");
      all = mask(kBoth);
    }
    size_t next = 0;
    inner_ = true;
    for (int m : step.nodes) {
      const Node &node = p_.nodes[size_t(m)];
      if (node.kind != ir::NodeKind::Reduction) {
        emit_pointwise_member(node);
        continue;
      }
      auto v = emit_body(node.body);
      Value x = v[size_t(node.body.results[0])];
      Acc &a = accs[next++];
      if (l_.looped) accumulate(a, x, all);
      else finish(a, reduce_block(a, x, all));
    }
    inner_ = false;
    if (!l_.looped) return;
    pop();
    w_.dedent();
    for (Acc &a : accs) finish(a, reduce_looped(a));
  }

  void start_looped(Acc &a) {
    std::string base = "acc" + std::to_string(next_acc_++), full = shape(kBoth);
    std::string T = acc_type(a);
    ReduceOp op = a.node->reduce_op;
    if (op == ReduceOp::Welford) {
      std::string W = a.in == DType::F64 ? "tl.float64" : "tl.float32";
      a.names = {base + "_mean", base + "_m2", base + "_weight"};
      for (const auto &nm : a.names) w_.line(nm + " = tl.zeros(" + full + ", " + W + ")");
      return;
    }
    if (op == ReduceOp::Any || op == ReduceOp::All) T = "tl.int8";
    a.names = {base};
    w_.line(base + " = tl.full(" + full + ", " + identity(op, a.in) + ", " + T + ")");
    if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) {
      a.names.push_back(base + "_index");
      w_.line(base + "_index = tl.full(" + full + ", 9223372036854775807, tl.int64)");
    }
  }

  // Each lane of the accumulator block adds the elements that fall on it.
  void accumulate(const Acc &a, const Value &x, const std::string &m) {
    std::string v = broadcast(x, kBoth, a.in), acc = a.names[0];
    auto masked = [&](const std::string &updated) { return m.empty() ? updated : "tl.where(" + m + ", " + updated + ", " + acc + ")"; };
    switch (a.node->reduce_op) {
      case ReduceOp::Sum: w_.line(acc + " = " + masked(acc + " + " + v)); return;
      case ReduceOp::Prod: w_.line(acc + " = " + masked(acc + " * " + v)); return;
      case ReduceOp::Max:
      case ReduceOp::Min: {
        std::string fn = a.node->reduce_op == ReduceOp::Max ? "tl.maximum(" : "tl.minimum(";
        std::string nan = is_floating(a.in) ? ", propagate_nan=tl.PropagateNan.ALL" : "";
        w_.line(acc + " = " + masked(fn + acc + ", " + v + nan + ")"));
        return;
      }
      case ReduceOp::Any: w_.line(acc + " = " + masked(acc + " | " + truth({v, kBoth, false}, a.in))); return;
      case ReduceOp::All: w_.line(acc + " = " + masked(acc + " & " + truth({v, kBoth, false}, a.in))); return;
      case ReduceOp::ArgMax:
      case ReduceOp::ArgMin: {
        std::string pick = arg_helper(a.node->reduce_op, "pick");
        std::string take = "take" + std::to_string(next_acc_++);
        std::string r = "tl.broadcast_to(rindex.to(tl.int64), " + shape(kBoth) + ")";
        w_.line(take + " = " + pick + "(" + v + ", " + r + ", " + acc + ", " + a.names[1] + ")" + (m.empty() ? "" : " & (" + m + ")"));
        w_.line(acc + " = tl.where(" + take + ", " + v + ", " + acc + ")");
        w_.line(a.names[1] + " = tl.where(" + take + ", " + r + ", " + a.names[1] + ")");
        return;
      }
      case ReduceOp::Welford: {
        // Welford's update in each lane; the lanes are combined after the loop.
        const std::string &mean = a.names[0], &m2 = a.names[1], &w = a.names[2];
        std::string d = "delta" + std::to_string(next_acc_++);
        std::string xv = a.in == DType::F64 ? v : "(" + v + ").to(tl.float32)";
        w_.line(w + " = " + (m.empty() ? w + " + 1" : "tl.where(" + m + ", " + w + " + 1, " + w + ")"));
        w_.line(d + " = " + xv + " - " + mean);
        w_.line(mean + " = " + (m.empty() ? mean + " + " + d + " / " + w : "tl.where(" + m + ", " + mean + " + " + d + " / " + w + ", " + mean + ")"));
        w_.line(m2 + " = " + (m.empty() ? m2 + " + " + d + " * (" + xv + " - " + mean + ")"
                                        : "tl.where(" + m + ", " + m2 + " + " + d + " * (" + xv + " - " + mean + "), " + m2 + ")"));
        return;
      }
    }
  }

  std::string arg_helper(ReduceOp op, const std::string &what) {
    std::string name = std::string(op == ReduceOp::ArgMax ? "argmax" : "argmin") + "_" + what;
    helpers_.insert(std::string(op == ReduceOp::ArgMax ? "argmax" : "argmin") + "_pick");
    if (what == "combine") helpers_.insert(name);
    return "_" + name;
  }

  // The reduction of the accumulator lanes after a looped pass: one value per row.
  std::vector<Value> reduce_looped(const Acc &a) {
    const std::string &acc = a.names[0];
    std::string T = acc_type(a);
    switch (a.node->reduce_op) {
      case ReduceOp::Sum: return {def(cast_sum("tl.sum(" + acc + ", 1)", a.in) + "[:, None]", kA0)};
      case ReduceOp::Prod: helpers_.insert("prod"); return {def("tl.reduce(" + acc + ", 1, _prod)[:, None]", kA0)};
      case ReduceOp::Max:
      case ReduceOp::Min: return {def(max_min(a.node->reduce_op, acc, a.in) + "[:, None]", kA0)};
      case ReduceOp::Any: return {def("(tl.max(" + acc + ", 1) > 0)[:, None]", kA0)};
      case ReduceOp::All: return {def("(tl.min(" + acc + ", 1) > 0)[:, None]", kA0)};
      case ReduceOp::ArgMax:
      case ReduceOp::ArgMin: {
        std::string pair = "pair" + std::to_string(next_acc_++);
        w_.line(pair + "_value, " + pair + "_index = tl.reduce((" + acc + ", " + a.names[1] + "), 1, " +
                arg_helper(a.node->reduce_op, "combine") + ")");
        return {def(pair + "_index[:, None]", kA0)};
      }
      case ReduceOp::Welford: {
        helpers_.insert("welford_combine");
        std::string t = "wf" + std::to_string(next_acc_++);
        w_.line(t + "_mean, " + t + "_m2, " + t + "_weight = tl.reduce((" + a.names[0] + ", " + a.names[1] + ", " + a.names[2] +
                "), 1, _welford_combine)");
        return {def(t + "_mean[:, None]", kA0), def(t + "_m2[:, None]", kA0), def(t + "_weight[:, None]", kA0)};
      }
    }
    (void)T;
    return {};
  }

  std::string cast_sum(const std::string &e, DType t) {
    // tl.sum widens small integers; the reference sums in the value's own dtype.
    return is_floating(t) || t == DType::I64 ? e : "(" + e + ").to(" + triton_type(t) + ")";
  }

  std::string max_min(ReduceOp op, const std::string &x, DType t) {
    bool max = op == ReduceOp::Max;
    if (!is_floating(t)) return std::string(max ? "tl.max(" : "tl.min(") + x + ", 1)";
    helpers_.insert(max ? "max_nan" : "min_nan");
    return "tl.reduce(" + x + ", 1, " + (max ? "_max_nan" : "_min_nan") + ")";
  }

  // A persistent pass: the whole row is in the block.
  std::vector<Value> reduce_block(const Acc &a, const Value &x, const std::string &m) {
    std::string v = broadcast(x, kBoth, a.in);
    auto masked = [&](const std::string &fill) { return m.empty() ? v : "tl.where(" + m + ", " + v + ", " + fill + ")"; };
    ReduceOp op = a.node->reduce_op;
    switch (op) {
      case ReduceOp::Sum: return {def(cast_sum("tl.sum(" + masked(identity(op, a.in)) + ", 1)", a.in) + "[:, None]", kA0)};
      case ReduceOp::Prod: helpers_.insert("prod"); return {def("tl.reduce(" + masked(identity(op, a.in)) + ", 1, _prod)[:, None]", kA0)};
      case ReduceOp::Max:
      case ReduceOp::Min: return {def(max_min(op, masked(identity(op, a.in)), a.in) + "[:, None]", kA0)};
      case ReduceOp::Any:
      case ReduceOp::All: {
        std::string t = truth({v, kBoth, false}, a.in);
        std::string filled = m.empty() ? t : "tl.where(" + m + ", " + t + ", " + identity(op, a.in) + ")";
        return {def(std::string(op == ReduceOp::Any ? "(tl.max(" : "(tl.min(") + filled + ", 1) > 0)[:, None]", kA0)};
      }
      case ReduceOp::ArgMax:
      case ReduceOp::ArgMin: {
        std::string pair = "pair" + std::to_string(next_acc_++);
        std::string r = "tl.broadcast_to(rindex.to(tl.int64), " + shape(kBoth) + ")";
        w_.line(pair + "_value, " + pair + "_index = tl.reduce((" + masked(identity(op, a.in)) + ", " + r + "), 1, " +
                arg_helper(op, "combine") + ")");
        return {def(pair + "_index[:, None]", kA0)};
      }
      case ReduceOp::Welford: {
        // The whole row at hand: its mean, then the sum of squared deviations from it.
        std::string W = a.in == DType::F64 ? "tl.float64" : "tl.float32";
        std::string xv = "(" + v + ").to(" + W + ")";
        std::string count = std::to_string(l_.n1);
        Value mean = def("tl.sum(" + (m.empty() ? xv : "tl.where(" + m + ", " + xv + ", 0.0)") + ", 1)[:, None] / " + count + ".0", kA0);
        std::string dev = "(" + xv + " - " + mean.name + ")";
        Value m2 = def("tl.sum(" + (m.empty() ? dev + " * " + dev : "tl.where(" + m + ", " + dev + " * " + dev + ", 0.0)") + ", 1)[:, None]", kA0);
        Value weight = def("tl.full(" + shape(kA0) + ", " + count + ".0, " + W + ")", kA0);
        return {mean, m2, weight};
      }
    }
    return {};
  }

  // Stores (or keeps for the members after) the results of a reduction.
  void finish(const Acc &a, const std::vector<Value> &r) {
    const Node &n = *a.node;
    switch (n.reduce_op) {
      case ReduceOp::ArgMax:
      case ReduceOp::ArgMin: store(n, n.outputs[0], r[0], DType::I64); return;
      case ReduceOp::Welford: {
        DType W = a.in == DType::F64 ? DType::F64 : DType::F32;
        // No element: the mean is NaN, as the reference's.
        Value mean = l_.n1 == 0 ? def("tl.full(" + shape(kA0) + ", float('nan'), " + triton_type(W) + ")", kA0) : r[0];
        store(n, n.outputs[0], mean, W);
        store(n, n.outputs[1], r[1], W);
        store(n, n.outputs[2], r[2], W);
        return;
      }
      case ReduceOp::Any:
      case ReduceOp::All: store(n, n.outputs[0], r[0], DType::Bool); return;
      default: store(n, n.outputs[0], r[0], a.in); return;
    }
  }

  // ---- split reductions ---------------------------------------------------------------------

  // A reduction to few rows, or to rows side by side that would fill few programs: `split`
  // programs share each block of rows, each reducing a chunk of the reduced elements into a
  // scratch buffer of partial results laid out [split, rows]; a second kernel combines them
  // and runs the row's members after the reduction.
  void emit_split(int64_t split, bool columns) {
    int64_t rows = checked_numel(k_.ranges), rn = checked_numel(k_.reduction_ranges);
    int n = int(k_.ranges.size());
    const ir::Step &step = k_.steps[0];
    // Kernel 1: the partials.
    Layout l;
    l.two_d = true;
    l.looped = true;
    l.block0 = columns ? pick(cfg_.block0, std::min<int64_t>(64, next_pow2(rows))) : 1;
    l.block1 = pick(cfg_.block1, int64_t(columns ? 64 : 2048));
    int64_t chunk = ceil_div(ceil_div(rn, split), l.block1) * l.block1;
    l.n0 = rows;
    l.n1 = rn;
    for (int d = 0; d < n; ++d) l.vars0.push_back({VarId{d}, k_.ranges[size_t(d)]});
    for (size_t d = 0; d < k_.reduction_ranges.size(); ++d) l.vars1.push_back({VarId{n + int(d)}, k_.reduction_ranges[d]});
    begin(k_.name + "_partials", l);
    emit_prologue();
    w_.line(std::string("split = tl.program_id(1)") + (index_bits_ > 31 ? ".to(tl.int64)" : ""));
    w_.line("rbase = tl.arange(0, RBLOCK)[None, :]");
    std::vector<Acc> accs;
    for (int m : step.nodes) {
      const Node &node = p_.nodes[size_t(m)];
      if (node.kind == ir::NodeKind::Reduction) accs.push_back({&node, node.body.at(node.body.results[0]).dtype, {}});
    }
    for (Acc &a : accs) start_looped(a);
    w_.line("for roffset in range(0, " + std::to_string(chunk) + ", RBLOCK):");
    w_.indent();
    push();
    r_limit_ = chunk * split > rn ? rn : -1;
    open_axis1("split * " + std::to_string(chunk) + " + roffset");
    r_limit_ = -1;
    std::string all = mask(kBoth);
    size_t next = 0;
    for (int m : step.nodes) {
      const Node &node = p_.nodes[size_t(m)];
      auto v = emit_body(node.body);
      if (node.kind != ir::NodeKind::Reduction) continue;  // internal: read by the reductions
      accumulate(accs[next++], v[size_t(node.body.results[0])], all);
    }
    pop();
    w_.dedent();
    std::vector<std::pair<int, std::string>> params = buffer_params();
    std::vector<std::pair<int, std::string>> partial_params;
    std::vector<int> scratch_ids;
    std::string row_mask = mask(kA0).empty() ? "" : ", " + mask(kA0);
    for (const Acc &a : accs) {
      Value r = reduce_looped(a)[0];
      int id = (*next_scratch_)++;
      DType t = a.node->reduce_op == ReduceOp::Any || a.node->reduce_op == ReduceOp::All ? DType::Bool : a.in;
      (*scratch_)[id] = {t, rows * split};
      std::string name = "partial_ptr" + std::to_string(scratch_ids.size());
      std::string at = rows == 1 ? "split + xindex" : "split * " + std::to_string(rows) + " + xindex";
      w_.line("tl.store(" + name + " + " + at + ", " + r.name + row_mask + ")");
      scratch_ids.push_back(id);
      partial_params.push_back({id, name});
    }
    // Kernel 1 reads what the pass reads and writes only the partials.
    std::vector<std::pair<int, std::string>> first;
    for (const auto &pr : params)
      if (!contains(k_.stores, pr.first)) first.push_back(pr);
    first.insert(first.end(), partial_params.begin(), partial_params.end());
    std::map<std::string, std::string> attrs = {
        {"layout", "split: " + std::to_string(split) + " programs per " + (columns ? "block of XBLOCK rows side by side" : "row") +
                       " each reduce a chunk of " + std::to_string(chunk) + " in steps of RBLOCK; " + k_.name +
                       " combines the partials"}};
    int warps = pick(cfg_.num_warps, columns ? 4 : 8);
    end(first, warps, {ceil_div(rows, l.block0), split, 1}, attrs);
    resolved_ = {l.block0, l.block1, warps, stages(), split};
    strategy_ = columns ? Strategy::SplitColumns : Strategy::SplitRows;

    // Kernel 2: combine the partials, then the row's members.
    Layout c;
    c.two_d = true;
    c.block0 = columns ? std::min<int64_t>(64, next_pow2(rows)) : 1;
    c.block1 = split;
    c.n0 = rows;
    c.n1 = split;
    for (int d = 0; d < n; ++d) c.vars0.push_back({VarId{d}, k_.ranges[size_t(d)]});
    begin(k_.name, c);
    emit_prologue();
    std::string all_rows = mask(kBoth).empty() ? "" : ", " + mask(kBoth);
    for (size_t i = 0; i < accs.size(); ++i) {
      const Acc &a = accs[i];
      std::string at = rows == 1 ? "rindex + xindex" : "rindex * " + std::to_string(rows) + " + xindex";
      Value part = def("tl.load(" + partial_params[i].second + " + " + at + all_rows + ")", kBoth);
      ReduceOp op = a.node->reduce_op;
      std::string e;
      if (op == ReduceOp::Sum) e = cast_sum("tl.sum(" + part.name + ", 1)", a.in);
      else if (op == ReduceOp::Prod) { helpers_.insert("prod"); e = "tl.reduce(" + part.name + ", 1, _prod)"; }
      else if (op == ReduceOp::Max || op == ReduceOp::Min) e = max_min(op, part.name, a.in);
      else if (op == ReduceOp::Any) e = "tl.max(" + part.name + ".to(tl.int8), 1) > 0";
      else e = "tl.min(" + part.name + ".to(tl.int8), 1) > 0";
      finish(a, {def("(" + e + ")[:, None]", kA0)});
    }
    for (size_t s = 1; s < k_.steps.size(); ++s)
      for (int m : k_.steps[s].nodes) emit_pointwise_member(p_.nodes[size_t(m)]);
    std::vector<std::pair<int, std::string>> second;
    for (const auto &pr : params)
      if (contains(k_.stores, pr.first) || used_after_pass(pr.first)) second.push_back(pr);
    second.insert(second.end(), partial_params.begin(), partial_params.end());
    end(second, int(std::clamp<int64_t>(c.block0 * split / 256, 1, 4)), {ceil_div(rows, c.block0), 1, 1},
        {{"layout", "combines " + std::to_string(split) + " partials per row, then the row's members"}});
  }

  // Whether buffer b is read by a member after the first pass (in the combining kernel).
  bool used_after_pass(BufferId b) const {
    for (size_t s = 1; s < k_.steps.size(); ++s)
      for (int m : k_.steps[s].nodes)
        if (contains(p_.nodes[size_t(m)].reads(), b)) return true;
    return false;
  }

  // ---- scans -------------------------------------------------------------------------------

  void emit_scan() {
    set_index_bits();
    const Node &first = p_.nodes[size_t(k_.nodes[0])];
    int dim = first.scan_dim;
    int64_t len = k_.ranges[size_t(dim)], rows = checked_numel(k_.ranges) / std::max<int64_t>(len, 1);
    if (len == 0) rows = 0;
    Layout l;
    l.two_d = true;
    l.looped = true;
    l.n0 = rows;
    l.n1 = len;
    for (int d = 0; d < int(k_.ranges.size()); ++d)
      if (d != dim) l.vars0.push_back({VarId{d}, k_.ranges[size_t(d)]});
    l.vars1.push_back({VarId{dim}, len});
    l.block1 = std::min<int64_t>(1024, next_pow2(std::max<int64_t>(len, 1)));
    l.block0 = std::clamp<int64_t>(1024 / l.block1, 1, std::min<int64_t>(64, next_pow2(std::max<int64_t>(rows, 1))));
    begin(k_.name, l);
    emit_prologue();
    w_.line("rbase = tl.arange(0, RBLOCK)[None, :]");
    std::vector<std::string> carries;
    std::vector<DType> acc_types;
    for (int m : k_.nodes) {
      const Node &n = p_.nodes[size_t(m)];
      DType in = n.body.at(n.body.results[0]).dtype;
      DType acc = is_floating(in) ? (in == DType::F64 ? DType::F64 : DType::F32) : DType::I64;
      carries.push_back("carry" + std::to_string(carries.size()));
      acc_types.push_back(acc);
      w_.line(carries.back() + " = tl.zeros(" + shape(kA0) + ", " + triton_type(acc) + ")");
    }
    w_.line("for roffset in range(0, " + std::to_string(len) + ", RBLOCK):");
    w_.indent();
    push();
    open_axis1("roffset");
    std::string all = mask(kBoth);
    for (size_t i = 0; i < k_.nodes.size(); ++i) {
      const Node &n = p_.nodes[size_t(k_.nodes[i])];
      auto v = emit_body(n.body);
      DType in = n.body.at(n.body.results[0]).dtype;
      std::string x = "(" + broadcast(v[size_t(n.body.results[0])], kBoth, in) + ").to(" + triton_type(acc_types[i]) + ")";
      if (!all.empty()) x = "tl.where(" + all + ", " + x + ", 0)";
      Value block = def(x, kBoth);
      Value sums = def("tl.cumsum(" + block.name + ", 1) + " + carries[i], kBoth);
      store(n, n.outputs[0], def(triton_cast(sums.name, acc_types[i], in), kBoth), in);
      w_.line(carries[i] + " = " + carries[i] + " + tl.sum(" + block.name + ", 1)[:, None]");
    }
    pop();
    w_.dedent();
    int warps = int(std::clamp<int64_t>(l.block0 * l.block1 / 256, 1, 8));
    end(buffer_params(), warps, {std::max<int64_t>(ceil_div(rows, l.block0), 1), 1, 1},
        {{"layout", "rows in XBLOCK, each scanned in steps of RBLOCK with a carry"}});
  }

  // ---- scatters ----------------------------------------------------------------------------

  // Two kernels: the copy of the initial tensor, then the writes (adds with atomics when
  // the scatter accumulates; of duplicate indices without, one write wins, as on PyTorch's
  // GPU).
  void emit_scatter() {
    set_index_bits();
    const Node &n = p_.nodes[size_t(k_.nodes[0])];
    const ir::View &init = n.operands[0];
    BufferId out = n.outputs[0];
    const TensorType &ot = p_.buffer(out).type;
    DType it = p_.buffer(init.buffer).type.dtype;
    int64_t numel = checked_numel(ot.sizes);
    std::vector<std::pair<int, std::string>> params = buffer_params();
    {
      Layout l;
      l.block0 = std::min<int64_t>(1024, next_pow2(std::max<int64_t>(numel, 1)));
      l.n0 = numel;
      begin(k_.name + "_copy", l);
      w_.line("xoffset = tl.program_id(0) * XBLOCK");
      w_.line("xindex = xoffset + tl.arange(0, XBLOCK)");
      if (numel % l.block0) {
        mask0_ = "xmask";
        w_.line("xmask = xindex < " + std::to_string(numel));
      }
      std::string src = std::to_string(init.offset), dst = "0";
      int64_t stride = 1;
      for (int d = int(ot.sizes.size()) - 1; d >= 0; --d) {
        std::string c = "c" + std::to_string(d);
        w_.line(c + " = (xindex // " + std::to_string(stride) + ") % " + std::to_string(ot.sizes[size_t(d)]));
        src += " + " + c + "*" + std::to_string(init.strides[size_t(d)]);
        dst += " + " + c + "*" + std::to_string(ot.strides[size_t(d)]);
        stride *= ot.sizes[size_t(d)];
      }
      std::string m = mask0_.empty() ? "" : ", " + mask0_;
      std::string value = "tl.load(" + names_.at(init.buffer) + " + (" + src + ")" + m + ")";
      if (it == DType::BF16 || it == DType::F16) value += ".to(tl.float32)";
      value = triton_cast(value, it, ot.dtype);
      if (ot.dtype == DType::BF16) value = "(" + value + ").to(tl.bfloat16)";
      if (ot.dtype == DType::F16) value = "(" + value + ").to(tl.float16)";
      w_.line("tl.store(" + names_.at(out) + " + (" + dst + "), " + value + m + ")");
      std::vector<std::pair<int, std::string>> copy = {{init.buffer, names_.at(init.buffer)}, {out, names_.at(out)}};
      if (init.buffer == out) copy.pop_back();
      end(copy, int(std::clamp<int64_t>(l.block0 / 256, 1, 4)), {std::max<int64_t>(ceil_div(numel, l.block0), 1), 1, 1},
          {{"layout", "the copy of the initial tensor, in blocks of XBLOCK"}});
      mask0_.clear();
    }
    int64_t writes = checked_numel(n.ranges);
    Layout l;
    l.block0 = std::min<int64_t>(1024, next_pow2(std::max<int64_t>(writes, 1)));
    l.n0 = writes;
    for (int d = 0; d < int(n.ranges.size()); ++d) l.vars0.push_back({VarId{d}, n.ranges[size_t(d)]});
    begin(k_.name, l);
    emit_prologue();
    auto v = emit_body(n.body);
    auto [at, dims] = index(n.scatter_index, [&](int k) { return v[size_t(n.body.results[size_t(k + 1)])]; });
    DType vt = n.body.at(n.body.results[0]).dtype;
    Value value = def(triton_cast(v[size_t(n.body.results[0])].name, vt, ot.dtype), v[size_t(n.body.results[0])].dims);
    int pdims = dims | value.dims | kA0;
    std::string ptr = pointer(names_.at(out), at, dims, pdims), m = mask(pdims);
    std::string stored = value.name;
    if (ot.dtype == DType::BF16) stored = "(" + stored + ").to(tl.bfloat16)";
    if (ot.dtype == DType::F16) stored = "(" + stored + ").to(tl.float16)";
    bool atomic = n.accumulate && (ot.dtype == DType::F32 || ot.dtype == DType::F64 || ot.dtype == DType::I32 ||
                                   ot.dtype == DType::I64 || ot.dtype == DType::F16 || ot.dtype == DType::BF16);
    if (n.accumulate && !atomic) {
      // No atomic add of this dtype: the writes happen in a single program (grid of one).
      COIL_USER_CHECK(writes <= l.block0, k_.name, ": an accumulating scatter of ", short_name(ot.dtype),
                      " with more than ", l.block0, " writes is not supported on the GPU");
      std::string cur = "tl.load(" + ptr + (m.empty() ? "" : ", " + m) + ")";
      stored = triton_op(Op::Add, ot.dtype, ot.dtype, {cur, value.name}, helpers_);
    }
    if (atomic) w_.line("tl.atomic_add(" + ptr + ", " + stored + (m.empty() ? "" : ", " + m) + ")");
    else w_.line("tl.store(" + ptr + ", " + stored + (m.empty() ? "" : ", " + m) + ")");
    // The write kernel reads the body's buffers and writes out (never the initial tensor).
    std::vector<std::pair<int, std::string>> write_params;
    for (const auto &pr : params) {
      bool body_reads = false;
      for (const Instr &i : n.body.instrs)
        if (i.op == Op::Load && i.buffer == pr.first) body_reads = true;
      if (body_reads || pr.first == out) write_params.push_back(pr);
    }
    end(write_params, int(std::clamp<int64_t>(l.block0 / 256, 1, 4)), {std::max<int64_t>(ceil_div(writes, l.block0), 1), 1, 1},
        {{"layout", std::string(atomic ? "atomic adds" : "stores") + " at indices read from data, in blocks of XBLOCK"}});
  }

  // The config's value when it sets one, else the default.
  template <typename T>
  static T pick(T configured, T otherwise) {
    return configured > 0 ? configured : otherwise;
  }
  int stages() const { return pick(cfg_.num_stages, 1); }

  enum class Strategy { Blocks, Tiles, Persistent, Looped, Columns, SplitRows, SplitColumns, Fixed };

  const ir::Program &p_;
  const Kernel &k_;
  const TritonOptions &o_;
  TritonConfig cfg_;                      // what the options ask for this kernel
  TritonConfig resolved_;                 // what emit() used
  Strategy strategy_ = Strategy::Fixed;   // the layout emit() chose
  ir::Ranges ranges_;
  Layout l_;
  Writer w_;
  std::string kernel_name_;
  std::vector<BufferId> params_;
  std::map<BufferId, std::string> names_;
  std::vector<Scope> scopes_;
  std::map<int, Value> vars_;  // loop variable id -> its name and dims
  std::set<std::string> helpers_;
  std::map<std::string, std::pair<std::string, DType>> rounded_from_;  // tmp = round(source) to dtype
  std::string mask0_, mask1_;
  int next_tmp_ = 0, next_acc_ = 0;
  int index_bits_ = 31;
  int64_t r_limit_ = -1;  // the end of axis 1 when a loop may run past it
  bool inner_ = false;    // emitting a pass over the reduced elements
  std::vector<GpuKernel> out_;
  std::vector<std::vector<int>> out_args_;
  int *next_scratch_ = nullptr;
  std::map<int, std::pair<DType, int64_t>> *scratch_ = nullptr;
};

std::string json_string(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// The dtype names of the launch plan (torch's short names).
std::string plan_dtype(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::U8: return "u8";
    case DType::I8: return "i8";
    case DType::I16: return "i16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
  }
  return "?";
}

std::string json_ints(const std::vector<int64_t> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

}  // namespace

std::string TritonConfig::str() const {
  std::string out;
  auto field = [&](const char *name, int64_t v) {
    if (v > 0) out += (out.empty() ? "" : " ") + std::string(name) + "=" + std::to_string(v);
  };
  field("block0", block0);
  field("block1", block1);
  field("warps", num_warps);
  field("stages", num_stages);
  field("split", split);
  return out.empty() ? "default" : out;
}

TritonConfig parse_triton_config(std::string_view text, std::string_view origin) {
  TritonConfig c;
  if (text == "default") return c;
  std::istringstream in{std::string(text)};
  std::string word;
  while (in >> word) {
    size_t eq = word.find('=');
    std::string key = word.substr(0, eq == std::string::npos ? word.size() : eq);
    int64_t value = 0;
    bool number = eq != std::string::npos && eq + 1 < word.size() &&
                  word.find_first_not_of("0123456789", eq + 1) == std::string::npos && word.size() - eq - 1 <= 9;
    if (number) value = std::stoll(word.substr(eq + 1));
    bool pow2 = value > 0 && (value & (value - 1)) == 0;
    if (!number || value <= 0 || ((key == "block0" || key == "block1" || key == "split") && !pow2))
      throw UserError(str_cat(origin, ": '", word, "' is not a field of a Triton config (block0, block1, split: ",
                              "powers of two; warps, stages: positive integers)"));
    if (key == "block0") c.block0 = value;
    else if (key == "block1") c.block1 = value;
    else if (key == "warps") c.num_warps = int(value);
    else if (key == "stages") c.num_stages = int(value);
    else if (key == "split") c.split = value;
    else throw UserError(str_cat(origin, ": unknown field '", key, "' in Triton config '", text, "'"));
  }
  return c;
}

std::vector<TritonConfig> tuning_configs(const sched::Schedule &s, const std::string &kernel, const TritonOptions &o) {
  for (const Kernel &k : s.ir.kernels) {
    if (k.name != kernel) continue;
    if (k.kind == ir::KernelKind::Extern) return {TritonConfig{}};
    std::vector<std::vector<int>> args;
    std::map<int, std::pair<DType, int64_t>> scratch;
    int next_scratch = int(s.ir.program.buffers.size());
    TritonEmitter e(s.ir.program, k, o);
    e.emit(args, scratch, next_scratch);
    return e.candidates();
  }
  throw InternalError(str_cat("tuning_configs: the schedule has no kernel ", kernel));
}

GpuProgram generate_triton(const sched::Schedule &s, const TritonOptions &o) {
  const ir::Program &p = s.ir.program;
  GpuProgram g;
  // Where buffers live: as on the CPU (cpp_wrapper.h), with scratch after the arena.
  for (size_t i = 0; i < p.inputs.size(); ++i) g.places[p.inputs[i]] = {GpuPlace::Kind::Input, int(i), 0};
  for (size_t i = 0; i < p.outputs.size(); ++i)
    if (!g.places.count(p.outputs[i])) g.places[p.outputs[i]] = {GpuPlace::Kind::Output, int(i), 0};
  for (size_t i = 0; i < s.lives.size(); ++i) g.places[s.life_buffers[i]] = {GpuPlace::Kind::Arena, -1, s.memory.offsets[i]};
  g.arena_bytes = s.memory.arena_bytes;
  int next_scratch = int(p.buffers.size());
  std::map<int, std::pair<DType, int64_t>> scratch;
  for (const Kernel &k : s.ir.kernels) {
    if (k.kind == ir::KernelKind::Extern) {
      GpuStep step;
      step.kind = GpuStep::Kind::Extern;
      step.node = k.nodes[0];
      step.schedule_kernel = k.name;
      if (k.nodes.size() > 1) step.epilogue = sched::epilogue_of(p, k);
      g.steps.push_back(step);
      continue;
    }
    std::vector<std::vector<int>> args;
    int before = next_scratch;
    std::vector<GpuKernel> made = TritonEmitter(p, k, o).emit(args, scratch, next_scratch);
    // Scratch of this kernel: after the arena, freed when the kernel ends (the next one may reuse it).
    int64_t offset = s.memory.arena_bytes;
    for (int id = before; id < next_scratch; ++id) {
      auto [t, elements] = scratch.at(id);
      g.places[id] = {GpuPlace::Kind::Scratch, -1, offset};
      g.scratch_names[id] = k.name + "_partials" + std::to_string(id - before);
      g.scratch_dtypes[id] = t;
      g.scratch_elements[id] = elements;
      offset += (elements * itemsize(t) + sched::kArenaAlignment - 1) / sched::kArenaAlignment * sched::kArenaAlignment;
    }
    g.arena_bytes = std::max(g.arena_bytes, offset);
    for (size_t i = 0; i < made.size(); ++i) {
      GpuStep step;
      step.kind = GpuStep::Kind::Launch;
      step.kernel = int(g.kernels.size());
      step.args = args[i];
      step.schedule_kernel = k.name;
      g.kernels.push_back(std::move(made[i]));
      g.steps.push_back(step);
    }
  }
  return g;
}

std::vector<TritonCompileRequest> compile_requests(const GpuProgram &g) {
  std::vector<TritonCompileRequest> out;
  for (const GpuKernel &k : g.kernels) {
    TritonCompileRequest r;
    r.name = k.name;
    r.source = k.source;
    r.signature = k.signature;
    r.constexprs = k.constexprs;
    for (const TritonArg &a : k.signature)
      if (a.type[0] == '*') r.divisible_by_16.push_back(a.name);  // every buffer starts 16-byte aligned
    r.num_warps = k.num_warps;
    r.num_stages = k.num_stages;
    out.push_back(std::move(r));
  }
  return out;
}

std::string launch_plan_json(const sched::Schedule &s, const GpuProgram &g) {
  const ir::Program &p = s.ir.program;
  std::string out = "{\n  \"format\": \"coil-launch-plan\", \"version\": 1,\n";
  out += "  \"arena_bytes\": " + std::to_string(g.arena_bytes) + ",\n  \"buffers\": [\n";
  bool first = true;
  for (const auto &[id, place] : g.places) {
    bool scratch = id >= int(p.buffers.size());
    std::string name = scratch ? g.scratch_names.at(id) : p.buffer(id).name;
    DType t = scratch ? g.scratch_dtypes.at(id) : p.buffer(id).type.dtype;
    int64_t elements = scratch ? g.scratch_elements.at(id) : storage_extent(p.buffer(id).type);
    out += std::string(first ? "" : ",\n") + "    {\"id\": " + std::to_string(id) + ", \"name\": " + json_string(name) +
           ", \"dtype\": \"" + plan_dtype(t) + "\", \"elements\": " + std::to_string(elements) + ", \"place\": ";
    switch (place.kind) {
      case GpuPlace::Kind::Input: out += "\"input\", \"index\": " + std::to_string(place.index); break;
      case GpuPlace::Kind::Output: out += "\"output\", \"index\": " + std::to_string(place.index); break;
      case GpuPlace::Kind::Arena:
      case GpuPlace::Kind::Scratch: out += "\"arena\", \"offset\": " + std::to_string(place.offset); break;
    }
    out += "}";
    first = false;
  }
  out += "\n  ],\n  \"inputs\": [\n";
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const ir::Buffer &b = p.buffer(p.inputs[i]);
    out += std::string(i ? ",\n" : "") + "    {\"name\": " + json_string(b.name) + ", \"buffer\": " + std::to_string(p.inputs[i]) +
           ", \"dtype\": \"" + plan_dtype(b.type.dtype) + "\", \"sizes\": " + json_ints(b.type.sizes) +
           ", \"strides\": " + json_ints(b.type.strides) + ", \"offset\": 0}";
  }
  out += "\n  ],\n  \"outputs\": [\n";
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    BufferId b = p.outputs[i];
    const ir::View &v = p.output_views[i];
    std::string alias = "none";
    if (std::find(p.inputs.begin(), p.inputs.end(), b) != p.inputs.end()) alias = "input";
    else if (std::find(p.outputs.begin(), p.outputs.end(), b) - p.outputs.begin() < long(i)) alias = "output";
    out += std::string(i ? ",\n" : "") + "    {\"name\": \"out" + std::to_string(i) + "\", \"buffer\": " + std::to_string(b) +
           ", \"dtype\": \"" + plan_dtype(p.buffer(b).type.dtype) + "\", \"sizes\": " + json_ints(v.sizes) +
           ", \"strides\": " + json_ints(v.strides) + ", \"offset\": " + std::to_string(v.offset) + ", \"alias\": \"" + alias + "\"}";
  }
  out += "\n  ],\n  \"steps\": [\n";
  for (size_t i = 0; i < g.steps.size(); ++i) {
    const GpuStep &st = g.steps[i];
    out += i ? ",\n" : "";
    if (st.kind == GpuStep::Kind::Launch) {
      const GpuKernel &k = g.kernels[size_t(st.kernel)];
      std::string consts;
      for (const auto &[name, value] : k.constexprs)
        consts += (consts.empty() ? "" : ", ") + json_string(name) + ": " + std::to_string(std::get<int64_t>(value));
      std::vector<int64_t> args(st.args.begin(), st.args.end());
      out += "    {\"kind\": \"launch\", \"kernel\": " + json_string(k.name) + ", \"file\": \"kernels/" + k.name +
             ".py\", \"grid\": " + json_ints({k.grid[0], k.grid[1], k.grid[2]}) + ", \"args\": " + json_ints(args) +
             ", \"constexprs\": {" + consts + "}, \"num_warps\": " + std::to_string(k.num_warps) +
             ", \"num_stages\": " + std::to_string(k.num_stages) + "}";
      continue;
    }
    const Node &n = p.nodes[size_t(st.node)];
    auto view = [&](const ir::View &v) {
      if (v.buffer < 0) return std::string("{\"buffer\": -1}");
      return "{\"buffer\": " + std::to_string(v.buffer) + ", \"sizes\": " + json_ints(v.sizes) + ", \"strides\": " +
             json_ints(v.strides) + ", \"offset\": " + std::to_string(v.offset) + "}";
    };
    std::string operands;
    for (const ir::View &v : n.operands) operands += (operands.empty() ? "" : ", ") + view(v);
    const ir::Buffer &ob = p.buffer(n.outputs[0]);
    std::string attrs, scalars;
    for (const auto &[name, v] : n.attrs) attrs += (attrs.empty() ? "" : ", ") + json_string(name) + ": " + json_ints(v);
    for (const auto &[name, v] : n.scalars) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      scalars += (scalars.empty() ? "" : ", ") + json_string(name) + ": " + buf;
    }
    std::string epilogue;
    if (st.epilogue) {
      std::string ops;
      for (const sched::PostOp &op : st.epilogue->ops) {
        char ab[96];
        std::snprintf(ab, sizeof ab, "\"alpha\": %.17g, \"beta\": %.17g", op.alpha, op.beta);
        ops += std::string(ops.empty() ? "" : ", ") + "{\"kind\": \"" + std::string(sched::post_op_name(op.kind)) + "\", " + ab +
               (op.binary() ? ", \"operand\": " + view(op.operand) : "") + "}";
      }
      epilogue = ", \"epilogue\": {\"ops\": [" + ops + "], \"out\": " + view(st.epilogue->out) + "}";
    }
    out += "    {\"kind\": \"extern\", \"kernel\": " + json_string(st.schedule_kernel) + ", \"op\": \"" +
           std::string(ir::extern_op_name(n.extern_op)) + "\", \"operands\": [" + operands + "], \"out\": " +
           view(ir::View{n.outputs[0], ob.type.sizes, ob.type.strides, 0}) + ", \"attrs\": {" + attrs + "}, \"scalars\": {" +
           scalars + "}" + epilogue + "}";
  }
  out += "\n  ]\n}\n";
  return out;
}

}  // namespace coil::codegen
