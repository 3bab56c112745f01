#include "graph/storage.h"

#include <limits>
#include <set>
#include <string_view>

#include "graph/registry.h"
#include "graph/strides.h"

namespace coil {
namespace {

const Arg &arg(const Node &n, std::string_view name) {
  int i = n.op->schema.find_arg(name);
  COIL_ASSERT(i >= 0, n.target(), " has no argument '", name, "'");
  return n.args[size_t(i)];
}

std::optional<SymInt> optional_int(const Node &n, std::string_view name) {
  const Arg &a = arg(n, name);
  if (a.is_none()) return std::nullopt;
  return a.as<SymInt>();
}

/// Views whose output starts where their input starts.
bool starts_at_base(std::string_view target) {
  static const std::set<std::string_view> kSameStart = {
      "aten.alias.default",     "aten.permute.default",    "aten.transpose.int",  "aten.t.default",
      "aten.view.default",      "aten._unsafe_view.default", "aten.expand.default", "aten.unsqueeze.default",
      "aten.squeeze.default",   "aten.squeeze.dim",        "aten.squeeze.dims",
  };
  return kSameStart.count(target) > 0;
}

}  // namespace

ValueId view_base(const Node &n) { return arg(n, "self").as<ValueId>(); }

std::optional<ViewStart> view_start(const Graph &g, const Node &n, int output) {
  std::string_view t = n.target();
  if (starts_at_base(t)) return ViewStart{};
  bool slice_like = t == "aten.slice.Tensor" || t == "aten.select.int" || t == "aten.split.Tensor" ||
                    t == "aten.split_with_sizes.default" || t == "aten.unbind.int";
  bool other_view = t == "aten.reshape.default" || t == "aten.as_strided.default" || t == "aten.diagonal.default";
  if (!slice_like && !other_view) return std::nullopt;
  const TensorType &self = g.type(view_base(n));
  if (t == "aten.reshape.default") {
    if (!view_strides(self.sizes, self.strides, g.type(n.outputs[size_t(output)]).sizes)) return std::nullopt;
    return ViewStart{};
  }
  if (t == "aten.diagonal.default") {
    return ViewStart{false, diagonal_view(self.sizes, self.strides, arg(n, "offset").integer(),
                                          arg(n, "dim1").integer(), arg(n, "dim2").integer())
                                .start};
  }
  if (t == "aten.as_strided.default") {
    auto offset = optional_int(n, "storage_offset");
    return offset ? ViewStart{true, *offset} : ViewStart{};
  }
  size_t d = size_t(wrap_dim(arg(n, "dim").integer(), self.rank()));
  SymInt first = 0;  // the index along d where the output starts
  if (t == "aten.slice.Tensor") {
    first = slice_bounds(self.sizes[d], optional_int(n, "start"), optional_int(n, "end"),
                         arg(n, "step").integer())
                .start;
  } else if (t == "aten.select.int") {
    int64_t index = arg(n, "index").integer();
    first = index < 0 ? index + self.sizes[d] : SymInt(index);
  } else if (t == "aten.unbind.int") {
    first = int64_t(output);
  } else {
    for (int j = 0; j < output; ++j) first += g.type(n.outputs[size_t(j)]).sizes[d];
  }
  return ViewStart{false, first * self.strides[d]};
}

Placement placement_of(const Graph &g, ValueId v) {
  if (g.value(v).kind != Value::Kind::NodeOutput) return {v, 0};
  const Node &p = g.producer(v);
  auto start = view_start(g, p, g.value(v).output_index);
  if (!start) return {v, 0};
  Placement base = placement_of(g, view_base(p));
  return {base.root, start->absolute ? start->offset : base.start + start->offset};
}

int64_t storage_elements(const TensorType &t) {
  const Shape sizes = t.sizes, strides = t.strides;
  for (int64_t s : sizes)
    if (s == 0) return 0;
  int64_t last = 0, step = 0;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &step) || __builtin_add_overflow(last, step, &last))
      return std::numeric_limits<int64_t>::max();
  return last == std::numeric_limits<int64_t>::max() ? last : last + 1;
}

}  // namespace coil
