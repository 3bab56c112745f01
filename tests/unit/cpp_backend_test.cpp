// The C++ CPU backend end to end: every fixture and example is compiled to a shared
// library (through the cache), run on its inputs and compared with PyTorch eager using
// the tolerances of the testing tiers; the examples also with the ISA forced to avx2 and
// to scalar code, each fixture with 4-lane vectors. And the artifact's contract from a plain C program.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "codegen/cpp/cpp_codegen.h"
#include "driver/compile.h"
#include "frontend/parser.h"
#include "io/compare.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"
#include "runtime/compiler.h"
#include "runtime/cpu_module.h"
#include "runtime/isa.h"
#include "runtime/loader.h"
#include "coil/artifact.h"
#include "support/options.h"
#include "test_util.h"

namespace coil {
namespace {

void expect_matches_eager(const std::filesystem::path &dir) {
  Compilation c = compile_graph(test::fixture_graph(dir), sched::ScheduleOptions{});
  TensorList inputs = read_safetensors((dir / "inputs.safetensors").string());
  TensorList expected = read_safetensors((dir / "expected.safetensors").string());
  CpuBuild build = build_cpu(c.schedule);
  std::vector<HostTensor> outputs = CpuModule(build.so_path).run(inputs);
  ASSERT_EQ(outputs.size(), c.graph.outputs().size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HostTensor *want = find_tensor(expected, output_tensor_name(i));
    ASSERT_NE(want, nullptr);
    Tolerance tol = default_tolerance(want->dtype, ir::max_reduction_size(c.lowered, c.lowered.outputs[i]));
    Comparison cmp = compare(outputs[i], *want, tol);
    EXPECT_TRUE(cmp.pass) << output_tensor_name(i) << ": " << cmp.mismatches << " mismatches, first "
                          << cmp.first_mismatch << ", max abs error " << cmp.max_abs_error << "\nsource: " << build.so_path;
  }
}

class CpuBackend : public testing::TestWithParam<std::filesystem::path> {};

TEST_P(CpuBackend, MatchesEager) { expect_matches_eager(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Fixtures, CpuBackend, testing::ValuesIn(test::fixture_dirs()),
                         [](const auto &info) { return info.param.filename().string(); });
INSTANTIATE_TEST_SUITE_P(Examples, CpuBackend, testing::ValuesIn(test::example_dirs()),
                         [](const auto &info) { return info.param.filename().string(); });

class CpuBackendIsa : public testing::TestWithParam<std::tuple<std::string, std::filesystem::path>> {};

TEST_P(CpuBackendIsa, MatchesEager) {
  const auto &[isa, dir] = GetParam();
  if (isa == "avx2" && host_isa() == Isa::Scalar) GTEST_SKIP() << "this CPU has no AVX2";
  options::set_override("cpp.isa", isa);
  expect_matches_eager(dir);
  options::clear_overrides();
}

INSTANTIATE_TEST_SUITE_P(Examples, CpuBackendIsa,
                         testing::Combine(testing::Values("avx2", "scalar"), testing::ValuesIn(test::example_dirs())),
                         [](const auto &info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param).filename().string();
                         });

// Every fixture again with vectors of 4 lanes: most fixtures are small, and with the ISA's
// 16 lanes their loops would be too short for the vector path (tails, gathers, masks,
// vector accumulators) to run at all. The fixtures take the host's ISA and AVX2 in turn,
// in name order, so that each ISA's vector code sees half of every family of ops; scalar
// code (no SIMD) is the examples' above, and every fixture's short loops at the host's width.
class CpuBackendLanes : public testing::TestWithParam<std::tuple<std::string, std::filesystem::path>> {};

TEST_P(CpuBackendLanes, MatchesEager) {
  const auto &[isa, dir] = GetParam();
  if (isa == "avx2" && host_isa() == Isa::Scalar) GTEST_SKIP() << "this CPU has no AVX2";
  options::set_override("cpp.vector_lanes", "4");
  if (isa != "host") options::set_override("cpp.isa", isa);
  expect_matches_eager(dir);
  options::clear_overrides();
}

std::vector<std::tuple<std::string, std::filesystem::path>> fixtures_taking_isas_in_turn() {
  std::vector<std::tuple<std::string, std::filesystem::path>> out;
  for (const std::filesystem::path &dir : test::fixture_dirs()) out.emplace_back(out.size() % 2 ? "avx2" : "host", dir);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CpuBackendLanes, testing::ValuesIn(fixtures_taking_isas_in_turn()),
                         [](const auto &info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param).filename().string();
                         });

// A plain C program dlopens a compiled graph, reads its descriptors and runs it.
TEST(CpuArtifact, PlainCProgramRunsAGraph) {
  Compilation c = compile_graph(frontend::parse_graph_file("examples/pointwise_chain/graph.py"), sched::ScheduleOptions{});
  CpuBuild build = build_cpu(c.schedule);
  auto dir = std::filesystem::temp_directory_path() / ("coil_c_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "main.c") << R"(#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "coil/artifact.h"
int main(int argc, char **argv) {
  void *lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
  int32_t (*num_inputs)(void) = (int32_t (*)(void))dlsym(lib, "coil_num_inputs");
  const coil_tensor_desc *(*input)(int32_t) = (const coil_tensor_desc *(*)(int32_t))dlsym(lib, "coil_input");
  const coil_tensor_desc *(*output)(int32_t) = (const coil_tensor_desc *(*)(int32_t))dlsym(lib, "coil_output");
  int32_t (*run)(void *const *, void **) = (int32_t (*)(void *const *, void **))dlsym(lib, "coil_run");
  if (num_inputs() != 1 || input(0)->dtype != COIL_F32) return 3;
  int64_t n = input(0)->storage_elements;
  float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * output(0)->storage_elements);
  for (int64_t i = 0; i < n; ++i) x[i] = (float)i - 100.0f;
  void *ins[1] = {x};
  void *outs[1] = {y};
  int32_t status = run(ins, outs);
  /* relu(x * 2 + 1) */
  for (int64_t i = 0; i < n; ++i) {
    float want = x[i] * 2 + 1 > 0 ? x[i] * 2 + 1 : 0;
    if (y[i] != want) { fprintf(stderr, "y[%lld] = %f, want %f\n", (long long)i, y[i], want); return 4; }
  }
  printf("ok %d\n", status);
  return status;
}
)";
  std::string include = runtime_include_dir().string();
  auto cc = run_process({"cc", "-std=c11", "-I", include, (dir / "main.c").string(), "-o", (dir / "main").string(), "-ldl"});
  ASSERT_EQ(cc.exit_code, 0) << cc.err;
  auto r = run_process({(dir / "main").string(), build.so_path});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "ok 0\n");
  std::filesystem::remove_all(dir);
}

