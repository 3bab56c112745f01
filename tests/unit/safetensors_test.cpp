// Tests for HostTensor, the f16/bf16 conversions and the safetensors reader and writer:
// the PyTorch-written example files, round trips of every dtype, exact error messages
// for malformed files, and that writing is atomic.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/host_tensor.h"
#include "io/safetensors.h"

namespace coil {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Helpers

// A path in the source tree; COIL_SOURCE_DIR, when set, says where the tree is.
fs::path source_path(const std::string &relative) {
  const char *root = std::getenv("COIL_SOURCE_DIR");
  return root && *root ? fs::path(root) / relative : fs::path(relative);
}

std::vector<std::byte> read_bytes(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

std::vector<std::byte> u64_le(uint64_t v) {
  std::vector<std::byte> out(8);
  for (int i = 0; i < 8; ++i) out[i] = std::byte(v >> (8 * i));
  return out;
}

// A file with the given header text (its length field computed) and a zero buffer.
std::vector<std::byte> make_file(const std::string &header, size_t buffer_bytes) {
  std::vector<std::byte> out = u64_le(header.size());
  for (char c : header) out.push_back(std::byte(c));
  out.resize(out.size() + buffer_bytes);
  return out;
}

constexpr const char *kBadName = "bad.safetensors";

// The message parse_safetensors gives for `bytes`, after checking that the error
// names the file; "<parsed>" when there is no error.
std::string parse_error(const std::vector<std::byte> &bytes) {
  try {
    parse_safetensors(bytes.data(), bytes.size(), kBadName);
  } catch (const UserError &e) {
    EXPECT_EQ(e.loc().file, kBadName);
    EXPECT_EQ(e.loc().line, 0);
    return e.message();
  }
  return "<parsed>";
}

std::string parse_error(const std::string &header, size_t buffer_bytes) {
  return parse_error(make_file(header, buffer_bytes));
}

// A header holding one tensor 'a_0' whose entry is `entry`.
std::string one_tensor(const std::string &entry) { return R"({"a_0":)" + entry + "}"; }

bool same_bytes(const HostTensor &a, const HostTensor &b) {
  return a.data.size() == b.data.size() &&
         (a.data.size() == 0 || std::memcmp(a.data.data(), b.data.data(), a.data.size()) == 0);
}

void expect_same_tensors(const TensorList &expected, const TensorList &actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].first);
    EXPECT_EQ(expected[i].first, actual[i].first);
    EXPECT_EQ(expected[i].second.dtype, actual[i].second.dtype);
    EXPECT_EQ(expected[i].second.sizes, actual[i].second.sizes);
    EXPECT_TRUE(same_bytes(expected[i].second, actual[i].second));
  }
}

// A tensor whose bytes differ from position to position and from dtype to dtype, so
// any misplaced or dropped byte shows. Bools hold only 0 and 1.
HostTensor distinctive(DType dtype, std::vector<int64_t> sizes) {
  HostTensor t = HostTensor::zeros(dtype, std::move(sizes));
  for (size_t i = 0; i < t.data.size(); ++i) {
    unsigned v = dtype == DType::Bool ? i % 3 == 0 : (i * 131 + 7 * unsigned(dtype) + 1) & 0xff;
    t.data.data()[i] = std::byte(v);
  }
  return t;
}

std::vector<fs::path> example_files() {
  std::vector<fs::path> files;
  for (const auto &dir : fs::directory_iterator(source_path("examples"))) {
    if (!dir.is_directory()) continue;
    for (const char *name : {"inputs.safetensors", "expected.safetensors"})
      if (fs::exists(dir.path() / name)) files.push_back(dir.path() / name);
  }
  std::sort(files.begin(), files.end());
  return files;
}

TensorList read_example(const std::string &relative) {
  return read_safetensors(source_path("examples/" + relative).string());
}

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("coil_safetensors_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path &path() const { return path_; }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto &e : fs::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  fs::path path_;
};

// ---------------------------------------------------------------------------
// The example files written by PyTorch

