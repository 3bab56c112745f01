// The op registry: for each ATen op its schema and its meta function.
//
// A meta function computes the dtype, sizes and strides of every output from the
// bound arguments, with PyTorch's rules. Adding an op is one line in the table of its
// family (src/graph/meta/*.cpp):
//   r.add("tanh(Tensor self) -> Tensor", unary(Promote::IntToFloat));
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/schema.h"
#include "graph/type_promotion.h"

namespace coil {

/// A tensor operand as meta functions see it: a tensor's type, or a Python number
/// passed where the schema says Tensor (a "wrapped number" in PyTorch's promotion).
struct Operand {
  TensorType type;
  bool wrapped_number = false;
  PromotionOperand promotion() const { return {type.dtype, type.rank(), wrapped_number}; }
};

/// Typed access to a node's bound arguments by schema name.
class MetaArgs {
 public:
  MetaArgs(const Schema &schema, const std::vector<Arg> &args, const Graph &graph)
      : schema_(schema), args_(args), graph_(graph) {}

  const TensorType &tensor(std::string_view name) const;
  const TensorType *optional_tensor(std::string_view name) const;
  std::vector<const TensorType *> tensors(std::string_view name) const;
  /// A Tensor argument that may also be a Python number.
  Operand operand(std::string_view name) const;

  /// Int arguments' values, specialized (guarded) where they are symbolic sizes.
  int64_t integer(std::string_view name) const;
  std::optional<int64_t> optional_integer(std::string_view name) const;
  std::vector<int64_t> ints(std::string_view name) const;
  /// The same as symbolic sizes, kept as they are (graph/sym_int.h).
  SymInt sym_integer(std::string_view name) const;
  std::optional<SymInt> optional_sym_integer(std::string_view name) const;
  SymShape sym_ints(std::string_view name) const;
  std::optional<std::vector<int64_t>> optional_ints(std::string_view name) const;
  double floating(std::string_view name) const;
  bool boolean(std::string_view name) const;
  std::optional<bool> optional_bool(std::string_view name) const;
  std::optional<std::string> optional_str(std::string_view name) const;
  std::optional<DType> optional_dtype(std::string_view name) const;
  std::optional<Device> optional_device(std::string_view name) const;
  std::optional<Layout> optional_layout(std::string_view name) const;
  std::optional<MemoryFormat> optional_memory_format(std::string_view name) const;
  /// A Scalar argument as a promotion operand (a wrapped number of its Python type).
  PromotionOperand scalar(std::string_view name) const;
  bool is_none(std::string_view name) const;

  const Arg &arg(std::string_view name) const;
  /// The value a Tensor argument names, for meta functions that look past its type
  /// (a view's bounds depend on the storage its input shares).
  ValueId value(std::string_view name) const;
  const Schema &schema() const { return schema_; }
  const Graph &graph() const { return graph_; }

 private:
  const Schema &schema_;
  const std::vector<Arg> &args_;
  const Graph &graph_;
};

using MetaFn = std::function<std::vector<TensorType>(const MetaArgs &)>;

struct OpDef {
  Schema schema;
  MetaFn meta;
  std::string target;  // aten.add.Tensor
  /// PyTorch lays the output out as the library it calls prefers (cuDNN's NHWC or NCHW by
  /// its version and the dtype), not by a rule of the operands alone. The meta's strides
  /// are then a default: a graph that annotates the output with another dense layout gets
  /// that layout (GraphBuilder::set_output_layout).
  bool layout_from_backend = false;
  /// The outputs to which PyTorch's meta function and its CPU kernel give different types:
  /// batch norm's running statistics (promoted to f32 by the meta function, the running
  /// statistic's own dtype from the kernel), embedding_bag's offset2bag (empty on the
  /// kernel's fast path, which takes more dtypes than the meta function knows). The meta's
  /// type is then a default: a graph that annotates such an output with another floating
  /// dtype or other sizes of the same rank gets them (GraphBuilder::set_output_type), and
  /// the lowering follows the graph's type.
  std::vector<int64_t> typed_by_backend;
  bool output_typed_by_backend(int64_t index) const {
    return std::find(typed_by_backend.begin(), typed_by_backend.end(), index) != typed_by_backend.end();
  }
};

class Registry {
 public:
  /// The registry of every op coil knows, built on first use.
  static const Registry &get();

  const OpDef *find(std::string_view target) const;
  /// Every registered op, sorted by target.
  std::vector<const OpDef *> ops() const;
  /// Registered targets that share the op name of `target` (for "did you mean").
  std::vector<std::string> overloads_of(std::string_view ns, std::string_view name) const;

  OpDef &add(std::string_view schema, MetaFn meta);

 private:
  std::map<std::string, OpDef, std::less<>> ops_;
};

// One registration function per family, each in src/graph/meta/<family>.cpp.
void register_pointwise_ops(Registry &r);
void register_reduction_ops(Registry &r);
void register_view_ops(Registry &r);
void register_norm_ops(Registry &r);
void register_convolution_ops(Registry &r);
void register_copy_ops(Registry &r);
void register_creation_ops(Registry &r);
void register_indexing_ops(Registry &r);
void register_matmul_ops(Registry &r);
void register_pooling_ops(Registry &r);
void register_attention_ops(Registry &r);

}  // namespace coil
