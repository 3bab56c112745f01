// The runtime's plumbing: SHA-256 against the FIPS 180-4 test vectors, the ISA table, the
// compiler subprocess, the content-addressed cache (hits, stale entries, failures, two
// processes at once, info and clear), loading a built shared object, strided copies and
// one call of a module at a time per thread, and the precompiled
// kernel prelude (built once, reused, built by two processes at once, skipped when the
// compiler cannot build it or the file is damaged).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "driver/compile.h"
#include "frontend/parser.h"
#include "io/compare.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"
#include "coil/artifact.h"
#include "runtime/cache.h"
#include "runtime/compiler.h"
#include "runtime/cpu_module.h"
#include "runtime/isa.h"
#include "runtime/loader.h"
#include "runtime/pch.h"
#include "runtime/sha256.h"
#include "support/error.h"
#include "support/int_math.h"
#include "support/options.h"
#include "tools/cache_command.h"
#include "test_util.h"

namespace coil {
namespace {
using test::read_text;
using test::user_error_of;
namespace fs = std::filesystem;

constexpr const char *kAnswer = "extern \"C\" int answer() { return 42; }\n";

int64_t count_children(const fs::path &dir) {
  std::error_code ec;
  int64_t n = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) ++n;
  return n;
}

TEST(Sha256, StandardVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                       "mnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the padding's edges: the length field fits in the last block (55), just
// does not (56), and whole blocks (64).
TEST(Sha256, PaddingBoundaries) {
  EXPECT_EQ(sha256_hex(std::string(55, 'a')), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(sha256_hex(std::string(56, 'a')), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(sha256_hex(std::string(63, 'a')), "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
  EXPECT_EQ(sha256_hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  EXPECT_EQ(sha256_hex(std::string(65, 'a')), "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0");
}

TEST(CacheKey, FieldsAreLengthPrefixed) {
  EXPECT_NE(cache_key({"ab", "c"}), cache_key({"a", "bc"}));
  EXPECT_EQ(cache_key({"ab", "c"}), cache_key({"ab", "c"}));
}

TEST(Isa, FlagsNamesAndWidths) {
  EXPECT_TRUE(isa_flags(Isa::Scalar).empty());
  EXPECT_EQ(isa_flags(Isa::Avx2), (std::vector<std::string>{"-mavx2", "-mfma", "-mf16c"}));
  EXPECT_EQ(isa_flags(Isa::Avx512),
            (std::vector<std::string>{"-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2", "-mfma", "-mf16c",
                                      "-mprefer-vector-width=512"}));
  EXPECT_EQ(isa_name(Isa::Scalar), "scalar");
  EXPECT_EQ(isa_name(Isa::Avx2), "avx2");
  EXPECT_EQ(isa_name(Isa::Avx512), "avx512");
  EXPECT_EQ(vector_bytes(Isa::Scalar), 0);
  EXPECT_EQ(vector_bytes(Isa::Avx2), 32);
  EXPECT_EQ(vector_bytes(Isa::Avx512), 64);
}

TEST(Isa, ChoiceHonorsTheHost) {
  EXPECT_EQ(choose_isa("auto", Isa::Avx2), Isa::Avx2);
  EXPECT_EQ(choose_isa("scalar", Isa::Avx512), Isa::Scalar);
  EXPECT_EQ(choose_isa("avx2", Isa::Avx512), Isa::Avx2);
  EXPECT_EQ(user_error_of([] { choose_isa("avx512", Isa::Avx2); }),
            "cpp.isa is avx512 but this CPU's best is avx2; set cpp.isa to auto, avx2 or scalar");
  EXPECT_EQ(user_error_of([] { choose_isa("avx2", Isa::Scalar); }),
            "cpp.isa is avx2 but this CPU's best is scalar; set cpp.isa to auto or scalar");
}

TEST(Isa, SelectedFollowsTheOption) {
  options::set_override("cpp.isa", "auto");
  EXPECT_EQ(selected_isa(), host_isa());
  options::set_override("cpp.isa", "scalar");
  EXPECT_EQ(selected_isa(), Isa::Scalar);
  options::clear_overrides();
}

TEST(Process, CapturesOutputAndExitCode) {
  ProcessResult r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_NE(user_error_of([] { run_process({"/no/such/program"}); }).find("cannot run /no/such/program"),
            std::string::npos);
}

// Each test gets an empty cache in a temporary folder, and a source folder whose
// runtime/include the kernel builds can find when the build tree has none.
class Runtime : public testing::Test {
 protected:
  void SetUp() override {
    options::clear_overrides();
    std::string pattern = (fs::path(testing::TempDir()) / "coil-runtime-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    tmp_ = pattern;
    fs::create_directories(tmp_ / "src" / "runtime" / "include");
    if (const char *v = std::getenv("COIL_SOURCE_DIR")) saved_source_dir_ = v;
    setenv("COIL_SOURCE_DIR", (tmp_ / "src").c_str(), 1);
    options::set_override("cache_dir", root().string());
  }
  void TearDown() override {
    options::clear_overrides();
    if (saved_source_dir_) setenv("COIL_SOURCE_DIR", saved_source_dir_->c_str(), 1);
    else unsetenv("COIL_SOURCE_DIR");
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }

  fs::path root() const { return tmp_ / "cache"; }
  fs::path tmp() const { return tmp_; }

  static SharedObjectRequest answer_request() { return {kAnswer, {}, "answer", std::nullopt}; }

 private:
  fs::path tmp_;
  std::optional<std::string> saved_source_dir_;
};

TEST_F(Runtime, BuildsLoadsAndCalls) {
  bool hit = true;
  std::string so = build_shared_object(answer_request(), &hit);
  EXPECT_FALSE(hit);
  EXPECT_EQ(fs::path(so).filename(), "answer.so");
  EXPECT_EQ(fs::path(so).parent_path().parent_path().parent_path(), root() / "cpp");
  EXPECT_EQ(read_text(fs::path(so).parent_path() / "answer.cpp"), kAnswer);
  EXPECT_NE(read_text(fs::path(so).parent_path() / "meta.json").find("\"compile_seconds\""), std::string::npos);

  SharedLibrary lib(so);
  EXPECT_EQ(lib.symbol<int (*)()>("answer")(), 42);
  EXPECT_NE(user_error_of([&] { lib.symbol<int (*)()>("question"); }).find("cannot find 'question' in " + so),
            std::string::npos);
  SharedLibrary moved = std::move(lib);
  EXPECT_EQ(moved.symbol<int (*)()>("answer")(), 42);
  EXPECT_EQ(count_children(root() / "tmp"), 0) << "a staging folder was left behind";
}

TEST_F(Runtime, SecondBuildIsACacheHit) {
  std::string first = build_shared_object(answer_request());
  auto written = fs::last_write_time(first);
  bool hit = false;
  std::string second = build_shared_object(answer_request(), &hit);
  EXPECT_TRUE(hit);
  EXPECT_EQ(second, first);
  EXPECT_EQ(fs::last_write_time(second), written);
}

TEST_F(Runtime, KeyCoversFlagsAndIsa) {
  std::string plain = build_shared_object(answer_request());
  SharedObjectRequest defined = answer_request();
  defined.flags = {"-DANSWER_VARIANT=1"};
  EXPECT_NE(build_shared_object(defined), plain);
  SharedObjectRequest scalar = answer_request();
  scalar.isa = Isa::Scalar;
  if (selected_isa() != Isa::Scalar) {
    EXPECT_NE(build_shared_object(scalar), plain);
  }
}

TEST_F(Runtime, StaleEntryIsRebuilt) {
  std::string so = build_shared_object(answer_request());
  fs::remove(so);
  bool hit = true;
  EXPECT_EQ(build_shared_object(answer_request(), &hit), so);
  EXPECT_FALSE(hit);
  EXPECT_EQ(SharedLibrary(so).symbol<int (*)()>("answer")(), 42);
  EXPECT_EQ(cache_info().entries, 1);
}

TEST_F(Runtime, CompilerErrorKeepsTheSource) {
  std::string source = "extern \"C\" int broken( { return 1; }\n";
  std::string message = user_error_of([&] { build_shared_object({source, {}, "broken", std::nullopt}); });
  std::string prefix = "the C++ compiler failed on " + (root() / "failed").string() + "/broken-";
  ASSERT_EQ(message.rfind(prefix, 0), 0u) << message;
  fs::path kept = message.substr(27, message.find(":\n") - 27);
  EXPECT_EQ(read_text(kept), source);
  EXPECT_NE(message.find(kept.string() + ":1:"), std::string::npos) << "stderr names the kept file: " << message;
  EXPECT_NE(message.find("error"), std::string::npos) << message;
  EXPECT_EQ(message.find((root() / "tmp").string()), std::string::npos) << message;
  EXPECT_EQ(count_children(root() / "tmp"), 0);
  EXPECT_EQ(cache_info().entries, 0);
  EXPECT_EQ(cache_info().failed_sources, 1);
}

TEST_F(Runtime, MissingCompilerIsAUserError) {
  options::set_override("cpp.compiler", "no-such-compiler-for-coil");
  EXPECT_EQ(user_error_of([] { build_shared_object(answer_request()); }),
            "cpp.compiler is 'no-such-compiler-for-coil', which is not an executable on PATH");
}

TEST_F(Runtime, InfoCountsAndClearEmpties) {
  EXPECT_EQ(cache_info().entries, 0);
  build_shared_object(answer_request());
  CacheInfo info = cache_info();
  EXPECT_EQ(info.entries, 1);
  EXPECT_EQ(info.entries_by_kind["cpp"], 1);
  EXPECT_GT(info.bytes, 0);
  std::string text = cache_info_text();
  EXPECT_NE(text.find("cache    " + root().string() + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cpp      1 entry\n"), std::string::npos) << text;

  cache_clear();
  EXPECT_EQ(cache_info().entries, 0);
  EXPECT_FALSE(fs::exists(root() / "cpp"));
  EXPECT_EQ(count_children(root() / "tmp"), 0);
  bool hit = true;
  build_shared_object(answer_request(), &hit);
  EXPECT_FALSE(hit) << "a cleared entry is built again";
}

TEST_F(Runtime, CacheCommand) {
  build_shared_object(answer_request());
  testing::internal::CaptureStdout();
  EXPECT_EQ(tools::run_cache({"info"}), 0);
  EXPECT_NE(testing::internal::GetCapturedStdout().find("total    1 entry"), std::string::npos);
  testing::internal::CaptureStdout();
  EXPECT_EQ(tools::run_cache({"clear"}), 0);
  EXPECT_EQ(testing::internal::GetCapturedStdout(),
            "removed 1 entry and 0 failed sources from " + root().string() + "\n");
  EXPECT_EQ(cache_info().entries, 0);
  EXPECT_EQ(user_error_of([] { tools::run_cache({}); }), "coil cache: expected info or clear (see coil cache --help)");
  EXPECT_EQ(user_error_of([] { tools::run_cache({"purge"}); }),
            "coil cache: unknown command 'purge'; expected info or clear (see coil cache --help)");
}

// Two processes build the same kernel at once: both succeed, one entry is published and
// no staging folder is left.
TEST_F(Runtime, ConcurrentBuildsPublishOneEntry) {
  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  pid_t children[2];
  for (pid_t &child : children) {
    child = fork();
    ASSERT_GE(child, 0);
    if (child != 0) continue;
    char byte;
    close(gate[1]);
    (void)!read(gate[0], &byte, 1);  // wait until the parent opens the gate
    try {
      std::string so = build_shared_object(answer_request());
      _exit(SharedLibrary(so).symbol<int (*)()>("answer")() == 42 ? 0 : 3);
    } catch (...) {
      _exit(4);
    }
  }
  close(gate[0]);
  close(gate[1]);  // both children read end-of-file and start together
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  EXPECT_EQ(cache_info().entries, 1);
  EXPECT_EQ(count_children(root() / "tmp"), 0);
}

TEST(Pch, KeyCoversWhatChangesTheHeader) {
  PchRequest r{{"c++", "c++ 12.2.0 (/usr/bin/g++-12)"}, Isa::Avx2, {"-shared", "-O3", "-I", "/inc", "-lmvec"}, "/inc",
               "digest"};
  std::string key = pch_key(r);
  auto key_with = [&](const std::function<void(PchRequest &)> &edit) {
    PchRequest changed = r;
    edit(changed);
    return pch_key(changed);
  };
  EXPECT_NE(key_with([](PchRequest &c) { c.headers_digest = "newer headers"; }), key);
  EXPECT_NE(key_with([](PchRequest &c) { c.flags.push_back("-DCOIL_VARIANT"); }), key);
  EXPECT_NE(key_with([](PchRequest &c) { c.isa = Isa::Scalar; }), key);
  EXPECT_NE(key_with([](PchRequest &c) { c.compiler.identity = "c++ 13.1.0 (/usr/bin/g++-13)"; }), key);
  EXPECT_NE(key_with([](PchRequest &c) { c.compiler.identity = "Debian clang version 14.0.6 (/usr/bin/clang)"; }), key);
  EXPECT_EQ(key_with([](PchRequest &c) { c.flags.push_back("-lm"); }), key) << "libraries do not change the header";
  EXPECT_EQ(key_with([](PchRequest &c) { c.flags.erase(c.flags.begin()); }), key) << "nor does -shared";
}

TEST(Pch, RejectionIsTheWarningLine) {
  std::string warning =
      "cc1plus: warning: /c/pch/ab/abc/coil/precompiled.h.gch: created and used with differing settings of '-mavx' "
      "[-Winvalid-pch]";
  EXPECT_EQ(pch_rejection("In file included from x.cpp:1:\n" + warning + "\n"), warning);
  EXPECT_EQ(pch_rejection("x.cpp:3:7: warning: unused variable 'y' [-Wunused-variable]\n"), "");
}

// copy_strided against a copy element by element through for_each_offset: every element
// size, transposes, broadcast (stride 0) sources, negative strides, rank 0 and empty shapes.
TEST(CopyStrided, MatchesACopyElementByElement) {
  struct Case {
    Shape sizes, src_strides, dst_strides;
    int64_t src_offset, dst_offset;  // element 0 within each buffer
  };
  const Case cases[] = {
      {{3, 4}, {4, 1}, {4, 1}, 0, 0},         {{3, 4}, {1, 3}, {4, 1}, 0, 0},
      {{3, 4}, {4, 1}, {1, 3}, 0, 2},         {{2, 3, 4}, {1, 2, 6}, {12, 4, 1}, 1, 0},
      {{2, 3, 4}, {16, 5, 1}, {1, 2, 6}, 3, 0}, {{5}, {0}, {1}, 0, 0},
      {{3, 4}, {-4, 1}, {1, 3}, 8, 0},        {{}, {}, {}, 2, 1},
      {{3, 0, 4}, {0, 4, 1}, {4, 4, 1}, 0, 0}, {{1, 5, 1}, {99, 1, 7}, {5, 1, 1}, 0, 0},
  };
  for (int64_t size : {1, 2, 4, 8}) {
    for (const Case &c : cases) {
      // Elements of a buffer that holds every element: 1 + the largest offset.
      auto span_of = [](const Shape &sizes, const Shape &strides, int64_t offset) {
        int64_t low = offset, high = offset;
        for (size_t d = 0; d < sizes.size(); ++d)
          if (sizes[d] > 0) ((strides[d] < 0) ? low : high) += (sizes[d] - 1) * strides[d];
        EXPECT_GE(low, 0) << "the case's offset leaves room for its negative strides";
        return high + 1;
      };
      int64_t src_n = span_of(c.sizes, c.src_strides, c.src_offset);
      int64_t dst_n = span_of(c.sizes, c.dst_strides, c.dst_offset);
      std::vector<std::byte> src(size_t(src_n * size)), got(size_t(dst_n * size), std::byte{0xAB});
      for (size_t k = 0; k < src.size(); ++k) src[k] = std::byte(k * 7 + 1);
      std::vector<std::byte> want = got;
      for_each_offset(c.sizes, c.src_strides, c.src_offset, [&](int64_t flat, int64_t from) {
        int64_t to = c.dst_offset;
        int64_t rest = flat;
        for (size_t d = c.sizes.size(); d-- > 0;) {
          to += rest % c.sizes[d] * c.dst_strides[d];
          rest /= c.sizes[d];
        }
        std::memcpy(want.data() + to * size, src.data() + from * size, size_t(size));
      });
      copy_strided(got.data() + c.dst_offset * size, c.dst_strides, src.data() + c.src_offset * size, c.src_strides,
                   c.sizes, size);
      EXPECT_EQ(got, want) << shape_str(c.sizes) << " from " << shape_str(c.src_strides) << " to "
                           << shape_str(c.dst_strides) << ", " << size << " bytes each";
    }
  }
}

// A module's calls take its thread's storage: a second call at once on one thread is a bug
// of the caller, said as one.
TEST(CpuCall, OneAtATimeOnAThread) {
  Compilation c = compile_graph(frontend::parse_graph_file("examples/pointwise_chain/graph.py"), sched::ScheduleOptions{});
  CpuModule m(build_cpu(c.schedule).so_path);
  {
    CpuModule::Call first(m);
    EXPECT_THROW(CpuModule::Call second(m), InternalError);
  }
  CpuModule::Call again(m);  // the first one gave the storage back
}

// A graph of symbolic sizes compiled for the CPU is one library for every size it serves,
// through coil/artifact.h alone: its symbols, the checks a call's sizes must pass, the
// layouts and arena at those sizes, and coil_run_sized, which refuses sizes that fail a
// check without running anything.
TEST(CpuCall, TheLibraryTakesSymbolicSizes) {
  const std::string text = "class GraphModule(torch.nn.Module):\n"
                           "    def forward(self, a: \"f32[s0, 24][24, 1]cpu\"):\n"
                           "        exp: \"f32[s0, 24][24, 1]cpu\" = torch.ops.aten.exp.default(a)\n"
                           "        sum_1: \"f32[s0][1]cpu\" = torch.ops.aten.sum.dim_IntList(exp, [1])\n"
                           "        return (sum_1,)\n";
  frontend::SizeValues sizes{{"s0", 7}};
  Compilation c = compile_graph(frontend::parse_graph(text, "sum.py", &sizes), sched::ScheduleOptions{}, "",
                                CodegenSizes::Symbolic);
  SharedLibrary lib(build_cpu(c.schedule).so_path);
  ASSERT_EQ(lib.symbol<int32_t (*)()>("coil_num_symbols")(), 1);
  const coil_symbol_desc *s0 = lib.symbol<const coil_symbol_desc *(*)(int32_t)>("coil_symbol")(0);
  EXPECT_EQ(std::string(s0->name), "s0");
  EXPECT_EQ((std::vector<int64_t>{s0->input, s0->dim, s0->compiled}), (std::vector<int64_t>{0, 0, 7}));
  auto check = lib.symbol<int32_t (*)(const int64_t *)>("coil_check_sizes");
  const int64_t one[] = {1}, sixteen[] = {16};
  EXPECT_EQ(check(sixteen), -1);
  int32_t failing = check(one);
  ASSERT_GE(failing, 0);
  EXPECT_EQ(std::string(lib.symbol<const char *(*)(int32_t)>("coil_size_check")(failing)),
            "s0 >= 2 (the range of s0 that the compiled code assumes)");
  auto layout = lib.symbol<int32_t (*)(int32_t, int32_t, const int64_t *, int64_t *, int64_t *, int64_t *, int64_t *)>(
      "coil_layout");
  int64_t dims[2], strides[2], offset = -1, elements = -1;
  ASSERT_EQ(layout(0, 0, sixteen, dims, strides, &offset, &elements), COIL_OK);
  EXPECT_EQ((std::vector<int64_t>{dims[0], dims[1], strides[0], strides[1], offset, elements}),
            (std::vector<int64_t>{16, 24, 24, 1, 0, 384}));
  ASSERT_EQ(layout(1, 0, sixteen, dims, strides, &offset, &elements), COIL_OK);
  EXPECT_EQ((std::vector<int64_t>{dims[0], strides[0], elements}), (std::vector<int64_t>{16, 1, 16}));
  EXPECT_EQ(layout(1, 1, sixteen, dims, strides, &offset, &elements), COIL_ERROR_NULL_POINTER);

  auto run = lib.symbol<int32_t (*)(const int64_t *, void *const *, void **, void *)>("coil_run_sized");
  std::vector<float> a(16 * 24), out(16, -1);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 24) / 24;
  void *const in[] = {a.data()};
  void *outs[] = {out.data()};
  EXPECT_EQ(run(one, in, outs, nullptr), COIL_ERROR_SIZES);
  EXPECT_EQ(out[0], -1) << "a refused call runs nothing";
  ASSERT_EQ(run(sixteen, in, outs, nullptr), COIL_OK);
  double want = 0;
  for (int j = 0; j < 24; ++j) want += std::exp(double(j) / 24);
  for (float v : out) EXPECT_NEAR(v, want, 1e-4);
}

// Modules called one after the other on a thread (a training step's forward and backward)
// share the thread's arena, as large as the largest asked for: calling the smaller module
// after the larger neither grows it nor changes the results.
TEST(CpuCall, ModulesOnAThreadShareOneArena) {
  std::vector<std::string> names = {"resnet_basic_block", "layernorm"};
  std::vector<Compilation> compiled;
  std::vector<std::unique_ptr<CpuModule>> modules;
  int64_t largest = 0;
  for (const std::string &name : names) {
    compiled.push_back(
        compile_graph(frontend::parse_graph_file("examples/" + name + "/graph.py"), sched::ScheduleOptions{}));
    modules.push_back(std::make_unique<CpuModule>(build_cpu(compiled.back().schedule).so_path));
    largest = std::max(largest, modules.back()->arena_bytes());
  }
  ASSERT_GT(modules[0]->arena_bytes(), modules[1]->arena_bytes()) << "the examples' arenas changed: pick others";
  std::thread([&] {
    EXPECT_EQ(CpuModule::thread_arena_bytes(), 0);
    for (size_t round = 0; round < 2; ++round)
      for (size_t i = 0; i < names.size(); ++i) {
        std::string dir = "examples/" + names[i] + "/";
        std::vector<HostTensor> got = modules[i]->run(read_safetensors(dir + "inputs.safetensors"));
        TensorList expected = read_safetensors(dir + "expected.safetensors");
        for (size_t k = 0; k < got.size(); ++k) {
          const HostTensor *want = find_tensor(expected, output_tensor_name(k));
          ASSERT_TRUE(want);
          const ir::Program &lowered = compiled[i].lowered;
          Tolerance tol = default_tolerance(want->dtype, ir::max_reduction_size(lowered, lowered.outputs[k]));
          EXPECT_TRUE(compare(got[k], *want, tol).pass) << names[i] << " output " << k;
        }
        EXPECT_EQ(CpuModule::thread_arena_bytes(), round_up(largest, 64)) << names[i] << ", round " << round;
      }
  }).join();
}

// examples/<name> compiled for the CPU through the test's cache and checked against
// eager; the folder of its cache entry.
fs::path build_and_check(const std::string &name) {
  std::string dir = "examples/" + name + "/";
  Compilation c = compile_graph(frontend::parse_graph_file(dir + "graph.py"), sched::ScheduleOptions{});
  CpuBuild build = build_cpu(c.schedule);
  TensorList expected = read_safetensors(dir + "expected.safetensors");
  std::vector<HostTensor> outputs = CpuModule(build.so_path).run(read_safetensors(dir + "inputs.safetensors"));
  EXPECT_EQ(outputs.size(), c.graph.outputs().size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HostTensor *want = find_tensor(expected, output_tensor_name(i));
    if (!want) continue;
    Tolerance tol = default_tolerance(want->dtype, ir::max_reduction_size(c.lowered, c.lowered.outputs[i]));
    EXPECT_TRUE(compare(outputs[i], *want, tol).pass) << name << " output " << i << ": " << build.so_path;
  }
  return fs::path(build.so_path).parent_path();
}

// Only the graph: what a process that builds and exits needs (no OpenMP in a fork).
void build_example(const std::string &name) {
  build_cpu(compile_graph(frontend::parse_graph_file("examples/" + name + "/graph.py"), sched::ScheduleOptions{}).schedule);
}

// The "pch" of a kernel entry's meta.json: the key of the header its build used, or "".
std::string pch_used_by(const fs::path &kernel_entry) {
  auto pch = nlohmann::json::parse(read_text(kernel_entry / "meta.json")).at("pch");
  return pch.is_null() ? "" : pch.get<std::string>();
}

std::vector<fs::path> pch_entries(const fs::path &root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator shard(root / "pch", ec), end; !ec && shard != end; shard.increment(ec))
    for (const auto &entry : fs::directory_iterator(shard->path())) out.push_back(entry.path());
  return out;
}

// The header file itself: GCC's .gch or clang's .pch.
fs::path pch_file_in(const fs::path &entry) {
  for (const auto &f : fs::recursive_directory_iterator(entry))
    if (f.path().extension() == ".gch" || f.path().extension() == ".pch") return f.path();
  return {};
}

TEST_F(Runtime, PrecompiledPreludeIsBuiltOnceAndReused) {
  fs::path first = build_and_check("softmax_lastdim");
  std::vector<fs::path> pchs = pch_entries(root());
  ASSERT_EQ(pchs.size(), 1u);
  std::string key = pchs[0].filename().string();
  EXPECT_EQ(pch_used_by(first), key);
  auto built = fs::last_write_time(pch_file_in(pchs[0]));

  fs::path second = build_and_check("layernorm");
  EXPECT_NE(second, first);
  EXPECT_EQ(pch_entries(root()), pchs) << "a second graph reuses the header";
  EXPECT_EQ(fs::last_write_time(pch_file_in(pchs[0])), built) << "and does not build it again";
  EXPECT_EQ(pch_used_by(second), key);
  EXPECT_EQ(cache_info().entries_by_kind["pch"], 1);
  EXPECT_EQ(count_children(root() / "tmp"), 0);
}

TEST_F(Runtime, PrecompiledPreludeCanBeTurnedOff) {
  options::set_override("cpp.pch", "false");
  fs::path entry = build_and_check("softmax_lastdim");
  EXPECT_EQ(pch_used_by(entry), "");
  EXPECT_TRUE(pch_entries(root()).empty());
  options::set_override("cpp.pch", "true");
  EXPECT_NE(build_and_check("softmax_lastdim"), entry) << "the header's key is part of the kernel's";
}

// -H marks a precompiled header GCC read with "!": the flags really lead it to the file.
TEST_F(Runtime, GccReadsThePrecompiledHeader) {
  CxxCompiler cc = find_compiler();
  if (cc.identity.find("clang") != std::string::npos) GTEST_SKIP() << "clang is handed the file by name";
  fs::path include = runtime_include_dir();
  PchRequest r{cc, selected_isa(), shared_object_flags(include, selected_isa(), {}), include, headers_digest(include)};
  std::vector<std::string> argv = pch_flags(r);
  ASSERT_FALSE(argv.empty()) << "the header was not built";
  argv.insert(argv.begin(), cc.path);
  argv.insert(argv.end(), r.flags.begin(), r.flags.end());
  fs::path source = root() / "kernel.cpp";
  std::ofstream(source) << "#include \"coil/prelude.h\"\nint answer() { return 42; }\n";
  argv.insert(argv.end(), {"-H", "-fsyntax-only", source.string()});
  ProcessResult result = run_process(argv);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  fs::path gch = cache_entry_dir("pch", pch_key(r)) / "coil" / "precompiled.h.gch";
  EXPECT_NE(result.err.find("! " + gch.string() + "\n"), std::string::npos) << result.err.substr(0, 2000);
  EXPECT_EQ(pch_rejection(result.err), "");
}

// Two processes need the same header at once: both build it, both succeed, one entry stays.
TEST_F(Runtime, ConcurrentPrecompiledPreludeBuilds) {
  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  const char *graphs[2] = {"softmax_lastdim", "layernorm"};
  pid_t children[2];
  for (int i = 0; i < 2; ++i) {
    children[i] = fork();
    ASSERT_GE(children[i], 0);
    if (children[i] != 0) continue;
    char byte;
    close(gate[1]);
    (void)!read(gate[0], &byte, 1);  // wait until the parent opens the gate
    try {
      build_example(graphs[i]);
      _exit(0);
    } catch (...) {
      _exit(4);
    }
  }
  close(gate[0]);
  close(gate[1]);
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  std::vector<fs::path> pchs = pch_entries(root());
  ASSERT_EQ(pchs.size(), 1u);
  EXPECT_EQ(cache_info().entries_by_kind["cpp"], 2);
  EXPECT_EQ(count_children(root() / "tmp"), 0) << "the loser's copy is gone";
  for (const char *name : graphs) EXPECT_EQ(pch_used_by(build_and_check(name)), pchs[0].filename().string()) << name;
}

// A compiler that cannot precompile headers still builds every kernel, without one.
TEST_F(Runtime, CompilerWithoutPrecompiledHeaders) {
  fs::path script = root().parent_path() / "no-pch-c++";
  std::ofstream(script) << "#!/bin/sh\n"
                           "for a in \"$@\"; do\n"
                           "  if [ \"$a\" = c++-header ]; then echo 'no PCH here' >&2; exit 1; fi\n"
                           "done\n"
                           "exec '" << find_compiler().path << "' \"$@\"\n";
  fs::permissions(script, fs::perms::owner_all);
  options::set_override("cpp.compiler", script.string());
  options::set_override("debug", "true");
  testing::internal::CaptureStderr();
  fs::path entry = build_and_check("softmax_lastdim");
  std::string said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("coil: cannot precompile the kernel prelude with "), std::string::npos) << said.substr(0, 2000);
  EXPECT_NE(said.find("no PCH here"), std::string::npos);
  EXPECT_EQ(pch_used_by(entry), "");
  EXPECT_TRUE(pch_entries(root()).empty());
  EXPECT_EQ(count_children(root() / "tmp"), 0);
}

// A damaged header (a disk error) fails its content hash: it is reported, removed and
// built again, and the next kernel is built with the new one.
TEST_F(Runtime, DamagedPrecompiledHeaderIsRebuilt) {
  build_and_check("softmax_lastdim");
  std::vector<fs::path> pchs = pch_entries(root());
  ASSERT_EQ(pchs.size(), 1u);
  fs::path file = pch_file_in(pchs[0]);
  auto size = fs::file_size(file);
  fs::resize_file(file, 1000);
  testing::internal::CaptureStderr();
  fs::path entry = build_and_check("layernorm");
  std::string said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("coil: the cache entry " + pchs[0].string() + " is damaged ("), std::string::npos) << said;
  std::string sizes = "has 1000 bytes, " + std::to_string(size) + " when it was published";
  EXPECT_NE(said.find(sizes + "); removed, building it again"), std::string::npos) << said;
  EXPECT_EQ(pch_used_by(entry), pchs[0].filename().string());
  EXPECT_GT(fs::file_size(file), 1000u);
}

// The ways a .so in the cache gets damaged, each on a fresh entry: before content hashes,
// the first two crashed the next run (SIGBUS, SIGSEGV) and the third ran another graph.
TEST_F(Runtime, DamagedSharedObjectIsReportedAndRebuilt) {
  SharedObjectRequest other = answer_request();
  other.source = "extern \"C\" int answer() { return 7; }\n";
  std::string stranger = build_shared_object(other);
  std::map<std::string, std::function<void(const fs::path &)>> damages = {
      {"truncated to half", [](const fs::path &so) { fs::resize_file(so, fs::file_size(so) / 2); }},
      {"4 KiB zeroed in the middle",
       [](const fs::path &so) {
         std::fstream f(so, std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(std::streamoff(fs::file_size(so) / 2 - 2048));
         f.write(std::string(4096, '\0').data(), 4096);
       }},
      {"another graph's .so copied in",
       [&](const fs::path &so) { fs::copy_file(stranger, so, fs::copy_options::overwrite_existing); }},
  };
  for (const auto &[what, damage] : damages) {
    std::string so = build_shared_object(answer_request());
    damage(so);
    testing::internal::CaptureStderr();
    bool hit = true;
    EXPECT_EQ(build_shared_object(answer_request(), &hit), so) << what;
    std::string said = testing::internal::GetCapturedStderr();
    EXPECT_FALSE(hit) << what;
    EXPECT_NE(said.find("coil: the cache entry " + fs::path(so).parent_path().string() + " is damaged (answer.so has "),
              std::string::npos)
        << what << ": " << said;
    EXPECT_EQ(SharedLibrary(so).symbol<int (*)()>("answer")(), 42) << what;
    EXPECT_EQ(count_children(root() / "tmp"), 0) << what;
  }
  EXPECT_EQ(cache_info().entries, 2);
}

// An entry written before entries had manifests is not damaged, only older: it is
// replaced without a word.
TEST_F(Runtime, EntryOfAnOlderCoilIsReplacedQuietly) {
  std::string so = build_shared_object(answer_request());
  fs::remove(fs::path(so).parent_path() / "manifest.json");
  testing::internal::CaptureStderr();
  bool hit = true;
  EXPECT_EQ(build_shared_object(answer_request(), &hit), so);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_FALSE(hit);
  EXPECT_TRUE(fs::exists(fs::path(so).parent_path() / "manifest.json"));
}

// An entry is hashed once per process while its files stay as they were: a file damaged
// after a verified hit is found by its changed inode, size or ctime and hashed again.
TEST_F(Runtime, DamageAfterAVerifiedHitIsFound) {
  std::string so = build_shared_object(answer_request());
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // hits remembered only of settled files
  bool hit = false;
  EXPECT_EQ(build_shared_object(answer_request(), &hit), so);
  EXPECT_TRUE(hit);
  EXPECT_TRUE(build_shared_object(answer_request(), &hit) == so && hit);
  {
    std::fstream f(so, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(fs::file_size(so) / 2));
    f.write(std::string(64, 'Z').data(), 64);  // not zeros: the middle of a small .so may be padding
  }
  testing::internal::CaptureStderr();
  EXPECT_EQ(build_shared_object(answer_request(), &hit), so);
  std::string said = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(hit);
  EXPECT_NE(said.find("answer.so has changed since it was published (its SHA-256 differs)"), std::string::npos) << said;
  EXPECT_EQ(SharedLibrary(so).symbol<int (*)()>("answer")(), 42);
}

bool private_to_the_user(const fs::path &path, bool folder) {
  fs::perms want = folder ? fs::perms::owner_all : fs::perms::owner_read | fs::perms::owner_write;
  return (fs::symlink_status(path).permissions() & fs::perms::mask) == want;
}

// A cache hit is code that gets loaded: with a umask that lets everyone write, every
// folder coil makes is still 0700 and every file 0600.
TEST_F(Runtime, CacheIsPrivateWhateverTheUmask) {
  mode_t saved = umask(0);
  build_shared_object(answer_request());
  user_error_of([] { build_shared_object({"int broken( {", {}, "broken", std::nullopt}); });
  CxxCompiler cc = find_compiler();
  fs::path include = runtime_include_dir();
  pch_flags({cc, selected_isa(), shared_object_flags(include, selected_isa(), {}), include, headers_digest(include)});
  umask(saved);
  EXPECT_EQ(cache_info().entries, 2);
  EXPECT_EQ(cache_info().failed_sources, 1);
  EXPECT_TRUE(private_to_the_user(root(), true));
  int64_t checked = 0;
  for (const auto &item : fs::recursive_directory_iterator(root())) {
    EXPECT_TRUE(private_to_the_user(item.path(), item.is_directory())) << item.path();
    ++checked;
  }
  EXPECT_GT(checked, 15);
}

// `COIL_CACHE_DIR=$HOME coil cache clear` must not empty a home folder: a folder that is
// not coil's is refused whole, and coil builds nothing in it either.
TEST_F(Runtime, ClearRefusesAFolderThatIsNotACache) {
  fs::path home = tmp() / "home";
  fs::create_directories(home / "projects");
  std::ofstream(home / "projects" / "thesis.tex") << "chapter 1\n";
  options::set_override("cache_dir", home.string());
  std::string said = home.string() + " is not a coil cache (it has no CACHEDIR.TAG written by coil, and coil did not "
                     "write its 'projects'): ";
  EXPECT_EQ(user_error_of([] { tools::run_cache({"clear"}); }),
            said + "coil removes nothing from it. COIL_CACHE_DIR (option cache_dir) names the cache: point it at a "
                   "coil cache, or at a new or empty folder");
  std::string build_error = user_error_of([] { build_shared_object(answer_request()); });
  EXPECT_EQ(build_error.rfind(said + "coil writes nothing in it.", 0), 0u) << build_error;
  EXPECT_EQ(read_text(home / "projects" / "thesis.tex"), "chapter 1\n");
  EXPECT_EQ(count_children(home), 1) << "coil wrote nothing beside it";
}

// In coil's cache, clear removes the entries and kept sources coil wrote and leaves
// whatever else someone put there.
TEST_F(Runtime, ClearRemovesOnlyWhatCoilWrote) {
  build_shared_object(answer_request());
  user_error_of([] { build_shared_object({"int broken( {", {}, "broken", std::nullopt}); });
  std::string key(64, 'a');
  std::vector<fs::path> strangers = {root() / "notes.txt", root() / "cpp" / "README", root() / "cpp" / "aa" / key / "x",
                                     root() / "failed" / "todo.cpp", root() / "tmp" / "mine"};
  for (const fs::path &p : strangers) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "not coil's\n";
  }
  EXPECT_EQ(cache_info().entries, 1);
  EXPECT_EQ(cache_info().failed_sources, 1);
  cache_clear();
  EXPECT_EQ(cache_info().entries, 0);
  EXPECT_EQ(cache_info().failed_sources, 0);
  for (const fs::path &p : strangers) EXPECT_EQ(read_text(p), "not coil's\n") << p;
  bool hit = true;
  build_shared_object(answer_request(), &hit);
  EXPECT_FALSE(hit);
}

// The command printed after a compile failure, pasted into bash, runs the compiler on the
// kept source and nothing else, even from a cache whose path holds ' and $(...).
TEST_F(Runtime, FailedCommandIsSafeToPaste) {
  fs::path cache = tmp() / "it's $(touch marker) here" / "cache";
  options::set_override("cache_dir", cache.string());
  std::string message = user_error_of([] { build_shared_object({"int broken( {", {}, "broken", std::nullopt}); });
  size_t at = message.rfind("\ncommand: ");
  ASSERT_NE(at, std::string::npos) << message;
  std::string command = message.substr(at + 10);
  fs::path kept = cache / "failed" / fs::path(message.substr(27, message.find(":\n") - 27)).filename();
  ASSERT_TRUE(fs::exists(kept)) << message;
  ProcessResult pasted = run_process({"bash", "-c", "cd " + tmp().string() + " && " + command});
  EXPECT_FALSE(fs::exists(tmp() / "marker")) << "the pasted command ran a command hidden in the path: " << command;
  EXPECT_NE(pasted.exit_code, 0);
  EXPECT_NE(pasted.err.find(kept.string() + ":1:"), std::string::npos) << "it compiled the kept source: " << pasted.err;
}

}  // namespace
}  // namespace coil
