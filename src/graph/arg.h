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

struct Arg {
  using Variant = std::variant<NoneArg, bool, int64_t, double, std::string, DType, Device, Layout,
                               MemoryFormat, ValueId, ArgList>;
  Variant v;
  SourceLoc loc;  // where the argument was written, for errors; not part of equality

  Arg() = default;
  template <typename T>
  Arg(T x, SourceLoc l = {}) : v(std::move(x)), loc(std::move(l)) {}

  template <typename T>
  bool is() const { return std::holds_alternative<T>(v); }
  template <typename T>
  const T &as() const { return std::get<T>(v); }
  bool is_none() const { return is<NoneArg>(); }
  bool is_number() const { return is<int64_t>() || is<double>() || is<bool>(); }
  /// A Python number (int, float or bool) as a double.
  double number() const {
    if (is<double>()) return as<double>();
    if (is<bool>()) return as<bool>();
    return double(as<int64_t>());
  }

  bool operator==(const Arg &o) const { return v == o.v; }
  /// What kind of argument this is, for error messages: `int`, `float`, `list`, `tensor`.
  std::string kind_name() const;
};

}  // namespace coil
