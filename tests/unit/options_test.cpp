// The options registry: defaults, the environment, --set overrides and their precedence,
// each type's parsing with the exact message for a bad value, suggestions for unknown
// names, the table, `coil config`, and a row per option of what setting it changes
// (EveryOptionChangesWhatItsRowSays fails when an option is registered without one).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "driver/compile.h"
#include "frontend/parser.h"
#include "frontend/printer.h"
#include "io/safetensors.h"
#include "runtime/cache.h"
#include "runtime/compiler.h"
#include "runtime/cpu_module.h"
#include "runtime/loader.h"
#include "runtime/triton_build.h"
#include "support/error.h"
#include "support/options.h"
#include "tools/config_command.h"
#include "test_util.h"

namespace coil::options {
namespace {
using test::user_error_of;
namespace fs = std::filesystem;

// Every test starts from defaults: no override and no COIL_ variable of any option; the
// variables the process started with come back afterwards.
class Options : public testing::Test {
 protected:
  void SetUp() override {
    clear_overrides();
    for (const Option &o : all()) {
      if (const char *v = std::getenv(o.env().c_str())) saved_[o.env()] = v;
      unsetenv(o.env().c_str());
    }
  }
  void TearDown() override {
    clear_overrides();
    for (const Option &o : all()) unsetenv(o.env().c_str());
    for (const auto &[name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  std::map<std::string, std::string> saved_;
};

// The message for `option` read from the environment variable `var` (no override hides it).
std::string env_error(const char *var, const char *value, const std::string &option) {
  clear_overrides();
  setenv(var, value, 1);
  std::string message = user_error_of([&] { current(option); });
  unsetenv(var);
  return message;
}

std::string set_error(const std::string &name, const std::string &value) {
  return user_error_of([&] { set_override(name, value); });
}

TEST_F(Options, Defaults) {
  EXPECT_FALSE(get_bool("debug"));
  EXPECT_EQ(get_string("trace"), "");
  EXPECT_EQ(get_string("cache_dir"), "");
  EXPECT_EQ(get_int("max_fusion_size"), 64);
  EXPECT_TRUE(get_bool("fusion.horizontal"));
  EXPECT_TRUE(get_bool("fusion.inline_pointwise"));
  EXPECT_EQ(get_int("fusion.max_inline_reads"), 8);
  EXPECT_TRUE(get_bool("fusion.memory_order_loops"));
  EXPECT_TRUE(get_bool("layout.channels_last_convolutions"));
  EXPECT_FALSE(get_bool("emulate_precision_casts"));
  EXPECT_EQ(get_int("num_threads"), 0);
  EXPECT_EQ(get_string("cpp.isa"), "auto");
  EXPECT_FALSE(get_bool("cpp.profile"));
  EXPECT_TRUE(get_bool("cpp.pch"));
  EXPECT_TRUE(get_bool("cpp.onednn"));
  EXPECT_EQ(get_string("cpp.compiler"), "c++");
  EXPECT_FALSE(get_bool("triton.autotune"));
  EXPECT_FALSE(get_bool("triton.cudagraphs"));
  EXPECT_FALSE(get_bool("triton.profile"));
  EXPECT_EQ(get_string("triton.python"), "");
  for (const Option &o : all()) {
    EXPECT_EQ(current(o.name), std::make_pair(o.default_value, Source::Default)) << o.name;
    EXPECT_FALSE(o.doc.empty()) << o.name;
    EXPECT_EQ(o.doc.find('\n'), std::string::npos) << o.name;
  }
  EXPECT_EQ(find("cpp.isa").choices, (std::vector<std::string>{"auto", "avx512", "avx2", "scalar"}));
}

TEST_F(Options, SortedByName) {
  ASSERT_EQ(all().size(), 30u);
  for (size_t i = 1; i < all().size(); ++i) EXPECT_LT(all()[i - 1].name, all()[i].name);
}

TEST_F(Options, EnvironmentVariableNames) {
  EXPECT_EQ(find("debug").env(), "COIL_DEBUG");
  EXPECT_EQ(find("trace").env(), "COIL_TRACE");
  EXPECT_EQ(find("max_fusion_size").env(), "COIL_MAX_FUSION_SIZE");
  EXPECT_EQ(find("cpp.isa").env(), "COIL_CPP_ISA");
  EXPECT_EQ(find("fusion.max_inline_reads").env(), "COIL_FUSION_MAX_INLINE_READS");
  EXPECT_EQ(find("triton.cudagraphs").env(), "COIL_TRITON_CUDAGRAPHS");
}

TEST_F(Options, EnvironmentBeatsDefault) {
  setenv("COIL_MAX_FUSION_SIZE", "32", 1);
  setenv("COIL_DEBUG", "1", 1);
  setenv("COIL_TRACE", "/tmp/trace", 1);
  EXPECT_EQ(current("max_fusion_size"), std::make_pair(std::string("32"), Source::Environment));
  EXPECT_EQ(get_int("max_fusion_size"), 32);
  EXPECT_EQ(current("debug"), std::make_pair(std::string("true"), Source::Environment));
  EXPECT_EQ(get_string("trace"), "/tmp/trace");
  // Read at each call, not cached.
  unsetenv("COIL_MAX_FUSION_SIZE");
  EXPECT_EQ(current("max_fusion_size"), std::make_pair(std::string("64"), Source::Default));
}

TEST_F(Options, EmptyEnvironmentVariableIsUnset) {
  setenv("COIL_CPP_COMPILER", "", 1);
  setenv("COIL_DEBUG", "", 1);
  EXPECT_EQ(current("cpp.compiler"), std::make_pair(std::string("c++"), Source::Default));
  EXPECT_FALSE(get_bool("debug"));
}

TEST_F(Options, OverrideBeatsEnvironment) {
  setenv("COIL_MAX_FUSION_SIZE", "32", 1);
  set_override("max_fusion_size", "16");
  EXPECT_EQ(current("max_fusion_size"), std::make_pair(std::string("16"), Source::Override));
  set_override("max_fusion_size=8");
  EXPECT_EQ(get_int("max_fusion_size"), 8);
  clear_overrides();
  EXPECT_EQ(current("max_fusion_size"), std::make_pair(std::string("32"), Source::Environment));
}

// An override wins even over a malformed variable, which is then never read.
TEST_F(Options, OverrideHidesBadEnvironment) {
  setenv("COIL_MAX_FUSION_SIZE", "abc", 1);
  set_override("max_fusion_size", "4");
  EXPECT_EQ(get_int("max_fusion_size"), 4);
}

TEST_F(Options, Bools) {
  for (const char *yes : {"true", "1", "on", "yes", "TRUE", "Yes", "On"}) {
    set_override("debug", yes);
    EXPECT_EQ(current("debug"), std::make_pair(std::string("true"), Source::Override)) << yes;
  }
  for (const char *no : {"false", "0", "off", "no", "False", "NO"}) {
    set_override("debug", no);
    EXPECT_EQ(current("debug"), std::make_pair(std::string("false"), Source::Override)) << no;
  }
  EXPECT_EQ(env_error("COIL_DEBUG", "maybe", "debug"),
            "COIL_DEBUG='maybe': debug expects true or false (or 1/0, on/off, yes/no)");
  EXPECT_EQ(set_error("cpp.profile", "2"),
            "--set cpp.profile='2': cpp.profile expects true or false (or 1/0, on/off, yes/no)");
  EXPECT_EQ(set_error("debug", ""), "--set debug='': debug expects true or false (or 1/0, on/off, yes/no)");
}

TEST_F(Options, Ints) {
  set_override("max_fusion_size", "+12");
  EXPECT_EQ(current("max_fusion_size").first, "12");
  set_override("fusion.max_inline_reads", "0");
  EXPECT_EQ(get_int("fusion.max_inline_reads"), 0);
  setenv("COIL_NUM_THREADS", "007", 1);
  EXPECT_EQ(current("num_threads"), std::make_pair(std::string("7"), Source::Environment));
  unsetenv("COIL_NUM_THREADS");

  EXPECT_EQ(env_error("COIL_MAX_FUSION_SIZE", "abc", "max_fusion_size"),
            "COIL_MAX_FUSION_SIZE='abc': max_fusion_size expects an integer");
  EXPECT_EQ(env_error("COIL_MAX_FUSION_SIZE", "12abc", "max_fusion_size"),
            "COIL_MAX_FUSION_SIZE='12abc': max_fusion_size expects an integer");
  EXPECT_EQ(env_error("COIL_NUM_THREADS", " 4", "num_threads"),
            "COIL_NUM_THREADS=' 4': num_threads expects an integer");
  EXPECT_EQ(set_error("max_fusion_size", "99999999999999999999"),
            "--set max_fusion_size='99999999999999999999': max_fusion_size expects an integer");
  EXPECT_EQ(set_error("max_fusion_size", "1.5"), "--set max_fusion_size='1.5': max_fusion_size expects an integer");
  EXPECT_EQ(set_error("max_fusion_size", ""), "--set max_fusion_size='': max_fusion_size expects an integer");
  EXPECT_EQ(set_error("max_fusion_size", "0"), "--set max_fusion_size='0': max_fusion_size expects an integer >= 1");
  EXPECT_EQ(set_error("num_threads", "-3"), "--set num_threads='-3': num_threads expects an integer >= 0");
}

TEST_F(Options, Strings) {
  set_override("trace=/tmp/a b=c");
  EXPECT_EQ(get_string("trace"), "/tmp/a b=c");
  set_override("cpp.compiler", "");
  EXPECT_EQ(current("cpp.compiler"), std::make_pair(std::string(""), Source::Override));
}

TEST_F(Options, Choices) {
  set_override("cpp.isa", "avx2");
  EXPECT_EQ(get_string("cpp.isa"), "avx2");
  EXPECT_EQ(set_error("cpp.isa", "avx3"), "--set cpp.isa='avx3': cpp.isa expects one of auto, avx512, avx2, scalar");
  EXPECT_EQ(env_error("COIL_CPP_ISA", "AVX2", "cpp.isa"),
            "COIL_CPP_ISA='AVX2': cpp.isa expects one of auto, avx512, avx2, scalar");
}

// set_override checks the value at once and keeps the previous one when it is bad.
TEST_F(Options, BadOverrideKeepsThePreviousValue) {
  set_override("max_fusion_size", "16");
  EXPECT_THROW(set_override("max_fusion_size", "x"), UserError);
  EXPECT_EQ(get_int("max_fusion_size"), 16);
}

TEST_F(Options, Assignments) {
  EXPECT_EQ(user_error_of([] { set_override(std::string("debug")); }), "--set expects name=value, got 'debug'");
  EXPECT_EQ(user_error_of([] { set_override(std::string("=1")); }), "--set expects name=value, got '=1'");
  EXPECT_EQ(user_error_of([] { set_override(std::string("max_fusion=3")); }),
            "unknown option 'max_fusion' (did you mean 'max_fusion_size'?)");
}

TEST_F(Options, UnknownNamesSuggestCloseOnes) {
  auto error = [](const std::string &name) { return user_error_of([&] { find(name); }); };
  EXPECT_EQ(error("max_fusion"), "unknown option 'max_fusion' (did you mean 'max_fusion_size'?)");
  EXPECT_EQ(error("cpp_isa"), "unknown option 'cpp_isa' (did you mean 'cpp.isa'?)");
  EXPECT_EQ(error("triton.autotun"), "unknown option 'triton.autotun' (did you mean 'triton.autotune'?)");
  EXPECT_EQ(error("COIL_DEBUG"), "unknown option 'COIL_DEBUG' (did you mean 'debug'?)");
  EXPECT_EQ(error("threads"), "unknown option 'threads' (did you mean 'num_threads'?)");
  EXPECT_EQ(error("fusion"),
            "unknown option 'fusion' (did you mean 'max_fusion_size', 'fusion.horizontal' or "
            "'fusion.max_streams'?)");
  EXPECT_EQ(error("frobnicate"), "unknown option 'frobnicate'; 'coil config' lists every option");
  EXPECT_THROW(get_bool("nonsense"), UserError);
}

TEST_F(Options, WrongTypeGetterIsAnInternalError) {
  EXPECT_THROW(get_int("debug"), InternalError);
  EXPECT_THROW(get_bool("trace"), InternalError);
  EXPECT_THROW(get_string("max_fusion_size"), InternalError);
}

TEST_F(Options, TableListsEveryOption) {
  setenv("COIL_NUM_THREADS", "4", 1);
  set_override("cpp.isa", "scalar");
  std::string t = table();
  EXPECT_EQ(t, table());
  EXPECT_EQ(t.rfind("name ", 0), 0u) << t;
  for (const Option &o : all()) {
    EXPECT_NE(t.find("\n" + o.name + " "), std::string::npos) << o.name;
    EXPECT_NE(t.find(o.env()), std::string::npos) << o.name;
    EXPECT_NE(t.find(o.doc), std::string::npos) << o.name;
  }
  EXPECT_NE(t.find("COIL_NUM_THREADS"), std::string::npos);
  // Columns line up: every row's env var starts where the header's does.
  size_t env_column = t.find("env var");
  std::istringstream lines(t);
  std::string line;
  std::getline(lines, line);
  int rows = 0;
  while (std::getline(lines, line)) {
    ++rows;
    std::string name = line.substr(0, line.find(' '));
    EXPECT_EQ(line.find(find(name).env()), env_column) << line;
    EXPECT_NE(line.back(), ' ') << line;
  }
  EXPECT_EQ(rows, static_cast<int>(all().size()));
  auto row_of = [&](const std::string &name) { return t.substr(t.find("\n" + name + " ") + 1, t.size()); };
  EXPECT_NE(row_of("num_threads").find("4"), std::string::npos);
  EXPECT_LT(row_of("num_threads").find(" env "), row_of("num_threads").find('\n'));
  EXPECT_LT(row_of("cpp.isa").find("scalar"), row_of("cpp.isa").find(" set "));
  EXPECT_LT(row_of("trace").find("\"\""), row_of("trace").find(" default "));
}

TEST_F(Options, OverridesFromManyThreads) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        set_override("max_fusion_size", std::to_string(1 + t));
        int64_t v = get_int("max_fusion_size");
        EXPECT_TRUE(v >= 1 && v <= 8);
      }
    });
  for (auto &th : threads) th.join();
}

// ---- each option changes what it documents ----

// The thread team of a kernel loop as large as any: a function added to a compiled graph's
// own source, so it asks the same library the graph's kernels ask.
constexpr const char *kThreadProbe = R"(
extern "C" int32_t probe_kernel_threads(void) {
  int seen = 0;
#pragma omp parallel num_threads(coil_rt::threads_for(int64_t(1) << 40))
#pragma omp single
  seen = omp_get_num_threads();
  return seen;
}
)";

