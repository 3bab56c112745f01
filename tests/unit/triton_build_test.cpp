// Triton source to cubin through Triton's own compiler (no GPU needed): ELF cubins for
// sm_90, launch facts read from the metadata, a cache that reuses a kernel only when
// nothing that changes it changed, parallel compiles in one helper run, and the user's
// view of a kernel Triton rejects. Needs a Python with triton (scripts/setup.sh), found
// as coil finds it (option triton.python).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "runtime/cache.h"
#include "runtime/triton_build.h"
#include "support/error.h"
#include "support/options.h"
#include "triton_test_kernels.h"
#include "test_util.h"

namespace coil {
namespace {
using test::read_text;
using test::user_error_of;
namespace fs = std::filesystem;

bool is_elf(const std::string &bytes) { return bytes.size() > 4 && bytes.compare(0, 4, "\x7f" "ELF") == 0; }

// Each test gets an empty cache of its own.
class TritonBuild : public testing::Test {
 protected:
  void SetUp() override {
    options::clear_overrides();
    std::string pattern = (fs::path(testing::TempDir()) / "coil-triton-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    options::set_override("cache_dir", root_.string());
  }
  void TearDown() override {
    options::clear_overrides();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  int64_t entries() { return cache_info().entries_by_kind["triton"]; }

  fs::path root_;
};

TritonCompileRequest syntax_error_kernel() {
  TritonCompileRequest r;
  r.name = "broken_kernel";
  r.source = std::string(test::kTritonImports) + R"(@triton.jit
def broken_kernel(x_ptr, XBLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, XBLOCK)
    tl.store(x_ptr, x)
)";
  r.signature = {{"x_ptr", "*fp32"}, {"XBLOCK", "constexpr"}};
  r.constexprs = {{"XBLOCK", int64_t{128}}};
  return r;
}

TEST_F(TritonBuild, FindsTriton) {
  EXPECT_FALSE(triton_python().empty());
  std::string version;
  ASSERT_NO_THROW(version = triton_version()) << user_error_of([] { triton_version(); });
  EXPECT_EQ(version.substr(0, 2), "3.") << version;
}

TEST_F(TritonBuild, VectorAddAndReductionCompileToCubinsWithTheirFacts) {
  std::vector<TritonBinary> built = build_triton_kernels({test::vector_add_kernel(), test::row_sum_kernel()});
  ASSERT_EQ(built.size(), 2u);

  const TritonBinary &add = built[0];
  EXPECT_TRUE(is_elf(add.cubin));
  EXPECT_FALSE(add.cache_hit);
  EXPECT_EQ(add.facts.name, "add_kernel");
  EXPECT_EQ(add.facts.num_warps, 4);
  EXPECT_EQ(add.facts.num_ctas, 1);
  EXPECT_EQ(add.facts.shared, 0);
  EXPECT_EQ(add.facts.capability, 90);
  ASSERT_EQ(add.facts.args.size(), 4u);  // XBLOCK is a constant, not a parameter
  EXPECT_EQ(add.facts.args[0].name, "x_ptr");
  EXPECT_EQ(add.facts.args[0].type, "*fp32");
  EXPECT_EQ(add.facts.args[3].name, "n");
  EXPECT_EQ(add.facts.args[3].type, "i32");
  ASSERT_EQ(add.facts.hidden_args.size(), 2u);  // Triton 3.6: global and profile scratch
  EXPECT_EQ(add.facts.hidden_args[0].name, "global_scratch");
  EXPECT_EQ(add.facts.hidden_args[0].size, 0);
  EXPECT_EQ(add.facts.hidden_args[1].name, "profile_scratch");
  EXPECT_EQ(add.facts.triton_version, triton_version());

  const TritonBinary &sum = built[1];
  EXPECT_TRUE(is_elf(sum.cubin));
  EXPECT_EQ(sum.facts.name, "row_sum");
  EXPECT_EQ(sum.facts.num_warps, 8);
  EXPECT_GT(sum.facts.shared, 0);  // the warps' partial sums meet in shared memory
  EXPECT_EQ(sum.facts.args.size(), 4u);

  // What the cache keeps, for the user to read: the source, the cubin, facts and meta.
  for (const char *file : {"add_kernel.py", "add_kernel.cubin", "add_kernel.json", "meta.json"})
    EXPECT_TRUE(fs::is_regular_file(add.entry / file)) << file;
  EXPECT_NE(read_text(add.entry / "meta.json").find("\"triton_version\""), std::string::npos);
  EXPECT_EQ(entries(), 2);
}

TEST_F(TritonBuild, SecondBuildIsACacheHit) {
  TritonBinary first = build_triton_kernel(test::vector_add_kernel());
  auto start = std::chrono::steady_clock::now();
  TritonBinary second = build_triton_kernel(test::vector_add_kernel());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(first.cubin, second.cubin);
  EXPECT_EQ(first.entry, second.entry);
  EXPECT_EQ(second.facts.name, "add_kernel");
  EXPECT_LT(seconds, 0.5) << "a hit runs no Python";
  EXPECT_EQ(entries(), 1);
}

TEST_F(TritonBuild, EveryCompileParameterIsPartOfTheKey) {
  TritonBinary base = build_triton_kernel(test::vector_add_kernel());
  TritonCompileRequest warps = test::vector_add_kernel();
  warps.num_warps = 8;
  TritonCompileRequest block = test::vector_add_kernel();
  block.constexprs["XBLOCK"] = int64_t{512};
  TritonCompileRequest unaligned = test::vector_add_kernel();
  unaligned.divisible_by_16.clear();
  TritonCompileRequest ampere = test::vector_add_kernel(80);
  TritonCompileRequest edited = test::vector_add_kernel();
  edited.source += "\n# edited\n";
  std::vector<TritonBinary> built = build_triton_kernels({warps, block, unaligned, ampere, edited});
  for (const TritonBinary &b : built) {
    EXPECT_FALSE(b.cache_hit) << b.entry;
    EXPECT_NE(b.entry, base.entry);
  }
  EXPECT_EQ(built[0].facts.num_warps, 8);
  EXPECT_EQ(built[3].facts.capability, 80);
  EXPECT_EQ(entries(), 6);
}

TEST_F(TritonBuild, AKernelAskedForTwiceIsCompiledOnce) {
  std::vector<TritonBinary> built = build_triton_kernels({test::vector_add_kernel(), test::vector_add_kernel()});
  EXPECT_EQ(built[0].cubin, built[1].cubin);
  EXPECT_EQ(entries(), 1);
}

TEST_F(TritonBuild, LargeSharedMemoryAndGlobalScratchAreRead) {
  std::vector<TritonBinary> built = build_triton_kernels({test::matmul_kernel(), test::scaled_copy_kernel()});
  EXPECT_GT(built[0].facts.shared, 48 * 1024) << "the launcher must raise the shared memory limit for it";
  EXPECT_EQ(built[0].facts.num_warps, 8);
  ASSERT_FALSE(built[1].facts.hidden_args.empty());
  EXPECT_EQ(built[1].facts.hidden_args[0].name, "global_scratch");
  EXPECT_GT(built[1].facts.hidden_args[0].size, 0) << "tensor descriptors made on the device live in global scratch";
}

TEST_F(TritonBuild, SyntaxErrorIsAUserErrorWithTritonsMessage) {
  TritonCompileRequest bad = syntax_error_kernel();
  std::string message = user_error_of([&] { build_triton_kernel(bad); });
  EXPECT_NE(message.find("Triton failed to compile kernel 'broken_kernel'"), std::string::npos) << message;
  EXPECT_NE(message.find("SyntaxError"), std::string::npos) << message;
  EXPECT_NE(message.find("was never closed"), std::string::npos) << message;
  // The source stays for the user, and the message points at it, not at a deleted folder.
  fs::path kept = root_ / "failed";
  ASSERT_TRUE(fs::is_directory(kept));
  fs::path file = fs::directory_iterator(kept)->path();
  EXPECT_EQ(file.extension(), ".py");
  EXPECT_EQ(read_text(file), bad.source);
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  EXPECT_EQ(message.find((root_ / "tmp").string()), std::string::npos) << "a staging folder is gone by now";
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
  EXPECT_EQ(entries(), 0);
}

TEST_F(TritonBuild, SemanticErrorShowsTheKernelLine) {
  TritonCompileRequest bad = test::vector_add_kernel();
  bad.source = std::string(test::kTritonImports) + R"(@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, XBLOCK: tl.constexpr):
    offsets = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + undefined_name)
)";
  std::string message = user_error_of([&] { build_triton_kernel(bad); });
  EXPECT_NE(message.find("Triton failed to compile kernel 'add_kernel'"), std::string::npos) << message;
  EXPECT_NE(message.find("undefined_name is not defined"), std::string::npos) << message;
  EXPECT_NE(message.find(".py\", line 8\n"), std::string::npos) << "the line in the file, not in the function: " << message;
  EXPECT_NE(message.find("tl.store(out_ptr + offsets"), std::string::npos) << message;
}

TEST_F(TritonBuild, KernelsThatCompileAreCachedWhenAnotherFails) {
  std::string message = user_error_of([&] { build_triton_kernels({test::vector_add_kernel(), syntax_error_kernel()}); });
  EXPECT_NE(message.find("broken_kernel"), std::string::npos) << message;
  EXPECT_EQ(message.find("add_kernel"), std::string::npos) << message;
  EXPECT_TRUE(build_triton_kernel(test::vector_add_kernel()).cache_hit);
}

TEST_F(TritonBuild, MissingPythonSaysWhatToSet) {
  options::set_override("triton.python", (root_ / "no-such-python").string());
  std::string message = user_error_of([] { build_triton_kernel(test::vector_add_kernel()); });
  EXPECT_EQ(message, str_cat("cannot compile Triton kernels: cannot run ", (root_ / "no-such-python").string(),
                             ": No such file or directory\nset COIL_TRITON_PYTHON (option triton.python) to a Python "
                             "with triton, or run scripts/setup.sh, which makes coil's .venv with it"));
}

TEST_F(TritonBuild, PythonWithoutTritonSaysHowToInstallIt) {
  // The system's Python without its site-packages (-S) and environment (-I): no triton.
  fs::path fake = root_ / "python-without-triton";
  std::ofstream(fake) << "#!/bin/sh\nexec python3 -I -S \"$@\"\n";
  fs::permissions(fake, fs::perms::owner_all);
  options::set_override("triton.python", fake.string());
  std::string message = user_error_of([] { build_triton_kernel(test::vector_add_kernel()); });
  EXPECT_EQ(message.find("cannot compile Triton kernels: "), 0u) << message;
  EXPECT_NE(message.find(" has no triton package\nset COIL_TRITON_PYTHON"), std::string::npos) << message;
}

TEST(TritonLaunchFacts, MalformedFactsNameTheirFile) {
  std::string message = user_error_of([] { parse_launch_facts("{\"name\": \"k\"}", "/x/k.json"); });
  EXPECT_NE(message.find("malformed launch facts in /x/k.json"), std::string::npos) << message;
  TritonLaunchFacts f = parse_launch_facts(R"({"name": "k", "num_warps": 2, "shared": 5,
      "args": [{"name": "p", "type": "*fp16"}], "hidden_args": [{"name": "global_scratch", "size": 64, "align": 16}],
      "target": {"backend": "cuda", "arch": 90, "warp_size": 32}})",
                                           "k.json");
  EXPECT_EQ(f.num_ctas, 1);  // older Tritons may not say
  EXPECT_EQ(f.hidden_args[0].size, 64);
  EXPECT_EQ(f.hidden_args[0].align, 16);
  EXPECT_EQ(f.args[0].type, "*fp16");
}

}  // namespace
}  // namespace coil
