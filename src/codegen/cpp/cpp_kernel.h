// The emitter of one kernel function of the C++ dialect, internal to src/codegen/cpp. It
// prints a kernel as its plan says (cpp_plan.h) and decides nothing of how it runs.
// Its members are defined by concern: cpp_kernel.cpp (parameters,
// values and their CSE, vector loads and stores, bodies, loops, the prefaulting of
// outputs), cpp_pointwise.cpp (pointwise kernels and their transposed tiles, scans,
// scatters) and cpp_reduction.cpp (accumulators, tiled and split reductions).
// cpp_codegen.cpp runs it once per kernel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/common/scopes.h"
#include "codegen/common/writer.h"
#include "codegen/cpp/cpp_codegen.h"
#include "codegen/cpp/cpp_ops.h"
#include "codegen/cpp/cpp_plan.h"
#include "codegen/cpp/cpp_wrapper.h"
#include "ir/kernel.h"

namespace coil::codegen::detail {

using ir::BufferId;
using ir::Expr;
using ir::Instr;
using ir::Kernel;
using ir::Node;
using ir::Op;
using ir::VarId;

/// Emits one kernel function as `plan` says.
class KernelEmitter {
 public:
  KernelEmitter(const ir::Program &p, const Kernel &k, const CppKernelPlan &plan, const Storage &storage, Writer &w);

  /// The buffers passed to the kernel, in parameter order.
  std::vector<BufferId> params() const { return params_; }
  /// The symbolic sizes passed to it after the buffers (`int64_t s0`), in order.
  const std::vector<std::string> &symbols() const { return symbols_; }

  void emit();

 private:
  // ---- parameters ------------------------------------------------------------------------

  void collect_params();

  bool written(BufferId b) const { return contains(k_.stores, b); }

  // Two parameters on the same memory (a write in place) may not be __restrict__.
  bool shares_memory(BufferId b) const;

  std::string param_decl(BufferId b) const;

  // ---- scopes: CSE of values and the values of internal buffers ---------------------------

  void push() { scopes_.push(); }
  void pop() { scopes_.pop(); }

  std::string var(VarId v) const;

  std::string index(const Expr &e) const;

  // `type tmpN = rhs;` unless an enclosing scope computed rhs already.
  std::string def(const std::string &type, const std::string &rhs);

  // ---- SIMD: vector loops, loads and stores ------------------------------------------------

  /// The type of a value of `t` in the code being emitted: a vector inside a vector loop.
  std::string vt(DType t) const { return vector_type(t, vlanes_); }

  /// `value` (of dtype t) as a vector: values computed outside the vector loop (a row's
  /// max, say) are splatted once.
  std::string as_vector(const std::string &value, DType t);

  /// Whether `index` of buffer b is aligned to the vector's size (at most 64 bytes) at
  /// every step of the vector loop: an arena buffer (64-byte aligned offsets), a loop
  /// from 0, and every other term and the constant whole multiples of the lanes.
  bool aligned(BufferId b, const Expr &index) const;

  /// The vector of a load in a vector loop: contiguous loads are one vector load,
  /// broadcast ones one scalar load splatted, strided ones a gather, the rest lane by
  /// lane. A mask that is the same in every lane (a cat along an outer dim, padding
  /// rows) chooses between the whole vector and the fill once, not lane by lane.
  std::string vector_load(const Instr &i, const std::vector<std::string> &v);
  /// The same for an unmasked direct load, as one expression that defines nothing (it
  /// may sit under a condition).
  std::string vector_load_expr(const Instr &i);
  /// Whether each value of `body` is the same in every lane of the vector loop.
  std::vector<bool> uniform_values(const ir::Body &body) const;
  std::string vector_constant(const Instr &i);
  /// A comparison of an index moving along the vector with a uniform integer, as lane
  /// offsets in 32 bits (a causal mask's column >= row); nothing for other comparisons.
  std::optional<std::string> lane_compare(const ir::Body &body, const Instr &i) const;
  /// The vector of a uniform value, splatted from its scalar when first used as one.
  void splat(const ir::Body &body, int value, std::vector<std::string> &v);
  void splat_operands(const ir::Body &body, const Instr &i, std::vector<std::string> &v);

  /// One vector of dtype t from `at` onwards, widened from bf16/f16 storage.
  std::string contiguous_load(const std::string &at, DType t, bool is_aligned) const;

  /// The element a load reads: its index, with indices read from data checked.
  std::string element_index(const Instr &i, const std::function<std::string(int)> &value_of) const;

