// Meta functions of factories (full, empty, arange, the *_like and new_* families) and of
// indexing and joining ops (cat, constant_pad_nd, index, index_put, gather, scatter,
// embedding, flip, slice_scatter, select_scatter): output dtype, sizes and strides as
// PyTorch 2.11 computes them, and the errors where PyTorch refuses. Every expected type
// here is the annotation torch.export printed for the same inputs (inputs with the
// same strides, exported, then run_decompositions({})).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "meta_util.h"

namespace coil {
namespace {

using namespace test;

// ---------------------------------------------------------------- factories

TEST(MetaCreation, FullInfersTheDtypeFromThePythonNumber) {
  EXPECT_EQ(meta("aten.full.default", {}, {ints({2, 3}), i(7)}), Types{"i64[2, 3][3, 1]cpu"});
  EXPECT_EQ(meta("aten.full.default", {}, {ints({2, 3}), f(7.0)}), Types{"f32[2, 3][3, 1]cpu"});
  EXPECT_EQ(meta("aten.full.default", {}, {ints({}), Arg(true)}), Types{"b8[][]cpu"});
  EXPECT_EQ(meta("aten.full.default", {}, {ints({2, 0, 3}), f(1.5)}), Types{"f32[2, 0, 3][3, 3, 1]cpu"});
  EXPECT_EQ(meta("aten.full.default", {}, {ints({2, 3}), i(1)}, {{"dtype", Arg(DType::F16)}}),
            Types{"f16[2, 3][3, 1]cpu"});
}

TEST(MetaCreation, ExplicitCudaMeansTheCurrentDevice) {
  // torch prints device='cuda' as cuda:0; the *_like family keeps the input's device.
  Device cuda{Device::Kind::CUDA, -1};
  EXPECT_EQ(meta("aten.full.default", {}, {ints({2}), f(1.0)}, {{"device", Arg(cuda)}}), Types{"f32[2][1]cuda:0"});
  EXPECT_EQ(meta("aten.arange.start_step", {}, {i(0), i(5), i(2)}, {{"device", Arg(cuda)}}),
            Types{"i64[3][1]cuda:0"});
  EXPECT_EQ(meta("aten.zeros_like.default", {"f32[3, 4]cuda:0"}), Types{"f32[3, 4][4, 1]cuda:0"});
  EXPECT_EQ(meta("aten.new_zeros.default", {"f32[3, 4]cuda:1"}, {ints({2})}), Types{"f32[2][1]cuda:1"});
  EXPECT_EQ(meta("aten.zeros_like.default", {"f32[3, 4]cuda:0"}, {}, {{"device", Arg(Device{})}}),
            Types{"f32[3, 4][4, 1]cpu"});
}

TEST(MetaCreation, ZerosOnesEmptyAndScalarTensor) {
  EXPECT_EQ(meta("aten.zeros.default", {}, {ints({4, 1, 2})}), Types{"f32[4, 1, 2][2, 2, 1]cpu"});
  EXPECT_EQ(meta("aten.ones.default", {}, {ints({3})}, {{"dtype", Arg(DType::I32)}}), Types{"i32[3][1]cpu"});
  EXPECT_EQ(meta("aten.zeros.default", {}, {ints({})}, {{"dtype", Arg(DType::Bool)}}), Types{"b8[][]cpu"});
  EXPECT_EQ(meta("aten.empty.memory_format", {}, {ints({2, 3})}), Types{"f32[2, 3][3, 1]cpu"});
  // scalar_tensor ignores the value's Python type.
  EXPECT_EQ(meta("aten.scalar_tensor.default", {}, {i(3)}), Types{"f32[][]cpu"});
  EXPECT_EQ(meta("aten.scalar_tensor.default", {}, {f(1.5)}, {{"dtype", Arg(DType::F64)}}), Types{"f64[][]cpu"});
}

TEST(MetaCreation, RandomTensors) {
  EXPECT_EQ(meta("aten.rand.default", {}, {ints({2, 3})}), Types{"f32[2, 3][3, 1]cpu"});
  EXPECT_EQ(meta("aten.randn.default", {}, {ints({4})}, {{"dtype", Arg(DType::BF16)}}), Types{"bf16[4][1]cpu"});
  EXPECT_EQ(meta_error("aten.rand.default", {}, {ints({2})}, {{"dtype", Arg(DType::I64)}}),
            "random floats need a floating dtype, got i64");
  // randint and randperm: int64 unless told (the schema's dtype=long).
  EXPECT_EQ(meta("aten.randint.low", {}, {i(-2), i(5), ints({3, 2})}), Types{"i64[3, 2][2, 1]cpu"});
  EXPECT_EQ(meta("aten.randint.default", {}, {i(5), ints({3})}, {{"dtype", Arg(DType::I32)}}), Types{"i32[3][1]cpu"});
  EXPECT_EQ(meta_error("aten.randint.low", {}, {i(5), i(5), ints({3})}), "randint: expected low < high, got low 5 and high 5");
  EXPECT_EQ(meta("aten.randperm.default", {}, {i(7)}), Types{"i64[7][1]cpu"});
  // rand_like keeps self's layout; bernoulli is contiguous whatever self's.
  EXPECT_EQ(meta("aten.rand_like.default", {"f32[3, 4][1, 3]cpu"}), Types{"f32[3, 4][1, 3]cpu"});
  EXPECT_EQ(meta("aten.bernoulli.p", {"f32[3, 4][1, 3]cpu"}, {f(0.5)}), Types{"f32[3, 4][4, 1]cpu"});
  EXPECT_EQ(meta_error("aten.bernoulli.p", {"f32[3]"}, {f(1.5)}), "bernoulli: expected 0 <= p <= 1, got 1.5");
  // native_dropout: the output and a bool mask, both in the input's layout.
  EXPECT_EQ(meta("aten.native_dropout.default", {"bf16[3, 4][1, 3]cpu"}, {f(0.1), Arg(true)}),
            (Types{"bf16[3, 4][1, 3]cpu", "b8[3, 4][1, 3]cpu"}));
  EXPECT_EQ(meta_error("aten.native_dropout.default", {"f32[3]"}, {f(-0.5), Arg(true)}),
            "dropout probability has to be between 0 and 1, but got -0.5");
}

TEST(MetaCreation, EmptyInAMemoryFormat) {
  Kwargs cl = {{"memory_format", Arg(MemoryFormat::ChannelsLast)}};
  EXPECT_EQ(meta("aten.empty.memory_format", {}, {ints({2, 3, 4, 5})}, cl), Types{"f32[2, 3, 4, 5][60, 1, 15, 3]cpu"});
  // Channels-last strides multiply sizes as they are: a size-0 dim zeroes the rest.
  EXPECT_EQ(meta("aten.empty.memory_format", {}, {ints({2, 0, 4, 5})}, cl), Types{"f32[2, 0, 4, 5][0, 1, 0, 0]cpu"});
  EXPECT_EQ(meta("aten.empty.memory_format", {}, {ints({2, 3, 2, 4, 5})},
                 {{"memory_format", Arg(MemoryFormat::ChannelsLast3d)}}),
            Types{"f32[2, 3, 2, 4, 5][120, 1, 60, 15, 3]cpu"});
}

TEST(MetaCreation, EmptyStrided) {
  EXPECT_EQ(meta("aten.empty_strided.default", {}, {ints({2, 3}), ints({1, 2})}, {{"dtype", Arg(DType::BF16)}}),
            Types{"bf16[2, 3][1, 2]cpu"});
  EXPECT_EQ(meta("aten.new_empty_strided.default", {"u8[5]"}, {ints({2, 3}), ints({1, 2})}),
            Types{"u8[2, 3][1, 2]cpu"});
}

// empty_permuted: the dims laid out in the order stated, outermost first (checked against
// torch 2.11, errors included).
TEST(MetaCreation, EmptyPermuted) {
  EXPECT_EQ(meta("aten.empty_permuted.default", {}, {ints({2, 3, 4, 5}), ints({0, 2, 3, 1})}),
            Types{"f32[2, 3, 4, 5][60, 1, 15, 3]cpu"});
  EXPECT_EQ(meta("aten.empty_permuted.default", {}, {ints({2, 0, 4}), ints({2, 0, 1})}, {{"dtype", Arg(DType::I64)}}),
            Types{"i64[2, 0, 4][1, 1, 2]cpu"});
  EXPECT_EQ(meta_error("aten.empty_permuted.default", {}, {ints({2, 3, 4}), ints({0, 1})}),
            "Number of dimensions in size does not match the length of the physical_layout; i.e. len(size) = 3 is "
            "not equal to len(physical_layout) = 2");
  EXPECT_EQ(meta_error("aten.empty_permuted.default", {}, {ints({2, 3, 4}), ints({0, 0, 1})}), "Duplicate dim not allowed");
  EXPECT_EQ(meta_error("aten.empty_permuted.default", {}, {ints({2, 3, 4}), ints({0, 1, 3})}),
            "Dimension out of range (expected to be between 0 and 2, but got 3 at index 2)");
}

TEST(MetaCreation, ArangeDtypeAndLength) {
  EXPECT_EQ(meta("aten.arange.default", {}, {i(5)}), Types{"i64[5][1]cpu"});
  EXPECT_EQ(meta("aten.arange.default", {}, {f(5.5)}), Types{"f32[6][1]cpu"});
  EXPECT_EQ(meta("aten.arange.default", {}, {Arg(true)}), Types{"i64[1][1]cpu"});
  EXPECT_EQ(meta("aten.arange.start", {}, {i(1), i(7)}), Types{"i64[6][1]cpu"});
  EXPECT_EQ(meta("aten.arange.start", {}, {i(0), i(0)}), Types{"i64[0][1]cpu"});
  EXPECT_EQ(meta("aten.arange.start_step", {}, {i(10), i(0), i(-3)}), Types{"i64[4][1]cpu"});
  EXPECT_EQ(meta("aten.arange.start_step", {}, {i(-7), i(-2), i(2)}), Types{"i64[3][1]cpu"});
  EXPECT_EQ(meta("aten.arange.start_step", {}, {i(0), i(1), f(0.1)}), Types{"f32[10][1]cpu"});
  EXPECT_EQ(meta("aten.arange.start_step", {}, {i(0), i(1), f(0.1)}, {{"dtype", Arg(DType::F16)}}),
            Types{"f16[10][1]cpu"});
  EXPECT_EQ(meta("aten.arange.start_step", {}, {i(0), f(3.0), f(0.5)}, {{"dtype", Arg(DType::Bool)}}),
            Types{"b8[6][1]cpu"});
  // int64 results truncate the bounds before counting; other integer dtypes do not.
  EXPECT_EQ(meta("aten.arange.start_step", {}, {i(0), f(2.5), i(1)}, {{"dtype", Arg(DType::I64)}}),
            Types{"i64[2][1]cpu"});
  EXPECT_EQ(meta("aten.arange.start_step", {}, {i(0), f(2.5), i(1)}, {{"dtype", Arg(DType::I32)}}),
            Types{"i32[3][1]cpu"});
}

TEST(MetaCreation, Iota) {
  Kwargs kw = {{"start", i(0)}, {"step", i(2)}, {"dtype", Arg(DType::I32)}, {"device", Arg(Device{})},
               {"requires_grad", Arg(false)}};
  EXPECT_EQ(meta("prims.iota.default", {}, {i(5)}, kw), Types{"i32[5][1]cpu"});
}

TEST(MetaCreation, LikeOpsPreserveTheLayout) {
  // Dense layouts are kept; others keep their dim order, packed densely.
  EXPECT_EQ(meta("aten.empty_like.default", {"f32[3, 4][2, 6]cpu"}), Types{"f32[3, 4][1, 3]cpu"});
  EXPECT_EQ(meta("aten.empty_like.default", {"f32[2, 3, 4, 5][60, 1, 15, 3]cpu"}),
            Types{"f32[2, 3, 4, 5][60, 1, 15, 3]cpu"});
  EXPECT_EQ(meta("aten.empty_like.default", {"i32[5, 2, 3][1, 15, 5]cpu"}), Types{"i32[5, 2, 3][1, 15, 5]cpu"});
  EXPECT_EQ(meta("aten.empty_like.default", {"f32[3, 4][1, 0]cpu"}), Types{"f32[3, 4][4, 1]cpu"});
  // An empty tensor counts as contiguous, whatever its strides.
  EXPECT_EQ(meta("aten.empty_like.default", {"f32[0, 3, 4][1, 4, 1]cpu"}), Types{"f32[0, 3, 4][12, 4, 1]cpu"});
  EXPECT_EQ(meta("aten.empty_like.default", {"f32[3, 4][1, 3]cpu"}, {},
                 {{"memory_format", Arg(MemoryFormat::Contiguous)}}),
            Types{"f32[3, 4][4, 1]cpu"});
  EXPECT_EQ(meta("aten.ones_like.default", {"f32[2, 3, 4, 5]"}, {}, {{"memory_format", Arg(MemoryFormat::ChannelsLast)}}),
            Types{"f32[2, 3, 4, 5][60, 1, 15, 3]cpu"});
  EXPECT_EQ(meta("aten.zeros_like.default", {"f32[3, 4][1, 3]cpu"}, {}, {{"dtype", Arg(DType::BF16)}}),
            Types{"bf16[3, 4][1, 3]cpu"});
}

TEST(MetaCreation, FillValuesDoNotChangeTheDtypeOfLikeAndNewOps) {
  EXPECT_EQ(meta("aten.full_like.default", {"f16[3]"}, {i(2)}), Types{"f16[3][1]cpu"});
  EXPECT_EQ(meta("aten.full_like.default", {"i64[3, 2][1, 3]cpu"}, {f(2.5)}), Types{"i64[3, 2][1, 3]cpu"});
  EXPECT_EQ(meta("aten.new_full.default", {"i64[5, 3][1, 5]cpu"}, {ints({2}), f(7.5)}), Types{"i64[2][1]cpu"});
}

TEST(MetaCreation, NewOpsAreContiguousWithTheInputsDtype) {
  EXPECT_EQ(meta("aten.new_zeros.default", {"i32[5]"}, {ints({2, 3})}), Types{"i32[2, 3][3, 1]cpu"});
  EXPECT_EQ(meta("aten.new_ones.default", {"i32[5]"}, {ints({4})}, {{"dtype", Arg(DType::F64)}}),
            Types{"f64[4][1]cpu"});
  EXPECT_EQ(meta("aten.new_empty.default", {"b8[5]"}, {ints({0, 3})}), Types{"b8[0, 3][3, 1]cpu"});
}

TEST(MetaCreation, Errors) {
  EXPECT_EQ(meta_error("aten.full.default", {}, {ints({-1, 2}), f(1.0)}), "negative size -1 in [-1, 2]");
  EXPECT_EQ(meta_error("aten.full.default", {}, {ints({2}), f(1.0)}, {{"layout", Arg(Layout::SparseCoo)}}),
            "only strided tensors are supported, got layout sparse_coo");
  EXPECT_EQ(meta_error("aten.empty.memory_format", {}, {ints({2})}, {{"memory_format", Arg(MemoryFormat::Preserve)}}),
            "empty: memory_format=preserve_format is not supported; expected contiguous_format, channels_last or "
            "channels_last_3d");
  EXPECT_EQ(meta_error("aten.empty.memory_format", {}, {ints({2, 3, 4})},
                       {{"memory_format", Arg(MemoryFormat::ChannelsLast)}}),
            "channels_last needs a 4-d tensor, got [2, 3, 4]");
  EXPECT_EQ(meta_error("aten.zeros_like.default", {"f32[2, 3]"}, {}, {{"memory_format", Arg(MemoryFormat::ChannelsLast)}}),
            "channels_last needs a 4-d tensor, got [2, 3]");
  EXPECT_EQ(meta_error("aten.empty_strided.default", {}, {ints({2, 3}), ints({1})}),
            "empty_strided: size [2, 3] and stride [1] must have the same length");
  EXPECT_EQ(meta_error("aten.empty_strided.default", {}, {ints({2, 3}), ints({-1, 1})}),
            "empty_strided: negative stride -1 in [-1, 1]; strides must be non-negative");
  EXPECT_EQ(meta_error("aten.new_empty_strided.default", {"f32[2]"}, {ints({2}), ints({1, 1})}),
            "new_empty_strided: size [2] and stride [1, 1] must have the same length");
  Kwargs iota = {{"start", i(0)}, {"step", i(1)}, {"dtype", Arg(DType::F32)}, {"device", Arg(Device{})},
                 {"requires_grad", Arg(false)}};
  EXPECT_EQ(meta_error("prims.iota.default", {}, {i(3)}, iota), "prims.iota only supports integer dtypes, got f32");
  iota[1].second = i(0);
  iota[2].second = Arg(DType::I32);
  EXPECT_EQ(meta_error("prims.iota.default", {}, {i(3)}, iota), "prims.iota: step must be nonzero");
}

TEST(MetaCreation, ArangeErrors) {
  EXPECT_EQ(meta_error("aten.arange.start_step", {}, {i(0), i(5), i(0)}), "arange: step must be nonzero");
  EXPECT_EQ(meta_error("aten.arange.start_step", {}, {i(5), i(0), i(1)}),
            "arange: the range from 5 to 0 does not go in the direction of step 1");
  EXPECT_EQ(meta_error("aten.arange.default", {}, {f(std::numeric_limits<double>::infinity())}),
            "arange: unsupported range 0 -> inf; expected finite bounds");
  EXPECT_EQ(meta_error("aten.arange.start_step", {}, {i(0), i(5), f(std::nan(""))}),
            "arange: step must be finite, got nan");
  // An integer result truncates the step; torch divides by zero (eager crashes).
  EXPECT_EQ(meta_error("aten.arange.start_step", {}, {i(0), i(1), f(0.5)}, {{"dtype", Arg(DType::I64)}}),
            "arange: step 0.5 truncates to 0 for an integer result; expected a step of magnitude at least 1");
  EXPECT_EQ(meta_error("aten.arange.start_step", {}, {i(1), i(0), f(-0.5)}, {{"dtype", Arg(DType::I32)}}),
            "arange: step -0.5 truncates to 0 for an integer result; expected a step of magnitude at least 1");
}

// ---------------------------------------------------------------- cat

Types cat(const Types &inputs, int64_t dim) {
  OneNode g;
  std::vector<Arg> tensors;
  for (const std::string &a : inputs) tensors.push_back(g.in(a));
  return g.run("aten.cat.default", {list(tensors), i(dim)});
}

std::string cat_error(const Types &inputs, int64_t dim) {
  OneNode g;
  std::vector<Arg> tensors;
  for (const std::string &a : inputs) tensors.push_back(g.in(a));
  return g.error("aten.cat.default", {list(tensors), i(dim)});
}

TEST(MetaIndexing, CatPromotesAndSkipsLegacyEmptyTensors) {
  EXPECT_EQ(cat({"i32[2, 3]", "f16[1, 3]"}, 0), Types{"f16[3, 3][3, 1]cpu"});
  EXPECT_EQ(cat({"f32[2, 1]", "f32[2, 0]", "f32[2, 5]"}, -1), Types{"f32[2, 6][6, 1]cpu"});
  // A 1-d empty tensor is skipped for shapes but still takes part in promotion.
  EXPECT_EQ(cat({"f32[2, 3]", "f64[0]"}, 1), Types{"f64[2, 3][3, 1]cpu"});
  // With every input skipped, dim is never checked.
  EXPECT_EQ(cat({"i32[0]", "i64[0]"}, 3), Types{"i64[0][1]cpu"});
  EXPECT_EQ(cat({"f32[4, 3][1, 4]cpu", "f32[4, 2][1, 4]cpu"}, 1), Types{"f32[4, 5][5, 1]cpu"});
}

TEST(MetaIndexing, CatIsChannelsLastOnlyWhenEveryInputIs) {
  EXPECT_EQ(cat({"f32[2, 3, 4, 5][60, 1, 15, 3]cpu", "f32[2, 2, 4, 5][40, 1, 10, 2]cpu"}, 1),
            Types{"f32[2, 5, 4, 5][100, 1, 25, 5]cpu"});
  EXPECT_EQ(cat({"f32[2, 3, 4, 5][60, 1, 15, 3]cpu", "f32[2, 2, 4, 5]"}, 1), Types{"f32[2, 5, 4, 5][100, 20, 5, 1]cpu"});
  // A skipped 1-d input suggests contiguous too.
  EXPECT_EQ(cat({"f32[2, 3, 4, 5][60, 1, 15, 3]cpu", "f32[2, 2, 4, 5][40, 1, 10, 2]cpu", "f32[0]"}, 1),
            Types{"f32[2, 5, 4, 5][100, 20, 5, 1]cpu"});
  // Layouts that read as both: torch suggests channels-last.
  EXPECT_EQ(cat({"f32[2, 3, 1, 1][3, 1, 3, 3]cpu", "f32[2, 3, 1, 1][3, 1, 3, 3]cpu"}, 2),
            Types{"f32[2, 3, 2, 1][6, 1, 3, 3]cpu"});
  EXPECT_EQ(cat({"f32[2, 3, 0, 5][0, 1, 15, 3]cpu", "f32[1, 3, 0, 5][0, 1, 15, 3]cpu"}, 0),
            Types{"f32[3, 3, 0, 5][15, 5, 5, 1]cpu"});
}

TEST(MetaIndexing, CatErrors) {
  EXPECT_EQ(meta_error("aten.cat.default", {}, {list({})}), "cat: expected a non-empty list of tensors");
  EXPECT_EQ(cat_error({"f32[2]", "f32[]"}, 0),
            "cat: zero-dimensional tensor (at position 1) cannot be concatenated; expected tensors with at least one "
            "dim");
  EXPECT_EQ(cat_error({"f32[2, 3]", "f32[3]"}, 0),
            "cat: tensor 1 has 1 dims but tensor 0 has 2; expected tensors of one rank (only 1-d empty tensors may "
            "differ)");
  EXPECT_EQ(cat_error({"f32[2, 3]", "f32[2, 4]"}, 0),
            "cat: sizes of tensors must match except in dim 0; tensor 1 has size [2, 4] but tensor 0 has [2, 3]");
  EXPECT_EQ(cat_error({"f32[2, 3]", "f32[2, 3]"}, 2), "dim 2 is out of range for a tensor of rank 2 (expected a dim in "
                                                     "[-2, 1])");
  EXPECT_EQ(cat_error({"f32[2, 3]cuda:0", "f32[2, 3]cpu"}, 0),
            "cat: expected all tensors on one device, found cuda:0 (tensor 0) and cpu (tensor 1)");
}

// ---------------------------------------------------------------- constant_pad_nd

TEST(MetaIndexing, ConstantPadNd) {
  const char *op = "aten.constant_pad_nd.default";
  EXPECT_EQ(meta(op, {"f32[2, 3]"}, {ints({1, 2})}), Types{"f32[2, 6][6, 1]cpu"});
  EXPECT_EQ(meta(op, {"bf16[2, 3]"}, {ints({1, 0, 2, 2}), f(1.5)}), Types{"bf16[6, 4][4, 1]cpu"});
  // Padding allocates in the input's suggested format.
  EXPECT_EQ(meta(op, {"f32[6, 5][1, 6]cpu"}, {ints({1, -1})}), Types{"f32[6, 5][5, 1]cpu"});
  EXPECT_EQ(meta(op, {"f32[2, 3, 4, 5][60, 1, 15, 3]cpu"}, {ints({1, 1, -1, 0})}),
            Types{"f32[2, 3, 3, 7][63, 1, 21, 3]cpu"});
  // Only cropping clones the narrowed input, keeping a dense layout.
  EXPECT_EQ(meta(op, {"f32[6, 5][1, 6]cpu"}, {ints({-1, 0})}), Types{"f32[6, 4][1, 6]cpu"});
  EXPECT_EQ(meta(op, {"f32[6, 5][1, 6]cpu"}, {ints({0, 0})}), Types{"f32[6, 5][1, 6]cpu"});
  EXPECT_EQ(meta(op, {"f32[3, 4][2, 6]cpu"}, {ints({0, 0, -1, 0})}), Types{"f32[2, 4][1, 2]cpu"});
  EXPECT_EQ(meta(op, {"f32[3, 0, 4]"}, {ints({-4, 0})}), Types{"f32[3, 0, 0][4, 4, 1]cpu"});
}

TEST(MetaIndexing, ConstantPadNdErrors) {
  const char *op = "aten.constant_pad_nd.default";
  EXPECT_EQ(meta_error(op, {"f32[2, 3]"}, {ints({1})}), "constant_pad_nd: the length of pad must be even, got 1");
  EXPECT_EQ(meta_error(op, {"f32[2]"}, {ints({1, 1, 1, 1})}),
            "constant_pad_nd: pad has 4 values but the input has 1 dims; expected at most two values per dim");
  EXPECT_EQ(meta_error(op, {"f32[2, 3]"}, {ints({-2, -2})}),
            "constant_pad_nd: padding -2 and -2 of dim 1 (size 3) gives the negative size -1");
}

// ---------------------------------------------------------------- index

Types index(const std::string &self, const std::vector<std::string> &indices) {
  OneNode g;
  Arg x = g.in(self);
  std::vector<Arg> items;
  for (const std::string &a : indices) items.push_back(a == "None" ? none() : g.in(a));
  return g.run("aten.index.Tensor", {x, list(items)});
}

std::string index_error(const std::string &self, const std::vector<std::string> &indices) {
  OneNode g;
  Arg x = g.in(self);
  std::vector<Arg> items;
  for (const std::string &a : indices) items.push_back(a == "None" ? none() : g.in(a));
  return g.error("aten.index.Tensor", {x, list(items)});
}

TEST(MetaIndexing, IndexPlacesAdjacentIndexDimsInPlace) {
  EXPECT_EQ(index("f32[4, 3, 5]", {"None", "i64[2, 2]"}), Types{"f32[4, 2, 2, 5][20, 10, 5, 1]cpu"});
  EXPECT_EQ(index("f16[3, 4][1, 3]cpu", {"None", "i64[2]"}), Types{"f16[3, 2][2, 1]cpu"});
  // The output follows self's layout: channels-last stays channels-last around the index.
  EXPECT_EQ(index("f32[2, 3, 4, 5][60, 1, 15, 3]cpu", {"None", "None", "i64[2]"}),
            Types{"f32[2, 3, 2, 5][30, 1, 3, 6]cpu"});
  EXPECT_EQ(index("f32[3, 0, 4][1, 4, 1]cpu", {"None", "i64[2]"}), Types{"f32[3, 2, 4][8, 4, 1]cpu"});
}

TEST(MetaIndexing, IndexMovesSeparatedIndexDimsToTheFront) {
  // Index tensors broadcast ([1, 2] with [3, 1]) and int32 mixes with int64.
  EXPECT_EQ(index("f32[4, 3, 5]", {"i64[1, 2]", "None", "i32[3, 1]"}), Types{"f32[3, 2, 3][6, 3, 1]cpu"});
}

TEST(MetaIndexing, IndexWithZeroDimIndices) {
  // torch's meta pairs the kept sizes with the leading strides here; eager would give
  // [3, 1], but graphs carry what the meta says.
  EXPECT_EQ(index("f32[5, 4, 3][1, 15, 5]cpu", {"i64[]"}), Types{"f32[4, 3][1, 4]cpu"});
  // A 0-d index after a 1-d one: torch's meta says f32[3] (it takes the replacement
  // shape from the last, unbroadcast index); eager and coil give [2, 3].
  EXPECT_EQ(index("f32[5, 4, 3][1, 15, 5]cpu", {"i64[2]", "i64[]"}), Types{"f32[2, 3][3, 1]cpu"});
}

TEST(MetaIndexing, IndexErrors) {
  EXPECT_EQ(index_error("f32[3, 4]", {"b8[3, 4]"}),
            "index: index 0 is a b8 mask; the result's size depends on how many of its elements are true, which "
            "coil cannot know before running; expected int64 or int32 indices");
  EXPECT_EQ(index_error("f32[3, 4]", {"None", "u8[4]"}),
            "index: index 1 is a u8 mask; the result's size depends on how many of its elements are true, which "
            "coil cannot know before running; expected int64 or int32 indices");
  EXPECT_EQ(index_error("f32[3, 4]", {"f32[2]"}), "index: index 0 has dtype f32; expected int64 or int32 (or a bool mask)");
  EXPECT_EQ(index_error("f32[3]", {"i64[1]", "i64[1]"}), "index: too many indices for a tensor of rank 1 (got 2)");
  EXPECT_EQ(index_error("f32[3]", {}), "index: expected at least one index, got an empty list");
  EXPECT_EQ(index_error("f32[3, 4]", {"None"}), "index: every index is None; expected at least one index tensor");
  EXPECT_EQ(index_error("f32[3, 4]", {"i64[2]", "i64[3]"}),
            "index: the index tensors cannot be broadcast together: shapes [2] and [3] cannot be broadcast: dim 0 "
            "is 2 vs 3");
  EXPECT_EQ(index_error("f32[3, 4]cpu", {"i64[2]cuda:0"}),
            "index: index 0 is on cuda:0 but self is on cpu; expected indices on cpu or on self's device");
  EXPECT_EQ(index("f32[3, 4]cuda:0", {"i64[2]cpu"}), Types{"f32[2, 4][4, 1]cuda:0"});
}

// ---------------------------------------------------------------- index_put

Types index_put(const std::string &self, const std::vector<std::string> &indices, const std::string &values) {
  OneNode g;
  Arg x = g.in(self);
  std::vector<Arg> items;
  for (const std::string &a : indices) items.push_back(a == "None" ? none() : g.in(a));
  return g.run("aten.index_put.default", {x, list(items), g.in(values)});
}

std::string index_put_error(const std::string &self, const std::vector<std::string> &indices,
                            const std::string &values) {
  OneNode g;
  Arg x = g.in(self);
  std::vector<Arg> items;
  for (const std::string &a : indices) items.push_back(a == "None" ? none() : g.in(a));
  return g.error("aten.index_put.default", {x, list(items), g.in(values)});
}

TEST(MetaIndexing, IndexPut) {
  EXPECT_EQ(index_put("f32[3, 4][2, 6]cpu", {"i64[2]"}, "f32[4]"), Types{"f32[3, 4][1, 3]cpu"});
  EXPECT_EQ(index_put("f32[5, 4, 3][1, 15, 5]cpu", {"None", "i64[2, 1]", "i32[3]"}, "f32[5, 2, 3]"),
            Types{"f32[5, 4, 3][1, 15, 5]cpu"});
  // The output's size does not depend on a mask, so masks are fine here.
  EXPECT_EQ(index_put("f32[3, 4]", {"b8[3, 4]"}, "f32[]"), Types{"f32[3, 4][4, 1]cpu"});
  EXPECT_EQ(index_put("f32[3, 4]", {"None", "b8[4]"}, "f32[3, 1]"), Types{"f32[3, 4][4, 1]cpu"});
}

TEST(MetaIndexing, IndexPutErrors) {
  EXPECT_EQ(index_put_error("f32[3, 4]", {"i64[2]"}, "f64[2, 4]"),
            "index_put: values have dtype f64 but self has f32; expected the same dtype");
  EXPECT_EQ(index_put_error("f32[3, 4]", {"i64[2]"}, "f32[3, 4]"),
            "index_put: values of shape [3, 4] cannot be broadcast to the indexed shape [2, 4]");
  EXPECT_EQ(index_put_error("f32[3, 4]", {"b8[4, 3]"}, "f32[]"),
            "index_put: mask 0 has shape [4, 3] but the dims of self it covers have sizes [3, 4]");
  EXPECT_EQ(index_put_error("f32[3, 4]", {"b8[3, 4]", "i64[1]"}, "f32[]"),
            "index_put: too many indices for a tensor of rank 2 (the indices cover 3 dims)");
  EXPECT_EQ(index_put_error("f32[3, 4]", {"b8[3]", "f32[2]"}, "f32[]"),
            "index_put: index 1 has dtype f32; expected int64 or int32 (or a bool mask)");
}

// ---------------------------------------------------------------- gather and friends

TEST(MetaIndexing, IndexSelect) {
  const char *op = "aten.index_select.default";
  OneNode g;
  EXPECT_EQ(g.run(op, {g.in("f32[3, 5][1, 3]cpu"), i(1), g.in("i64[2]")}), Types{"f32[3, 2][2, 1]cpu"});
  EXPECT_EQ(g.run(op, {g.in("f32[3, 5]"), i(-2), g.in("i64[]")}), Types{"f32[1, 5][5, 1]cpu"});
  EXPECT_EQ(g.run(op, {g.in("f32[]"), i(0), g.in("i32[1]")}), Types{"f32[][]cpu"});
  EXPECT_EQ(g.run(op, {g.in("bf16[3, 4]"), i(1), g.in("i32[5]")}), Types{"bf16[3, 5][5, 1]cpu"});
  EXPECT_EQ(g.error(op, {g.in("f32[3, 4]"), i(0), g.in("i64[1, 1]")}), "index_select: index must be 0-d or 1-d, got 2-d");
  EXPECT_EQ(g.error(op, {g.in("f32[3, 4]"), i(0), g.in("f32[1]")}), "index_select: index must be int64 or int32, got f32");
  EXPECT_EQ(g.error(op, {g.in("f32[]"), i(0), g.in("i64[2]")}),
            "index_select: indexing a 0-d tensor needs exactly one index, got 2");
  EXPECT_EQ(g.error(op, {g.in("f32[3, 4]"), i(2), g.in("i64[1]")}),
            "dim 2 is out of range for a tensor of rank 2 (expected a dim in [-2, 1])");
}

TEST(MetaIndexing, Gather) {
  const char *op = "aten.gather.default";
  OneNode g;
  EXPECT_EQ(g.run(op, {g.in("f32[4, 3]"), i(0), g.in("i64[2, 2][1, 2]cpu")}), Types{"f32[2, 2][2, 1]cpu"});
  EXPECT_EQ(g.run(op, {g.in("i32[4, 3]"), i(-1), g.in("i32[4, 7]")}), Types{"i32[4, 7][7, 1]cpu"});
  EXPECT_EQ(g.run(op, {g.in("f32[]"), i(0), g.in("i64[]")}), Types{"f32[][]cpu"});
  // An empty index skips every check.
  EXPECT_EQ(g.run(op, {g.in("f32[3, 4]"), i(0), g.in("f32[0, 7, 2]")}), Types{"f32[0, 7, 2][14, 2, 1]cpu"});
  EXPECT_EQ(g.error(op, {g.in("f32[3, 4]"), i(0), g.in("i64[2]")}),
            "gather: index has 1 dims but self has 2; expected the same number of dims");
  EXPECT_EQ(g.error(op, {g.in("f32[3, 4]"), i(0), g.in("i64[2, 5]")}),
            "gather: index of shape [2, 5] is larger than self of shape [3, 4] in dim 1; expected index no larger "
            "apart from dim 0");
  EXPECT_EQ(g.error(op, {g.in("f32[3, 4]"), i(0), g.in("f32[2, 2]")}), "gather: index must be int64 or int32, got f32");
}

TEST(MetaIndexing, Scatter) {
  OneNode g;
  // A fresh contiguous tensor, whatever self's layout.
  EXPECT_EQ(g.run("aten.scatter.src", {g.in("f32[3, 4][1, 3]cpu"), i(0), g.in("i64[2, 2]"), g.in("f32[3, 3]")}),
            Types{"f32[3, 4][4, 1]cpu"});
  EXPECT_EQ(g.run("aten.scatter.value", {g.in("i32[3, 4][1, 3]cpu"), i(1), g.in("i32[2, 2]"), f(2.5)}),
            Types{"i32[3, 4][4, 1]cpu"});
  EXPECT_EQ(g.run("aten.scatter.src", {g.in("f32[]"), i(0), g.in("i64[]"), g.in("f32[]")}), Types{"f32[][]cpu"});
  EXPECT_EQ(g.error("aten.scatter.src", {g.in("f32[3, 4]"), i(0), g.in("i64[2, 2]"), g.in("f64[2, 2]")}),
            "scatter: src has dtype f64 but self has f32; expected the same dtype");
  EXPECT_EQ(g.error("aten.scatter.src", {g.in("f32[3, 4]"), i(0), g.in("i64[2, 2]"), g.in("f32[1, 2]")}),
            "scatter: index of shape [2, 2] is larger than src of shape [1, 2] in dim 0");
  EXPECT_EQ(g.error("aten.scatter.value", {g.in("f32[3, 4]"), i(0), g.in("i64[2, 5]"), f(1.0)}),
            "scatter: index of shape [2, 5] is larger than self of shape [3, 4] in dim 1; expected index no larger "
            "apart from dim 0");
  EXPECT_EQ(g.error("aten.scatter.value", {g.in("f32[3, 4]"), i(0), g.in("i64[2, 2, 1]"), f(1.0)}),
            "scatter: index has 3 dims but self has 2; expected the same number of dims");
}

TEST(MetaIndexing, Embedding) {
  const char *op = "aten.embedding.default";
  EXPECT_EQ(meta(op, {"f32[10, 3]", "i32[2, 2]"}), Types{"f32[2, 2, 3][6, 3, 1]cpu"});
  EXPECT_EQ(meta(op, {"bf16[10, 3][1, 10]cpu", "i64[]"}, {i(0), Arg(true)}), Types{"bf16[3][1]cpu"});
  EXPECT_EQ(meta(op, {"f32[10, 0]", "i64[0, 2]"}), Types{"f32[0, 2, 0][2, 1, 1]cpu"});
  EXPECT_EQ(meta_error(op, {"f32[2, 3, 4]", "i64[1]"}), "embedding: weight must be 2-d, got 3-d");
  EXPECT_EQ(meta_error(op, {"f32[4, 3]", "f32[1]"}), "embedding: index must be int64 or int32, got f32");
}

TEST(MetaIndexing, FlipKeepsTheLayoutAsEmptyLikeDoes) {
  const char *op = "aten.flip.default";
  EXPECT_EQ(meta(op, {"f32[3, 4][2, 6]cpu"}, {ints({0, -1})}), Types{"f32[3, 4][1, 3]cpu"});
  EXPECT_EQ(meta(op, {"f32[0, 3, 4][1, 4, 1]cpu"}, {ints({1})}), Types{"f32[0, 3, 4][12, 4, 1]cpu"});
  EXPECT_EQ(meta(op, {"u8[2, 3, 4, 5][60, 1, 15, 3]cpu"}, {ints({})}), Types{"u8[2, 3, 4, 5][60, 1, 15, 3]cpu"});
  EXPECT_EQ(meta_error(op, {"f32[3, 4]"}, {ints({0, -2})}), "dim 0 appears multiple times in the list of dims");
  EXPECT_EQ(meta_error(op, {"f32[3, 4]"}, {ints({2})}),
            "dim 2 is out of range for a tensor of rank 2 (expected a dim in [-2, 1])");
}

TEST(MetaIndexing, SliceAndSelectScatterKeepSelfsStrides) {
  OneNode g;
  const char *slice = "aten.slice_scatter.default";
  const char *select = "aten.select_scatter.default";
  EXPECT_EQ(g.run(slice, {g.in("f32[3, 4][1, 0]cpu"), g.in("f32[3, 2]"), i(1), i(0), i(2)}),
            Types{"f32[3, 4][1, 0]cpu"});
  EXPECT_EQ(g.run(slice, {g.in("f32[3, 4][1, 3]cpu"), g.in("f32[3, 2]"), i(-1), i(-3), none(), i(2)}),
            Types{"f32[3, 4][1, 3]cpu"});
  // Out-of-range bounds clamp, as in Python slicing.
  EXPECT_EQ(g.run(slice, {g.in("f32[3, 4]"), g.in("f32[0, 4]"), i(0), i(5), i(2)}), Types{"f32[3, 4][4, 1]cpu"});
  EXPECT_EQ(g.run(slice, {g.in("f32[3, 4]"), g.in("f32[3, 1]"), i(1), none(), Arg(INT64_MAX), Arg(INT64_MAX)}),
            Types{"f32[3, 4][4, 1]cpu"});
  EXPECT_EQ(g.run(select, {g.in("f32[3, 4][1, 3]cpu"), g.in("f32[3]"), i(1), i(-1)}), Types{"f32[3, 4][1, 3]cpu"});

  EXPECT_EQ(g.error(slice, {g.in("f32[3, 4]"), g.in("f32[3, 3]"), i(1), i(0), i(2)}),
            "slice_scatter: src has size [3, 3] but the slice of self has size [3, 2]; expected them equal");
  EXPECT_EQ(g.error(slice, {g.in("f32[3, 4]"), g.in("f32[3, 2]"), i(1), i(0), i(2), i(0)}),
            "slice_scatter: step must be positive, got 0");
  EXPECT_EQ(g.error(slice, {g.in("f32[]"), g.in("f32[]")}), "slice_scatter: cannot slice a 0-d tensor");
  EXPECT_EQ(g.error(select, {g.in("f32[3, 4]"), g.in("f32[3]"), i(1), i(4)}),
            "select_scatter: index 4 is out of range for dim 1 of size 4 (expected an index in [-4, 3])");
  EXPECT_EQ(g.error(select, {g.in("f32[3, 4]"), g.in("f32[4]"), i(1), i(0)}),
            "select_scatter: src has size [4] but the selected slice of self has size [3]; expected them equal");
  EXPECT_EQ(g.error(select, {g.in("f32[]"), g.in("f32[]"), i(0), i(0)}), "select_scatter: cannot select from a 0-d tensor");
}

TEST(MetaIndexing, NumbersWhereTensorsAreExpected) {
  // A Python number is no tensor for these ops; the message names the argument.
  OneNode g;
  EXPECT_EQ(g.error("aten.index_put.default", {g.in("f32[3, 4]"), list({g.in("i64[2]")}), f(1.0)}),
            "argument 'values' must be a tensor, got float");
  EXPECT_EQ(g.error("aten.flip.default", {i(3), ints({0})}), "argument 'self' must be a tensor, got int");
}

TEST(MetaIndexing, ErrorsNameTheNode) {
  OneNode g;
  try {
    g.run("aten.flip.default", {g.in("f32[3, 4]"), ints({0, 0})});
    FAIL() << "expected a UserError";
  } catch (const UserError &e) {
    EXPECT_EQ(e.message(), "node 'out' (aten.flip.default): dim 0 appears multiple times in the list of dims");
  }
}

}  // namespace
}  // namespace coil
