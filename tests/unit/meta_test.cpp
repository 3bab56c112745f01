// Meta functions: output dtype, sizes and strides of ops, as PyTorch computes them.
#include <gtest/gtest.h>

#include "meta_util.h"

namespace coil {
namespace {

using test::ints;
using test::meta;
using test::Types;

TEST(Meta, ReductionsKeepdimAndDtype) {
  EXPECT_EQ(meta("aten.sum.dim_IntList", {"f32[4, 5, 6][30, 6, 1]cpu"}, {ints({1}), Arg(true)}),
            Types{"f32[4, 1, 6][6, 6, 1]cpu"});
  EXPECT_EQ(meta("aten.sum.dim_IntList", {"i32[4, 5][5, 1]cpu"}, {ints({})}), Types{"i64[][]cpu"});
  EXPECT_EQ(meta("aten.sum.dim_IntList", {"b8[4, 5][5, 1]cpu"}, {ints({0})}), Types{"i64[5][1]cpu"});
  EXPECT_EQ(meta("aten.amax.default", {"i32[4, 5][5, 1]cpu"}, {ints({-1})}), Types{"i32[4][1]cpu"});
  EXPECT_EQ(meta("aten.var_mean.correction", {"f32[4, 5][5, 1]cpu"}, {ints({-1})}),
            (Types{"f32[4][1]cpu", "f32[4][1]cpu"}));
  try {
    meta("aten.mean.dim", {"i64[4][1]cpu"}, {ints({0})});
    FAIL();
  } catch (const UserError &e) {
    EXPECT_EQ(e.message(), "node 'out' (aten.mean.dim): mean(): could not infer output dtype. Input dtype must "
                           "be floating point, got i64");
  }
}

TEST(Meta, NormsFollowTheDevice) {
  EXPECT_EQ(meta("aten.native_layer_norm.default", {"bf16[8, 16][16, 1]cpu"}, {ints({16}), Arg(NoneArg{}),
                                                                              Arg(NoneArg{}), Arg(1e-5)}),
            (Types{"bf16[8, 16][16, 1]cpu", "bf16[8, 1][1, 1]cpu", "bf16[8, 1][1, 1]cpu"}));
  EXPECT_EQ(meta("aten.native_layer_norm.default", {"bf16[8, 16][16, 1]cuda:0"}, {ints({16}), Arg(NoneArg{}),
                                                                                 Arg(NoneArg{}), Arg(1e-5)}),
            (Types{"bf16[8, 16][16, 1]cuda:0", "f32[8, 1][1, 1]cuda:0", "f32[8, 1][1, 1]cuda:0"}));
  EXPECT_EQ(meta("aten._softmax.default", {"f16[8, 16][1, 8]cuda"}, {Arg(int64_t(-1)), Arg(true)}),
            Types{"f32[8, 16][16, 1]cuda"});
}

TEST(Meta, ConvolutionShapesAndChannelsLast) {
  std::vector<Arg> args = {Arg(NoneArg{}), ints({2, 2}), ints({1, 1}), ints({1, 1}), Arg(false), ints({0, 0}),
                           Arg(int64_t(1))};
  EXPECT_EQ(meta("aten.convolution.default", {"f32[2, 3, 9, 9]", "f32[8, 3, 3, 3]"}, args),
            Types{"f32[2, 8, 5, 5][200, 25, 5, 1]cpu"});
  EXPECT_EQ(meta("aten.convolution.default", {"f32[2, 3, 9, 9][243, 1, 27, 3]cpu", "f32[8, 3, 3, 3]"}, args),
            Types{"f32[2, 8, 5, 5][200, 1, 40, 8]cpu"});
}

TEST(Meta, BatchNormKeepsChannelsLast) {
  Types out = meta("aten._native_batch_norm_legit_no_training.default",
                   {"f32[2, 4, 3, 3][36, 1, 12, 4]cpu", "f32[4]", "f32[4]", "f32[4]", "f32[4]"},
                   {Arg(0.1), Arg(1e-5)});
  EXPECT_EQ(out, (Types{"f32[2, 4, 3, 3][36, 1, 12, 4]cpu", "f32[0][1]cpu", "f32[0][1]cpu"}));
}

TEST(Meta, Views) {
  EXPECT_EQ(meta("aten.permute.default", {"f32[2, 3, 4]"}, {ints({2, 0, 1})}), Types{"f32[4, 2, 3][1, 12, 4]cpu"});
  EXPECT_EQ(meta("aten.expand.default", {"f32[3, 1]"}, {ints({2, 3, 5})}), Types{"f32[2, 3, 5][0, 1, 0]cpu"});
  EXPECT_EQ(meta("aten.unsqueeze.default", {"f32[3, 4]"}, {Arg(int64_t(1))}), Types{"f32[3, 1, 4][4, 4, 1]cpu"});
  EXPECT_EQ(meta("aten.unsqueeze.default", {"f32[3, 4]"}, {Arg(int64_t(-1))}), Types{"f32[3, 4, 1][4, 1, 1]cpu"});
  EXPECT_EQ(meta("aten.view.default", {"f32[6, 4]"}, {ints({2, -1, 4})}), Types{"f32[2, 3, 4][12, 4, 1]cpu"});
  EXPECT_EQ(meta("aten.squeeze.dim", {"f32[3, 1, 4]"}, {Arg(int64_t(1))}), Types{"f32[3, 4][4, 1]cpu"});
  EXPECT_EQ(meta("aten.transpose.int", {"f32[3, 4]"}, {Arg(int64_t(0)), Arg(int64_t(1))}),
            Types{"f32[4, 3][1, 4]cpu"});
  EXPECT_THROW(meta("aten.view.default", {"f32[6, 4][1, 6]cpu"}, {ints({24})}), UserError);
}

TEST(Meta, CopiesPreserveDenseLayouts) {
  EXPECT_EQ(meta("aten._to_copy.default", {"f32[6, 4][1, 6]cpu"}, {}, {{"dtype", Arg(DType::BF16)}}),
            Types{"bf16[6, 4][1, 6]cpu"});
  EXPECT_EQ(meta("aten.clone.default", {"f32[6, 4][1, 6]cpu"}, {},
                 {{"memory_format", Arg(MemoryFormat::Contiguous)}}),
            Types{"f32[6, 4][4, 1]cpu"});
  EXPECT_EQ(meta("aten._assert_tensor_metadata.default", {"f32[6, 4]"}), Types{});
  EXPECT_THROW(meta("aten._assert_tensor_metadata.default", {"f32[6, 4]"}, {Arg(NoneArg{}), Arg(NoneArg{}),
                                                                           Arg(DType::F16)}),
               UserError);
}

TEST(Meta, PointwiseRules) {
  EXPECT_EQ(meta("aten.div.Tensor", {"i64[4]", "i64[4]"}), Types{"f32[4][1]cpu"});
  EXPECT_EQ(meta("aten.add.Tensor", {"bf16[4, 8]", "f32[8]"}), Types{"f32[4, 8][8, 1]cpu"});
  EXPECT_EQ(meta("aten.eq.Scalar", {"f16[4]"}, {Arg(1.0)}), Types{"b8[4][1]cpu"});
  EXPECT_EQ(meta("aten.pow.Tensor_Scalar", {"i32[4]"}, {Arg(2.0)}), Types{"f32[4][1]cpu"});
  // Integers to a negative integer power: refused as eager refuses them; a float power is fine.
  EXPECT_THROW(meta("aten.pow.Tensor_Scalar", {"i64[4]"}, {Arg(int64_t(-2))}), UserError);
  EXPECT_EQ(meta("aten.pow.Tensor_Scalar", {"i64[4]"}, {Arg(-2.0)}), Types{"f32[4][1]cpu"});
  EXPECT_EQ(meta("aten.tanh.default", {"i8[4]"}), Types{"f32[4][1]cpu"});
  EXPECT_THROW(meta("aten.add.Tensor", {"i32[4]", "i32[4]"}, {}, {{"alpha", Arg(0.5)}}), UserError);
  EXPECT_THROW(meta("aten.sub.Tensor", {"b8[4]", "b8[4]"}), UserError);
  EXPECT_THROW(meta("aten.add.Tensor", {"f32[4]cpu", "f32[4]cuda"}), UserError);
  // A 0-dim CPU tensor mixes with a CUDA tensor.
  EXPECT_EQ(meta("aten.add.Tensor", {"f32[4]cuda", "f32[]cpu"}), Types{"f32[4][1]cuda"});
}

}  // namespace
}  // namespace coil