TEST(SafetensorsExamples, EveryExampleFileReads) {
  std::vector<fs::path> files = example_files();
  ASSERT_GE(files.size(), 2u) << "no examples under " << source_path("examples");
  for (const fs::path &file : files) {
    SCOPED_TRACE(file.string());
    TensorList tensors;
    ASSERT_NO_THROW(tensors = read_safetensors(file.string()));
    EXPECT_FALSE(tensors.empty());
    for (const auto &[name, t] : tensors) EXPECT_EQ(t.data.size(), t.nbytes()) << name;
  }
}

TEST(SafetensorsExamples, SumAllInputIsF32Vector) {
  TensorList tensors = read_example("sum_all/inputs.safetensors");
  const HostTensor *a = find_tensor(tensors, "a_0");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::F32);
  EXPECT_EQ(a->sizes, std::vector<int64_t>{65536});
  EXPECT_EQ(a->nbytes(), 262144u);
  EXPECT_EQ(a->describe(), "f32[65536]");
  EXPECT_EQ(find_tensor(tensors, "missing"), nullptr);

  TensorList expected = read_example("sum_all/expected.safetensors");
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_EQ(expected[0].second.sizes, std::vector<int64_t>{});
  EXPECT_EQ(expected[0].second.numel(), 1);
}

TEST(SafetensorsExamples, RmsnormBf16InputsDecode) {
  TensorList tensors = read_example("rmsnorm_bf16/inputs.safetensors");
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].first, "a_0");
  EXPECT_EQ(tensors[1].first, "a_1");
  const HostTensor &a = tensors[0].second;
  EXPECT_EQ(a.dtype, DType::BF16);
  EXPECT_EQ(a.sizes, (std::vector<int64_t>{64, 256}));
  EXPECT_EQ(a.describe(), "bf16[64, 256]");
  EXPECT_EQ(tensors[1].second.sizes, std::vector<int64_t>{256});

  double first = a.element_as_double(0);
  bool all_equal = true;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double v = a.element_as_double(i);
    ASSERT_TRUE(std::isfinite(v)) << "element " << i;
    all_equal = all_equal && v == first;
  }
  EXPECT_FALSE(all_equal);
}

TEST(SafetensorsExamples, ResnetBatchCountIsZeroDimI64) {
  TensorList tensors = read_example("resnet_basic_block/inputs.safetensors");
  const HostTensor *t = find_tensor(tensors, "b_bn1_num_batches_tracked");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, DType::I64);
  EXPECT_EQ(t->sizes, std::vector<int64_t>{});
  EXPECT_EQ(t->numel(), 1);
  EXPECT_EQ(t->nbytes(), 8u);
  EXPECT_EQ(t->describe(), "i64[]");
  // The header lists the batch counters first; the list keeps that order.
  EXPECT_EQ(tensors[0].first, "b_bn1_num_batches_tracked");
  EXPECT_EQ(tensors[1].first, "b_bn2_num_batches_tracked");
}

TEST(SafetensorsExamples, VarMeanHasTwoOutputsInOrder) {
  TensorList tensors = read_example("var_mean_lastdim/expected.safetensors");
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].first, "out0");
  EXPECT_EQ(tensors[1].first, "out1");
  for (const auto &[name, t] : tensors) EXPECT_EQ(t.describe(), "f32[64]") << name;
}

// coil writes the same bytes PyTorch does, so rewritten examples are identical files.
TEST(SafetensorsExamples, RewritingReproducesTensorsAndBytes) {
  TempDir dir;
  for (const fs::path &file : example_files()) {
    SCOPED_TRACE(file.string());
    TensorList original = read_safetensors(file.string());
    std::string copy = (dir.path() / "copy.safetensors").string();
    write_safetensors(copy, original);
    expect_same_tensors(original, read_safetensors(copy));
    EXPECT_EQ(read_bytes(file), read_bytes(copy));
  }
}

// ---------------------------------------------------------------------------
// Round trips

TEST(SafetensorsRoundTrip, EveryDTypeAndShape) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3}, {3, 0, 2}, {0}};
  for (DType dtype : kAllDTypes) {
    TensorList tensors;
    for (size_t i = 0; i < shapes.size(); ++i)
      tensors.emplace_back("t" + std::to_string(i), distinctive(dtype, shapes[i]));
    SCOPED_TRACE(std::string(safetensors_name(dtype)));
    std::vector<std::byte> bytes = serialize_safetensors(tensors);
    expect_same_tensors(tensors, parse_safetensors(bytes.data(), bytes.size(), "mem"));
  }
}

