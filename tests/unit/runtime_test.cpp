// The runtime's plumbing: SHA-256 against the FIPS 180-4 test vectors, the ISA table, the
// compiler subprocess, the content-addressed cache (hits, stale entries, failures, two
// processes at once, info and clear) and loading a built shared object.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include "runtime/cache.h"
#include "runtime/compiler.h"
#include "runtime/isa.h"
#include "runtime/loader.h"
#include "runtime/sha256.h"
#include "support/error.h"
#include "support/options.h"
#include "tools/cache_command.h"

namespace coil {
namespace {
namespace fs = std::filesystem;

constexpr const char *kAnswer = "extern \"C\" int answer() { return 42; }\n";

std::string user_error_of(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const UserError &e) {
    return e.message();
  }
  return "(no error)";
}

std::string read_text(const fs::path &path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

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

}  // namespace
}  // namespace coil
