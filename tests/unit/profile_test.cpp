// The option cpp.profile: a graph compiled with it times each kernel call and reports the
// calls and time per kernel through coil_profile (coil/artifact.h); one compiled without
// it exports no such function.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "driver/compile.h"
#include "frontend/parser.h"
#include "io/safetensors.h"
#include "runtime/cpu_module.h"
#include "runtime/loader.h"
#include "support/options.h"

namespace coil {
namespace {

// resnet_basic_block: two convolutions (extern calls) and two pointwise kernels.
constexpr const char *kExample = "examples/resnet_basic_block/";

class Profile : public testing::Test {
 protected:
  void SetUp() override { options::clear_overrides(); }
  void TearDown() override { options::clear_overrides(); }

  // Compiles the example with cpp.profile set to `on`.
  CpuBuild build(bool on) {
    options::set_override("cpp.profile", on ? "true" : "false");
    c_ = compile_graph(frontend::parse_graph_file(std::string(kExample) + "graph.py"), sched::ScheduleOptions{});
    return build_cpu(c_.schedule);
  }

  TensorList inputs() const { return read_safetensors(std::string(kExample) + "inputs.safetensors"); }

  Compilation c_;
};

TEST_F(Profile, OneRowPerKernelCountingEveryCall) {
  CpuModule module(build(true).so_path);
  EXPECT_EQ(module.profile().size(), c_.schedule.ir.kernels.size());
  for (const KernelProfile &row : module.profile()) EXPECT_EQ(row.calls, 0) << row.name;

  TensorList in = inputs();
  for (int i = 0; i < 3; ++i) module.run(in);
  std::vector<KernelProfile> rows = module.profile();
  ASSERT_EQ(rows.size(), c_.schedule.ir.kernels.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const ir::Kernel &k = c_.schedule.ir.kernels[i];
    EXPECT_EQ(rows[i].name, k.name) << "rows are in call order";
    EXPECT_EQ(rows[i].summary.rfind(std::string(ir::kernel_kind_name(k.kind)) + " over [", 0), 0u) << rows[i].summary;
    EXPECT_EQ(rows[i].calls, 3) << k.name;
    EXPECT_GT(rows[i].seconds, 0) << k.name;
  }
  EXPECT_TRUE(std::any_of(rows.begin(), rows.end(), [](const KernelProfile &r) {
    return r.summary.find("extern over [2, 16, 16, 16]: convolution") != std::string::npos;
  })) << "no row of the first convolution";

  module.median_seconds(in, 4);  // a warm-up call and 4 timed ones
  for (const KernelProfile &row : module.profile()) EXPECT_EQ(row.calls, 3 + 5) << row.name;

  module.reset_profile();
  for (const KernelProfile &row : module.profile()) EXPECT_EQ(row.calls, 0) << row.name;
  module.run(in);
  for (const KernelProfile &row : module.profile()) EXPECT_EQ(row.calls, 1) << row.name;
}

TEST_F(Profile, ConcurrentCallsAllCount) {
  CpuModule module(build(true).so_path);
  TensorList in = inputs();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) module.run(in);
    });
  for (auto &t : threads) t.join();
  for (const KernelProfile &row : module.profile()) EXPECT_EQ(row.calls, 4 * 5) << row.name;
}

TEST_F(Profile, WithoutTheOptionNoTimings) {
  CpuBuild plain = build(false);
  EXPECT_EQ(plain.source.find("KernelTimer"), std::string::npos);
  CpuModule module(plain.so_path);
  module.run(inputs());
  EXPECT_TRUE(module.profile().empty());
  EXPECT_EQ(SharedLibrary(plain.so_path).find_address("coil_profile"), nullptr);

  CpuBuild timed = build(true);
  EXPECT_NE(timed.source, plain.source) << "the option changes the source, so the cache key";
  EXPECT_NE(timed.so_path, plain.so_path);
  EXPECT_NE(SharedLibrary(timed.so_path).find_address("coil_profile"), nullptr);
}

}  // namespace
}  // namespace coil