TEST(SafetensorsRoundTrip, MixedDTypesKeepListOrder) {
  TensorList tensors;
  tensors.emplace_back("zeta", distinctive(DType::F64, {3}));
  tensors.emplace_back("alpha", distinctive(DType::BF16, {2, 2}));
  tensors.emplace_back("mid", distinctive(DType::Bool, {7}));
  tensors.emplace_back("last", distinctive(DType::I16, {}));
  std::vector<std::byte> bytes = serialize_safetensors(tensors);
  TensorList back = parse_safetensors(bytes.data(), bytes.size(), "mem");
  expect_same_tensors(tensors, back);

  // The data buffer starts 8-byte aligned and holds the tensors back to back.
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | std::to_integer<uint64_t>(bytes[i]);
  EXPECT_EQ(header_size % 8, 0u);
  auto header = nlohmann::json::parse(reinterpret_cast<const char *>(bytes.data()) + 8,
                                      reinterpret_cast<const char *>(bytes.data()) + 8 + header_size);
  EXPECT_EQ(header["zeta"]["data_offsets"], nlohmann::json::array({0, 24}));
  EXPECT_EQ(header["alpha"]["data_offsets"], nlohmann::json::array({24, 32}));
  EXPECT_EQ(header["mid"]["data_offsets"], nlohmann::json::array({32, 39}));
  EXPECT_EQ(header["last"]["data_offsets"], nlohmann::json::array({39, 41}));
  EXPECT_EQ(header["alpha"]["dtype"], "BF16");
  EXPECT_EQ(header["mid"]["dtype"], "BOOL");
  EXPECT_EQ(bytes.size(), 8 + header_size + 41);
}

TEST(SafetensorsRoundTrip, EmptyListIsAPaddedEmptyObject) {
  std::vector<std::byte> bytes = serialize_safetensors({});
  ASSERT_EQ(bytes.size(), 16u);
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(bytes.data()) + 8, 8), "{}      ");
  EXPECT_TRUE(parse_safetensors(bytes.data(), bytes.size(), "mem").empty());
}

TEST(SafetensorsRoundTrip, WriteThenReadWithMetadata) {
  TempDir dir;
  TensorList tensors;
  tensors.emplace_back("x", distinctive(DType::F16, {4, 3}));
  tensors.emplace_back("y", distinctive(DType::U8, {9}));
  std::string path = (dir.path() / "out.safetensors").string();
  write_safetensors(path, tensors, {{"format", "pt"}, {"producer", "coil"}});
  expect_same_tensors(tensors, read_safetensors(path));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.safetensors"});

  std::vector<std::byte> bytes = read_bytes(path);
  std::string text(reinterpret_cast<const char *>(bytes.data()) + 8, bytes.size() - 8);
  EXPECT_TRUE(text.starts_with(R"({"__metadata__":{"format":"pt","producer":"coil"},"x":)")) << text;

  // Overwriting replaces the file in place.
  tensors.pop_back();
  write_safetensors(path, tensors);
  expect_same_tensors(tensors, read_safetensors(path));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.safetensors"});
}

// ---------------------------------------------------------------------------
// HostTensor

TEST(HostTensor, AlignedBufferIsAlignedZeroedAndCopiesDeeply) {
  AlignedBuffer a(100);
  EXPECT_EQ(a.size(), 100u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % AlignedBuffer::kAlignment, 0u);
  for (std::byte b : a.bytes()) EXPECT_EQ(b, std::byte{0});
  a.data()[3] = std::byte{42};

  AlignedBuffer b = a;
  b.data()[3] = std::byte{7};
  EXPECT_EQ(a.data()[3], std::byte{42});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % AlignedBuffer::kAlignment, 0u);

  AlignedBuffer c = std::move(a);
  EXPECT_EQ(c.size(), 100u);
  EXPECT_EQ(c.data()[3], std::byte{42});
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty

  b = c;
  EXPECT_EQ(b.data()[3], std::byte{42});
  AlignedBuffer empty;
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_NE(empty.data(), nullptr);
}