  /// `index` as an offset added to a pointer: bracketed when it subtracts.
  std::string offset(const Expr &e) const;

  /// The values of an index expression in the lanes of a vector loop.
  std::string vector_index(const Expr &e);

  /// Writes vector `value` of dtype t to buffer `out` at `at`.
  void vector_store(BufferId out, const Expr &at, const std::string &value, DType t);

  /// Loops over `sizes` (variables first, first+1, ...) around `body`. With `lanes`, the
  /// innermost loop steps by vectors and the body is emitted twice: once on vectors, once
  /// for the scalar tail. Without, `clauses` (when set) marks the innermost `omp simd`.
  void emit_nest(const SymShape &sizes, int first, bool parallel, const SymInt &work, const std::optional<std::string> &clauses,
                 int lanes, const std::function<void()> &body);

  void vector_body(VarId x, int lanes, bool start_aligned, const std::function<void()> &body);

  std::string forward_key(BufferId b, const Expr &at) const;

  std::optional<std::string> forwarded(BufferId b, const Expr &at) const;

  // ---- bodies ---------------------------------------------------------------------------

  std::string load(const ir::Body &body, const Instr &i, const std::vector<std::string> &v);

  std::vector<std::string> emit_body(const ir::Body &body);

  // ---- values passed from one pass over a row to a later one --------------------------------

  /// Declares the plan's row buffers (CppRowCache), on the stack of the thread of a row.
  void declare_row_cache();

  // Stores value `v` (of dtype `from`) as output `out` of node `n` at its store index.
  void store(const Node &n, BufferId out, const std::string &v, DType from);

  void emit_pointwise_member(const Node &n);

  // ---- loops ----------------------------------------------------------------------------

  // Nested loops over `sizes` with variables first..; `parallel` puts the outer ones on
  // threads, `simd` marks the innermost as vectorizable. Returns the braces opened: the
  // loops, and the parallel region when it holds each thread's Prefaults.
  int open_loops(const SymShape &all_sizes, int first, bool parallel, bool simd, const SymInt &work,
                 const std::string &simd_clauses = "");

  // ---- the first touch of large outputs --------------------------------------------------

  /// A graph output of at least 1 MiB that a kernel writes, prefaulted by each thread
  /// ahead of its writes (coil_rt::Prefault in prelude.h): the caller owns that memory and
  /// may hand it over freshly mapped. Arena buffers are backed after the first call.
  struct PrefaultOut {
    BufferId buffer;
    std::string name;  // the thread's coil_rt::Prefault
    Expr at;           // the store's index
  };

  /// The plan's prefaulted outputs, each with its thread's Prefault and the store's index.
  void collect_prefault();

  /// `#pragma omp parallel for` with `clauses` (" collapse(2)"), threads by `work`. With
  /// outputs to prefault it opens a parallel region that gives each thread its Prefaults,
  /// with `#pragma omp for` inside, and returns true: the caller closes one brace more.
  bool open_parallel_for(const std::string &clauses, const SymInt &work);

  /// Each prefaulted output reached for the span one iteration of the loops on threads
  /// writes: the variables `on_threads` as they are, every other from its first value
  /// (lo) to its last (hi).
  void emit_reach(const std::vector<VarId> &on_threads, const std::map<int, std::string> &tile_start = {});

  void close_loops(int n);

  int64_t body_work() const;

  // ---- pointwise kernels and their transposed tiles -------------------------------------

  /// The plan's transposed tiles: each transposed load is first copied into a tile of its
  /// own, transposed (coil_rt::transpose_tile), which the rows of the tile then read as
  /// vectors like any contiguous load. Tiles at the edges run in scalar code.
  void emit_tiled_pointwise();

  // A whole tile: the transposed loads into tiles of their own, then rows of vectors.
  void emit_vector_tile(int lanes);

  // A tile in scalar code under omp simd, cut at the edges of the last two dims.
  void emit_scalar_tile();

  void emit_pointwise();

  // ---- reductions -------------------------------------------------------------------------

  struct Acc {
    const Node *node;
    std::string a, b, c;  // value (or mean); index (or m2); NaN flag (or count)
    DType in;
    std::string shift;    // Welford as shifted sums: the row's first element
    std::string va, vb, vc;  // the vector accumulators of a vectorized pass (lanes: vlanes)
    int vlanes = 0;
  };

  Acc start(const Node &n);

  void accumulate(const Acc &acc, const std::string &x);