// softmax_lastdim compiled for the CPU, with kThreadProbe.
std::string graph_with_thread_probe() {
  Compilation c = compile_graph(frontend::parse_graph_file("examples/softmax_lastdim/graph.py"),
                                sched::ScheduleOptions{});
  SharedObjectRequest r;
  r.source = build_cpu(c.schedule).source + kThreadProbe;
  r.name = "graph";
  r.flags = {"-lmvec"};
  return build_shared_object(r);
}

// num_threads: `--set num_threads=N` (or COIL_NUM_THREADS) reaches the compiled graph when
// it is loaded and sizes its kernels' thread teams, more threads than processors included;
// 0 gives the library back its default; a malformed COIL_NUM_THREADS stops the load before
// any kernel runs.
TEST_F(Options, NumThreadsSizesTheKernelsThreadTeams) {
  std::string so = graph_with_thread_probe();
  SharedLibrary probe_lib(so);  // the same loaded library: dlopen counts references
  auto probe = probe_lib.symbol<int32_t (*)()>("probe_kernel_threads");
  TensorList inputs = read_safetensors("examples/softmax_lastdim/inputs.safetensors");
  int fallback = CpuModule(so).num_threads();
  ASSERT_GE(fallback, 1);

  set_override("num_threads", "3");
  CpuModule three(so);
  three.run(inputs);
  EXPECT_EQ(three.num_threads(), 3);
  EXPECT_EQ(probe(), 3);
  set_override("num_threads", "300");
  CpuModule(so).median_seconds(inputs, 1);
  EXPECT_EQ(probe(), 256) << "at most coil_rt::kMaxThreads";
  clear_overrides();
  setenv("COIL_NUM_THREADS", "5", 1);
  CpuModule(so).run(inputs);
  EXPECT_EQ(probe(), 5);
  setenv("COIL_NUM_THREADS", "0", 1);
  CpuModule(so).run(inputs);
  EXPECT_EQ(probe(), fallback);

  setenv("COIL_NUM_THREADS", "abc", 1);
  EXPECT_EQ(user_error_of([&] { CpuModule{so}; }), "COIL_NUM_THREADS='abc': num_threads expects an integer");
}