TEST(HostTensor, ZerosShapeAndSize) {
  HostTensor t = HostTensor::zeros(DType::F64, {2, 3, 4});
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 192u);
  EXPECT_EQ(t.data.size(), 192u);
  EXPECT_EQ(t.describe(), "f64[2, 3, 4]");
  EXPECT_EQ(HostTensor::zeros(DType::I32, {}).numel(), 1);
  EXPECT_EQ(HostTensor::zeros(DType::I32, {4, 0}).nbytes(), 0u);
  EXPECT_EQ(HostTensor::zeros(DType::Bool, {3}).describe(), "b8[3]");
}

TEST(HostTensor, ZerosRejectsSizesThatOverflow) {
  int64_t big = int64_t{1} << 40;
  try {
    HostTensor::zeros(DType::F32, {big, big});
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_EQ(e.message(), "a f32[1099511627776, 1099511627776] tensor has more bytes than memory can address");
  }
  EXPECT_THROW(HostTensor::zeros(DType::F64, {int64_t{1} << 61}), UserError);
}

TEST(HostTensor, PtrChecksElementSize) {
  HostTensor t = HostTensor::zeros(DType::F32, {2});
  t.ptr<float>()[1] = 2.5f;
  EXPECT_EQ(std::as_const(t).ptr<float>()[1], 2.5f);
  EXPECT_THROW(t.ptr<double>(), InternalError);
  EXPECT_THROW(t.ptr<uint16_t>(), InternalError);
  EXPECT_THROW(t.element_as_double(2), InternalError);
  EXPECT_THROW(t.element_as_double(-1), InternalError);
}

TEST(HostTensor, ElementAsDoubleDecodesEveryDType) {
  auto one = [](DType dtype, auto value) {
    HostTensor t = HostTensor::zeros(dtype, {2});
    t.ptr<decltype(value)>()[1] = value;
    return t.element_as_double(1);
  };
  EXPECT_EQ(one(DType::Bool, uint8_t{1}), 1.0);
  EXPECT_EQ(one(DType::Bool, uint8_t{0}), 0.0);
  EXPECT_EQ(one(DType::U8, uint8_t{200}), 200.0);
  EXPECT_EQ(one(DType::I8, int8_t{-100}), -100.0);
  EXPECT_EQ(one(DType::I16, int16_t{-30000}), -30000.0);
  EXPECT_EQ(one(DType::I32, int32_t{-2000000000}), -2000000000.0);
  EXPECT_EQ(one(DType::I64, int64_t{-(int64_t{1} << 50)}), -std::ldexp(1.0, 50));
  EXPECT_EQ(one(DType::F16, float_to_half(-2.5f)), -2.5);
  EXPECT_EQ(one(DType::BF16, float_to_bf16(3.0f)), 3.0);
  EXPECT_EQ(one(DType::F32, 0.1f), double(0.1f));
  EXPECT_EQ(one(DType::F64, 0.1), 0.1);
}

// ---------------------------------------------------------------------------
// f16 and bf16

TEST(HalfConversions, KnownHalfPatterns) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(0.0f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half(std::ldexp(1023.0f, -24)), 0x03ff);  // largest subnormal

  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);  // nearest half to 1/3
  EXPECT_EQ(half_to_float(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7c01)));
}

TEST(HalfConversions, HalfRoundsToNearestEven) {
  // Halfway between 1 and the next half (1 + 2^-10) goes to the even mantissa, 1.
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // Halfway between 1 + 2^-10 (odd) and 1 + 2^-9 goes up to the even one.
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above halfway rounds up.
  EXPECT_EQ(float_to_half(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3c01);
  // 65520 is halfway from 65504 to 65536 and rounds to infinity; just below does not.
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_half(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(float_to_half(1e10f), 0x7c00);
  // Subnormals: 2^-25 is halfway between 0 and the smallest subnormal and goes to 0;
  // 3 * 2^-25 is halfway between subnormals 1 and 2 and goes to 2.
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(float_to_half(-std::ldexp(1.0f, -30)), 0x8000);
  // Rounding the largest subnormal up carries into the smallest normal.
  EXPECT_EQ(float_to_half(std::ldexp(2047.0f, -25)), 0x0400);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(HalfConversions, HalfNaNStaysNaN) {
  uint16_t h = float_to_half(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(h & 0x7c00, 0x7c00);
  EXPECT_NE(h & 0x03ff, 0);
  // A signalling NaN whose payload sits only in bits the conversion drops is still NaN.
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::bit_cast<float>(0x7f800001u)))));
  EXPECT_EQ(float_to_half(std::bit_cast<float>(0xffc00000u)) & 0x8000, 0x8000);
}

