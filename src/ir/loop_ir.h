// The loop-level IR: buffers and the compute nodes that fill them.
//
// Every buffer is a strided allocation: a graph input, a constant, or the output of one
// compute node. A node is
//   - Pointwise: for every point x of `ranges`, store body(x) at the output's offset of x;
//   - Reduction: for every x, combine body(x, r) over every r of `reduction_ranges`
//     (sum, prod, max, min, argmax, argmin, any, all, welford -> mean/m2/count);
//   - Scan: an inclusive prefix combine along `scan_dim` of `ranges`, by `reduce_op`
//     (Sum: cumsum, Prod: cumprod);
//   - Extern: a library call (matmul, convolution) on whole buffers;
//   - Scatter: the output starts as a copy of operands[0]; then for every point x of
//     `ranges`, body result 0 is written (or added, `accumulate`) at `scatter_index`,
//     whose indirect vars stand for body results 1, 2, ... (scatter, index_put).
// Loop variables are numbered per node: x0..x{n-1} for `ranges`, then r0..r{m-1} for
// `reduction_ranges` (VarIds n..n+m-1). Loads address buffers by element offset, so
// views are index expressions, never copies. Tests: tests/unit/loop_ir_test.cpp.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/tensor_type.h"
#include "ir/body.h"

namespace coil::ir {

enum class NodeKind : uint8_t { Pointwise, Reduction, Scan, Extern, Scatter };

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min, ArgMax, ArgMin, Any, All, Welford };
std::string_view reduce_op_name(ReduceOp op);

enum class ExternOp : uint8_t { Mm, Bmm, Addmm, Baddbmm, Mv, Addmv, Convolution };
std::string_view extern_op_name(ExternOp op);

struct Buffer {
  enum class Kind : uint8_t { Input, Constant, Computed };
  std::string name;  // graph name for inputs and constants, buf<N> for computed
  Kind kind = Kind::Computed;
  TensorType type;   // dtype, sizes and strides of the allocation
  int producer = -1; // node index for Computed
};

/// A strided view of a buffer: how an Extern call sees its operands.
struct View {
  BufferId buffer = -1;  // -1: an absent operand (a convolution without bias)
  Shape sizes;
  Shape strides;
  int64_t offset = 0;
};

struct Node {
  NodeKind kind = NodeKind::Pointwise;
  std::string origin;              // the graph node(s) it was lowered from, for dumps
  std::vector<int64_t> ranges;     // output iteration space
  std::vector<int64_t> reduction_ranges;
  ReduceOp reduce_op = ReduceOp::Sum;
  int scan_dim = -1;
  Expr scatter_index;              // Scatter: the element offset written
  bool accumulate = false;         // Scatter: add instead of overwrite
  Body body;                       // Pointwise/Scan: results[k] goes to outputs[k];
                                   // Reduction: results are the values reduced
  std::vector<BufferId> outputs;   // Welford: mean, m2, count
  /// Where the outputs are stored: one index per output dim, in this node's variables.
  /// Empty means x0, x1, ... (ranges are the output's sizes); the scheduler sets it when
  /// it moves a node into a kernel whose iteration space is shaped differently.
  std::vector<Expr> output_index;
  /// The cast of the result to the output's dtype is what the op does (`_to_copy` to
  /// bf16), not the rounding at a store that fusion may drop (DESIGN.md, decision 14).
  bool semantic_cast = false;
  // Extern only.
  ExternOp extern_op = ExternOp::Mm;
  std::vector<View> operands;      // in the library call's order
  std::map<std::string, std::vector<int64_t>> attrs;  // stride, padding, dilation, groups, ...
  std::map<std::string, double> scalars;              // alpha, beta

  int num_vars() const { return int(ranges.size() + reduction_ranges.size()); }
  VarId x(int i) const { return VarId{i}; }
  VarId r(int i) const { return VarId{int(ranges.size()) + i}; }
  /// The buffers the node reads (loads, and an Extern's inputs), without duplicates.
  std::vector<BufferId> reads() const;
  /// `x0`, `x1`, ... for ranges and `r0`, ... for reduction ranges.
  std::string var_name(VarId v) const;
};

/// A lowered graph: buffers, nodes in a valid execution order, and the buffers that
/// hold the graph's inputs and outputs (in the graph's order). An output may alias an
/// input or another output, as it does in PyTorch.
struct Program {
  std::vector<Buffer> buffers;
  std::vector<Node> nodes;
  std::vector<BufferId> inputs;   // graph inputs then constants, in graph order
  std::vector<BufferId> outputs;  // one per graph output (None skipped): the buffer it lives in
  /// How each output sees its buffer: a graph output that is a view (of an input, of a
  /// computed buffer) is returned as that view, never copied. Empty: whole buffers.
  std::vector<View> output_views;

  BufferId add_buffer(Buffer b);
  const Buffer &buffer(BufferId id) const { return buffers.at(size_t(id)); }
  /// Consumers of each buffer: node indices in order, and -1 for a graph output.
  std::vector<std::vector<int>> users() const;
};

/// The element offset of point `index` (one Expr per dim) in a buffer of `strides`.
Expr offset_of(const std::vector<Expr> &index, const Shape &strides, int64_t storage_offset = 0);

/// The store index of a node's output: its x vars laid out by the buffer's strides.
Expr store_index(const Node &node, const Buffer &out);

/// Ranges of a space whose variables are x0.. over `ranges` then the next ones over
/// `reduction_ranges`: a node's or a kernel's loop variables.
Ranges ranges_of(const Shape &ranges, const Shape &reduction_ranges = {});

/// The largest number of elements a reduction or scan combines on the way to `b`
/// (1 when none does): the comparison tolerance of an output grows with it.
int64_t max_reduction_size(const Program &p, BufferId b);

/// Deterministic text of a program: each buffer and node with its ranges, reads and body.
std::string str(const Program &p);
/// One node as str(Program) prints it: kind, origin, ranges, reads, where it stores, body.
std::string str(const Program &p, const Node &n);
/// The buffer table of str(Program).
std::string buffers_str(const Program &p);

}  // namespace coil::ir
