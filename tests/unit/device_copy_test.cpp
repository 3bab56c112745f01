// Copies between layouts as the GPU program plans them (runtime/device_copy.h), run on host
// memory row by row as the driver's 2D copies would: every plan must move each element of
// the source layout to its place in the destination layout and touch nothing else, in as
// few driver calls as the layouts allow. The same plans queued on a GPU:
// tests/gpu/device_io_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "io/host_tensor.h"
#include "runtime/device_copy.h"

namespace coil::cuda {
namespace {

constexpr int32_t kUntouched = -7;

int64_t extent(const std::vector<int64_t> &sizes, const std::vector<int64_t> &strides) {
  int64_t last = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return 0;
    last += (sizes[d] - 1) * strides[d];
  }
  return last + 1;
}

// Plans the copy of int32 elements, runs it on the host, and checks every element of the
// destination against a plain loop over the indices; returns the plan.
StridedCopy check_copy(const std::vector<int64_t> &sizes, const std::vector<int64_t> &src_strides,
                       const std::vector<int64_t> &dst_strides) {
  std::string why;
  std::optional<StridedCopy> plan = plan_strided_copy(sizes, src_strides, dst_strides, 4, &why);
  EXPECT_TRUE(plan) << why;
  if (!plan) return {};
  std::vector<int32_t> src(size_t(extent(sizes, src_strides)));
  for (size_t i = 0; i < src.size(); ++i) src[i] = int32_t(i * 3 + 1);
  std::vector<int32_t> got(size_t(extent(sizes, dst_strides)), kUntouched), want = got;
  std::vector<int64_t> src_at;
  for_each_offset(sizes, src_strides, 0, [&](int64_t, int64_t at) { src_at.push_back(at); });
  for_each_offset(sizes, dst_strides, 0, [&](int64_t flat, int64_t at) { want[size_t(at)] = src[size_t(src_at[size_t(flat)])]; });
  copy_on_host(*plan, reinterpret_cast<std::byte *>(got.data()), reinterpret_cast<const std::byte *>(src.data()));
  EXPECT_EQ(got, want) << plan->str();
  return *plan;
}

std::string refusal(const std::vector<int64_t> &sizes, const std::vector<int64_t> &src_strides,
                    const std::vector<int64_t> &dst_strides) {
  std::string why;
  EXPECT_FALSE(plan_strided_copy(sizes, src_strides, dst_strides, 4, &why));
  return why;
}

TEST(DeviceCopy, EqualDenseLayoutsAreOneCopy) {
  StridedCopy c = check_copy({4, 5, 6}, {30, 6, 1}, {30, 6, 1});
  EXPECT_EQ(c.pieces(), 1);
  EXPECT_EQ(c.rows, 1);  // one cuMemcpyDtoDAsync
  EXPECT_EQ(c.row_bytes, 4 * 5 * 6 * 4);
  // A permuted but dense layout, the same on both sides: still one piece.
  c = check_copy({4, 5, 6}, {1, 24, 4}, {1, 24, 4});
  EXPECT_EQ(c.pieces(), 1);
  EXPECT_EQ(c.rows, 1);
  // Size-1 dims with any stride do not matter.
  EXPECT_EQ(check_copy({3, 1, 8}, {8, 99, 1}, {8, 1, 1}).str(), "1 copy of 1 row of 96 bytes");
}

TEST(DeviceCopy, RowsWithGapsAreOne2DCopy) {
  // A [4, 5] slice of rows of 8 into a dense [4, 5], and back into rows of 16.
  StridedCopy c = check_copy({4, 5}, {8, 1}, {5, 1});
  EXPECT_EQ(c.str(), "1 copy of 4 rows of 20 bytes");
  EXPECT_EQ(c.src_pitch, 32);
  EXPECT_EQ(c.dst_pitch, 20);
  EXPECT_EQ(check_copy({4, 5}, {5, 1}, {16, 1}).str(), "1 copy of 4 rows of 20 bytes");
  // Three dims with gaps in two of them: 2D copies over the outer dim.
  EXPECT_EQ(check_copy({3, 4, 5}, {64, 8, 1}, {20, 5, 1}).str(), "3 copies of 4 rows of 20 bytes");
}

TEST(DeviceCopy, TransposedLayoutsGoElementByElementAlongOneDim) {
  // [6, 7] from column-major into row-major: no contiguous run in common.
  StridedCopy c = check_copy({6, 7}, {1, 6}, {7, 1});
  EXPECT_EQ(c.row_bytes, 4);
  EXPECT_EQ(c.pieces() * c.rows, 42);
  EXPECT_LE(c.pieces(), 7);
  // A channels-last batch into NCHW: the channel dim is contiguous in neither.
  check_copy({2, 3, 4, 5}, {60, 1, 15, 3}, {60, 20, 5, 1});
  check_copy({2, 3, 4, 5}, {60, 20, 5, 1}, {60, 1, 15, 3});
}

TEST(DeviceCopy, BroadcastSourcesAreRead) {
  // An expanded source (stride 0) written densely: each row repeats the same source.
  EXPECT_EQ(check_copy({8, 16}, {0, 1}, {16, 1}).str(), "8 copies of 1 row of 64 bytes");
  check_copy({8, 16}, {1, 0}, {16, 1});
  // Broadcast on both sides: nothing to move along that dim.
  EXPECT_EQ(check_copy({8, 16}, {0, 1}, {0, 1}).pieces(), 1);
}

TEST(DeviceCopy, EmptyAndScalarTensors) {
  StridedCopy c = check_copy({0, 5}, {5, 1}, {1, 0});
  EXPECT_EQ(c.pieces(), 0);
  EXPECT_EQ(check_copy({}, {}, {}).str(), "1 copy of 1 row of 4 bytes");
}

TEST(DeviceCopy, LayoutsRowsCannotExpressAreRefusedWithTheReason) {
  EXPECT_EQ(refusal({8, 16}, {16, 1}, {0, 1}), "the destination's strides [0, 1] write 8 different elements to one place");
  EXPECT_EQ(refusal({8, 16}, {-16, 1}, {16, 1}), "negative strides ([-16, 1] to [16, 1])");
  // 100,000 single elements, one per call.
  EXPECT_EQ(refusal({100000}, {0}, {1}),
            "copying strides [0] to [1] takes 100000 copies of 1 row of 4 bytes, more than the 4096 allowed");
}

}  // namespace
}  // namespace coil::cuda