// Graph outputs of 1 MiB or more are faulted in ahead of the writes (coil_rt::Prefault)
// when the caller hands them over unbacked. Each loop layout that does it (a flat vector
// loop, rows of a reduction, a nest of two loops, tiles with edges) writes the same bytes
// into freshly mapped pages, at an offset that is not a page's start, as into pages it
// has written before, and as the same graph built with cpp.prefault off.
TEST(CpuArtifact, PrefaultedOutputsHoldTheSameBytes) {
  const char *graphs[] = {
      R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[600001][1]cpu"):
        mul: "f32[600001][1]cpu" = torch.ops.aten.mul.Tensor(x, 2)
        relu: "f32[600001][1]cpu" = torch.ops.aten.relu.default(mul)
        return (relu,)
)",
      R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[300, 1100][1100, 1]cpu"):
        softmax: "f32[300, 1100][1100, 1]cpu" = torch.ops.aten._softmax.default(x, -1, False)
        return (softmax,)
)",
      R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[513, 1000][1000, 1]cpu", b: "f32[1000][1]cpu"):
        add: "f32[513, 1000][1000, 1]cpu" = torch.ops.aten.add.Tensor(x, b)
        tanh: "f32[513, 1000][1000, 1]cpu" = torch.ops.aten.tanh.default(add)
        return (tanh,)
)",
      R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[520, 701][701, 1]cpu", y: "f32[701, 520][520, 1]cpu"):
        t: "f32[520, 701][1, 520]cpu" = torch.ops.aten.t.default(y)
        add: "f32[520, 701][701, 1]cpu" = torch.ops.aten.add.Tensor(x, t)
        return (add,)
)",
  };
  for (const char *text : graphs) {
    Compilation c = compile_graph(frontend::parse_graph(text, "test.py"), sched::ScheduleOptions{});
    CpuBuild on = build_cpu(c.schedule);
    options::set_override("cpp.prefault", "0");
    CpuBuild off = build_cpu(c.schedule);
    options::clear_overrides();
    EXPECT_NE(on.source.find("coil_rt::Prefault"), std::string::npos) << text;
    EXPECT_EQ(off.source.find("coil_rt::Prefault"), std::string::npos) << text;

    // Inputs: a fixed pseudo-random pattern, sized by the library's descriptors; the
    // output: one f32 buffer.
    SharedLibrary lib(off.so_path);
    auto num_inputs = lib.symbol<int32_t (*)()>("coil_num_inputs");
    auto input = lib.symbol<const coil_tensor_desc *(*)(int32_t)>("coil_input");
    auto output = lib.symbol<const coil_tensor_desc *(*)(int32_t)>("coil_output");
    std::vector<std::vector<float>> inputs;
    std::vector<void *> in_ptrs;
    for (int32_t i = 0; i < num_inputs(); ++i) {
      std::vector<float> x(size_t(input(i)->storage_elements));
      for (size_t j = 0; j < x.size(); ++j) x[j] = float(int64_t((j * 2654435761u) % 2001) - 1000) / 250.0f;
      inputs.push_back(std::move(x));
    }
    for (auto &x : inputs) in_ptrs.push_back(x.data());
    size_t bytes = size_t(output(0)->storage_elements) * sizeof(float);
    auto run = [&](const std::string &so, void *out) {
      SharedLibrary l(so);
      auto coil_run = l.symbol<int32_t (*)(void *const *, void **)>("coil_run");
      void *outs[1] = {out};
      return coil_run(in_ptrs.data(), outs);
    };
    std::vector<char> want(bytes);
    ASSERT_EQ(run(off.so_path, want.data()), 0);
    size_t mapped = bytes + 4096;
    void *fresh = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(fresh, MAP_FAILED);
    char *out = static_cast<char *>(fresh) + 64;
    ASSERT_EQ(run(on.so_path, out), 0);
    EXPECT_EQ(std::memcmp(out, want.data(), bytes), 0) << "into fresh pages: " << on.so_path;
    std::memset(out, 0x7f, bytes);
    ASSERT_EQ(run(on.so_path, out), 0);
    EXPECT_EQ(std::memcmp(out, want.data(), bytes), 0) << "into backed pages: " << on.so_path;
    munmap(fresh, mapped);
  }
}