// ---- coil config ----

std::string config_output(const std::vector<std::string> &args) {
  testing::internal::CaptureStdout();
  int status = tools::run_config(args);
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(status, 0);
  return out;
}

std::string config_error(const std::vector<std::string> &args) {
  return user_error_of([&] { tools::run_config(args); });
}

TEST_F(Options, ConfigPrintsTheTable) { EXPECT_EQ(config_output({}), table()); }

TEST_F(Options, ConfigPrintsOneOption) {
  EXPECT_EQ(config_output({"max_fusion_size"}), "max_fusion_size = 64  (default)\n  most nodes one kernel may hold\n");
  setenv("COIL_MAX_FUSION_SIZE", "32", 1);
  EXPECT_EQ(config_output({"max_fusion_size"}),
            "max_fusion_size = 32  (env COIL_MAX_FUSION_SIZE)\n  most nodes one kernel may hold\n");
  EXPECT_EQ(config_output({"--set", "max_fusion_size=16", "max_fusion_size"}),
            "max_fusion_size = 16  (set)\n  most nodes one kernel may hold\n");
  EXPECT_EQ(config_output({"--set=debug=yes", "debug"}), "debug = true  (set)\n  print each stage's decisions to stderr\n");
  EXPECT_EQ(config_output({"trace"}).rfind("trace = \"\"  (default)\n", 0), 0u);
}

