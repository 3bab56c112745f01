// Epilogues: the pointwise consumers of an extern call (a matrix product, a convolution)
// that run on each element of its result before it reaches memory, in the form libraries
// take them (oneDNN post-ops, cuBLASLt epilogues): a chain of post-ops, each an activation
// of the running value y or y combined with a tensor read at the same element.
//
//   buf6 = extern addmm(bias, a, w)                      kernel0: extern, 3 nodes
//   buf7 = pointwise  %2 = add (load buf6), (load c)       post-ops: add c[7, 5], relu
//   buf8 = pointwise  %1 = maximum (load buf7), 0.0        buf6 and buf7 stay internal
//
// The scheduler fuses a consumer onto an extern call only when match_epilogue takes it
// (fusion.cpp); the code generators read the chain back with epilogue_of.
// Tests: tests/unit/scheduler_test.cpp (Epilogue*), tests/unit/onednn_test.cpp.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "ir/kernel.h"

namespace coil::sched {

enum class PostOpKind : uint8_t {
  // Activations of the running value y (alpha and beta as noted).
  Relu,       // y < 0 ? alpha*y : y
  Elu,        // y > 0 ? y : alpha*(exp(y) - 1)
  GeluErf,    // y/2 * (1 + erf(y/sqrt(2)))
  GeluTanh,   // y/2 * (1 + tanh(sqrt(2/pi) * (y + 0.044715*y^3)))
  Tanh,
  Sigmoid,
  Silu,       // y * sigmoid(y)
  Hardswish,  // y * min(max(y + 3, 0), 6) / 6
  Exp,
  Log,
  Abs,
  Sqrt,
  Square,
  Linear,     // alpha*y + beta
  Clip,       // min(max(y, alpha), beta); infinite bounds for a one-sided clamp
  Pow,        // alpha * y^beta
  // y combined with a tensor t read at the same element.
  Add,
  Sub,        // y - t
  Mul,
  Div,        // y / t
};

/// `relu`, `gelu_erf`, `add`: the name dumps print.
std::string_view post_op_name(PostOpKind k);

struct PostOp {
  PostOpKind kind = PostOpKind::Relu;
  double alpha = 0;
  double beta = 0;
  /// Add, Sub, Mul, Div: the tensor, as a view over the extern result's dims (stride 0
  /// along the dims it is broadcast over).
  ir::View operand;

  bool binary() const;
};

struct Epilogue {
  std::vector<PostOp> ops;
  /// Where the last value is stored, as a view over the extern result's dims.
  ir::View out;
};

/// The epilogue made of `nodes` (pointwise nodes in execution order, already in the
/// variables of `call`'s result: x_d runs over its dim d): node 0 reads the result of
/// `call`, each next node the value of the one before, every node at the point it
/// writes. In words why not when the nodes are no such chain: an op with no post-op, the
/// result read twice outside a known activation, an operand computed instead of read
/// from memory, math in f64, a view that is not strided.
std::variant<Epilogue, std::string> match_epilogue(const ir::Program &p, const ir::Node &call,
                                                   const std::vector<const ir::Node *> &nodes);

/// The epilogue of extern kernel `k` (no post-ops when it holds only the call; its
/// `out` is then the call's own output).
Epilogue epilogue_of(const ir::Program &p, const ir::Kernel &k);

/// `add p_bias[1, 96], gelu_erf`: operands by buffer name with their dims over the
/// result (1 where they broadcast).
std::string str(const ir::Program &p, const std::vector<PostOp> &ops);

}  // namespace coil::sched
