// Bad graph text gets FILE:LINE:COL: error: MESSAGE naming the node and what was
// expected. Each case pins the exact message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "frontend/parser.h"
#include "io/compare.h"
#include "io/host_tensor.h"
#include "io/safetensors.h"
#include "support/files.h"
#include "test_util.h"

namespace coil {
namespace {

const char *kHeader =
    "class GraphModule(torch.nn.Module):\n"
    "    def forward(self, x: \"f32[64, 256][256, 1]cpu\", y: \"f32[256][1]cpu\"):\n";

struct BadGraph {
  const char *name;
  std::string body;  // appended to kHeader: the forward body starts on line 3
  std::string error;
};

std::string error_of(const std::string &text) {
  try {
    frontend::parse_graph(text, "bad.py");
  } catch (const UserError &e) {
    return e.render();
  }
  return "(no error)";
}

class BadGraphs : public testing::TestWithParam<BadGraph> {};

TEST_P(BadGraphs, GiveTheExactMessage) {
  EXPECT_EQ(error_of(std::string(kHeader) + GetParam().body), GetParam().error);
}

const BadGraph kCases[] = {
    {"UnknownOp", "        a = torch.ops.aten.frobnicate.default(x)\n        return (a,)\n",
     "bad.py:3:13: error: unknown op 'aten.frobnicate.default': coil does not support aten.frobnicate yet"},
    {"UnknownOverload", "        a = torch.ops.aten.add.Tensorr(x, y)\n        return (a,)\n",
     "bad.py:3:13: error: unknown overload 'aten.add.Tensorr'; coil has aten.add.Scalar, aten.add.Tensor"},
    {"TooManyArguments", "        a = torch.ops.aten.relu.default(x, y)\n        return (a,)\n",
     "bad.py:3:44: error: node 'a' (aten.relu.default): takes at most 1 positional argument but 2 were "
     "given; the schema is relu(Tensor self) -> Tensor"},
    {"MissingArgument", "        a = torch.ops.aten.add.Tensor(x)\n        return (a,)\n",
     "bad.py:3:9: error: node 'a' (aten.add.Tensor): missing argument 'other'; the schema is "
     "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"},
    {"UnknownKeyword", "        a = torch.ops.aten.add.Tensor(x, y, beta = 2)\n        return (a,)\n",
     "bad.py:3:52: error: node 'a' (aten.add.Tensor): no argument is named 'beta'; the schema is "
     "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"},
    {"ArgumentTwice", "        a = torch.ops.aten.add.Tensor(x, y, other = y)\n        return (a,)\n",
     "bad.py:3:53: error: node 'a' (aten.add.Tensor): argument 'other' is given twice"},
    {"WrongArgumentType", "        a = torch.ops.aten.sum.dim_IntList(x, 1.5)\n        return (a,)\n",
     "bad.py:3:47: error: node 'a' (aten.sum.dim_IntList): argument 'dim' expects int[1]?, got float"},
    {"ListForTensor", "        a = torch.ops.aten.add.Tensor(x, [1, 2])\n        return (a,)\n",
     "bad.py:3:42: error: node 'a' (aten.add.Tensor): argument 'other' expects Tensor, got list"},
    {"WrongSizes", "        a: \"f32[64, 255][255, 1]cpu\" = torch.ops.aten.add.Tensor(x, y)\n        return (a,)\n",
     "bad.py:3:12: error: node 'a' (aten.add.Tensor): annotation says f32[64, 255][255, 1]cpu but is "
     "f32[64, 256][256, 1]cpu (sizes differ)"},
    {"WrongDtype", "        a: \"f16[64, 256][256, 1]cpu\" = torch.ops.aten.add.Tensor(x, y)\n        return (a,)\n",
     "bad.py:3:12: error: node 'a' (aten.add.Tensor): annotation says f16[64, 256][256, 1]cpu but is "
     "f32[64, 256][256, 1]cpu (dtypes differ)"},
    {"WrongStrides", "        a: \"f32[64, 256][1, 64]cpu\" = torch.ops.aten.add.Tensor(x, y)\n        return (a,)\n",
     "bad.py:3:12: error: node 'a' (aten.add.Tensor): annotation says f32[64, 256][1, 64]cpu but is "
     "f32[64, 256][256, 1]cpu (strides of dim 0 differ)"},
    {"ConvolutionLayoutNotDense",
     "        w = torch.ops.aten.view.default(x, [64, 4, 8, 8])\n"
     "        c: \"f32[64, 64, 1, 1][64, 2, 1, 1]cpu\" = torch.ops.aten.convolution.default(w, w, None, [1, 1], "
     "[0, 0], [1, 1], False, [0, 0], 1)\n        return (c,)\n",
     "bad.py:4:13: error: node 'c' (aten.convolution.default): strides [64, 2, 1, 1] are not a dense layout "
     "of sizes [64, 64, 1, 1]"},
    {"ShapesDoNotBroadcast",
     "        a = torch.ops.aten.sum.dim_IntList(x, [0])\n        b = torch.ops.aten.add.Tensor(x, "
     "torch.ops.aten.relu.default(a))\n        return (b,)\n",
     "bad.py:4:48: error: unknown torch attribute 'torch.ops'; expected a dtype, layout or memory format"},
    {"BroadcastMismatch",
     "        a = torch.ops.aten.sum.dim_IntList(x, [1], True)\n        b = torch.ops.aten.add.Tensor(a, y)\n"
     "        c = torch.ops.aten.permute.default(x, [1, 0])\n        d = torch.ops.aten.add.Tensor(c, y)\n"
     "        return (d,)\n",
     "bad.py:6:9: error: node 'd' (aten.add.Tensor): shapes [256, 64] and [256] cannot be broadcast: dim 1 "
     "is 64 vs 256"},
    {"UndefinedName", "        a = torch.ops.aten.add.Tensor(x, z)\n        return (a,)\n",
     "bad.py:3:42: error: undefined name 'z'"},
    {"UnclosedBracket", "        a = torch.ops.aten.add.Tensor(x, y\n        return (a,)\n",
     "bad.py:3:38: error: '(' is never closed"},
    {"StrayCharacter", "        a = torch.ops.aten.add.Tensor(x, y) $\n        return (a,)\n",
     "bad.py:3:45: error: unexpected character '$'"},
    {"ControlByte", std::string("        a = torch.ops.aten.add.Tensor(x, y)\x01\n        return (a,)\n"),
     "bad.py:3:44: error: unexpected character byte 0x01"},
    {"NoReturn", "        a = torch.ops.aten.add.Tensor(x, y)\n", "bad.py:4:1: error: forward ends without a return statement"},
    {"Redefinition", "        x = torch.ops.aten.relu.default(x)\n        return (x,)\n",
     "bad.py:3:9: error: redefinition of 'x'"},
    {"DimOutOfRange", "        a = torch.ops.aten.sum.dim_IntList(x, [2])\n        return (a,)\n",
     "bad.py:3:9: error: node 'a' (aten.sum.dim_IntList): dim 2 is out of range for a tensor of rank 2 "
     "(expected a dim in [-2, 1])"},
    {"TupleAsArgument",
     "        a = torch.ops.aten.var_mean.correction(x, [1])\n        b = torch.ops.aten.relu.default(a)\n"
     "        return (b,)\n",
     "bad.py:4:41: error: 'a' holds the tuple returned by aten.var_mean.correction; pass one item, a[i]"},
    {"GetitemOutOfRange",
     "        a = torch.ops.aten.var_mean.correction(x, [1])\n        b = a[2]\n        return (b,)\n",
     "bad.py:4:13: error: 'a' (aten.var_mean.correction) has 2 outputs; index 2 is out of range"},
    {"InPlaceOp", "        a = torch.ops.aten.add_.Tensor(x, y)\n        return (a,)\n",
     "bad.py:3:13: error: 'aten.add_.Tensor' writes into its input; coil compiles functional graphs only "
     "(export with torch.export(...).run_decompositions() to remove mutation)"},
    {"CopyIntoBuffer", "        a = torch.ops.aten.copy_.default(y, y)\n        return (a,)\n",
     "bad.py:3:13: error: 'aten.copy_.default' writes into its input; coil compiles functional graphs only "
     "(export with torch.export(...).run_decompositions() to remove mutation)"},
    {"DataDependentSize", "        a = torch.ops.aten.nonzero.default(x)\n        return (a,)\n",
     "bad.py:3:13: error: 'aten.nonzero.default' is not supported: its output's size depends on its input's values; "
     "coil compiles graphs whose sizes are known when they are compiled (data-dependent sizes wait for unbacked size "
     "symbols)"},
    {"LinearAlgebraWaits", "        a = torch.ops.aten.linalg_qr.default(x)\n        return (a,)\n",
     "bad.py:3:13: error: 'aten.linalg_qr.default' is not supported: it is a linear algebra factorization or solver, "
     "which waits for a binding to LAPACK on the CPU and cuSOLVER on the GPU (coil's own kernels are not the right tool "
     "for it)"},
    {"OutVariant", "        a = torch.ops.aten.atan2.out(x, y, out = x)\n        return (a,)\n",
     "bad.py:3:13: error: 'aten.atan2.out' is not supported: it writes into its out= argument; coil compiles "
     "functional graphs, where run_decompositions() gives the op without out="},
    {"SizeOpWithoutAnnotation", "        n = torch.ops.aten.sym_size.int(x, 0)\n        return (x,)\n",
     "bad.py:3:13: error: 'aten.sym_size.int' is not supported: a size op, which coil reads as the size its line's "
     "annotation states (`n: \"Sym(s0*2)\" = ...`); this line has no such annotation"},
    {"DunderIsNotInPlace", "        a = torch.ops.aten.__and__.Tensor(x, y)\n        return (a,)\n",
     "bad.py:3:13: error: unknown op 'aten.__and__.Tensor': coil does not support aten.__and__ yet"},
    {"SymbolicSize", "        a: \"f32[s0, 256]\" = torch.ops.aten.relu.default(x)\n        return (a,)\n",
     "bad.py:3:17: error: symbolic size 's0': this graph has symbolic sizes, and coil compiles it for their values (coil "
     "run reads them from --inputs' shapes, coil compile takes --size s0=N, the API CompileOptions::sizes)"},
    {"UnknownDtype", "        a: \"q32[64, 256]\" = torch.ops.aten.relu.default(x)\n        return (a,)\n",
     "bad.py:3:13: error: unknown dtype 'q32' in annotation; expected one of f64, f32, f16, bf16, i64, i32, "
     "i16, i8, u8, b8"},
    {"IntegerTooLarge", "        a = torch.ops.aten.mul.Tensor(x, 99999999999999999999)\n        return (a,)\n",
     "bad.py:3:42: error: invalid integer 99999999999999999999 (coil's integers are 64-bit)"},
    {"ViewIncompatible",
     "        a = torch.ops.aten.permute.default(x, [1, 0])\n        b = torch.ops.aten.view.default(a, [-1])\n"
     "        return (b,)\n",
     "bad.py:4:9: error: node 'b' (aten.view.default): view size [16384] is not compatible with the input's "
     "size [256, 64] and stride [1, 256]; use reshape"},
    {"NotAnOpCall", "        a = torch.nn.functional.relu(x)\n        return (a,)\n",
     "bad.py:3:13: error: expected an op as torch.ops.<namespace>.<op>.<overload>, found torch.nn.functional.relu"},
    {"TrailingText", "        return (x,)\n        y2 = x\n", "bad.py:4:9: error: expected end of file after return, found 'y2'"},
    // A view past its storage: eager raises, and compiled code would read past the buffer.
    {"AsStridedPastStorage", "        a = torch.ops.aten.as_strided.default(y, [16, 16], [16, 1], 1)\n        return (a,)\n",
     "bad.py:3:9: error: node 'a' (aten.as_strided.default): sizes [16, 16] and strides [16, 1] from storage offset 1 "
     "need 1028 bytes of storage, but the storage of 'y' (f32[256][1]cpu) holds 1024 bytes"},
    {"AsStridedOfSlicePastStorage",
     "        a = torch.ops.aten.slice.Tensor(y, 0, 200)\n"
     "        b = torch.ops.aten.as_strided.default(a, [64], [1])\n        return (b,)\n",
     "bad.py:4:9: error: node 'b' (aten.as_strided.default): sizes [64] and strides [1] from storage offset 200 need "
     "1056 bytes of storage, but the storage of 'y' (f32[256][1]cpu) holds 1024 bytes"},
    {"AsStridedOfTransposePastStorage",
     "        a = torch.ops.aten.permute.default(x, [1, 0])\n"
     "        b = torch.ops.aten.as_strided.default(a, [2, 64, 256], [16384, 256, 1])\n        return (b,)\n",
     "bad.py:4:9: error: node 'b' (aten.as_strided.default): sizes [2, 64, 256] and strides [16384, 256, 1] from "
     "storage offset 0 need 131072 bytes of storage, but the storage of 'x' (f32[64, 256][256, 1]cpu) holds 65536 bytes"},
    {"AsStridedOverflowingStrides",
     "        a = torch.ops.aten.as_strided.default(y, [3], [4611686018427387904])\n        return (a,)\n",
     "bad.py:3:9: error: node 'a' (aten.as_strided.default): sizes [3] and strides [4611686018427387904] from storage "
     "offset 0 need more than 2^63 bytes of storage, but the storage of 'y' (f32[256][1]cpu) holds 1024 bytes"},
    {"ByteOrderMarkInside", "        a = torch.ops.aten.relu.default(x)\xEF\xBB\xBF\n        return (a,)\n",
     "bad.py:3:43: error: unexpected UTF-8 byte order mark (bytes 0xef 0xbb 0xbf)"},
};

INSTANTIATE_TEST_SUITE_P(Frontend, BadGraphs, testing::ValuesIn(kCases),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(BadGraphs, HeaderErrors) {
  EXPECT_EQ(error_of(""), "bad.py:1:1: error: expected a graph module starting with 'class' but found end of file");
  EXPECT_EQ(error_of("class GraphModule(torch.nn.Module):\n    def forward(self, x):\n        return (x,)\n"),
            "bad.py:2:24: error: input 'x' needs a type annotation such as \"f32[4, 4]\"");
  EXPECT_EQ(error_of("class GraphModule(torch.nn.Module):\n    def backward(self):\n"),
            "bad.py:2:9: error: expected 'def forward' but found 'backward'");
  EXPECT_EQ(error_of("class GraphModule(torch.nn.Module):\n    def forward(self, x: \"f32[2][1]cpu\"):\n"
                     "        return (x,)\nclass Sub(torch.nn.Module):\n"),
            "bad.py:4:1: error: a graph with submodules is not supported; expected one forward");
  EXPECT_EQ(error_of("class G:\n    def forward(self, x: \"f32[4611686018427387904, 4]\"):\n        return (x,)\n"),
            "bad.py:2:27: error: the number of elements of [4611686018427387904, 4] overflows int64");
}

TEST(BadGraphs, ViewsInsideTheirStorage) {
  // As eager allows: as_strided of a slice may reach past the slice, within the storage;
  // an empty view reads nothing wherever it starts.
  EXPECT_EQ(error_of(std::string(kHeader) +
                     "        a = torch.ops.aten.slice.Tensor(y, 0, 200)\n"
                     "        b = torch.ops.aten.as_strided.default(a, [8, 8], [8, 1], 0)\n"
                     "        c = torch.ops.aten.as_strided.default(y, [0, 4], [1, 1], 5000)\n"
                     "        d = torch.ops.aten.as_strided.default(a, [56], [1])\n        return (b, c, d)\n"),
            "(no error)");
}

TEST(BadGraphs, ByteOrderMarkAtTheStart) {
  EXPECT_EQ(error_of("\xEF\xBB\xBF" + std::string(kHeader) + "        return (x,)\n"),
            "bad.py:1:1: error: the file starts with a UTF-8 byte order mark (bytes 0xef 0xbb 0xbf); save it "
            "without one, as PyTorch prints graphs");
}

TEST(BadFiles, DirectoryAsGraphFile) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "coil_errors_test_dir.py";
  std::filesystem::create_directories(dir);
  try {
    frontend::parse_graph_file(dir.string());
    FAIL();
  } catch (const UserError &e) {
    EXPECT_EQ(e.render(), dir.string() + ": error: cannot read: Is a directory");
  }
  std::filesystem::remove_all(dir);
}

// A file that cannot be written is named as the user gave it, with the reason of the
// call that failed, and no temporary file stays behind.
TEST(BadFiles, WriteErrorsNameTheDestination) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "coil_errors_test_write";
  fs::remove_all(dir);
  fs::create_directories(dir / "taken" / "inside");
  auto error_writing = [](const fs::path &path) {
    try {
      write_file_atomically(path.string(), "text");
    } catch (const UserError &e) {
      return e.render();
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_writing(dir / "missing" / "graph.txt"),
            (dir / "missing" / "graph.txt").string() + ": error: cannot write: No such file or directory");
  EXPECT_EQ(error_writing(dir / "taken"),
            (dir / "taken").string() + ": error: cannot move the temporary file into place: Is a directory");
  std::vector<std::string> left;
  for (const auto &e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"taken"});
  EXPECT_EQ(error_writing(dir / "written.txt"), "(no error)");
  EXPECT_EQ(test::read_text(dir / "written.txt"), "text");
  fs::remove_all(dir);
}

// ASan aborts on an allocation past its largest instead of throwing std::bad_alloc.
TEST(BadInputs, HugeTensorNamesItsSize) {
#ifdef COIL_ASAN
  GTEST_SKIP() << "AddressSanitizer aborts on a 16 TiB allocation";
#else
  EXPECT_EQ(test::user_error_of([] { HostTensor::zeros(DType::F32, {int64_t(1) << 21, int64_t(1) << 21}); }),
            "not enough memory for a tensor f32[2097152, 2097152] (17592186044416 bytes)");
#endif
}

// A NaN or an infinity where the other side has a number is the largest error there is:
// the FAIL line says nan or inf, not the largest finite error.
TEST(BadInputs, ComparisonReportsNaNErrors) {
  auto tensor = [](std::vector<float> values) {
    HostTensor t = HostTensor::zeros(DType::F32, {int64_t(values.size())});
    std::memcpy(t.data.data(), values.data(), values.size() * sizeof(float));
    return t;
  };
  float nan = std::nanf(""), inf = INFINITY;
  Tolerance tol = default_tolerance(DType::F32);
  Comparison c = compare(tensor({1, nan, 3}), tensor({1, 2, 3.5}), tol);
  EXPECT_FALSE(c.pass);
  EXPECT_TRUE(std::isnan(c.max_abs_error)) << c.max_abs_error;
  EXPECT_EQ(c.mismatches, 2);
  c = compare(tensor({1, 2}), tensor({inf, 2}), tol);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.max_abs_error, inf);
  c = compare(tensor({inf, nan, -inf}), tensor({inf, nan, -inf}), tol);
  EXPECT_TRUE(c.pass);
  EXPECT_EQ(c.max_abs_error, 0);
  EXPECT_EQ(c.max_rel_error, 0);
}

TEST(BadFiles, MissingFileNamesThePath) {
  try {
    frontend::parse_graph_file("no/such/graph.py");
    FAIL();
  } catch (const UserError &e) {
    EXPECT_EQ(e.render(), "no/such/graph.py: error: cannot open: No such file or directory");
  }
}

}  // namespace
}  // namespace coil