TEST(HalfConversions, EveryHalfSurvivesARoundTrip) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    float f = half_to_float(uint16_t(bits));
    if (std::isnan(f))
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f)))) << std::hex << bits;
    else
      EXPECT_EQ(float_to_half(f), bits) << std::hex << bits;
  }
}

TEST(HalfConversions, KnownBf16Patterns) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x00010000u)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);   // rounds to inf
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xc000), -2.0f);
  EXPECT_EQ(bf16_to_float(0x7f7f), std::bit_cast<float>(0x7f7f0000u));  // largest finite
  EXPECT_EQ(bf16_to_float(0x0001), std::bit_cast<float>(0x00010000u));
  EXPECT_TRUE(std::isnan(bf16_to_float(0x7fc0)));
}

TEST(HalfConversions, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie, down to even
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie, up to even
  EXPECT_EQ(float_to_bf16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)), 0x3f81);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f80ffffu)), 0x3f81);
}

TEST(HalfConversions, Bf16NaNStaysNaN) {
  // 0x7f800001 would truncate to infinity; it must stay NaN.
  uint16_t b = float_to_bf16(std::bit_cast<float>(0x7f800001u));
  EXPECT_TRUE(std::isnan(bf16_to_float(b)));
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0xffc00000u)), 0xffc0);
}

TEST(HalfConversions, EveryBf16SurvivesARoundTrip) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    float f = bf16_to_float(uint16_t(bits));
    if (std::isnan(f))
      EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(f)))) << std::hex << bits;
    else
      EXPECT_EQ(float_to_bf16(f), bits) << std::hex << bits;
  }
}

// ---------------------------------------------------------------------------
// Malformed files: each problem has its own exact message.

TEST(SafetensorsErrors, TooShortForTheLengthField) {
  EXPECT_EQ(parse_error(std::vector<std::byte>(5)),
            "file is 5 bytes, shorter than the 8-byte header length");
  EXPECT_EQ(parse_error(std::vector<std::byte>()),
            "file is 0 bytes, shorter than the 8-byte header length");
}

TEST(SafetensorsErrors, HeaderLengthBeyondTheFile) {
  std::vector<std::byte> bytes = u64_le(999999);
  bytes.resize(120, std::byte{' '});
  EXPECT_EQ(parse_error(bytes), "header length 999999 exceeds the file size 120");

  bytes = u64_le(115);
  bytes.resize(120, std::byte{' '});
  EXPECT_EQ(parse_error(bytes), "header length 115 plus the 8-byte length field exceeds the file size 120");

  bytes = u64_le(~uint64_t{0});
  EXPECT_EQ(parse_error(bytes), "header length 18446744073709551615 exceeds the file size 8");
}

TEST(SafetensorsErrors, HeaderNotJson) {
  EXPECT_EQ(parse_error(R"({"a_0": )", 0),
            "header is not valid JSON: parse error at line 1, column 9: syntax error while parsing "
            "value - unexpected end of input; expected '[', '{', or a literal");
  EXPECT_TRUE(parse_error("", 0).starts_with("header is not valid JSON: "));
  EXPECT_TRUE(parse_error("{} trailing", 0).starts_with("header is not valid JSON: "));
  EXPECT_TRUE(parse_error("{\"\xff\": 1}", 0).starts_with("header is not valid JSON: "));
}

TEST(SafetensorsErrors, HeaderNotAnObject) {
  EXPECT_EQ(parse_error("[1, 2]", 0), "header must be a JSON object, not an array");
  EXPECT_EQ(parse_error("7", 0), "header must be a JSON object, not 7");
  EXPECT_EQ(parse_error("null", 0), "header must be a JSON object, not null");
}

TEST(SafetensorsErrors, EntryNotAnObjectOrMissingFields) {
  EXPECT_EQ(parse_error(one_tensor(R"("F32")"), 0),
            "tensor 'a_0': header entry must be an object, not a string");
  EXPECT_EQ(parse_error(one_tensor(R"({"shape": [1], "data_offsets": [0, 4]})"), 4),
            "tensor 'a_0': missing field 'dtype'");
  EXPECT_EQ(parse_error(one_tensor(R"({"dtype": "F32", "data_offsets": [0, 4]})"), 4),
            "tensor 'a_0': missing field 'shape'");
  EXPECT_EQ(parse_error(one_tensor(R"({"dtype": "F32", "shape": [1]})"), 4),
            "tensor 'a_0': missing field 'data_offsets'");
}

