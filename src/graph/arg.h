// Arguments of graph nodes: tensors (by value id) and every non-tensor kind an ATen
// schema can take.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "graph/dtype.h"
#include "graph/tensor_type.h"
#include "support/error.h"

namespace coil {

enum class Layout : uint8_t { Strided, SparseCoo, SparseCsr, Mkldnn };
enum class MemoryFormat : uint8_t { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };

std::string_view layout_name(Layout l);          // strided, sparse_coo, ...
std::string_view memory_format_name(MemoryFormat m);  // contiguous_format, channels_last, ...
std::optional<Layout> layout_from_name(std::string_view s);
std::optional<MemoryFormat> memory_format_from_name(std::string_view s);

/// Index of a Value in its Graph.
struct ValueId {
  int index = -1;
  bool operator==(const ValueId &) const = default;
};

struct NoneArg {
  bool operator==(const NoneArg &) const = default;
};

struct Arg;
using ArgList = std::vector<Arg>;

/// An int argument: an integer, or a size of a graph of symbolic sizes (`view(x, [mul, 8])`
/// where `mul: "Sym(2*s0)"`), graph/sym_int.h.
struct Arg {
  using Variant = std::variant<NoneArg, bool, SymInt, double, std::string, DType, Device, Layout,
                               MemoryFormat, ValueId, ArgList>;
  Variant v;
  SourceLoc loc;  // where the argument was written, for errors; not part of equality

  Arg() = default;
  template <typename T>
  Arg(T x, SourceLoc l = {}) : v(std::move(x)), loc(std::move(l)) {}
  Arg(int64_t x, SourceLoc l = {}) : v(SymInt(x)), loc(std::move(l)) {}
  Arg(int x, SourceLoc l = {}) : v(SymInt(int64_t(x))), loc(std::move(l)) {}

  template <typename T>
  bool is() const { return std::holds_alternative<T>(v); }
  template <typename T>
  const T &as() const { return std::get<T>(v); }
  bool is_none() const { return is<NoneArg>(); }
  bool is_int() const { return is<SymInt>(); }
  /// An int argument's value, specialized (guarded) where it is symbolic.
  int64_t integer() const { return as<SymInt>().value(); }
  /// A list of int arguments, symbolic ones kept (`[0, 8 - s0 % 8]`).
  SymShape sym_ints() const;
  bool is_number() const { return is_int() || is<double>() || is<bool>(); }
  /// A Python number (int, float or bool) as a double.
  double number() const {
    if (is<double>()) return as<double>();
    if (is<bool>()) return as<bool>();
    return double(integer());
  }

  /// Equal kinds and values; symbolic ints by structure (SymInt::same), never guarded.
  bool operator==(const Arg &o) const;
  /// What kind of argument this is, for error messages: `int`, `float`, `list`, `tensor`.
  std::string kind_name() const;
};

}  // namespace coil