// Errors inside kernels come back as status codes, and as UserErrors from the runner.
TEST(CpuArtifact, IntegerDivisionByZeroIsAnError) {
  Graph g = frontend::parse_graph(R"(class GraphModule(torch.nn.Module):
    def forward(self, a: "i64[4][1]cpu", b: "i64[4][1]cpu"):
        div: "i64[4][1]cpu" = torch.ops.aten.div.Tensor_mode(a, b, rounding_mode = 'floor')
        return (div,)
)",
                                  "test.py");
  Compilation c = compile_graph(g, sched::ScheduleOptions{});
  CpuModule m(build_cpu(c.schedule).so_path);
  HostTensor a = HostTensor::zeros(DType::I64, {4}), b = HostTensor::zeros(DType::I64, {4});
  for (int i = 0; i < 4; ++i) {
    a.ptr<int64_t>()[i] = -7;
    b.ptr<int64_t>()[i] = i == 2 ? 0 : 2;
  }
  try {
    m.run({{"a", a}, {"b", b}});
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_EQ(e.message(), "the compiled graph failed: integer division by zero");
  }
  b.ptr<int64_t>()[2] = 2;
  EXPECT_EQ(m.run({{"a", a}, {"b", b}})[0].ptr<int64_t>()[0], -4);
}