TEST(SafetensorsErrors, BadDType) {
  EXPECT_EQ(parse_error(one_tensor(R"({"dtype": "F8", "shape": [1], "data_offsets": [0, 1]})"), 1),
            "tensor 'a_0': unknown dtype 'F8'");
  EXPECT_EQ(parse_error(one_tensor(R"({"dtype": "f32", "shape": [1], "data_offsets": [0, 4]})"), 4),
            "tensor 'a_0': unknown dtype 'f32'");
  EXPECT_EQ(parse_error(one_tensor(R"({"dtype": 32, "shape": [1], "data_offsets": [0, 4]})"), 4),
            "tensor 'a_0': dtype must be a string, not 32");
}

TEST(SafetensorsErrors, BadShape) {
  auto with_shape = [](const std::string &shape) {
    return parse_error(one_tensor(R"({"dtype": "F32", "shape": )" + shape + R"(, "data_offsets": [0, 4]})"), 4);
  };
  EXPECT_EQ(with_shape(R"("4")"), "tensor 'a_0': shape must be an array, not a string");
  EXPECT_EQ(with_shape("[1, -3]"), "tensor 'a_0': shape entry 1 must be a non-negative 64-bit integer, not -3");
  EXPECT_EQ(with_shape("[1.5]"), "tensor 'a_0': shape entry 0 must be a non-negative 64-bit integer, not 1.5");
  EXPECT_EQ(with_shape("[1.0]"), "tensor 'a_0': shape entry 0 must be a non-negative 64-bit integer, not 1.0");
  EXPECT_EQ(with_shape(R"(["1"])"), "tensor 'a_0': shape entry 0 must be a non-negative 64-bit integer, not a string");
  EXPECT_EQ(with_shape("[[[[1]]]]"), "tensor 'a_0': shape entry 0 must be a non-negative 64-bit integer, not an array");
  EXPECT_EQ(with_shape("[18446744073709551615]"),
            "tensor 'a_0': shape entry 0 must be a non-negative 64-bit integer, not 18446744073709551615");
}

TEST(SafetensorsErrors, ShapeWhoseSizeOverflows) {
  EXPECT_EQ(parse_error(one_tensor(R"({"dtype": "F32", "shape": [1099511627776, 1099511627776], "data_offsets": [0, 4]})"), 4),
            "tensor 'a_0': shape [1099511627776, 1099511627776] of F32 has more bytes than a 64-bit count can hold");
  // The element count fits in int64 but the byte count does not.
  EXPECT_EQ(parse_error(one_tensor(R"({"dtype": "F64", "shape": [4611686018427387904], "data_offsets": [0, 4]})"), 4),
            "tensor 'a_0': shape [4611686018427387904] of F64 has more bytes than a 64-bit count can hold");
  // A zero anywhere makes an empty tensor, however large the other sizes.
  std::vector<std::byte> ok = make_file(
      one_tensor(R"({"dtype": "F32", "shape": [1099511627776, 1099511627776, 0], "data_offsets": [0, 0]})"), 0);
  TensorList tensors = parse_safetensors(ok.data(), ok.size(), "mem");
  EXPECT_EQ(tensors.at(0).second.numel(), 0);
}

TEST(SafetensorsErrors, BadDataOffsets) {
  auto with_offsets = [](const std::string &offsets, size_t buffer) {
    return parse_error(one_tensor(R"({"dtype": "F32", "shape": [1], "data_offsets": )" + offsets + "}"), buffer);
  };
  const std::string malformed = "tensor 'a_0': data_offsets must be [begin, end] with non-negative integers";
  EXPECT_EQ(with_offsets("[0]", 4), malformed);
  EXPECT_EQ(with_offsets("[0, 4, 8]", 8), malformed);
  EXPECT_EQ(with_offsets("[-1, 3]", 4), malformed);
  EXPECT_EQ(with_offsets("[0, 4.0]", 4), malformed);
  EXPECT_EQ(with_offsets(R"("0-4")", 4), malformed);
  EXPECT_EQ(with_offsets("[10, 5]", 16), "tensor 'a_0': data_offsets [10, 5] end before they begin");
  EXPECT_EQ(with_offsets("[0, 900]", 512), "tensor 'a_0': data_offsets [0, 900] exceed the data buffer of 512 bytes");
  EXPECT_EQ(with_offsets("[18446744073709551611, 18446744073709551615]", 512),
            "tensor 'a_0': data_offsets [18446744073709551611, 18446744073709551615] exceed the data buffer of 512 bytes");
}

