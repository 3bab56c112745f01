// Copies, conversions and the assertion no-ops that export leaves in graphs.
#include "graph/meta/common.h"

namespace coil {
namespace {

using meta::check_strided;

/// _to_copy: a new tensor, possibly of another dtype or device, in the requested memory
/// format (preserve by default: dense layouts keep their strides).
std::vector<TensorType> to_copy(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  check_strided(a.optional_layout("layout"));
  auto format = a.optional_memory_format("memory_format").value_or(MemoryFormat::Preserve);
  TensorType out{a.optional_dtype("dtype").value_or(self.dtype), self.sizes,
                 empty_like_strides(self, format), a.optional_device("device").value_or(self.device)};
  return {out};
}

/// A new tensor like self, dense layouts kept (empty_like's preserve_format).
std::vector<TensorType> preserving_copy(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  return {TensorType{self.dtype, self.sizes, empty_like_strides(self, MemoryFormat::Preserve), self.device}};
}

std::vector<TensorType> clone(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  auto format = a.optional_memory_format("memory_format").value_or(MemoryFormat::Preserve);
  return {TensorType{self.dtype, self.sizes, empty_like_strides(self, format), self.device}};
}

/// resize, the functional form of resize_: `size` in a fresh layout of `memory_format`
/// (contiguous by default), self's dtype and device. Its elements are self's storage, in
/// order, as far as it reaches (lowering/pointwise.cpp).
std::vector<TensorType> resize(const MetaArgs &a) {
  const TensorType &self = a.tensor("self");
  SymShape sizes = a.sym_ints("size");
  for (int64_t s : sizes) COIL_USER_CHECK(s >= 0, "resize: sizes must be non-negative, got ", shape_str(sizes));
  auto format = a.optional_memory_format("memory_format").value_or(MemoryFormat::Contiguous);
  COIL_USER_CHECK(format != MemoryFormat::Preserve, "resize: Unsupported memory format preserve_format");
  COIL_USER_CHECK(format == MemoryFormat::Contiguous || (format == MemoryFormat::ChannelsLast && sizes.size() == 4) ||
                      (format == MemoryFormat::ChannelsLast3d && sizes.size() == 5),
                  "resize: memory format ", memory_format_name(format), " does not suit sizes ", shape_str(sizes));
  COIL_USER_CHECK(is_non_overlapping_and_dense(self.sizes, self.strides), "resize: the input's layout ",
                  shape_str(self.strides), " of sizes ", shape_str(self.sizes),
                  " is not dense, so its storage has no order of elements to keep");
  return {TensorType{self.dtype, sizes, strides_for_format(sizes, format), self.device}};
}

/// _assert_tensor_metadata returns nothing; what it asserts is checked here.
std::vector<TensorType> assert_metadata(const MetaArgs &a) {
  const TensorType &t = a.tensor("a");
  auto dtype = a.optional_dtype("dtype");
  COIL_USER_CHECK(!dtype || *dtype == t.dtype, "asserts dtype ", short_name(*dtype), " but the tensor is ",
                  short_name(t.dtype));
  auto sizes = a.optional_ints("size");
  COIL_USER_CHECK(!sizes || *sizes == t.sizes, "asserts size ", shape_str(*sizes), " but the tensor has ",
                  shape_str(t.sizes));
  auto device = a.optional_device("device");
  COIL_USER_CHECK(!device || device->kind == t.device.kind, "asserts device ", device->str(),
                  " but the tensor is on ", t.device.str());
  check_strided(a.optional_layout("layout"));
  return {};
}

}  // namespace

void register_copy_ops(Registry &r) {
  r.add("_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
        to_copy);
  r.add("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", clone);
  r.add("resize(Tensor self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor", resize);
  // prims.convert_element_type (what some of PyTorch's decompositions leave): the dtype
  // changed, dense layouts kept.
  r.add("prims::convert_element_type(Tensor a, ScalarType dtype) -> Tensor", [](const MetaArgs &a) {
    const TensorType &x = a.tensor("a");
    return std::vector<TensorType>{
        {*a.optional_dtype("dtype"), x.sizes, empty_like_strides(x, MemoryFormat::Preserve), x.device}};
  });
  // lift_fresh_copy keeps a dense layout and lays anything else out in the suggested
  // memory format (eager's clone), not in the input's dim order.
  r.add("lift_fresh_copy(Tensor self) -> Tensor", [](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    SymShape strides = is_non_overlapping_and_dense(self.sizes, self.strides)
                        ? SymShape(self.strides)
                        : strides_for_format(self.sizes, suggest_memory_format(self.sizes, self.strides));
    return std::vector<TensorType>{{self.dtype, self.sizes, strides, self.device}};
  });
  // fill: self's dtype and layout, every element the value.
  r.add("fill.Scalar(Tensor self, Scalar value) -> Tensor", preserving_copy);
  r.add("fill.Tensor(Tensor self, Tensor value) -> Tensor", [](const MetaArgs &a) {
    COIL_USER_CHECK(a.tensor("value").rank() == 0, "fill expects a 0-dim value tensor, got ",
                    shape_str(a.tensor("value").sizes));
    return preserving_copy(a);
  });
  // The functional copy: self's dtype and layout, src broadcast into it.
  r.add("copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor", [](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    const TensorType &src = a.tensor("src");
    COIL_USER_CHECK(broadcast_shapes(self.sizes, src.sizes) == self.sizes, "copy: src of shape ",
                    shape_str(src.sizes), " cannot be broadcast to ", shape_str(self.sizes));
    // The functional copy returns self's layout unchanged, even when it is not dense.
    return std::vector<TensorType>{{self.dtype, self.sizes, self.strides,
                                    self.device}};
  });
  // repeat: a fresh contiguous tensor, self tiled `repeats` times (leading repeats add dims).
  r.add("repeat(Tensor self, SymInt[] repeats) -> Tensor", [](const MetaArgs &a) {
    const TensorType &self = a.tensor("self");
    SymShape repeats = a.ints("repeats");
    COIL_USER_CHECK(int64_t(repeats.size()) >= self.rank(), "Number of dimensions of repeat dims can not be "
                    "smaller than number of dimensions of tensor");
    size_t pad = repeats.size() - size_t(self.rank());
    SymShape sizes = repeats;
    for (size_t d = 0; d < size_t(self.rank()); ++d) sizes[pad + d] *= self.sizes[d];
    for (const SymInt &s : sizes)
      COIL_USER_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", shape_str(sizes));
    checked_numel(sizes);
    return std::vector<TensorType>{{self.dtype, sizes, contiguous_strides(sizes), self.device}};
  });
  r.add("_assert_async(Tensor self) -> ()", [](const MetaArgs &) { return std::vector<TensorType>{}; });
  r.add("_assert_async.msg(Tensor self, str assert_msg) -> ()",
        [](const MetaArgs &) { return std::vector<TensorType>{}; });
  r.add("_assert_tensor_metadata(Tensor a, SymInt[]? size=None, SymInt[]? stride=None, "
        "ScalarType? dtype=None, *, Device? device=None, Layout? layout=None) -> ()",
        assert_metadata);
}

}  // namespace coil
