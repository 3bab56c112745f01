// Stride rules: broadcasting, TensorIterator's output order, memory formats, views.
#include <gtest/gtest.h>

#include "graph/strides.h"

namespace coil {
namespace {

TensorType t(Shape sizes, Shape strides) { return TensorType{DType::F32, sizes, strides, {}}; }

TEST(Broadcast, AlignsFromTheRight) {
  EXPECT_EQ(broadcast_shapes({64, 256}, {256}), (Shape{64, 256}));
  EXPECT_EQ(broadcast_shapes({4, 1, 3}, {5, 1}), (Shape{4, 5, 3}));
  EXPECT_EQ(broadcast_shapes({}, {2, 3}), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shapes({0, 1}, {1, 5}), (Shape{0, 5}));
  try {
    broadcast_shapes({64, 256}, {255});
    FAIL();
  } catch (const UserError &e) {
    EXPECT_EQ(e.message(), "shapes [64, 256] and [255] cannot be broadcast: dim 1 is 256 vs 255");
  }
}

TEST(ElementwiseStrides, ContiguousInputsGiveContiguousOutput) {
  TensorType a = t({64, 256}, {256, 1}), b = t({256}, {1});
  const TensorType *ops[] = {&a, &b};
  EXPECT_EQ(elementwise_output_strides({64, 256}, ops), (Shape{256, 1}));
}

TEST(ElementwiseStrides, FirstOperandDecidesTheOrder) {
  // x.t() + y.t(): both transposed, the output is transposed too.
  TensorType a = t({64, 256}, {1, 64}), b = t({64, 256}, {1, 64});
  const TensorType *both[] = {&a, &b};
  EXPECT_EQ(elementwise_output_strides({64, 256}, both), (Shape{1, 64}));
  // x + y.t(): the contiguous first operand wins.
  TensorType c = t({64, 256}, {256, 1});
  const TensorType *mixed[] = {&c, &a};
  EXPECT_EQ(elementwise_output_strides({64, 256}, mixed), (Shape{256, 1}));
  // y.t() + x: the transposed first operand wins.
  const TensorType *mixed2[] = {&a, &c};
  EXPECT_EQ(elementwise_output_strides({64, 256}, mixed2), (Shape{1, 64}));
}

TEST(ElementwiseStrides, ChannelsLastIsKept) {
  Shape sizes = {2, 16, 8, 8};
  TensorType a = t(sizes, channels_last_strides(sizes));
  const TensorType *ops[] = {&a};
  EXPECT_EQ(elementwise_output_strides(sizes, ops), (Shape{1024, 1, 128, 16}));
}

TEST(MemoryFormat, ChannelsLastDetection) {
  Shape sizes = {2, 16, 8, 8};
  EXPECT_TRUE(is_channels_last(sizes, channels_last_strides(sizes)));
  EXPECT_FALSE(is_channels_last(sizes, contiguous_strides(sizes)));
  EXPECT_EQ(suggest_memory_format(sizes, channels_last_strides(sizes)), MemoryFormat::ChannelsLast);
  // N111 is ambiguous and reads as contiguous.
  EXPECT_EQ(suggest_memory_format({4, 1, 1, 1}, {1, 1, 1, 1}), MemoryFormat::Contiguous);
}

TEST(Dense, NonOverlappingAndDense) {
  EXPECT_TRUE(is_non_overlapping_and_dense({64, 256}, {1, 64}));
  EXPECT_FALSE(is_non_overlapping_and_dense({64, 128}, {256, 1}));  // a slice
  EXPECT_FALSE(is_non_overlapping_and_dense({64, 256}, {0, 1}));    // an expand
  EXPECT_TRUE(is_non_overlapping_and_dense({1, 256}, {7, 1}));      // size-1 dims are free
}

// An empty tensor is contiguous whatever its strides (PyTorch's is_contiguous), and the
// like-ops then give it contiguous strides, as torch.export's fake tensors do.
TEST(Dense, EmptyTensorsAreContiguous) {
  EXPECT_TRUE(is_contiguous({2, 0, 4}, {1, 1, 2}));
  EXPECT_FALSE(is_contiguous({2, 3, 4}, {1, 2, 6}));
  EXPECT_EQ(dense_order_strides(t({2, 0, 4}, {1, 1, 2})), (Shape{4, 4, 1}));
}

TEST(EmptyLike, PreserveKeepsDenseLayouts) {
  EXPECT_EQ(empty_like_strides(t({64, 256}, {1, 64}), MemoryFormat::Preserve), (Shape{1, 64}));
  EXPECT_EQ(empty_like_strides(t({64, 128}, {256, 1}), MemoryFormat::Preserve), (Shape{128, 1}));
  EXPECT_EQ(empty_like_strides(t({64, 256}, {1, 64}), MemoryFormat::Contiguous), (Shape{256, 1}));
}

TEST(ViewStrides, SplitsAndMergesContiguousChunks) {
  EXPECT_EQ(view_strides({64, 256}, {256, 1}, {64, 16, 16}), (Shape{256, 16, 1}));
  EXPECT_EQ(view_strides({64, 16, 16}, {256, 16, 1}, {64, 256}), (Shape{256, 1}));
  // A transposed tensor cannot be flattened, but its contiguous dims can be split.
  EXPECT_FALSE(view_strides({64, 256}, {1, 64}, {16384}).has_value());
  EXPECT_EQ(view_strides({64, 256}, {1, 64}, {64, 16, 16}), (Shape{1, 1024, 64}));
  EXPECT_EQ(view_strides({}, {}, {1, 1}), (Shape{1, 1}));
}

TEST(ViewSize, InfersMinusOne) {
  EXPECT_EQ(infer_view_size({-1, 16}, 256), (Shape{16, 16}));
  EXPECT_THROW(infer_view_size({-1, 7}, 256), UserError);
  EXPECT_THROW(infer_view_size({-1, -1}, 256), UserError);
  EXPECT_THROW(infer_view_size({3, 5}, 16), UserError);
}

TEST(ChannelsInnermost, MovesTheChannelsAfterTheSpatialDims) {
  Shape sizes = {2, 3, 5, 7}, strides = {105, 1, 21, 3};
  channels_innermost(sizes, strides);
  EXPECT_EQ(sizes, (Shape{2, 5, 7, 3}));
  EXPECT_EQ(strides, (Shape{105, 21, 3, 1}));
  Shape sizes1 = {4, 6, 9}, strides1 = {54, 9, 1};
  channels_innermost(sizes1, strides1);
  EXPECT_EQ(sizes1, (Shape{4, 9, 6}));
  EXPECT_EQ(strides1, (Shape{54, 1, 9}));
}

// The reach of a strided view from its element 0, negative strides below it; and whether a
// caller's allocation holds another allocation around the same element 0.
TEST(ElementSpan, ReachesBothWaysAndHoldsAllocations) {
  EXPECT_EQ(element_span({4, 6}, {}), std::make_pair(int64_t(0), int64_t(23)));
  EXPECT_EQ(element_span({4, 6}, std::vector<int64_t>{1, 4}), std::make_pair(int64_t(0), int64_t(23)));
  EXPECT_EQ(element_span({3, 2}, std::vector<int64_t>{-2, 1}), std::make_pair(int64_t(-4), int64_t(1)));
  EXPECT_EQ(element_span({3, 0}, {}), std::make_pair(int64_t(0), int64_t(0)));
  // A slice at element 2 of a 24-element buffer, given 2 elements into a 24-element allocation.
  EXPECT_TRUE(allocation_holds(2, 24, 2, 24));
  EXPECT_TRUE(allocation_holds(5, 30, 2, 24));
  EXPECT_FALSE(allocation_holds(1, 24, 2, 24));   // the buffer would start before the allocation
  EXPECT_FALSE(allocation_holds(2, 23, 2, 24));   // and end past it
  EXPECT_FALSE(allocation_holds(-1, -1, 0, 24));  // unknown
}

}  // namespace
}  // namespace coil