TEST(SafetensorsErrors, ShapeDisagreesWithOffsets) {
  EXPECT_EQ(parse_error(one_tensor(R"({"dtype": "F32", "shape": [64, 256], "data_offsets": [0, 100]})"), 512),
            "tensor 'a_0': shape [64, 256] of F32 needs 65536 bytes but data_offsets span 100");
  EXPECT_EQ(parse_error(one_tensor(R"({"dtype": "BF16", "shape": [], "data_offsets": [0, 4]})"), 4),
            "tensor 'a_0': shape [] of BF16 needs 2 bytes but data_offsets span 4");
}

TEST(SafetensorsErrors, OverlappingTensors) {
  EXPECT_EQ(parse_error(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                            "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", 12),
            "tensors 'a' and 'b' overlap: data_offsets [0, 8] and [4, 12]");
  // Header order does not matter, and a long tensor overlaps one past its neighbour.
  EXPECT_EQ(parse_error(R"({"c": {"dtype": "U8", "shape": [2], "data_offsets": [6, 8]},
                            "b": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]},
                            "a": {"dtype": "U8", "shape": [10], "data_offsets": [0, 10]}})", 10),
            "tensors 'a' and 'b' overlap: data_offsets [0, 10] and [2, 4]");
  // Empty tensors occupy no bytes, so they overlap nothing.
  std::vector<std::byte> ok = make_file(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                                            "e": {"dtype": "U8", "shape": [0], "data_offsets": [2, 2]},
                                            "f": {"dtype": "U8", "shape": [0], "data_offsets": [2, 2]}})", 4);
  EXPECT_EQ(parse_safetensors(ok.data(), ok.size(), "mem").size(), 3u);
}

TEST(SafetensorsErrors, DuplicateNames) {
  EXPECT_EQ(parse_error(R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                            "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})", 2),
            "tensor 'a' appears more than once in the header");
  EXPECT_EQ(parse_error(R"({"__metadata__": {}, "__metadata__": {}})", 0),
            "__metadata__ appears more than once in the header");
  // The same key inside different entries is no duplicate.
  std::vector<std::byte> ok = make_file(R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                                            "b": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})", 2);
  EXPECT_EQ(parse_safetensors(ok.data(), ok.size(), "mem").size(), 2u);
}

TEST(SafetensorsErrors, BadMetadata) {
  EXPECT_EQ(parse_error(R"({"__metadata__": "pt"})", 0), "__metadata__ must be an object, not a string");
  EXPECT_EQ(parse_error(R"({"__metadata__": {"format": "pt", "n": 1}})", 0),
            "__metadata__ entry 'n' must be a string, not 1");
  std::vector<std::byte> ok = make_file(R"({"__metadata__": {"format": "pt"}})", 0);
  EXPECT_TRUE(parse_safetensors(ok.data(), ok.size(), "mem").empty());
}

TEST(SafetensorsErrors, UnreadableFile) {
  TempDir dir;
  std::string missing = (dir.path() / "nope.safetensors").string();
  try {
    read_safetensors(missing);
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_EQ(e.message(), "cannot open: No such file or directory");
    EXPECT_EQ(e.loc().file, missing);
    EXPECT_EQ(e.render(), missing + ": error: cannot open: No such file or directory");
  }
  try {
    read_safetensors(dir.path().string());
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_EQ(e.message(), "cannot read: Is a directory");
  }
}