  // ---- vector accumulators ------------------------------------------------------------------

  /// Whether every reduction of a pass has a vector form: argmax's first-index tie rule
  /// and Welford's running mean are sequential, and keep the pass scalar.
  static bool vector_forms(const std::vector<Acc> &accs);

  /// Declares the vector accumulators of `acc`, one partial result per lane.
  void start_vector(Acc &acc, int lanes);

  void accumulate_vector(const Acc &acc, const std::string &x);

  /// Folds the lanes of the vector accumulators into the scalar ones, lane 0 first: the
  /// same order on every run.
  void fold_vector(const Acc &acc);

  // The shift of a Welford reduction of `step`: its value at the row's first element.
  std::string emit_shift(const ir::Step &step, const Node &welford, const std::string &name);

  // The position of the current inner point among the reduced elements, row-major.
  std::string position() const;

  void finish(const Acc &acc);

  // `reduction(...)` clauses that let the pass over a row run as SIMD, or nothing when a
  // reduction of the pass has no such form (argmax's tie rule, Welford).
  static std::optional<std::string> simd_clauses(const std::vector<Acc> &accs);

  static bool is_inner_member(const Node &n);

  void open_lanes(int64_t block);

  void close_lanes();

  // Lanes of the last kept dim side by side in each pass (a sum over dim 0): the pass reads
  // whole cache lines and vectorizes across rows.
  void emit_tiled_reduction();

  // into <- into merged with from (fields are expressions: lane or thread partials).
  void merge(const Acc &into, const Acc &from);

  void emit_reduction();
  /// The passes over one row of a reduction (`cached`: with the plan's row buffers).
  void emit_row_passes(int outer, const SymInt &work, bool cached);

  // One pass of `step` over the reduced elements: its members in order, each reduction
  // adding to its accumulator.
  void emit_pass(const ir::Step &step, const std::vector<Acc> &accs);

  // A pass of a reduction to a single row (x.sum()) split across threads: chunks of the
  // first reduced dim go to threads, and their partial results are combined after the
  // parallel loop in a fixed order, so a run gives the same result every time with the
  // same thread count.
  /// The work of a reduction kernel, which sizes its threads: its elements times the reduced
  /// ones (at least 1) times the ops of its bodies.
  SymInt reduction_work() const;
  void emit_split_step(const ir::Step &step, const CppPassPlan &pass, const SymInt &work);

  // ---- scans, scatters, extern calls ---------------------------------------------------

  void emit_scan();

  void emit_scatter();

  const ir::Program &p_;
  const Kernel &k_;
  const CppKernelPlan &plan_;
  const Storage &storage_;
  Writer &w_;
  ir::Ranges ranges_;
  std::vector<BufferId> params_;
  std::vector<std::string> symbols_;  // the graph's symbolic sizes it names, after the buffers
  std::map<BufferId, std::string> names_;
  ValueScopes<std::string> scopes_;  // "type rhs" -> tmp; element keys -> the tmp holding the element
  int next_tmp_ = 0, next_acc_ = 0;
  std::map<std::string, const CppRowCache *> row_cache_;  // structural key -> its row buffer, while emitted
  int step_index_ = 0;                                    // the pass being emitted, from 1
  std::map<std::string, std::string> splat_of_;      // vector tmp -> the scalar in every lane
  std::map<std::string, std::string> rounded_from_;  // tmp = round_bf16/f16(source): tmp -> source
  int64_t lanes_ = 0;   // > 0: a reduction tiled over this many lanes of the last kept dim
  int vlanes_ = 0;      // > 0 while the body of a vector loop is emitted
  VarId vvar_{-1};      // the variable that loop steps
  bool vector_start_aligned_ = false;  // the loop starts at 0 (not at a thread's chunk)
  bool lane_index_ = false;            // indices are printed for lane l: vvar_ is (x + l)
  std::set<std::string> vector_values_;  // tmps that hold vectors
  std::vector<bool> uniform_;            // of the body being emitted: the values equal in every lane
  std::vector<std::string> uniform_scalars_;  // and the scalar of each
  int row_scope_ = -1;  // the scope of one row (one block of rows when tiled)
  std::map<std::string, std::string> tiles_;  // transposed load (forward key) -> its tile, in a vector tile
  std::string tile_position_;                 // the element of a tile that a vector tile's lane 0 reads
  std::vector<PrefaultOut> prefault_;         // outputs each thread prefaults ahead of its writes
};

}  // namespace coil::codegen::detail
