// The CUDA driver loaded at run time: on a machine without a driver or GPU (CI, this one)
// every entry point fails with a message that says so, and nothing crashes; with a GPU,
// memory round-trips. Grids are computed without one. Kernels launching on a GPU:
// tests/gpu/launch_test.cpp.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "runtime/cuda_driver.h"
#include "runtime/triton_launch.h"
#include "support/error.h"
#include "test_util.h"

namespace coil::cuda {
namespace {
using test::user_error_of;

TEST(CudaDriver, WithoutAGpuEveryEntryPointSaysWhy) {
  if (available()) GTEST_SKIP() << "this machine has a GPU; MemoryRoundTrips covers it";
  std::string reason = unavailable_reason();
  EXPECT_FALSE(reason.empty());
  // Either no driver at all (CI) or a driver that finds no GPU.
  bool no_driver = reason.find("libcuda.so.1 cannot be loaded") != std::string::npos &&
                   reason.find("this machine has no NVIDIA driver") != std::string::npos;
  bool no_gpu = reason.find("cuInit failed") != std::string::npos || reason.find("no GPU") != std::string::npos;
  EXPECT_TRUE(no_driver || no_gpu) << reason;
  EXPECT_EQ(user_error_of([] { driver(); }), reason);
  EXPECT_EQ(user_error_of([] { Device::get(); }), reason);
  EXPECT_EQ(user_error_of([] { DeviceBuffer buffer(1024); }), reason);
  EXPECT_EQ(user_error_of([] { Stream stream; }), reason);
  EXPECT_EQ(user_error_of([] { CudaModule module("\x7f" "ELF", "k"); }), reason);
  EXPECT_FALSE(available()) << "the answer does not change";
}

TEST(CudaDriver, MemoryRoundTrips) {
  if (!available()) GTEST_SKIP() << unavailable_reason();
  const Device &device = Device::get();
  EXPECT_GE(device.capability(), 50);
  EXPECT_GT(device.multiprocessors(), 0);
  EXPECT_GE(device.max_shared_per_block(), 48 * 1024);
  std::vector<int> host = {1, 2, 3, 4}, back(4, 0);
  DeviceBuffer buffer(sizeof(int) * host.size());
  buffer.upload(host.data(), sizeof(int) * host.size());
  buffer.download(back.data(), sizeof(int) * back.size());
  EXPECT_EQ(back, host);
  buffer.fill(0);
  buffer.download(back.data(), sizeof(int) * back.size());
  EXPECT_EQ(back, std::vector<int>(4, 0));
  DeviceArena arena(1024);
  EXPECT_EQ(arena.at(64, 128), arena.at(0, 0) + 64);
  std::string message = user_error_of([] { CudaModule module("not a cubin", "junk"); });
  EXPECT_NE(message.find("cuModuleLoadData failed with CUDA_ERROR_"), std::string::npos) << message;
  EXPECT_NE(message.find("while loading kernel junk"), std::string::npos) << message;
}

TEST(LaunchGrid, CoversEveryElementWithWholeBlocks) {
  LaunchGrid g = block_grid(1000, 256);
  EXPECT_EQ(g.x, 4u);
  EXPECT_EQ(g.y, 1u);
  EXPECT_EQ(g.z, 1u);
  g = block_grid(1024, 256, 10, 4, 3, 1);
  EXPECT_EQ(g.x, 4u);
  EXPECT_EQ(g.y, 3u);
  EXPECT_EQ(g.z, 3u);
  EXPECT_EQ(g.programs(), 36);
  EXPECT_EQ(block_grid(0, 128).programs(), 0);  // an empty tensor launches nothing
  EXPECT_EQ(block_grid(int64_t(1) << 40, 1024).x, 1u << 30);
}

TEST(LaunchGrid, TooManyProgramsIsAUserError) {
  EXPECT_EQ(user_error_of([] { block_grid(1, 1, 70000, 1); }),
            "a launch needs 70000 programs along y (70000 elements in blocks of 1); CUDA allows 65535");
  EXPECT_NE(user_error_of([] { block_grid(int64_t(1) << 40, 1); }).find("along x"), std::string::npos);
}

}  // namespace
}  // namespace coil::cuda