// A cat along the rows of a vectorized layer norm (a class token before the patches, read
// as columns of their input): the row's mask is tested once per vector of 16 lanes and the
// row index math is scalar, with no vector of int64 lanes; the outputs match eager.
TEST(CpuCodegen, RowMaskIsTestedOncePerVector) {
  std::filesystem::path dir = test::source_dir() / "tests" / "fixtures" / "cat_rows_layernorm";
  Compilation c = compile_graph(test::fixture_graph(dir), sched::ScheduleOptions{});
  std::string source = codegen::generate_cpp(c.schedule, codegen::CppOptions{});
  EXPECT_NE(source.find(" ? coil_rt::strided<16>(in_ptr"), std::string::npos) << source;
  EXPECT_NE(source.find(" ? Vec<float, 16>::loadu(in_ptr"), std::string::npos) << source;
  EXPECT_EQ(source.find("Vec<int64_t, 16>"), std::string::npos) << source;
  EXPECT_EQ(source.find("generate("), std::string::npos) << source;
  expect_matches_eager(dir);
}

// A causal softmax: the mask column >= row + 1 compares lane offsets in 32 bits with the
// row's bound (no vector of int64 lanes), and rows that are mostly -inf match eager.
TEST(CpuCodegen, CausalMaskComparesLaneOffsets) {
  Graph g = frontend::parse_graph(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 64, 64][4096, 64, 1]cpu"):
        iota: "i64[64][1]cpu" = torch.ops.prims.iota.default(64, start = 0, step = 1, dtype = torch.int64, device = device(type='cpu'), requires_grad = False)
        unsqueeze: "i64[1, 64][64, 1]cpu" = torch.ops.aten.unsqueeze.default(iota, 0)
        unsqueeze_1: "i64[64, 1][1, 1]cpu" = torch.ops.aten.unsqueeze.default(iota, 1)
        sub: "i64[64, 64][64, 1]cpu" = torch.ops.aten.sub.Tensor(unsqueeze, unsqueeze_1)
        ge: "b8[64, 64][64, 1]cpu" = torch.ops.aten.ge.Scalar(sub, 1)
        scalar_tensor: "f32[][]cpu" = torch.ops.aten.scalar_tensor.default(-inf, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'))
        masked_fill: "f32[4, 64, 64][4096, 64, 1]cpu" = torch.ops.aten.where.self(ge, scalar_tensor, x)
        _softmax: "f32[4, 64, 64][4096, 64, 1]cpu" = torch.ops.aten._softmax.default(masked_fill, -1, False)
        return (_softmax,)
)",
                                  "test.py");
  Compilation c = compile_graph(g, sched::ScheduleOptions{});
  std::string source = codegen::generate_cpp(c.schedule, codegen::CppOptions{});
  EXPECT_NE(source.find("coil_rt::lane_steps<16>(1) >= Vec<int32_t, 16>(coil_rt::offset32("), std::string::npos) << source;
  EXPECT_EQ(source.find("Vec<int64_t, 16> >="), std::string::npos) << source;
  HostTensor x = HostTensor::zeros(DType::F32, {4, 64, 64});
  for (int64_t i = 0; i < x.numel(); ++i) x.ptr<float>()[i] = float((i * 37) % 101) / 17.0f - 3.0f;
  auto out = CpuModule(build_cpu(c.schedule).so_path).run({{"x", x}});
  for (int64_t m = 0; m < 4; ++m)
    for (int64_t r = 0; r < 64; ++r) {
      const float *row = x.ptr<float>() + (m * 64 + r) * 64;
      double top = -INFINITY, sum = 0;
      for (int64_t k = 0; k <= r; ++k) top = std::max(top, double(row[k]));
      for (int64_t k = 0; k <= r; ++k) sum += std::exp(double(row[k]) - top);
      for (int64_t k = 0; k < 64; ++k) {
        double want = k <= r ? std::exp(double(row[k]) - top) / sum : 0.0;
        ASSERT_NEAR(out[0].ptr<float>()[(m * 64 + r) * 64 + k], want, 1e-6) << m << " " << r << " " << k;
      }
    }
}