TEST_F(Options, ConfigSetShowsInTheTable) {
  std::string out = config_output({"--set", "cpp.isa=avx512", "--set", "triton.autotune=on"});
  EXPECT_EQ(out, table());
  EXPECT_TRUE(get_bool("triton.autotune"));
  EXPECT_EQ(get_string("cpp.isa"), "avx512");
}

TEST_F(Options, ConfigErrors) {
  EXPECT_EQ(config_error({"max_fusion"}), "unknown option 'max_fusion' (did you mean 'max_fusion_size'?)");
  EXPECT_EQ(config_error({"--set", "max_fusion_size=abc"}),
            "--set max_fusion_size='abc': max_fusion_size expects an integer");
  EXPECT_EQ(config_error({"--set"}), "coil config: option --set needs a value name=value");
  EXPECT_EQ(config_error({"--frob"}), "coil config: unknown option '--frob' (see coil config --help)");
  EXPECT_EQ(config_error({"debug", "trace"}), "coil config: expected at most one option name, got 2 (see coil config --help)");
  setenv("COIL_DEBUG", "maybe", 1);
  EXPECT_EQ(config_error({}), "COIL_DEBUG='maybe': debug expects true or false (or 1/0, on/off, yes/no)");
}


// ---- what each option changes: one row per registered option ----