// Every truncation and every single-byte change of a valid file either parses or is a
// UserError: nothing else escapes, nothing crashes (the sanitizer build checks reads).
TEST(SafetensorsErrors, DamagedFilesNeverEscapeAsOtherErrors) {
  TensorList tensors;
  tensors.emplace_back("a", distinctive(DType::F16, {2, 3}));
  tensors.emplace_back("b", distinctive(DType::I64, {}));
  std::vector<std::byte> good = serialize_safetensors(tensors, {{"k", "v"}});
  auto survives = [](const std::vector<std::byte> &bytes) {
    try {
      parse_safetensors(bytes.data(), bytes.size(), "fuzz");
    } catch (const UserError &) {
    }
  };
  for (size_t n = 0; n <= good.size(); ++n)
    EXPECT_NO_THROW(survives(std::vector<std::byte>(good.begin(), good.begin() + n))) << "first " << n << " bytes";
  for (size_t i = 0; i < good.size(); ++i) {
    for (int value : {0x00, 0x22, 0x2c, 0x30, 0x39, 0x5b, 0x5d, 0x7b, 0x7d, 0xff}) {
      std::vector<std::byte> bad = good;
      bad[i] = std::byte(value);
      EXPECT_NO_THROW(survives(bad)) << "byte " << i << " = " << value;
    }
  }
}

TEST(SafetensorsErrors, DeeplyNestedHeaderIsAnErrorNotACrash) {
  // Deep enough that anything recursing over the nesting would overflow the stack.
  const size_t depth = 200000;
  EXPECT_EQ(parse_error(std::string(depth, '[') + std::string(depth, ']'), 0),
            "header must be a JSON object, not an array");
  std::string shape = std::string(depth, '[') + std::string(depth, ']');
  EXPECT_EQ(parse_error(one_tensor(R"({"dtype": "F32", "shape": )" + shape + R"(, "data_offsets": [0, 4]})"), 4),
            "tensor 'a_0': shape entry 0 must be a non-negative 64-bit integer, not an array");
}

// ---------------------------------------------------------------------------
// Writing

TEST(SafetensorsWrite, MissingDirectoryFailsAndLeavesNothing) {
  TempDir dir;
  fs::path missing_dir = dir.path() / "missing";
  std::string path = (missing_dir / "out.safetensors").string();
  TensorList tensors;
  tensors.emplace_back("x", distinctive(DType::F32, {4}));
  try {
    write_safetensors(path, tensors);
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_EQ(e.message(), "cannot write: No such file or directory");
    EXPECT_EQ(e.loc().file, path);
  }
  EXPECT_FALSE(fs::exists(missing_dir));
  EXPECT_TRUE(dir.entries().empty());
}

TEST(SafetensorsWrite, FailedRenameRemovesTheTemporaryFile) {
  TempDir dir;
  // The destination is a directory, so the final rename fails after the data is written.
  fs::create_directory(dir.path() / "taken");
  std::string path = (dir.path() / "taken").string();
  TensorList tensors;
  tensors.emplace_back("x", distinctive(DType::F32, {4}));
  try {
    write_safetensors(path, tensors);
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_EQ(e.message(), "cannot move the temporary file into place: Is a directory");
    EXPECT_EQ(e.loc().file, path);
  }
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"taken"});
  EXPECT_TRUE(fs::is_empty(dir.path() / "taken"));
}

TEST(SafetensorsWrite, RejectsNamesTheFormatCannotHold) {
  TempDir dir;
  std::string path = (dir.path() / "out.safetensors").string();
  auto write_error = [&](const TensorList &tensors) {
    try {
      write_safetensors(path, tensors);
    } catch (const UserError &e) {
      EXPECT_EQ(e.loc().file, path);
      return e.message();
    }
    return std::string("<written>");
  };
  TensorList dup;
  dup.emplace_back("x", distinctive(DType::U8, {1}));
  dup.emplace_back("x", distinctive(DType::U8, {2}));
  EXPECT_EQ(write_error(dup), "tensor 'x' appears more than once");

  TensorList reserved;
  reserved.emplace_back("__metadata__", distinctive(DType::U8, {1}));
  EXPECT_EQ(write_error(reserved), "the tensor name '__metadata__' is reserved for metadata");

  TensorList not_utf8;
  not_utf8.emplace_back("bad\xff", distinctive(DType::U8, {1}));
  EXPECT_EQ(write_error(not_utf8), "tensor names and metadata must be valid UTF-8");
  EXPECT_TRUE(dir.entries().empty());
}

}  // namespace
}  // namespace coil
