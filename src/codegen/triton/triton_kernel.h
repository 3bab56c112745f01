// The emitter of a schedule kernel's Triton kernels, internal to src/codegen/triton. Its
// members are defined by concern: triton_kernel.cpp (parameters, block shapes and masks,
// values and their CSE, loads, stores and bodies),
// triton_pointwise.cpp (pointwise kernels and their tiles, scans, scatters) and
// triton_reduction.cpp (persistent, looped and split reductions). triton_codegen.cpp runs it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/common/scopes.h"
#include "codegen/common/writer.h"
#include "codegen/triton/triton_codegen.h"
#include "ir/kernel.h"
#include "support/int_math.h"

namespace coil::codegen {
struct TritonKernelPlan;
}

namespace coil::codegen::detail {

using ir::BufferId;
using ir::Expr;
using ir::Instr;
using ir::Kernel;
using ir::Node;
using ir::Op;
using ir::ReduceOp;
using ir::VarId;

inline int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

using coil::ceil_div;
using coil::round_up;

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
  SymInt n0 = 1, n1 = 1;         // elements along each axis
  std::vector<std::pair<VarId, SymInt>> vars0, vars1;  // the loop variables each axis covers, outer first
  bool looped = false;           // axis 1 is walked in a loop of B1 steps
  int program_axis0 = 0;         // which program_id runs along axis 0
};

/// Emits a schedule kernel's Triton kernels as `plan` says (triton_kernel_plan.h).
class TritonEmitter {
 public:
  TritonEmitter(const ir::Program &p, const Kernel &k, const TritonKernelPlan &plan);

  /// The kernels of this schedule kernel (two for a split reduction or a scatter).
  std::vector<GpuKernel> emit(std::vector<std::vector<int>> &args, std::map<int, std::pair<DType, SymInt>> &scratch,
                              int &next_scratch);

 private:
  // ---- parameters ------------------------------------------------------------------------

  void collect_params();

  void set_index_bits();

  // ---- one generated kernel ------------------------------------------------------------------

  /// Starts kernel `name` over `params` (buffer or scratch ids with their pointer names).
  void begin(const std::string &name, const Layout &l);

  /// Finishes the kernel begun: its module, signature (the pointers, then the symbols its
  /// code names) and launch.
  void end(const std::vector<std::pair<int, std::string>> &params, int num_warps, std::array<SymInt, 3> grid,
           std::map<std::string, std::string> attrs);

  /// The name of a generated kernel: the schedule kernel's, its plan's variant, `suffix`
  /// (kernel3, kernel3_looped_partials).
  std::string kernel_name(const std::string &suffix = "") const;

  // ---- sizes ---------------------------------------------------------------------------------

  /// A size in the kernel's code: its digits, or its expression in the symbols, which the
  /// kernel then takes as arguments.
  std::string size(const SymInt &s);
  /// Notes the symbols `e` names as the kernel's arguments.
  void take_symbols(const Expr &e);


  DType dtype_of(int id) const;

  std::vector<std::pair<int, std::string>> buffer_params() const;

  // ---- shapes and masks ----------------------------------------------------------------------

  std::string shape(int dims) const;

  /// The mask of the elements of a block that exist along `dims`, or "" when all do.
  std::string mask(int dims) const;

  static std::string and_masks(const std::string &a, const std::string &b);

  /// `v` as a tensor varying along `dims` (its own or more).
  std::string broadcast(const Value &v, int dims, DType t);

  /// The loop variables `vars` (outer first) from the flat `index` of their axis: the
  /// innermost is index % size, the outermost needs no %.
  void decompose(const std::string &index, const std::vector<std::pair<VarId, SymInt>> &vars, int dims);

  std::string var_name(VarId v) const;

  /// The program's offsets, indices and masks along axis 0 (and 1 unless looped).
  void emit_prologue();

  /// Axis 1's index and mask: from `offset` (the loop's) or, with none, from the program.
  void open_axis1(const std::string &offset);

  // ---- scopes: CSE of values and the values of internal buffers ---------------------------

  void push() { scopes_.push(); }
  void pop() { scopes_.pop(); }

  Value def(const std::string &rhs, int dims);

  std::string forward_key(BufferId b, const Expr &at) const;

  std::optional<Value> forwarded(BufferId b, const Expr &at) const;

  // ---- indices -----------------------------------------------------------------------------

  /// An index expression with the dims it varies along.
  std::pair<std::string, int> index(const Expr &e, const std::function<Value(int)> &indirect = {});

