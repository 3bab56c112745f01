// Bad graph text gets FILE:LINE:COL: error: MESSAGE naming the node and what was
// expected. Each case pins the exact message.
#include <gtest/gtest.h>

#include "frontend/parser.h"
#include "io/safetensors.h"

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
    {"SymbolicSize", "        a: \"f32[s0, 256]\" = torch.ops.aten.relu.default(x)\n        return (a,)\n",
     "bad.py:3:17: error: symbolic size 's0' is not supported: coil compiles static shapes"},
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
