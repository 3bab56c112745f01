// Lowering: every ATen node of a Graph becomes loop-IR nodes (src/ir/loop_ir.h).
//
// Each op family has its file (pointwise.cpp, views.cpp, reductions.cpp, norms.cpp, ...)
// with a table from op target to a lowering function. Lowering decides nothing about
// fusion: every op writes its own buffer (views write none: they are index maps into
// their base), and the scheduler later fuses and inlines. Tests: the reference
// interpreter against PyTorch's outputs on every fixture (tests/unit/reference_test.cpp).
#pragma once

#include <functional>
#include <map>
#include <tuple>

#include "graph/graph.h"
#include "ir/loop_ir.h"

namespace coil::lowering {

/// The name of the random state's input buffer (not a Python identifier, so that no graph
/// input can have it).
inline constexpr const char *kRandomStateName = "coil.random_state";

/// Choices lowering makes by option.
struct LowerOptions {
  /// Matrix products read operands and write results with rows padded to 16 bytes
  /// (lowering/extern.cpp, aligned rows): "auto" on the GPU for bf16 and f16 matrices of
  /// 2^20 elements or more, "always", or "never" (option extern.align_product_rows).
  std::string align_product_rows = "auto";
  /// A convolution's weight gradient on the GPU as one library call (cuDNN's backward
  /// filter pass), else a generated reduction (option extern.conv_weight_grad).
  bool conv_weight_grad_call = true;

  static LowerOptions from_registry();
};

/// Lowers `g`, keeping its symbolic sizes (ir/loop_ir.h): the program serves every size
/// that passes the graph's guards, which lowering adds to wherever it specializes a size.
/// Throws UserError naming the node for an op that has no lowering yet.
ir::Program lower_symbolic(const Graph &g, const LowerOptions &o = {});

/// Lowers `g` for the sizes it is compiled for: lower_symbolic, specialized to the symbols'
/// values (ir/specialize.h), each symbol guarded with the reason `why`.
ir::Program lower(const Graph &g, const LowerOptions &o = {},
                  std::string_view why = "the loop IR after lowering, which does not keep symbols yet");

/// A graph value as the IR sees it: a strided view of a buffer.
struct TensorRef {
  ir::BufferId buffer = -1;
  DType dtype = DType::F32;
  SymShape sizes;
  SymShape strides;
  SymInt offset = 0;

  int64_t rank() const { return int64_t(sizes.size()); }
};

/// The state of one lowering and the helpers every family uses.
class Lowering {
 public:
  explicit Lowering(const Graph &g, LowerOptions o = {}) : g_(g), o_(std::move(o)) {}

  const Graph &graph() const { return g_; }
  const LowerOptions &options() const { return o_; }
  ir::Program &program() { return p_; }

  /// The tensor a node argument refers to.
  const TensorRef &ref(ValueId v) const;
  void bind(ValueId v, TensorRef r) { refs_[v.index] = std::move(r); }

  /// A new computed buffer with the type the meta function gave a graph value.
  TensorRef new_buffer(const TensorType &type);

  /// The element offset of `r` at `index` (one Expr per dim of r).
  static ir::Expr offset(const TensorRef &r, const std::vector<ir::Expr> &index);

  /// Loads `r` at `out_index`, an index into a result of rank >= r's rank that `r`
  /// broadcasts to (dims align from the right; size-1 dims of r read element 0).
  static int load_broadcast(ir::BodyBuilder &b, const TensorRef &r, const std::vector<ir::Expr> &out_index);

  using BodyFn = std::function<int(ir::BodyBuilder &, const std::vector<ir::Expr> &index)>;

  /// A Scan node: an inclusive prefix combine (`op` Sum or Prod) along dim `dim` of the
  /// values `fn` emits over `out`'s sizes.
  TensorRef scan(const TensorType &out, int dim, ir::ScanOp op, const std::string &origin, const BodyFn &fn);

  /// A Scatter node: a copy of `init`, then at every point x of `ranges` the value `fn`
  /// emits (cast to out.dtype) is stored at `offset(x)` (or combined there by `combine` when
  /// `accumulate`), whose indirect vars are the index values `fn` returned after it.
  using ScatterFn = std::function<std::pair<int, std::vector<int>>(ir::BodyBuilder &, const std::vector<ir::Expr> &x)>;
  TensorRef scatter(const std::string &origin, const TensorType &out, const TensorRef &init, const SymShape &ranges,
                    bool accumulate, const ScatterFn &fn, const std::function<ir::Expr(const std::vector<ir::Expr> &x)> &offset,
                    ir::Op combine = ir::Op::Add);

