// Meta functions of reductions, norms, matrix products and pooling (and the math ops,
// repeat and diagonal of issue 20's first batch): output dtype, sizes
// and strides as PyTorch 2.11 computes them, and the errors where PyTorch refuses.
// The expected types and errors were checked against torch 2.11: the annotations
// torch.export prints, and eager runs on CPU and CUDA.
#include <cmath>

#include <gtest/gtest.h>

#include "meta_util.h"

namespace coil {
namespace {

using namespace test;

// ---- reductions -------------------------------------------------------------------

TEST(MetaReductions, FullMaxMinGiveZeroDim) {
  EXPECT_EQ(meta("aten.max.default", {"f32[3, 4][1, 3]cpu"}), Types{"f32[][]cpu"});
  EXPECT_EQ(meta("aten.min.default", {"b8[3, 4]"}), Types{"b8[][]cpu"});
  EXPECT_EQ(meta("aten.max.default", {"i32[]"}), Types{"i32[][]cpu"});
  EXPECT_EQ(meta_error("aten.max.default", {"f32[0, 3]"}),
            "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
            "dim with the 'dim' argument.");
}

TEST(MetaReductions, MaxDimGivesValuesAndIndices) {
  EXPECT_EQ(meta("aten.max.dim", {"f32[5, 3, 4][1, 20, 5]cpu"}, {i(1), Arg(true)}),
            (Types{"f32[5, 1, 4][4, 4, 1]cpu", "i64[5, 1, 4][4, 4, 1]cpu"}));
  EXPECT_EQ(meta("aten.min.dim", {"bf16[3, 5]"}, {i(-1)}), (Types{"bf16[3][1]cpu", "i64[3][1]cpu"}));
  EXPECT_EQ(meta("aten.max.dim", {"f32[]"}, {i(-1), Arg(true)}), (Types{"f32[][]cpu", "i64[][]cpu"}));
  // Reducing a non-empty dim of an empty tensor is fine; reducing an empty dim is not.
  EXPECT_EQ(meta("aten.max.dim", {"f32[0, 3]"}, {i(1)}), (Types{"f32[0][1]cpu", "i64[0][1]cpu"}));
  EXPECT_EQ(meta_error("aten.max.dim", {"f32[0, 3]"}, {i(0)}), "max(): Expected reduction dim 0 to have non-zero size.");
  EXPECT_EQ(meta_error("aten.min.dim", {"f32[2, 3]"}, {i(2)}),
            "dim 2 is out of range for a tensor of rank 2 (expected a dim in [-2, 1])");
}

TEST(MetaReductions, ArgmaxFlattensWithoutDim) {
  EXPECT_EQ(meta("aten.argmax.default", {"f16[3, 4]"}), Types{"i64[][]cpu"});
  EXPECT_EQ(meta("aten.argmax.default", {"f16[3, 4]"}, {none(), Arg(true)}), Types{"i64[1, 1][1, 1]cpu"});
  EXPECT_EQ(meta("aten.argmin.default", {"i32[3, 4, 5][1, 3, 12]cpu"}, {i(1), Arg(true)}),
            Types{"i64[3, 1, 5][5, 5, 1]cpu"});
  EXPECT_EQ(meta("aten.argmin.default", {"f32[]"}, {i(0)}), Types{"i64[][]cpu"});
  EXPECT_EQ(meta_error("aten.argmax.default", {"b8[3]"}), "argmax(): does not support bool input");
  EXPECT_EQ(meta_error("aten.argmin.default", {"f32[0, 3]"}),
            "argmin(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
            "dim with the 'dim' argument.");
  EXPECT_EQ(meta_error("aten.argmax.default", {"f32[3, 0]"}, {i(-1)}),
            "argmax(): Expected reduction dim 1 to have non-zero size.");
}

TEST(MetaReductions, SegmentReduceTakesTheSegmentsShape) {
  Arg sum(std::string("sum"));
  EXPECT_EQ(meta("aten.segment_reduce.default", {"bf16[40, 3]", "lengths=i64[6]"}, {sum}),
            Types{"bf16[6, 3][3, 1]cpu"});
  EXPECT_EQ(meta("aten.segment_reduce.default", {"f32[40, 3]", "offsets=i32[5]"}, {sum}), Types{"f32[4, 3][3, 1]cpu"});
  EXPECT_EQ(meta("aten.segment_reduce.default", {"f32[2, 30, 4]", "lengths=i64[2, 5]"}, {sum}, {{"axis", i(1)}}),
            Types{"f32[2, 5, 4][20, 4, 1]cpu"});
  EXPECT_EQ(meta_error("aten.segment_reduce.default", {"f32[2, 30, 4]", "lengths=i64[3, 5]"}, {sum}, {{"axis", i(1)}}),
            "segment_reduce: lengths of shape [3, 5] must have data's dims before axis 1 ([2, 30, 4]) and then the "
            "segments");
  EXPECT_EQ(meta_error("aten.segment_reduce.default", {"f32[4]"}, {sum}),
            "segment_reduce(): Either lengths or offsets must be defined.");
  EXPECT_EQ(meta_error("aten.segment_reduce.default", {"f32[4]", "lengths=i64[2]"}, {Arg(std::string("median"))}),
            "segment_reduce: reduce must be sum, prod, max, min or mean, got 'median'");
}

TEST(MetaReductions, HistogramsTakeTheirBins) {
  EXPECT_EQ(meta("aten.histogram.bin_ct", {"f32[7, 3]"}, {i(5)}), (Types{"f32[5][1]cpu", "f32[6][1]cpu"}));
  EXPECT_EQ(meta("aten.histogram.bins_tensor", {"f64[9]", "f64[4]"}), (Types{"f64[3][1]cpu", "f64[4][1]cpu"}));
  EXPECT_EQ(meta("aten._histogramdd_from_bin_cts.default", {"f32[30, 2]"}, {ints({3, 4})}), Types{"f32[3, 4][4, 1]cpu"});
  EXPECT_EQ(meta("aten._histogramdd_bin_edges.default", {"f32[30, 2]"}, {ints({3, 4})}),
            (Types{"f32[4][1]cpu", "f32[5][1]cpu"}));
  EXPECT_EQ(meta_error("aten.histogram.bin_ct", {"i64[7]"}, {i(5)}),
            "torch.histogram: expected a float or double input, got i64");
  EXPECT_EQ(meta_error("aten.histogram.bin_ct", {"f32[7]"}, {i(0)}), "torch.histogram: bins must be > 0, but got 0");
  EXPECT_EQ(meta_error("aten._histogramdd_from_bin_cts.default", {"f32[30, 2]"}, {ints({3})}),
            "torch.histogramdd: expected 2 sequences of bin edges (or bin counts) for the input's last dim of 2, got 1");
  ArgList range = {Arg(1.0), Arg(0.0)};
  EXPECT_EQ(meta_error("aten.histogram.bin_ct", {"f32[7]"}, {i(3)}, {{"range", Arg(range)}}),
            "torch.histogram: min should not exceed max, but got min 1 max 0");
}

TEST(MetaReductions, AmaxRefusesEmptySlicesButSumDoesNot) {
  EXPECT_EQ(meta_error("aten.amax.default", {"f32[2, 0]"}, {ints({1})}),
            "amax(): Expected reduction dim 1 to have non-zero size.");
  EXPECT_EQ(meta_error("aten.amin.default", {"f32[2, 0]"}),
            "amin(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
            "dim with the 'dim' argument.");
  EXPECT_EQ(meta("aten.amax.default", {"f32[2, 0]"}, {ints({0})}), Types{"f32[0][1]cpu"});
  EXPECT_EQ(meta("aten.sum.dim_IntList", {"f32[2, 0]"}, {ints({1})}), Types{"f32[2][1]cpu"});
  EXPECT_EQ(meta("aten.sum.default", {"i8[0, 2]"}), Types{"i64[][]cpu"});
}

TEST(MetaReductions, ZeroDimTensorsTakeDimZeroOnce) {
  EXPECT_EQ(meta("aten.sum.dim_IntList", {"f32[]"}, {ints({0}), Arg(true)}), Types{"f32[][]cpu"});
  EXPECT_EQ(meta("aten.amax.default", {"f32[]"}, {ints({-1})}), Types{"f32[][]cpu"});
  EXPECT_EQ(meta("aten.var.correction", {"f32[]"}, {ints({0})}), Types{"f32[][]cpu"});
  EXPECT_EQ(meta_error("aten.sum.dim_IntList", {"f32[]"}, {ints({0, -1})}),
            "dim 0 appears multiple times in the list of dims");
  EXPECT_EQ(meta_error("aten.prod.dim_int", {"f32[]"}, {i(1)}),
            "dim 1 is out of range for a tensor of rank 0 (expected a dim in [-1, 0])");
}

TEST(MetaReductions, ProdPromotesIntegersLikeSum) {
  EXPECT_EQ(meta("aten.prod.default", {"i32[2, 3]"}), Types{"i64[][]cpu"});
  EXPECT_EQ(meta("aten.prod.default", {"u8[2, 3]"}), Types{"i64[][]cpu"});
  EXPECT_EQ(meta("aten.prod.default", {"f16[2, 3]"}), Types{"f16[][]cpu"});
  EXPECT_EQ(meta("aten.prod.default", {"f32[2, 3]"}, {}, {{"dtype", Arg(DType::I32)}}), Types{"i32[][]cpu"});
  EXPECT_EQ(meta("aten.prod.dim_int", {"b8[2, 3]"}, {i(1), Arg(true)}), Types{"i64[2, 1][1, 1]cpu"});
  EXPECT_EQ(meta("aten.prod.dim_int", {"f16[2, 3, 4][1, 8, 2]cpu"}, {i(1)}, {{"dtype", Arg(DType::F32)}}),
            Types{"f32[2, 4][4, 1]cpu"});
}

TEST(MetaReductions, AnyAllGiveBoolExceptUint8) {
  EXPECT_EQ(meta("aten.any.default", {"f32[2, 3]"}), Types{"b8[][]cpu"});
  EXPECT_EQ(meta("aten.all.default", {"u8[2, 3]"}), Types{"u8[][]cpu"});
  EXPECT_EQ(meta("aten.any.dim", {"u8[2, 3]"}, {i(1), Arg(true)}), Types{"u8[2, 1][1, 1]cpu"});
  EXPECT_EQ(meta("aten.all.dim", {"i64[2, 0]"}, {i(1)}), Types{"b8[2][1]cpu"});
  EXPECT_EQ(meta("aten.all.dims", {"i8[2, 3, 4]"}, {ints({0, -1})}), Types{"b8[3][1]cpu"});
  EXPECT_EQ(meta("aten.any.dims", {"f32[2, 3]"}, {none(), Arg(true)}), Types{"b8[1, 1][1, 1]cpu"});
  // Unlike sum, an empty dim list reduces nothing.
  EXPECT_EQ(meta("aten.any.dims", {"f32[2, 3][1, 2]cpu"}, {ints({})}), Types{"b8[2, 3][3, 1]cpu"});
  EXPECT_EQ(meta_error("aten.any.dims", {"f32[]"}, {ints({0, -1})}), "dim 0 appears multiple times in the list of dims");
}

TEST(MetaReductions, CumsumIsAContiguousScan) {
  EXPECT_EQ(meta("aten.cumsum.default", {"f32[4, 3, 5][1, 20, 4]cpu"}, {i(1)}), Types{"f32[4, 3, 5][15, 5, 1]cpu"});
  EXPECT_EQ(meta("aten.cumsum.default", {"i32[3, 4]"}, {i(1)}), Types{"i64[3, 4][4, 1]cpu"});
  EXPECT_EQ(meta("aten.cumsum.default", {"b8[3, 4]"}, {i(0)}), Types{"i64[3, 4][4, 1]cpu"});
  EXPECT_EQ(meta("aten.cumsum.default", {"f16[3, 4]"}, {i(-1)}, {{"dtype", Arg(DType::F32)}}),
            Types{"f32[3, 4][4, 1]cpu"});
  EXPECT_EQ(meta("aten.cumsum.default", {"bf16[]"}, {i(0)}), Types{"bf16[][]cpu"});
  EXPECT_EQ(meta_error("aten.cumsum.default", {"f32[3, 4]"}, {i(2)}),
            "dim 2 is out of range for a tensor of rank 2 (expected a dim in [-2, 1])");
}

TEST(MetaReductions, LogcumsumexpIsAContiguousScanOfFloats) {
  EXPECT_EQ(meta("aten.logcumsumexp.default", {"f32[4, 3][1, 4]cpu"}, {i(0)}), Types{"f32[4, 3][3, 1]cpu"});
  EXPECT_EQ(meta("aten.logcumsumexp.default", {"bf16[5]"}, {i(-1)}), Types{"bf16[5][1]cpu"});
  EXPECT_EQ(meta_error("aten.logcumsumexp.default", {"i64[3]"}, {i(0)}), "logcumsumexp needs a floating point input, got i64");
}

TEST(MetaReductions, MeanAndVarNeedFloatingPoint) {
  EXPECT_EQ(meta("aten.mean.default", {"f16[3, 4][1, 3]cpu"}), Types{"f16[][]cpu"});
  EXPECT_EQ(meta("aten.mean.default", {"i64[3, 4]"}, {}, {{"dtype", Arg(DType::F64)}}), Types{"f64[][]cpu"});
  EXPECT_EQ(meta_error("aten.mean.default", {"i32[3]"}),
            "mean(): could not infer output dtype. Input dtype must be floating point, got i32");
  EXPECT_EQ(meta("aten.mean.dim", {"i64[2, 3]"}, {ints({1})}, {{"dtype", Arg(DType::F32)}}),
            Types{"f32[2][1]cpu"});
  EXPECT_EQ(meta_error("aten.mean.dim", {"f32[2, 3]"}, {ints({1})}, {{"dtype", Arg(DType::I64)}}),
            "mean(): could not infer output dtype. Optional dtype must be floating point, got i64");
  EXPECT_EQ(meta_error("aten.var.correction", {"i64[2, 3]"}, {ints({0})}),
            "var only supports floating point dtypes, got i64");
  EXPECT_EQ(meta_error("aten.var_mean.correction", {"b8[2, 3]"}, {ints({0})}),
            "var_mean only supports floating point dtypes, got b8");
  EXPECT_EQ(meta("aten.var_mean.correction", {"bf16[2, 3, 4]"}, {ints({0, 2})}, {{"keepdim", Arg(true)}}),
            (Types{"bf16[1, 3, 1][3, 1, 1]cpu", "bf16[1, 3, 1][3, 1, 1]cpu"}));
}

// ---- norms --------------------------------------------------------------------------

TEST(MetaNorms, GroupNormStatsAreNByGroup) {
  std::vector<Arg> args = {i(2), i(6), i(16), i(3), Arg(1e-5)};
  EXPECT_EQ(meta("aten.native_group_norm.default", {"f32[2, 6, 4, 4]", "f32[6]", "f32[6]"}, args),
            (Types{"f32[2, 6, 4, 4][96, 16, 4, 1]cpu", "f32[2, 3][3, 1]cpu", "f32[2, 3][3, 1]cpu"}));
  // On CPU the output keeps a channels-last input's layout.
  EXPECT_EQ(meta("aten.native_group_norm.default", {"f16[2, 6, 4, 4][96, 1, 24, 6]cpu", "None", "None"}, args),
            (Types{"f16[2, 6, 4, 4][96, 1, 24, 6]cpu", "f16[2, 3][3, 1]cpu", "f16[2, 3][3, 1]cpu"}));
  // Traced graphs give the statistics the input's dtype, f32 parameters or not.
  EXPECT_EQ(meta("aten.native_group_norm.default", {"bf16[2, 6, 4, 4]", "f32[6]", "f32[6]"}, args),
            (Types{"bf16[2, 6, 4, 4][96, 16, 4, 1]cpu", "bf16[2, 3][3, 1]cpu", "bf16[2, 3][3, 1]cpu"}));
  EXPECT_EQ(meta("aten.native_group_norm.default", {"f32[2, 6]", "None", "None"},
                 {i(2), i(6), i(1), i(6), Arg(1e-5)}),
            (Types{"f32[2, 6][6, 1]cpu", "f32[2, 6][6, 1]cpu", "f32[2, 6][6, 1]cpu"}));
}

TEST(MetaNorms, GroupNormErrors) {
  const std::string gn = "aten.native_group_norm.default";
  auto args = [](int64_t n, int64_t c, int64_t hxw, int64_t g) {
    return std::vector<Arg>{i(n), i(c), i(hxw), i(g), Arg(1e-5)};
  };
  EXPECT_EQ(meta_error(gn, {"f32[2, 6, 4, 4]", "None", "None"}, args(2, 6, 16, 4)),
            "group_norm expects the number of channels (6) to be divisible by the number of groups (4)");
  EXPECT_EQ(meta_error(gn, {"f32[2, 6, 4, 4]", "None", "None"}, args(2, 6, 16, 0)),
            "group_norm expects a positive number of groups, got 0");
  EXPECT_EQ(meta_error(gn, {"f32[2, 6, 4, 4]", "f32[5]", "None"}, args(2, 6, 16, 3)),
            "group_norm expects weight to be a vector of size equal to the number of channels (6), got weight "
            "of shape [5] for an input of shape [2, 6, 4, 4]");
  EXPECT_EQ(meta_error(gn, {"f32[2, 6, 4, 4]", "None", "None"}, args(3, 6, 16, 3)),
            "group_norm: N * C * HxW = 3 * 6 * 16 does not match the 192 elements of the input of shape "
            "[2, 6, 4, 4]");
  EXPECT_EQ(meta_error(gn, {"f32[2, 6, 4, 4][96, 16, 1, 4]cpu", "None", "None"}, args(2, 6, 16, 3)),
            "group_norm expects an input contiguous in its memory format (contiguous or channels-last), got "
            "strides [96, 16, 1, 4] for shape [2, 6, 4, 4]");
  EXPECT_EQ(meta_error(gn, {"f32[2, 6, 4, 4][96, 1, 24, 6]cuda:0", "None", "None"}, args(2, 6, 16, 3)),
            "group_norm expects an input contiguous in memory on CUDA, got strides [96, 1, 24, 6] for shape "
            "[2, 6, 4, 4]");
  EXPECT_EQ(meta_error(gn, {"f32[2, 6, 4, 4]", "bf16[6]", "None"}, args(2, 6, 16, 3)),
            "group_norm: weight is bf16 but the input is f32 on cpu; parameters must have the input's dtype");
  EXPECT_EQ(meta_error(gn, {"bf16[2, 6, 4, 4]", "f16[6]", "None"}, args(2, 6, 16, 3)),
            "group_norm: weight is f16 but the input is bf16 on cpu; parameters must have the input's dtype, or "
            "all be f32");
  EXPECT_EQ(meta_error(gn, {"bf16[2, 6, 4, 4]cuda:0", "f32[6]cuda:0", "None"}, args(2, 6, 16, 3)),
            "group_norm: weight is f32 but the input is bf16 on cuda:0; parameters must have the input's dtype "
            "(f32 parameters for an f16 or bf16 input are for CPU only)");
  EXPECT_EQ(meta_error(gn, {"f32[6]", "None", "None"}, args(1, 6, 1, 3)),
            "group_norm expects an input of at least 2 dims, got [6]");
  EXPECT_EQ(meta_error(gn, {"i64[2, 6, 4, 4]", "None", "None"}, args(2, 6, 16, 3)),
            "group_norm needs a floating point input, got i64");
}

TEST(MetaNorms, LayerNormStatsFollowTheDevice) {
  const std::string ln = "aten.native_layer_norm.default";
  Kwargs args = {{"normalized_shape", ints({3})}, {"eps", Arg(1e-5)}};
  Kwargs with_bias_none = args;
  with_bias_none.emplace_back("bias", none());
  // Traced CPU graphs give the statistics the input's dtype, f32 parameters or not.
  EXPECT_EQ(meta(ln, {"bf16[2, 4, 3][12, 1, 4]cpu", "weight=f32[3]", "bias=f32[3]"}, {}, args),
            (Types{"bf16[2, 4, 3][12, 3, 1]cpu", "bf16[2, 4, 1][4, 1, 1]cpu", "bf16[2, 4, 1][4, 1, 1]cpu"}));
  EXPECT_EQ(meta(ln, {"f16[2, 4, 3]cuda:0", "weight=f16[3]cuda:0"}, {}, with_bias_none),
            (Types{"f16[2, 4, 3][12, 3, 1]cuda:0", "f32[2, 4, 1][4, 1, 1]cuda:0", "f32[2, 4, 1][4, 1, 1]cuda:0"}));
  EXPECT_EQ(meta_error(ln, {"f64[2, 4, 3]", "weight=f32[3]"}, {}, with_bias_none),
            "layer_norm: weight is f32 but the input is f64 on cpu; parameters must have the input's dtype");
  EXPECT_EQ(meta_error(ln, {"f16[2, 4, 3]cuda:0", "weight=f32[3]cuda:0"}, {}, with_bias_none),
            "layer_norm: weight is f32 but the input is f16 on cuda:0; parameters must have the input's dtype "
            "(f32 parameters for an f16 or bf16 input are for CPU only)");
}

TEST(MetaNorms, BatchNormKeepsTheInputLayout) {
  const std::string bn = "aten._native_batch_norm_legit_no_training.default";
  std::vector<Arg> args = {Arg(0.1), Arg(1e-5)};
  // Traced graphs compute the output elementwise, so even a transposed layout stays.
  EXPECT_EQ(meta(bn, {"f32[2, 3, 5, 4][60, 20, 1, 5]cpu", "None", "None", "f32[3]", "f32[3]"}, args),
            (Types{"f32[2, 3, 5, 4][60, 20, 1, 5]cpu", "f32[0][1]cpu", "f32[0][1]cpu"}));
  EXPECT_EQ(meta(bn, {"bf16[2, 3, 4]", "f32[3]", "f32[3]", "f32[3]", "f32[3]"}, args),
            (Types{"bf16[2, 3, 4][12, 4, 1]cpu", "bf16[0][1]cpu", "bf16[0][1]cpu"}));
  // On CUDA the saved statistics are per channel, in the dtype the kernel computes in;
  // f32 parameters for a bf16 input are fine there too.
  EXPECT_EQ(meta(bn, {"bf16[2, 3, 4]cuda:0", "None", "None", "bf16[3]cuda:0", "bf16[3]cuda:0"}, args),
            (Types{"bf16[2, 3, 4][12, 4, 1]cuda:0", "f32[3][1]cuda:0", "f32[3][1]cuda:0"}));
  EXPECT_EQ(meta(bn, {"f16[2, 3, 4]cuda:0", "f32[3]cuda:0", "None", "f32[3]cuda:0", "f32[3]cuda:0"}, args),
            (Types{"f16[2, 3, 4][12, 4, 1]cuda:0", "f32[3][1]cuda:0", "f32[3][1]cuda:0"}));
  EXPECT_EQ(meta_error(bn, {"f64[2, 3]", "f32[3]", "None", "f64[3]", "f64[3]"}, args),
            "_native_batch_norm_legit_no_training: weight is f32 but the input is f64 on cpu; parameters must have "
            "the input's dtype");
  EXPECT_EQ(meta_error(bn, {"f32[3]", "None", "None", "f32[3]", "f32[3]"}, args),
            "_native_batch_norm_legit_no_training needs an input of rank >= 2, got [3]");
}

TEST(MetaNorms, TrainingBatchNormSavesTheBatchStatistics) {
  const std::string functional = "aten._native_batch_norm_legit_functional.default";
  const std::string no_stats = "aten._native_batch_norm_legit.no_stats";
  std::vector<Arg> training = {Arg(true), Arg(0.1), Arg(1e-5)}, evaluation = {Arg(false), Arg(0.1), Arg(1e-5)};
  // Per channel, on the CPU in the input's dtype; the running statistics moved towards the
  // batch's come back in the dtype the kernel computes in, as PyTorch's meta function says.
  EXPECT_EQ(meta(functional, {"bf16[2, 3, 4]", "None", "None", "bf16[3]", "bf16[3]"}, training),
            (Types{"bf16[2, 3, 4][12, 4, 1]cpu", "bf16[3][1]cpu", "bf16[3][1]cpu", "f32[3][1]cpu", "f32[3][1]cpu"}));
  // In evaluation mode the running statistics come back as they were.
  EXPECT_EQ(meta(functional, {"bf16[2, 3, 4]", "None", "None", "bf16[3]", "bf16[3]"}, evaluation),
            (Types{"bf16[2, 3, 4][12, 4, 1]cpu", "bf16[0][1]cpu", "bf16[0][1]cpu", "bf16[3][1]cpu", "bf16[3][1]cpu"}));
  EXPECT_EQ(meta(no_stats, {"f16[2, 3]cuda:0", "None", "None"}, training),
            (Types{"f16[2, 3][3, 1]cuda:0", "f32[3][1]cuda:0", "f32[3][1]cuda:0"}));
  EXPECT_EQ(meta_error(no_stats, {"f32[2, 3]", "None", "None"}, evaluation),
            "_native_batch_norm_legit in evaluation mode needs running_mean and running_var");
  EXPECT_EQ(meta_error(no_stats, {"f32[0, 3]", "None", "None"}, training),
            "_native_batch_norm_legit in training mode needs at least one value per channel, got shape [0, 3]");
}

TEST(MetaNorms, SoftmaxHalfToFloatIsCudaAndF16Only) {
  EXPECT_EQ(meta("aten._softmax.default", {"f16[8, 16][1, 8]cuda:0"}, {i(-1), Arg(true)}),
            Types{"f32[8, 16][16, 1]cuda:0"});
  EXPECT_EQ(meta("aten._log_softmax.default", {"f32[2, 3, 4, 5][60, 1, 15, 3]cpu"}, {i(1), Arg(false)}),
            Types{"f32[2, 3, 4, 5][60, 20, 5, 1]cpu"});
  EXPECT_EQ(meta_error("aten._softmax.default", {"f16[8, 16]"}, {i(-1), Arg(true)}),
            "softmax with half_to_float=True is not supported on CPU");
  EXPECT_EQ(meta_error("aten._log_softmax.default", {"bf16[8, 16]cuda:0"}, {i(-1), Arg(true)}),
            "log_softmax with half_to_float=True needs an f16 input, got bf16");
}

// ---- matrix products ----------------------------------------------------------------

TEST(MetaMatmul, ProductsAreContiguous) {
  EXPECT_EQ(meta("aten.mm.default", {"f32[3, 4][1, 3]cpu", "f32[4, 5][1, 4]cpu"}), Types{"f32[3, 5][5, 1]cpu"});
  EXPECT_EQ(meta("aten.mm.default", {"i64[3, 0]", "i64[0, 5]"}), Types{"i64[3, 5][5, 1]cpu"});
  EXPECT_EQ(meta("aten.bmm.default", {"bf16[2, 3, 4][12, 1, 3]cpu", "bf16[2, 4, 5]"}),
            Types{"bf16[2, 3, 5][15, 5, 1]cpu"});
  EXPECT_EQ(meta("aten.mv.default", {"f16[3, 4][1, 3]cpu", "f16[4]"}), Types{"f16[3][1]cpu"});
}

TEST(MetaMatmul, AddFormsBroadcastSelf) {
  EXPECT_EQ(meta("aten.addmm.default", {"f32[5]", "f32[3, 4]", "f32[4, 5]"}), Types{"f32[3, 5][5, 1]cpu"});
  EXPECT_EQ(meta("aten.addmm.default", {"f32[3, 5][1, 3]cpu", "f32[3, 4]", "f32[4, 5]"}, {},
                 {{"beta", Arg(2.0)}, {"alpha", Arg(int64_t(3))}}),
            Types{"f32[3, 5][5, 1]cpu"});
  EXPECT_EQ(meta("aten.addmm.default", {"f64[]", "f64[3, 4]", "f64[4, 5]"}), Types{"f64[3, 5][5, 1]cpu"});
  EXPECT_EQ(meta("aten.baddbmm.default", {"f32[3, 1]", "f32[2, 3, 4]", "f32[2, 4, 5]"}),
            Types{"f32[2, 3, 5][15, 5, 1]cpu"});
  EXPECT_EQ(meta("aten.addmv.default", {"f32[1]", "f32[3, 4]", "f32[4]"}), Types{"f32[3][1]cpu"});
  EXPECT_EQ(meta_error("aten.addmm.default", {"f32[4]", "f32[3, 4]", "f32[4, 5]"}),
            "addmm: self of shape [4] cannot be broadcast to the result's shape [3, 5]");
  EXPECT_EQ(meta_error("aten.addmv.default", {"f32[1, 3]", "f32[3, 4]", "f32[4]"}),
            "addmv: self of shape [1, 3] cannot be broadcast to the result's shape [3]");
}

TEST(MetaMatmul, Errors) {
  EXPECT_EQ(meta_error("aten.mm.default", {"f32[3, 4]", "f64[4, 5]"}),
            "mm expects operands of one dtype, got self f32[3, 4], mat2 f64[4, 5]");
  EXPECT_EQ(meta_error("aten.addmm.default", {"f64[5]", "f32[3, 4]", "f32[4, 5]"}),
            "addmm expects operands of one dtype, got self f64[5], mat1 f32[3, 4], mat2 f32[4, 5]");
  EXPECT_EQ(meta_error("aten.mm.default", {"f32[3, 4]", "f32[5, 5]"}),
            "mm: self of shape [3, 4] and mat2 of shape [5, 5] cannot be multiplied (4 != 5)");
  EXPECT_EQ(meta_error("aten.mm.default", {"f32[2, 3, 4]", "f32[4, 5]"}), "mm expects self to be 2-d, got shape [2, 3, 4]");
  EXPECT_EQ(meta_error("aten.mm.default", {"b8[3, 4]", "b8[4, 5]"}), "mm does not support bool operands");
  EXPECT_EQ(meta_error("aten.mm.default", {"i32[3, 4]cuda", "i32[4, 5]cuda"}),
            "mm of integer operands is only supported on CPU, got i32 on cuda");
  EXPECT_EQ(meta_error("aten.bmm.default", {"f32[2, 3, 4]", "f32[3, 4, 5]"}),
            "bmm: self of shape [2, 3, 4] and mat2 of shape [3, 4, 5] cannot be multiplied: expected mat2 of "
            "shape [2, 4, *]");
  EXPECT_EQ(meta_error("aten.baddbmm.default", {"f32[5]", "f32[2, 3, 4]", "f32[2, 4]"}),
            "baddbmm expects batch2 to be 3-d, got shape [2, 4]");
  EXPECT_EQ(meta_error("aten.mv.default", {"f32[3, 4]", "f32[5]"}),
            "mv: self of shape [3, 4] and vec of shape [5] cannot be multiplied (4 != 5)");
}

// ---- pooling ------------------------------------------------------------------------

TEST(MetaPooling, MaxPoolShapesAndLayouts) {
  const std::string mp = "aten.max_pool2d_with_indices.default";
  EXPECT_EQ(meta(mp, {"f32[2, 3, 9, 7]"}, {ints({3, 3}), ints({2, 2}), ints({1, 1})}),
            (Types{"f32[2, 3, 5, 4][60, 20, 4, 1]cpu", "i64[2, 3, 5, 4][60, 20, 4, 1]cpu"}));
  // Channels-last stays channels-last; dilation and ceil mode.
  EXPECT_EQ(meta(mp, {"f16[2, 3, 9, 7][189, 1, 21, 3]cpu"},
                 {ints({3, 2}), ints({2, 1}), ints({1, 0}), ints({1, 2}), Arg(true)}),
            (Types{"f16[2, 3, 5, 5][75, 1, 15, 3]cpu", "i64[2, 3, 5, 5][75, 1, 15, 3]cpu"}));
  // One value stands for both dims, an empty stride for the kernel size; 3-d input.
  EXPECT_EQ(meta(mp, {"u8[3, 9, 7]"}, {ints({2}), ints({}), ints({1}), ints({2}), Arg(true)}),
            (Types{"u8[3, 5, 4][20, 4, 1]cpu", "i64[3, 5, 4][20, 4, 1]cpu"}));
  EXPECT_EQ(meta("aten.max_pool2d.default", {"f32[0, 3, 6, 6]"}, {ints({2})}),
            Types{"f32[0, 3, 3, 3][27, 9, 3, 1]cpu"});
}

TEST(MetaPooling, CeilModeDropsAWindowStartingInThePadding) {
  // Height: a window would start at row 8, past the 6 rows and the left padding of 2.
  // Width: a window would start at column 2, past the 2 columns.
  EXPECT_EQ(meta("aten.max_pool2d_with_indices.default", {"f32[1, 2, 6, 2]"},
                 {ints({4, 1}), ints({4, 2}), ints({2, 0}), ints({1, 1}), Arg(true)}),
            (Types{"f32[1, 2, 2, 1][4, 2, 1, 1]cpu", "i64[1, 2, 2, 1][4, 2, 1, 1]cpu"}));
  EXPECT_EQ(meta("aten.avg_pool2d.default", {"f32[1, 1, 5, 5]"}, {ints({2, 2}), ints({2, 2}), ints({0, 0}), Arg(true)}),
            Types{"f32[1, 1, 3, 3][9, 9, 3, 1]cpu"});
}

TEST(MetaPooling, MaxPoolErrors) {
  const std::string mp = "aten.max_pool2d_with_indices.default";
  EXPECT_EQ(meta_error(mp, {"f32[1, 1, 6, 6]"}, {ints({3, 3}), ints({2, 2}), ints({2, 2})}),
            "max_pool2d: padding [2, 2] must be at most half of kernel_size [3, 3]");
  EXPECT_EQ(meta_error(mp, {"f32[1, 1, 2, 2]"}, {ints({3, 3})}),
            "max_pool2d: input of shape [1, 1, 2, 2] is too small for kernel_size [3, 3], stride [3, 3], padding "
            "[0, 0] and dilation [1, 1]: the output would be 0x0");
  EXPECT_EQ(meta_error(mp, {"f32[9, 9]"}, {ints({3, 3})}),
            "max_pool2d expects a 3-d (C, H, W) or 4-d (N, C, H, W) input, got shape [9, 9]");
  EXPECT_EQ(meta_error(mp, {"f32[2, 0, 9, 9]"}, {ints({3, 3})}),
            "max_pool2d expects non-empty C, H and W dims (only the batch dim may be 0), got shape [2, 0, 9, 9]");
  EXPECT_EQ(meta_error(mp, {"f32[1, 1, 4, 4]"}, {ints({2, 2, 2})}),
            "max_pool2d: kernel_size must be one int or two ints, got [2, 2, 2]");
  EXPECT_EQ(meta_error(mp, {"f32[1, 1, 4, 4]"}, {ints({2, 2}), ints({0, 1})}),
            "max_pool2d: stride must be positive, got [0, 1]");
  EXPECT_EQ(meta_error(mp, {"b8[1, 1, 4, 4]"}, {ints({2, 2})}), "max_pool2d needs a non-bool input on CPU, got b8");
  EXPECT_EQ(meta_error(mp, {"i64[1, 1, 4, 4]cuda:0"}, {ints({2, 2})}),
            "max_pool2d needs a floating point input on CUDA, got i64");
}

TEST(MetaPooling, AvgPool) {
  const std::string ap = "aten.avg_pool2d.default";
  EXPECT_EQ(meta(ap, {"bf16[2, 3, 9, 7][189, 1, 21, 3]cpu"},
                 {ints({3, 2}), ints({2}), ints({1, 0}), Arg(true), Arg(false), i(3)}),
            Types{"bf16[2, 3, 5, 4][60, 1, 12, 3]cpu"});
  EXPECT_EQ(meta(ap, {"i64[1, 1, 4, 4]"}, {ints({2})}), Types{"i64[1, 1, 2, 2][4, 4, 2, 1]cpu"});
  EXPECT_EQ(meta_error(ap, {"i64[1, 1, 4, 4]cuda"}, {ints({2})}),
            "avg_pool2d needs a floating point input (or i64 on CPU), got i64 on cuda");
  EXPECT_EQ(meta_error(ap, {"u8[1, 1, 4, 4]"}, {ints({2})}),
            "avg_pool2d needs a floating point input (or i64 on CPU), got u8 on cpu");
  EXPECT_EQ(meta_error(ap, {"f32[3, 9, 9]"}, {ints({3}), ints({2}), ints({1}), Arg(true), Arg(false), i(0)}),
            "avg_pool2d: divisor_override must not be zero");
}

TEST(MetaPooling, AdaptiveAvgPool) {
  EXPECT_EQ(meta("aten._adaptive_avg_pool2d.default", {"f32[2, 3, 9, 9][243, 1, 27, 3]cpu"}, {ints({4, 5})}),
            Types{"f32[2, 3, 4, 5][60, 1, 15, 3]cpu"});
  // A 1x1 channels-last input reads as channels-last too, as in PyTorch.
  EXPECT_EQ(meta("aten.adaptive_avg_pool2d.default", {"f32[2, 3, 1, 1][3, 1, 3, 3]cpu"}, {ints({4, 5})}),
            Types{"f32[2, 3, 4, 5][60, 1, 15, 3]cpu"});
  EXPECT_EQ(meta("aten._adaptive_avg_pool2d.default", {"f16[3, 9, 9]"}, {ints({0, 4})}),
            Types{"f16[3, 0, 4][4, 4, 1]cpu"});
  EXPECT_EQ(meta_error("aten._adaptive_avg_pool2d.default", {"f32[3, 0, 9]"}, {ints({2, 4})}),
            "adaptive_avg_pool2d expects non-empty H and W dims, got shape [3, 0, 9]");
  EXPECT_EQ(meta_error("aten._adaptive_avg_pool2d.default", {"f32[3, 9, 9]"}, {ints({-1, 4})}),
            "adaptive_avg_pool2d: output_size must be non-negative, got [-1, 4]");
  EXPECT_EQ(meta_error("aten._adaptive_avg_pool2d.default", {"i64[1, 1, 4, 4]"}, {ints({2, 2})}),
            "adaptive_avg_pool2d needs a floating point input, got i64");
}

// ---- issue 20, first batch: math ops, vector norms, cumprod, repeat, diagonal, matmul, linear

Kwargs dtype(DType t) { return {{"dtype", Arg(t)}}; }

TEST(MetaCoreOps, MathOpsPromoteAsEager) {
  EXPECT_EQ(meta("aten.acos.default", {"i64[3]"}), Types{"f32[3][1]cpu"});
  EXPECT_EQ(meta("aten.atanh.default", {"b8[3]"}), Types{"f32[3][1]cpu"});
  EXPECT_EQ(meta("aten.log10.default", {"bf16[3, 4][1, 3]cpu"}), Types{"bf16[3, 4][1, 3]cpu"});
  EXPECT_EQ(meta("aten.copysign.Tensor", {"i32[3, 4]", "i64[3, 4]"}), Types{"f32[3, 4][4, 1]cpu"});
  EXPECT_EQ(meta("aten.copysign.Tensor", {"i32[3, 4]", "f16[4]"}), Types{"f16[3, 4][4, 1]cpu"});
  EXPECT_EQ(meta("aten.copysign.Scalar", {"b8[3, 4]"}, {i(-1)}), Types{"f32[3, 4][4, 1]cpu"});
  // fmax/fmin keep bools and integers, as maximum/minimum do.
  EXPECT_EQ(meta("aten.fmax.default", {"b8[3, 4]", "b8[3, 4]"}), Types{"b8[3, 4][4, 1]cpu"});
  EXPECT_EQ(meta("aten.fmin.default", {"i32[3, 4][1, 3]cpu", "f16[4]"}), Types{"f16[3, 4][1, 3]cpu"});
  EXPECT_EQ(meta("aten.hypot.default", {"f16[3, 1]", "f32[1, 4]"}), Types{"f32[3, 4][4, 1]cpu"});
  EXPECT_EQ(meta("aten.hypot.default", {"i64[3]", "f32[3]"}), Types{"f32[3][1]cpu"});
  EXPECT_EQ(meta_error("aten.hypot.default", {"i64[3]", "i64[3]"}), "hypot needs floating point inputs, got i64");
}

TEST(MetaCoreOps, VectorNormReducesToTheRequestedDtype) {
  EXPECT_EQ(meta("aten.linalg_vector_norm.default", {"f32[3, 4]"}), Types{"f32[][]cpu"});
  EXPECT_EQ(meta("aten.linalg_vector_norm.default", {"f32[3, 4, 5]"}, {f(INFINITY), ints({0, 2}), Arg(true)}),
            Types{"f32[1, 4, 1][4, 1, 1]cpu"});
  EXPECT_EQ(meta("aten.linalg_vector_norm.default", {"f32[0, 4]"}, {i(2), ints({1})}), Types{"f32[0][1]cpu"});
  EXPECT_EQ(meta("aten.linalg_vector_norm.default", {"f32[3, 0]"}, {i(-2), ints({0})}), Types{"f32[0][1]cpu"});
  EXPECT_EQ(meta("aten.linalg_vector_norm.default", {"f16[3, 4]"}, {i(2), ints({1})}, dtype(DType::F32)),
            Types{"f32[3][1]cpu"});
  EXPECT_EQ(meta_error("aten.linalg_vector_norm.default", {"f16[3]"}, {i(2)}, dtype(DType::BF16)),
            "linalg.vector_norm: the dtype of the input (f16) should be convertible without narrowing to the "
            "specified dtype (bf16)");
  EXPECT_EQ(meta_error("aten.linalg_vector_norm.default", {"i64[3]"}),
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got i64");
  EXPECT_EQ(meta_error("aten.linalg_vector_norm.default", {"f32[3, 0]"}, {f(INFINITY), ints({1})}),
            "linalg.vector_norm cannot compute the inf norm on the dimension 1 because this dimension is empty and "
            "the operation does not have an identity");
  EXPECT_EQ(meta_error("aten.linalg_vector_norm.default", {"f32[0]"}, {i(-1)}),
            "linalg.vector_norm cannot compute the -1 norm on an empty tensor because the operation does not have "
            "an identity");
}

TEST(MetaCoreOps, CumprodAccumulatesIntegersInI64) {
  EXPECT_EQ(meta("aten.cumprod.default", {"i32[3, 4]"}, {i(1)}), Types{"i64[3, 4][4, 1]cpu"});
  EXPECT_EQ(meta("aten.cumprod.default", {"b8[3, 4]"}, {i(0)}), Types{"i64[3, 4][4, 1]cpu"});
  EXPECT_EQ(meta("aten.cumprod.default", {"f16[3, 4][1, 3]cpu"}, {i(0)}, dtype(DType::F32)),
            Types{"f32[3, 4][4, 1]cpu"});
}

TEST(MetaCoreOps, RepeatAndDiagonal) {
  EXPECT_EQ(meta("aten.repeat.default", {"f32[3, 4, 5]"}, {ints({2, 1, 1, 3})}),
            Types{"f32[2, 3, 4, 15][180, 60, 15, 1]cpu"});
  EXPECT_EQ(meta("aten.repeat.default", {"f32[]"}, {ints({3})}), Types{"f32[3][1]cpu"});
  EXPECT_EQ(meta("aten.repeat.default", {"f32[3, 4, 5]"}, {ints({0, 1, 1})}), Types{"f32[0, 4, 5][20, 5, 1]cpu"});
  EXPECT_EQ(meta_error("aten.repeat.default", {"f32[3, 4, 5]"}, {ints({2})}),
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  // diagonal is a view: the remaining dims, then the diagonal with the two strides summed.
  EXPECT_EQ(meta("aten.diagonal.default", {"f32[3, 4, 5]"}), Types{"f32[5, 3][1, 25]cpu"});
  EXPECT_EQ(meta("aten.diagonal.default", {"f32[3, 4, 5]"}, {i(1), i(0), i(2)}), Types{"f32[4, 3][5, 21]cpu"});
  EXPECT_EQ(meta("aten.diagonal.default", {"f32[3, 4, 5][5, 15, 1]cpu"}, {i(-1), i(1), i(0)}),
            Types{"f32[5, 3][1, 20]cpu"});
  EXPECT_EQ(meta("aten.diagonal.default", {"f32[3, 4, 5]"}, {i(10)}), Types{"f32[5, 0][1, 25]cpu"});
  EXPECT_EQ(meta_error("aten.diagonal.default", {"f32[3, 4]"}, {i(0), i(1), i(1)}),
            "diagonal dimensions cannot be identical 1, 1");
  // unfold is a view: the windows' count and step in place of the dim, the window last.
  EXPECT_EQ(meta("aten.unfold.default", {"f32[3, 4, 5]"}, {i(2), i(2), i(2)}), Types{"f32[3, 4, 2, 2][20, 5, 2, 1]cpu"});
  EXPECT_EQ(meta("aten.unfold.default", {"f32[]"}, {i(0), i(1), i(1)}), Types{"f32[1][1]cpu"});
  EXPECT_EQ(meta_error("aten.unfold.default", {"f32[3, 4, 5]"}, {i(1), i(5), i(1)}),
            "maximum size for tensor at dimension 1 is 4 but size is 5");
  EXPECT_EQ(meta_error("aten.unfold.default", {"f32[3, 4, 5]"}, {i(1), i(2), i(0)}), "step is 0 but must be > 0");
  EXPECT_EQ(meta_error("aten.unfold.default", {"f32[3, 4, 5]"}, {i(1), i(-1), i(1)}), "size is -1 but must be >= 0");
}

TEST(MetaCoreOps, MatmulAndLinearByRank) {
  EXPECT_EQ(meta("aten.matmul.default", {"f32[4]", "f32[4]"}), Types{"f32[][]cpu"});
  EXPECT_EQ(meta("aten.matmul.default", {"f32[4]", "f32[4, 3]"}), Types{"f32[3][1]cpu"});
  EXPECT_EQ(meta("aten.matmul.default", {"f32[5, 4]", "f32[4]"}), Types{"f32[5][1]cpu"});
  EXPECT_EQ(meta("aten.matmul.default", {"f32[5, 2, 4][4, 20, 1]cpu", "f32[4, 3]"}), Types{"f32[5, 2, 3][6, 3, 1]cpu"});
  EXPECT_EQ(meta("aten.matmul.default", {"f32[4]", "f32[3, 4, 2]"}), Types{"f32[3, 2][2, 1]cpu"});
  EXPECT_EQ(meta("aten.matmul.default", {"f32[2, 1, 5, 4]", "f32[3, 4, 6]"}),
            Types{"f32[2, 3, 5, 6][90, 30, 6, 1]cpu"});
  EXPECT_EQ(meta_error("aten.matmul.default", {"f32[]", "f32[5]"}),
            "both arguments to matmul need to be at least 1D, but they are 0D and 1D");
  EXPECT_EQ(meta_error("aten.matmul.default", {"f32[5, 4]", "f64[4]"}),
            "matmul expects operands of one dtype, got self f32[5, 4], other f64[4]");
  EXPECT_EQ(meta_error("aten.matmul.default", {"f32[2, 5, 4]", "f32[3, 4]"}),
            "matmul: self of shape [2, 5, 4] and other of shape [3, 4] cannot be multiplied (4 != 3)");
  EXPECT_EQ(meta("aten.linear.default", {"f32[2, 5, 4]", "f32[6, 4]", "f32[6]"}), Types{"f32[2, 5, 6][30, 6, 1]cpu"});
  EXPECT_EQ(meta("aten.linear.default", {"f32[4]", "f32[6, 4]"}), Types{"f32[6][1]cpu"});
  EXPECT_EQ(meta("aten.linear.default", {"f32[5, 4]", "f32[4]"}), Types{"f32[5][1]cpu"});
  EXPECT_EQ(meta("aten.linear.default", {"f32[2, 5, 4]", "f32[6, 4]", "f32[5, 6]"}),
            Types{"f32[2, 5, 6][30, 6, 1]cpu"});
  EXPECT_EQ(meta_error("aten.linear.default", {"f32[2, 5, 4]", "f32[6, 4]", "f32[4, 6]"}),
            "linear: self of shape [4, 6] cannot be broadcast to the result's shape [2, 5, 6]");
  EXPECT_EQ(meta_error("aten.linear.default", {"f32[5, 4]", "f32[4]", "f32[]"}),
            "linear expects weight to be 2-d, got shape [4]");
}

}  // namespace
}  // namespace coil