// The vector bf16 rounding (round_bf16, store_bf16) against the scalar one, bit for bit:
// vectors of normal numbers only, and vectors with denormals, infinities, NaNs and ties.
TEST(CpuCodegen, VectorBf16RoundingMatchesScalar) {
  const char *source = R"(#include "coil/prelude.h"
extern "C" int mismatches(const float *x, int n) {
  int bad = 0;
  for (int i = 0; i + 16 <= n; i += 16) {
    coil_rt::Vec<float, 16> v = coil_rt::Vec<float, 16>::loadu(x + i), r = coil_rt::round_bf16(v);
    uint16_t stored[16];
    coil_rt::store_bf16(stored, v);
    for (int l = 0; l < 16; ++l) {
      uint16_t want = coil_rt::f32_to_bf16(x[i + l]);
      float rounded = r[l];
      uint32_t bits;
      std::memcpy(&bits, &rounded, 4);
      bad += bits != uint32_t(want) << 16 || stored[l] != want;
    }
  }
  return bad;
}
)";
  std::vector<uint32_t> bits;
  uint64_t state = 7;
  auto next = [&] { return uint32_t((state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 32); };
  for (int i = 0; i < 16 * 4096; ++i) {  // normal numbers: exponent 1..254
    uint32_t b = next();
    uint32_t e = (b >> 23) & 0xffu;
    bits.push_back(e == 0 || e == 255 ? (b & 0x807fffffu) | 0x3f800000u : b);
  }
  const uint32_t special[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x00408000u, 0x7f800000u,
                              0xff800000u, 0x7fc00000u, 0xffc12345u, 0x7f800001u, 0x3f808000u, 0x3f818000u,
                              0x7f7fffffu, 0x00800000u, 0x3f7fffffu, 0x4049fdb0u};
  for (int i = 0; i < 16 * 256; ++i) bits.push_back(i % 16 < 8 ? special[(i / 16 + i) % 16] : next());
  std::vector<float> x(bits.size());
  std::memcpy(x.data(), bits.data(), bits.size() * 4);
  std::string so = build_shared_object({source, {}, "bf16_rounding", std::nullopt});
  SharedLibrary lib(so);
  EXPECT_EQ(lib.symbol<int (*)(const float *, int)>("mismatches")(x.data(), int(x.size())), 0);
}

// var_mean of 2^20 values of mean 1e4 and spread 1, where a float Welford or a naive sum
// of squares loses the variance: within 1e-5 relative of float64.
TEST(CpuReductions, VarianceOfLargeOffsetData) {
  const int64_t n = int64_t(1) << 20;
  Graph g = frontend::parse_graph(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[1048576][1]cpu"):
        var_mean = torch.ops.aten.var_mean.correction(x, [0], correction = 0)
        getitem: "f32[][]cpu" = var_mean[0]
        getitem_1: "f32[][]cpu" = var_mean[1]
        return (getitem, getitem_1)
)",
                                  "test.py");
  HostTensor x = HostTensor::zeros(DType::F32, {n});
  uint64_t state = 12345;
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    float v = 1e4f + float(double(state >> 11) / double(1ULL << 53) * 2 - 1);
    x.ptr<float>()[i] = v;
    sum += v;
  }
  double mean = sum / double(n);
  for (int64_t i = 0; i < n; ++i) sq += (x.ptr<float>()[i] - mean) * (x.ptr<float>()[i] - mean);
  double var = sq / double(n);
  Compilation c = compile_graph(g, sched::ScheduleOptions{});
  auto out = CpuModule(build_cpu(c.schedule).so_path).run({{"x", x}});
  EXPECT_NEAR(out[0].ptr<float>()[0], var, 1e-5 * var);
  EXPECT_NEAR(out[1].ptr<float>()[0], mean, 1e-6 * mean);
}

// The same sum twice gives the same bits: threads combine partials in a fixed order.
TEST(CpuReductions, SumOverEverythingIsDeterministic) {
  Graph g = frontend::parse_graph(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[1000003][1]cpu"):
        sum_1: "f32[][]cpu" = torch.ops.aten.sum.default(x)
        return (sum_1,)
)",
                                  "test.py");
  HostTensor x = HostTensor::zeros(DType::F32, {1000003});
  for (int64_t i = 0; i < 1000003; ++i) x.ptr<float>()[i] = float((i * 7919) % 1000) / 7.0f - 60.0f;
  Compilation c = compile_graph(g, sched::ScheduleOptions{});
  CpuModule m(build_cpu(c.schedule).so_path);
  float first = m.run({{"x", x}})[0].ptr<float>()[0];
  for (int i = 0; i < 5; ++i) EXPECT_EQ(m.run({{"x", x}})[0].ptr<float>()[0], first);
}

}  // namespace
}  // namespace coil