  /// `ptr + (index)` as a block of pointers along `dims` (at least the index's own).
  std::string pointer(const std::string &ptr, const std::string &idx, int idx_dims, int dims);

  // ---- bodies ---------------------------------------------------------------------------

  std::vector<Value> emit_body(const ir::Body &body);

  Value load(const Instr &i, const std::vector<Value> &v);

  // Stores value `v` (of dtype `from`) as output `out` of node `n` at its store index,
  // over the elements of `dims` that exist.
  void store(const Node &n, BufferId out, const Value &v, DType from);

  void emit_pointwise_member(const Node &n);

  // ---- pointwise --------------------------------------------------------------------------

  void emit_pointwise();

  // ---- reductions -------------------------------------------------------------------------

  static bool is_inner_member(const Node &n);

  void emit_reduction();

  struct Acc {
    const Node *node;
    DType in;
    std::vector<std::string> names;  // looped: the accumulators (value; index or m2; count)
  };

  std::string acc_type(const Acc &a) const;

  // The identity of a reduction in dtype t, as a Python expression.
  static std::string identity(ReduceOp op, DType t);

  static std::string lowest(DType t);
  static std::string highest(DType t);

  std::string truth(const Value &x, DType t);

  /// One pass over the reduced elements: persistent (the block holds the row) or looped.
  void emit_step(const ir::Step &step);

  void start_looped(Acc &a);

  // Each lane of the accumulator block adds the elements that fall on it.
  void accumulate(const Acc &a, const Value &x, const std::string &m);

  std::string arg_helper(ReduceOp op, const std::string &what);

  // The reduction of the accumulator lanes after a looped pass: one value per row.
  std::vector<Value> reduce_looped(const Acc &a);
  // Welford lanes (mean, m2, weight) along the reduced axis merged into one per row.
  std::vector<Value> merge_welford(const std::string &mean, const std::string &m2, const std::string &weight);

  std::string cast_sum(const std::string &e, DType t);

  std::string max_min(ReduceOp op, const std::string &x, DType t);

  // A persistent pass: the whole row is in the block.
  std::vector<Value> reduce_block(const Acc &a, const Value &x, const std::string &m);

  // Stores (or keeps for the members after) the results of a reduction.
  void finish(const Acc &a, const std::vector<Value> &r);

  // ---- split reductions ---------------------------------------------------------------------

  // A reduction to few rows, or to rows side by side that would fill few programs: `split`
  // programs share each block of rows, each reducing a chunk of the reduced elements into a
  // scratch buffer of partial results laid out [split, rows]; a second kernel combines them
  // and runs the row's members after the reduction. Row members before the pass (values
  // the pass reads) are computed in both kernels and stored by the second.
  void emit_split(bool columns);

  // The kernel's one pass over the reduced elements (splittable kernels have one).
  size_t pass_step() const;

  // Whether buffer b is read by a member outside the pass (in the combining kernel).
  bool used_outside_pass(BufferId b) const;

  // ---- scans -------------------------------------------------------------------------------

  void emit_scan();

  // ---- scatters ----------------------------------------------------------------------------

  // Two kernels: the copy of the initial tensor, then the writes (adds with atomics when
  // the scatter accumulates; of duplicate indices without, one write wins, as on PyTorch's
  // GPU).
  void emit_scatter();

  const ir::Program &p_;
  const Kernel &k_;
  const TritonKernelPlan &plan_;
  ir::Ranges ranges_;
  Layout l_;
  Writer w_;
  std::string kernel_name_;
  std::vector<BufferId> params_;
  std::map<BufferId, std::string> names_;
  ValueScopes<Value> scopes_;  // rhs -> tmp; element keys -> the element's value
  std::map<int, Value> vars_;  // loop variable id -> its name and dims
  std::set<std::string> helpers_;
  std::map<std::string, std::pair<std::string, DType>> rounded_from_;  // tmp = round(source) to dtype
  std::string mask0_, mask1_;
  int next_tmp_ = 0, next_acc_ = 0;
  int index_bits_ = 31;
  std::set<std::string> symbols_;  // the symbols the kernel being emitted names
  std::optional<SymInt> r_limit_;  // the end of axis 1 when a loop may run past it
  bool inner_ = false;    // emitting a pass over the reduced elements
  bool forward_only_ = false;  // members' values are kept for the kernel's later reads, not stored
  std::vector<GpuKernel> out_;
  std::vector<std::vector<int>> out_args_;
  int *next_scratch_ = nullptr;
  std::map<int, std::pair<DType, SymInt>> *scratch_ = nullptr;
};

}  // namespace coil::codegen::detail