// A graph where every scheduling option changes the fused IR: a chain into a reduction
// (max_fusion_size, inlining), independent ops over one input (horizontal fusion), bf16
// arithmetic (emulate_precision_casts), an output of 1 MiB (cpp.prefault) and a matrix
// product (cpp.onednn).
constexpr const char *kRowsGraph = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[512, 512][512, 1]cpu", h: "bf16[8, 16][16, 1]cpu", w: "f32[4, 8][8, 1]cpu"):
        a: "f32[512, 512][512, 1]cpu" = torch.ops.aten.mul.Tensor(x, 2)
        b: "f32[512, 512][512, 1]cpu" = torch.ops.aten.add.Tensor(a, 1)
        s: "f32[512][1]cpu" = torch.ops.aten.sum.dim_IntList(b, [1])
        t: "f32[512][1]cpu" = torch.ops.aten.amax.default(a, [1])
        e: "f32[512, 512][512, 1]cpu" = torch.ops.aten.exp.default(x)
        g: "bf16[8, 16][16, 1]cpu" = torch.ops.aten.mul.Tensor(h, 3)
        k: "bf16[8, 16][16, 1]cpu" = torch.ops.aten.add.Tensor(g, 1)
        wt: "f32[8, 4][1, 8]cpu" = torch.ops.aten.t.default(w)
        m: "f32[4, 4][4, 1]cpu" = torch.ops.aten.mm.default(w, wt)
        return (s, t, e, k, m)
)";

