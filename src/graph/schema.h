// Operator schemas, written the way PyTorch writes them in native_functions.yaml:
//   add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
// A schema names the arguments, their types and defaults, which are keyword-only,
// which tensors an op mutates, and what it returns.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/arg.h"

namespace coil {

/// The element of an argument type, before `?` and `[]`.
enum class BaseType : uint8_t {
  Tensor, Scalar, Int, Float, Bool, Str, ScalarType, Layout, Device, MemoryFormat, Generator
};

struct ArgType {
  BaseType base = BaseType::Tensor;
  bool is_list = false;
  int list_len = 0;          // `int[2]`: a bare int is repeated to this length
  bool optional = false;     // `?` on the whole type: `int[]?`, `Tensor?`
  bool elem_optional = false;  // `Tensor?[]`
  bool mutated = false;      // `Tensor(a!)`

  /// As written in schemas: `int[2]`, `Tensor?`, `Scalar`.
  std::string str() const;
};

struct SchemaArg {
  std::string name;
  ArgType type;
  std::optional<Arg> default_value;
  bool kwarg_only = false;
};

struct Schema {
  std::string ns = "aten";   // operator namespace: aten, prims
  std::string name;          // add
  std::string overload;      // Tensor; "default" when none is written
  std::vector<SchemaArg> args;
  std::vector<ArgType> returns;  // `()`: none; `Tensor[]`: one list
  std::string text;              // the schema as written, for messages

  /// `aten.add.Tensor`, the spelling after `torch.ops.` in graph text.
  std::string target() const { return ns + "." + name + "." + overload; }
  bool returns_list() const { return returns.size() == 1 && returns[0].is_list; }
  int find_arg(std::string_view name) const;
  bool mutates_an_input() const;
};

/// Parses one schema string; `ns::name.overload(...) -> ...` or `name.overload(...)`.
/// A malformed schema is an internal error: schemas are coil's own tables.
Schema parse_schema(std::string_view text);

}  // namespace coil