  /// Random ops draw from the call's random state: an i64[2] input buffer (seed, then the
  /// offset of its first counter) the caller gives each call, made at the first random op
  /// (kRandomStateName; include/coil/coil.h). Each op reserves counters of its own, one per
  /// number it draws, after the previous op's: `reserve_draws` returns its first.
  int64_t reserve_draws(int64_t count, const Device &device);
  /// A number drawn by `op` (Rand, Randn, RandBits), of dtype F32 or F64 (I64 for
  /// RandBits), for element `x` of a tensor of `sizes`: at counter offset + `first` + x's
  /// number in row-major order. The same counter gives the same number wherever the value
  /// is computed, so fusion may recompute it. With `state`, an i64 tensor of a graph value
  /// (seed, offset) keys the draw instead of the call's random state (coil.dropout_keep).
  int draw(ir::BodyBuilder &b, ir::Op op, DType dtype, int64_t first, const std::vector<ir::Expr> &x,
           const SymShape &sizes, const TensorRef *state = nullptr);

  /// A Pointwise node computing `type` (sizes, dtype, strides of the graph value):
  /// `fn` emits the value at each index; the result is cast to type.dtype.
  TensorRef pointwise(const TensorType &type, const std::string &origin, const BodyFn &fn);

  /// A Pointwise node filling `type` with `value` (zeros to start a scatter from, and the
  /// outputs a backward op's output_mask leaves out).
  TensorRef fill(const TensorType &type, const std::string &origin, double value = 0);

  /// A Reduction node: `out` is the result's type, `reduced` the sizes of the reduced
  /// dims; `fn` gets the output index and the reduction index and emits the value to
  /// combine. Welford returns (mean, m2, count) buffers.
  std::vector<TensorRef> reduction(const TensorType &out, const SymShape &reduced, ir::ReduceOp op,
                                   const std::string &origin,
                                   const std::function<int(ir::BodyBuilder &, const std::vector<ir::Expr> &out_index,
                                                           const std::vector<ir::Expr> &r_index)> &fn);

  /// The copies of matrices with aligned rows (or padded sizes) made so far, by source view
  /// (buffer, offset, sizes, strides) and the copy's sizes, so that products reading one
  /// view share one copy.
  using CopyKey = std::tuple<ir::BufferId, int64_t, Shape, Shape, Shape>;
  std::map<CopyKey, TensorRef> &aligned_copies() { return aligned_; }

 private:
  const Graph &g_;
  LowerOptions o_;
  ir::Program p_;
  std::map<CopyKey, TensorRef> aligned_;
  ir::BufferId random_state_ = -1;
  int64_t draws_ = 0;
  std::map<int, TensorRef> refs_;
};

/// The node's argument called `name` in its schema.
const Arg &arg(const Node &n, std::string_view name);
/// A Python number argument (int, float or bool) as a double.
double number(const Arg &a);
/// Node argument `name` at `index`: a tensor loaded with broadcasting, or a Python number as
/// a constant of its type (f64, i64 or bool).
int load_argument(Lowering &l, ir::BodyBuilder &b, const Node &n, const std::string &name,
                  const std::vector<ir::Expr> &index);
/// `v` as a value of `dtype` in a body: a constant, or for a symbolic size its index
/// expression (`s0*12`), which specialization turns back into a constant.
int size_value(ir::BodyBuilder &b, const SymInt &v, DType dtype);
/// An int list argument's values.
std::vector<int64_t> ints_of(const Arg &a);
/// The row-major coordinates over `sizes` of the flat position `flat`, which is in
/// [0, numel(sizes)); symbolic sizes divide as sizes (`(x0 // s1) % s0`).
std::vector<ir::Expr> unravel(const ir::Expr &flat, const SymShape &sizes);
/// The tensor a node's argument `name` names, as lowered so far.
const TensorRef &tensor_arg(Lowering &l, const Node &n, const char *name);

using LowerFn = std::function<std::vector<TensorRef>(Lowering &, const Node &)>;

/// The lowering of every op that has one, by target.
const std::map<std::string, LowerFn, std::less<>> &lowerings();

// One table per family, in src/lowering/<family>.cpp.
void add_pointwise_lowerings(std::map<std::string, LowerFn, std::less<>> &t);
void add_view_lowerings(std::map<std::string, LowerFn, std::less<>> &t);
void add_reduction_lowerings(std::map<std::string, LowerFn, std::less<>> &t);
void add_norm_lowerings(std::map<std::string, LowerFn, std::less<>> &t);
void add_extern_lowerings(std::map<std::string, LowerFn, std::less<>> &t);
void add_creation_lowerings(std::map<std::string, LowerFn, std::less<>> &t);
void add_pooling_lowerings(std::map<std::string, LowerFn, std::less<>> &t);
void add_grid_sampler_lowerings(std::map<std::string, LowerFn, std::less<>> &t);
void add_indexing_lowerings(std::map<std::string, LowerFn, std::less<>> &t);
void add_random_lowerings(std::map<std::string, LowerFn, std::less<>> &t);
void add_special_lowerings(std::map<std::string, LowerFn, std::less<>> &t);
void add_integer_lowerings(std::map<std::string, LowerFn, std::less<>> &t);
void add_sorting_lowerings(std::map<std::string, LowerFn, std::less<>> &t);
void add_histogram_lowerings(std::map<std::string, LowerFn, std::less<>> &t);

}  // namespace coil::lowering