Compilation rows_compilation() { return compile_graph(frontend::parse_graph(kRowsGraph, "rows.py")); }

std::string fused_ir() { return ir::str(rows_compilation().schedule.ir); }

// A convolution of channels-last operands into a contiguous output (as bf16 ResNet-50 is
// exported on CUDA), and a relu after it.
std::string conv_graph_after_passes() {
  return frontend::print_graph(compile_graph(frontend::parse_graph(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu", w: "f32[8, 4, 3, 3][36, 1, 12, 4]cpu"):
        c: "f32[2, 8, 6, 6][288, 36, 6, 1]cpu" = torch.ops.aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
        r: "f32[2, 8, 6, 6][288, 36, 6, 1]cpu" = torch.ops.aten.relu.default(c)
        s: "f32[2, 8][8, 1]cpu" = torch.ops.aten.sum.dim_IntList(r, [2, 3])
        return (s,)
)", "conv.py")).optimized);
}

// A relu of a channels-last value: its loops follow memory (N, H, W, C) or the sizes.
std::string channels_last_ir() {
  return ir::str(compile_graph(frontend::parse_graph(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu"):
        r: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu" = torch.ops.aten.relu.default(x)
        return (r,)
)", "relu.py")).schedule.ir);
}

// A product of matrices whose rows (3 and 5 floats) are not 16-byte aligned.
std::string unaligned_product_ir() {
  return ir::str(compile_graph(frontend::parse_graph(R"(class GraphModule(torch.nn.Module):
    def forward(self, a: "f32[5, 3][3, 1]cpu", b: "f32[3, 5][5, 1]cpu"):
        m: "f32[5, 5][5, 1]cpu" = torch.ops.aten.mm.default(a, b)
        return (m,)
)", "mm.py")).lowered);
}

// Two independent sums of 1 MiB tensors: one kernel by horizontal fusion, streaming six.
std::string streams_ir() {
  return ir::str(compile_graph(frontend::parse_graph(R"(class GraphModule(torch.nn.Module):
    def forward(self, a: "f32[512, 512][512, 1]cpu", b: "f32[512, 512][512, 1]cpu", c: "f32[512, 512][512, 1]cpu", d: "f32[512, 512][512, 1]cpu"):
        s: "f32[512, 512][512, 1]cpu" = torch.ops.aten.add.Tensor(a, b)
        t: "f32[512, 512][512, 1]cpu" = torch.ops.aten.add.Tensor(c, d)
        return (s, t)
)", "streams.py")).schedule.ir);
}

// A convolution's weight gradient on the GPU, lowered (no GPU needed).
std::string weight_grad_ir() {
  return ir::str(compile_graph(frontend::parse_graph(R"(class GraphModule(torch.nn.Module):
    def forward(self, dy: "f32[2, 8, 6, 6][288, 36, 6, 1]cuda:0", x: "f32[2, 4, 6, 6][144, 36, 6, 1]cuda:0", w: "f32[8, 4, 3, 3][36, 9, 3, 1]cuda:0"):
        b = torch.ops.aten.convolution_backward.default(dy, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False])
        dw: "f32[8, 4, 3, 3][36, 9, 3, 1]cuda:0" = b[1]
        return (dw,)
)", "weight_grad.py")).lowered);
}

std::string cpu_source() { return build_cpu(rows_compilation().schedule).source; }

// A 1x1 convolution in channels last, as C++.
std::string conv1x1_source() {
  return build_cpu(compile_graph(frontend::parse_graph(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 4, 6, 6][144, 1, 24, 4]cpu", w: "f32[8, 4, 1, 1][4, 1, 1, 1]cpu"):
        c: "f32[2, 8, 6, 6][288, 1, 48, 8]cpu" = torch.ops.aten.convolution.default(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
        return (c,)
)", "conv1x1.py")).schedule).source;
}

std::string cpu_source_or_error() {
  try {
    return cpu_source();
  } catch (const UserError &e) {
    return std::string("error: ") + e.what();
  }
}

std::string stderr_of_cpu_build() {
  testing::internal::CaptureStderr();
  build_cpu(rows_compilation().schedule);
  return testing::internal::GetCapturedStderr();
}

std::string trace_files(const std::string &dir) {
  rows_compilation();
  std::string out;
  for (const char *f : {"graph.txt", "ir_post_fusion.txt", "memory_plan.txt"})
    out += std::string(f) + (fs::exists(fs::path(dir) / f) ? " written\n" : " missing\n");
  return out;
}

std::string threads_of_a_run() {
  CpuModule module(build_cpu(rows_compilation().schedule).so_path);
  module.run({{"x", HostTensor::zeros(DType::F32, {512, 512})}, {"h", HostTensor::zeros(DType::BF16, {8, 16})},
              {"w", HostTensor::zeros(DType::F32, {4, 8})}});
  return std::to_string(module.num_threads());
}

struct Row {
  std::string option, value;             // setting option to value
  std::string changes;                   // changes this (what the row documents)
  std::function<std::string()> observe;  // as this shows; empty: checked elsewhere only
  std::string gpu_test = {};             // the test (on a GPU, of the Python package) that checks a row without `observe`
};

std::vector<Row> rows(const std::string &scratch) {
  return {
      {"debug", "1", "the generated C++ printed to stderr", stderr_of_cpu_build},
      {"dynamic.sizes_per_graph", "1", "the sizes a torch.compile graph whose guards fix a symbol is compiled for", nullptr,
       "tests/python/test_backend.py (DynamicShapes)"},
      {"trace", scratch + "/trace", "each stage's dump written to the folder", [=] { return trace_files(scratch + "/trace"); }},
      {"cache_dir", scratch + "/cache", "the cache's folder", [] { return cache_root().string(); }},
      {"max_fusion_size", "1", "the kernels fusion makes", fused_ir},
      {"fusion.horizontal", "0", "the kernels fusion makes", fused_ir},
      {"fusion.inline_pointwise", "0", "the kernels fusion makes", fused_ir},
      {"fusion.max_streams", "2", "the kernels horizontal fusion makes of large independent sums", streams_ir},
      {"fusion.max_inline_reads", "0", "the kernels fusion makes", fused_ir},
      {"fusion.memory_order_loops", "0", "the loops of a channels-last relu (logical order)", channels_last_ir},
      {"emulate_precision_casts", "1", "bf16 roundings in the fused IR", fused_ir},
      {"extern.align_product_rows", "always", "a product's operands and result with padded rows", unaligned_product_ir},
      {"extern.conv_weight_grad", "loops", "a GPU convolution's weight gradient (a reduction, not a call)", weight_grad_ir},
      {"layout.channels_last_convolutions", "0", "the layouts of the graph after the passes", conv_graph_after_passes},
      {"num_threads", "3", "the threads of a compiled graph", threads_of_a_run},
      {"cpp.isa", "scalar", "the generated C++", cpu_source},
      {"cpp.prefault", "0", "the generated C++ (no prefault of large outputs)", cpu_source},
      {"cpp.profile", "1", "the generated C++ (kernel timers)", cpu_source},
      {"cpp.onednn", "0", "the generated C++ (the matrix product as a loop)", cpu_source},
      {"cpp.conv1x1_as_matmul", "0", "the generated C++ of a 1x1 convolution (a convolution, not a matmul)",
       conv1x1_source},
      {"cpp.pch", "0", "the flags of the C++ compile (its cache entry's metadata names no header)",
       [] {
         std::string so = build_cpu(rows_compilation().schedule).so_path;
         return test::read_text(fs::path(so).parent_path() / "meta.json");
       }},
      {"cpp.vector_lanes", "4", "the generated C++", cpu_source},
      {"cpp.compiler", "no-such-compiler-of-coil", "the compiler run: an error naming it", cpu_source_or_error},
      {"cpp.plan", "kernel0.lanes=4", "the generated C++", cpu_source},
      {"triton.autotune", "1", "the launch configs of Triton kernels", nullptr, "tests/gpu/program_test.cpp (graphs+autotune)"},
      {"triton.cudagraphs", "1", "launches replayed as one CUDA graph", nullptr, "tests/gpu/program_test.cpp (graphs+autotune)"},
      {"triton.profile", "1", "each step's GPU time", nullptr, "tests/gpu/program_test.cpp (profile)"},
      {"triton.sizes_kept", "1", "the programs of a GPU graph of symbolic sizes kept set up", nullptr,
       "tests/gpu/program_test.cpp (symbolic: sizes kept)"},
      {"triton.shared_arena", "0", "each graph's arena its own", nullptr,
       "tests/gpu/program_test.cpp (share the GPU's arena)"},
      {"triton.python", "/no/such/python", "the Python that compiles Triton kernels", [] { return triton_python(); }},
  };
}

// Every registered option has a row, and setting it changes what its row observes; a bad
// value of a bool, int or choice option is an error naming the option.
TEST_F(Options, EveryOptionChangesWhatItsRowSays) {
  fs::path scratch = fs::temp_directory_path() / ("coil_option_rows_" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  std::vector<Row> table = rows(scratch.string());
  for (const Option &o : all()) {
    auto row = std::find_if(table.begin(), table.end(), [&](const Row &r) { return r.option == o.name; });
    ASSERT_NE(row, table.end()) << "option " << o.name << " has no row in EveryOptionChangesWhatItsRowSays";
    if (o.type != Type::String) {
      EXPECT_NE(set_error(o.name, "not-a-value").find(o.name), std::string::npos) << o.name;
    }
    clear_overrides();
    if (!row->observe) {
      EXPECT_TRUE(fs::exists(test::source_dir() / row->gpu_test.substr(0, row->gpu_test.find(' ')))) << o.name;
      continue;
    }
    std::string before = row->observe();
    set_override(o.name, row->value);
    std::string after = row->observe();
    clear_overrides();
    EXPECT_NE(before, after) << o.name << "=" << row->value << " should change " << row->changes;
  }
  EXPECT_EQ(table.size(), all().size()) << "a row names an option that is not registered";
  fs::remove_all(scratch);
}

}  // namespace
}  // namespace coil::options
