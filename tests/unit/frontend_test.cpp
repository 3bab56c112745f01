// The FX text frontend: every form PyTorch prints, and the printer's round trip.
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/parser.h"
#include "frontend/printer.h"
#include "frontend/size_expr.h"
#include "support/python_repr.h"
#include "graph/core_aten.h"
#include "graph/registry.h"
#include "test_util.h"

namespace coil::frontend {
namespace {

Graph parse(const std::string &text) { return parse_graph(text, "test.py"); }

// print(parse(print(g))) == print(g)
void expect_round_trip(const Graph &g) {
  std::string once = print_graph(g);
  std::string twice = print_graph(parse_graph(once, "printed.py"));
  EXPECT_EQ(once, twice);
}

const Node &node(const Graph &g, const std::string &name) {
  for (const Node &n : g.nodes())
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

const Arg &arg(const Graph &g, const std::string &node_name, const std::string &arg_name) {
  const Node &n = node(g, node_name);
  return n.args[size_t(n.op->schema.find_arg(arg_name))];
}

TEST(PythonRepr, FloatsPrintLikePython) {
  EXPECT_EQ(python_float_repr(1e-05), "1e-05");
  EXPECT_EQ(python_float_repr(1e-06), "1e-06");
  EXPECT_EQ(python_float_repr(0.0001), "0.0001");
  EXPECT_EQ(python_float_repr(0.5), "0.5");
  EXPECT_EQ(python_float_repr(2.0), "2.0");
  EXPECT_EQ(python_float_repr(-3.25), "-3.25");
  EXPECT_EQ(python_float_repr(100000.0), "100000.0");
  EXPECT_EQ(python_float_repr(1e16), "1e+16");
  EXPECT_EQ(python_float_repr(123456789012345.6), "123456789012345.6");
  EXPECT_EQ(python_float_repr(0.1), "0.1");
  EXPECT_EQ(python_float_repr(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(python_float_repr(-0.0), "-0.0");
  EXPECT_EQ(python_float_repr(INFINITY), "inf");
  EXPECT_EQ(python_float_repr(-INFINITY), "-inf");
  EXPECT_EQ(python_float_repr(NAN), "nan");
  EXPECT_EQ(python_float_repr(1.5e-300), "1.5e-300");
  EXPECT_EQ(python_str_repr("it's"), "'it\\'s'");
}

TEST(Frontend, ReadsAnnotations) {
  Annotation a = parse_annotation("f32[64, 256][256, 1]cpu", {});
  EXPECT_EQ(a.type.str(), "f32[64, 256][256, 1]cpu");
  EXPECT_TRUE(a.has_strides && a.has_device);
  Annotation b = parse_annotation("bf16[8]", {});
  EXPECT_FALSE(b.has_strides || b.has_device);
  EXPECT_EQ(parse_annotation("i64[][]cuda:0", {}).type.device.str(), "cuda:0");
  EXPECT_EQ(parse_annotation("b8[3][1]cpu", {}).type.dtype, DType::Bool);
}

TEST(Frontend, ScalarsListsAndKeywords) {
  Graph g = parse(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 8][8, 1]cpu"):
        # a comment line

        add: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(x, -1.5e-3, alpha = 2);  x = None
        mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(add, inf)
        sub: "f32[4, 8][8, 1]cpu" = torch.ops.aten.sub.Tensor(mul, -inf)
        div: "f32[4, 8][8, 1]cpu" = torch.ops.aten.div.Tensor(sub, nan)
        sum_1: "f32[4][1]cpu" = torch.ops.aten.sum.dim_IntList(div, [-1], False, dtype = torch.float32)
        view: "f32[2, 2][2, 1]cpu" = torch.ops.aten.view.default(sum_1, [2, -1])
        return (view,)
)");
  EXPECT_EQ(arg(g, "add", "other").as<double>(), -1.5e-3);
  EXPECT_EQ(arg(g, "add", "alpha").integer(), 2);
  EXPECT_TRUE(std::isinf(arg(g, "mul", "other").as<double>()));
  EXPECT_LT(arg(g, "sub", "other").as<double>(), 0);
  EXPECT_TRUE(std::isnan(arg(g, "div", "other").as<double>()));
  EXPECT_EQ(arg(g, "sum_1", "dtype").as<DType>(), DType::F32);
  expect_round_trip(g);
  // Defaults given explicitly are left out of the canonical form.
  EXPECT_NE(print_graph(g).find("sum_1: \"f32[4][1]cpu\" = torch.ops.aten.sum.dim_IntList(div, [-1], dtype = torch.float32)"),
            std::string::npos);
}

TEST(Frontend, MultiOutputOpsWithGetitemAndNestedReturns) {
  Graph g = parse(R"(class <lambda>(torch.nn.Module):
    def forward(self, arg0_1: "f32[8, 16][16, 1]cpu"):
        var_mean = torch.ops.aten.var_mean.correction(arg0_1, [1], correction = 0, keepdim = True)
        getitem: "f32[8, 1][1, 1]cpu" = var_mean[0]
        getitem_1: "f32[8, 1][1, 1]cpu" = operator.getitem(var_mean, 1);  var_mean = None
        sub: "f32[8, 16][16, 1]cpu" = torch.ops.aten.sub.Tensor(arg0_1, getitem_1)
        return ((sub, getitem), None, [getitem_1])
)");
  ASSERT_EQ(g.outputs().size(), 3u);
  EXPECT_EQ(g.value(g.outputs()[0]).name, "sub");
  EXPECT_EQ(g.output_tree().items[1].kind, OutputTree::Kind::None);
  expect_round_trip(g);
}

TEST(Frontend, ExportedProgramWrapperAndBareAnnotations) {
  Graph g = parse(R"(ExportedProgram:
    class GraphModule(torch.nn.Module):
        def forward(self, p_weight: "f32[4, 4]", x: "f32[2, 4]"):
            permute: "f32[4, 4]" = torch.ops.aten.permute.default(p_weight, [1, 0])
            mm: "f32[2, 4]" = torch.ops.aten.add.Tensor(x, x)
            return (mm,)

Graph signature: ExportGraphSignature(input_specs=[...])
Range constraints: {}
)");
  EXPECT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.type(g.inputs()[1]).strides, (Shape{4, 1}));
  expect_round_trip(g);
}

TEST(Frontend, LinesJoinInsideBrackets) {
  Graph g = parse(R"(class GraphModule(torch.nn.Module):
    def forward(self, a: "f32[2, 3, 4][12, 4, 1]cpu",
                b: "f32[4][1]cpu"):
        permute: "f32[4, 3, 2][1, 4, 12]cpu" = torch.ops.aten.permute.default(a, [2,
            1, 0])
        return (permute,)
)");
  EXPECT_EQ(g.type(g.outputs()[0]).strides, (Shape{1, 4, 12}));
}

TEST(Frontend, AnAliasNamesTheSameValue) {
  // torch.export of nn.Conv2d: its input is named like a Python builtin, and export writes
  // another name for it.
  Graph g = parse(R"(class GraphModule(torch.nn.Module):
    def forward(self, p_weight: "f32[4, 3, 3, 3][27, 9, 3, 1]cpu", input: "f32[1, 3, 8, 8][192, 64, 8, 1]cpu"):
        input_1 = input
        convolution: "f32[1, 4, 8, 8][256, 64, 8, 1]cpu" = torch.ops.aten.convolution.default(input_1, p_weight, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1);  input_1 = p_weight = None
        return (convolution,)
)");
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0].args[0], Arg(g.inputs()[1]));
  EXPECT_EQ(test::user_error_of([] {
              parse(R"(class GraphModule(torch.nn.Module):
    def forward(self, input: "f32[2][1]cpu"):
        x: "f32[3][1]cpu" = input
        return (x,)
)");
            }),
            "'x' = 'input': annotation says f32[3][1]cpu but 'input' is f32[2][1]cpu");
}

TEST(Frontend, ConstantsDevicesAndLayouts) {
  Graph g = parse(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4][1]cuda:0"):
        _tensor_constant0: "f32[4][1]cuda:0" = self._tensor_constant0
        _to_copy: "f16[4][1]cuda:0" = torch.ops.aten._to_copy.default(x, dtype = torch.float16, layout = torch.strided, device = device(type='cuda', index=0), memory_format = torch.contiguous_format)
        clone: "f32[4][1]cuda:0" = torch.ops.aten.clone.default(_tensor_constant0, memory_format = torch.preserve_format)
        return (_to_copy, clone)
)");
  EXPECT_EQ(g.constants().size(), 1u);
  EXPECT_EQ(arg(g, "_to_copy", "device").as<Device>().str(), "cuda:0");
  EXPECT_EQ(arg(g, "_to_copy", "memory_format").as<MemoryFormat>(), MemoryFormat::Contiguous);
  expect_round_trip(g);
}

TEST(Frontend, MetaFunctionsDecideOutputTypes) {
  Graph g = parse(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "i32[3, 5][5, 1]cpu", y: "f64[][]cpu", b: "b8[3, 5][5, 1]cpu"):
        add = torch.ops.aten.add.Tensor(x, 2.5)
        mul = torch.ops.aten.mul.Tensor(x, y)
        sum_1 = torch.ops.aten.sum.dim_IntList(b, [0])
        lt = torch.ops.aten.lt.Scalar(x, 1)
        where = torch.ops.aten.where.self(lt, x, mul)
        t = torch.ops.aten.t.default(x)
        return (add, mul, sum_1, lt, where, t)
)");
  std::vector<std::string> types;
  for (ValueId id : g.outputs()) types.push_back(g.type(id).str());
  EXPECT_EQ(types, (std::vector<std::string>{"f32[3, 5][5, 1]cpu", "f64[3, 5][5, 1]cpu", "i64[5][1]cpu",
                                             "b8[3, 5][5, 1]cpu", "f64[3, 5][5, 1]cpu", "i32[5, 3][1, 5]cpu"}));
}

// ResNet-50's stem as torch.export annotates it on an H200 in bf16: channels-last input
// and weight, a contiguous output (cuDNN's choice there). The graph's layout is taken;
// unannotated, the meta's rule gives channels-last.
TEST(Frontend, ConvolutionTakesTheLayoutTheGraphStates) {
  std::string head = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "bf16[2, 3, 16, 16][768, 1, 48, 3]cuda:0", w: "bf16[8, 3, 7, 7][147, 1, 21, 3]cuda:0"):
)";
  std::string call = " = torch.ops.aten.convolution.default(x, w, None, [2, 2], [3, 3], [1, 1], False, [0, 0], 1)\n";
  Graph stated = parse(head + "        c: \"bf16[2, 8, 8, 8][512, 64, 8, 1]cuda:0\"" + call + "        return (c,)\n");
  EXPECT_EQ(stated.type(stated.outputs()[0]).strides, (Shape{512, 64, 8, 1}));
  expect_round_trip(stated);
  Graph unstated = parse(head + "        c" + call + "        return (c,)\n");
  EXPECT_EQ(unstated.type(unstated.outputs()[0]).strides, (Shape{512, 1, 64, 8}));
}

// Batch norm in training on bf16, traced with real tensors on the CPU: its kernel returns the
// running statistics in bf16 where PyTorch's meta function (and so torch.export) says f32.
// The graph's dtype is taken, a floating one only; unannotated, the meta's rule gives f32.
// embedding_bag's offset2bag is empty on the kernel's fast path, which takes bf16.
TEST(Frontend, OutputsTypedByTheKernelTakeTheGraphsType) {
  std::string head = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "bf16[4, 5, 3][15, 3, 1]cpu", m: "bf16[5][1]cpu", v: "bf16[5][1]cpu"):
        bn = torch.ops.aten._native_batch_norm_legit_functional.default(x, None, None, m, v, True, 0.1, 1e-05)
)";
  auto with_mean = [&](const std::string &ann) {
    return head + "        getitem" + ann + " = bn[3]\n        return (getitem,)\n";
  };
  Graph stated = parse(with_mean(": \"bf16[5][1]cpu\""));
  EXPECT_EQ(stated.type(stated.outputs()[0]).str(), "bf16[5][1]cpu");
  expect_round_trip(stated);
  Graph unstated = parse(with_mean(""));
  EXPECT_EQ(unstated.type(unstated.outputs()[0]).str(), "f32[5][1]cpu");
  try {
    parse(with_mean(": \"i64[5][1]cpu\""));
    ADD_FAILURE() << "an integer running mean was taken";
  } catch (const UserError &e) {
    EXPECT_NE(std::string(e.what()).find("gives its output 3 the type f32[5][1]cpu by its own rule; i64[5][1]cpu "
                                         "cannot be chosen"),
              std::string::npos)
        << e.what();
  }
  Graph bag = parse(R"(class GraphModule(torch.nn.Module):
    def forward(self, w: "bf16[10, 5][5, 1]cpu", i: "i64[5][1]cpu", o: "i64[2][1]cpu"):
        eb = torch.ops.aten._embedding_bag_forward_only.default(w, i, o)
        getitem: "bf16[2, 5][5, 1]cpu" = eb[0]
        getitem_1: "i64[0][1]cpu" = eb[1]
        return (getitem, getitem_1)
)");
  EXPECT_EQ(bag.type(bag.outputs()[1]).str(), "i64[0][1]cpu");
}

// ---- symbolic sizes (frontend/size_expr.h) ------------------------------------------------

int64_t size_of(const std::string &expr) { return eval_size_expr(expr, {{"s0", 7}, {"s1", 3}}, {}); }

TEST(SymbolicSizes, ExpressionsEvaluateAsPythonDoes) {
  EXPECT_EQ(size_of("2*s0 + 1"), 15);
  EXPECT_EQ(size_of("s0*s1"), 21);
  EXPECT_EQ(size_of("s0 - s1 - 1"), 3);
  EXPECT_EQ(size_of("s0 - 2*s1"), 1);
  EXPECT_EQ(size_of("s0*s1//2"), 10);
  EXPECT_EQ(size_of("(s0//2)"), 3);
  EXPECT_EQ(size_of("(-s0)//2"), -4);  // floor, not truncation
  EXPECT_EQ(size_of("-s0 % 3"), 2);    // Python's sign of the divisor
  EXPECT_EQ(size_of("s0**2"), 49);
  EXPECT_EQ(size_of("2**s1 + -2"), 6);
  EXPECT_EQ(size_of("-2**2"), -4);     // ** binds tighter than unary minus
  EXPECT_EQ(size_of("(-1)**s0"), -1);
  EXPECT_EQ(size_of("Pow(s1 - 3, 0) + Pow(-2, s1)"), -7);
  EXPECT_EQ(size_of("12/s1"), 4);
  EXPECT_EQ(size_of("Max(1, s0 - 8)"), 1);
  EXPECT_EQ(size_of("Min(s0, s1, 5)"), 3);
  EXPECT_EQ(size_of("FloorDiv(s0, 2)"), 3);
  EXPECT_EQ(size_of("CeilDiv(s0, 2)"), 4);
  EXPECT_EQ(size_of("Mod(s0, 4)"), 3);
  EXPECT_EQ(size_of("ModularIndexing(s0, 2, 2)"), 1);
  EXPECT_EQ(size_of("s0 >= 2"), 1);
  EXPECT_EQ(size_of("Eq(s0, 4)"), 0);
  EXPECT_EQ(size_of("(s0 >= 2) & (s1 < 3)"), 0);
  EXPECT_EQ(size_of("Ne(s1, 3) | True"), 1);
  EXPECT_EQ(symbols_in("2*s27*s77 + Max(1, u0) + s27"), (std::vector<std::string>{"s27", "s77", "u0"}));
  EXPECT_TRUE(symbols_in("16").empty());
}

TEST(SymbolicSizes, ErrorsNameTheSymbolOrTheFault) {
  auto error = [](const std::string &expr) { return test::user_error_of([&] { size_of(expr); }); };
  EXPECT_EQ(error("s2 + 1"), "symbolic size 's2' has no value (given: s0=7, s1=3)");
  EXPECT_NE(error("u0*4").find("'u0' is known only when the graph runs (a data-dependent size"), std::string::npos);
  EXPECT_EQ(error("s0 // 0"), "division by zero in a size expression");
  EXPECT_EQ(error("s0**70"), "size expression 's0**70' overflows 64 bits");
  EXPECT_EQ(error("7/s1"), "7/3 in size expression '7/s1' is not an integer");
  EXPECT_EQ(error("s0 +"), "size expression 's0 +' ends early");
  EXPECT_EQ(error("Foo(s0)"), "unknown function 'Foo' in size expression 'Foo(s0)'");
  try {
    eval_size_expr("2*s9", {}, SourceLoc{"g.py", 3, 10});
    ADD_FAILURE() << "no error";
  } catch (const UserError &e) {
    EXPECT_EQ(e.loc().col, 12);  // at the symbol
  }
}

// A graph as torch.compile(dynamic=True) prints it: SymInt inputs, sizes computed from
// them, an assertion on a size.
const char *kSymbolicGraph = R"G(class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[32, 16][16, 1]cpu", arg1_1: "Sym(s77)", arg2_1: "Sym(s27)", arg3_1: "f32[s77, s27, 16][16*s27, 16, 1]cpu"):
        mul_6: "Sym(s27*s77)" = arg1_1 * arg2_1
        view: "f32[s27*s77, 16][16, 1]cpu" = torch.ops.aten.view.default(arg3_1, [mul_6, 16]);  arg3_1 = mul_6 = None
        ge: "Sym(s77 >= 2)" = arg1_1 >= 2
        _assert_scalar = torch.ops.aten._assert_scalar.default(ge, "Runtime assertion failed for expression s77 >= 2 on node 'ge'");  ge = _assert_scalar = None
        sym_size_int: "Sym(s27*s77)" = torch.ops.aten.sym_size.int(view, 0)
        permute: "f32[16, 32][1, 16]cpu" = torch.ops.aten.permute.default(arg0_1, [1, 0]);  arg0_1 = None
        mm: "f32[s27*s77, 32][32, 1]cpu" = torch.ops.aten.mm.default(view, permute);  view = permute = None
        view_1: "f32[s77, s27, 32][32*s27, 32, 1]cpu" = torch.ops.aten.view.default(mm, [arg1_1, arg2_1, 32]);  mm = None
        return (view_1,)
)G";

// The size ops of the Core ATen opset leave no node: each line is the size its annotation
// states, as sym_size.int's above.
TEST(SymbolicSizes, TheSizeOpsAreReadAsTheSizesTheirAnnotationsState) {
  const char *graph = R"G(class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[s0, 8][8, 1]cpu"):
        sym_numel_default: "Sym(8*s0)" = torch.ops.aten.sym_numel.default(arg0_1)
        sym_stride_int: "Sym(8)" = torch.ops.aten.sym_stride.int(arg0_1, 0)
        sym_storage_offset_default: "Sym(0)" = torch.ops.aten.sym_storage_offset.default(arg0_1)
        view: "f32[8*s0][1]cpu" = torch.ops.aten.view.default(arg0_1, [sym_numel_default])
        add: "Sym(8*s0 + 8)" = sym_numel_default + sym_stride_int
        add_1: "Sym(8*s0 + 8)" = add + sym_storage_offset_default
        full: "f32[8*s0 + 8][1]cpu" = torch.ops.aten.full.default([add_1], 1.0, device = device(type='cpu'), pin_memory = False)
        return (view, full)
)G";
  SizeValues sizes{{"s0", 5}};
  Graph g = parse_graph(graph, "sizes.py", &sizes);
  EXPECT_EQ(g.nodes().size(), 2u);  // view and full
  EXPECT_EQ(g.type(g.outputs()[0]).str(), "f32[s0*8][1]cpu");
  EXPECT_EQ(g.type(g.outputs()[1]).str(), "f32[s0*8 + 8][1]cpu");
  EXPECT_EQ(shape_str(hints(g.type(g.outputs()[1]).sizes)), "[48]");
  // A size op whose line states no size is refused, saying so (errors_test.cpp).
  EXPECT_TRUE(is_size_op("aten.sym_numel.default"));
  EXPECT_FALSE(is_size_op("aten.numel.default"));
}

TEST(SymbolicSizes, AGraphIsReadForTheSizesGiven) {
  for (auto [batch, seq] : {std::pair<int64_t, int64_t>{4, 3}, {2, 61}}) {
    SizeValues sizes{{"s77", batch}, {"s27", seq}};
    Graph g = parse_graph(kSymbolicGraph, "dynamic.py", &sizes);
    ASSERT_EQ(g.inputs().size(), 2u);  // the SymInts are not inputs: their values are read from the tensors'
    // Sizes are SymInts: their expressions, and their values at the sizes given.
    const TensorType &in = g.type(g.inputs()[1]), &out = g.type(g.outputs()[0]);
    EXPECT_EQ(in.str(), "f32[s77, s27, 16][s27*16, 16, 1]cpu");
    EXPECT_EQ(shape_str(hints(in.strides)), str_cat("[", 16 * seq, ", 16, 1]"));
    EXPECT_EQ(out.str(), "f32[s77, s27, 32][s27*32, 32, 1]cpu");
    EXPECT_EQ(shape_str(hints(out.sizes)), str_cat("[", batch, ", ", seq, ", 32]"));
    const SymInt &rows = arg(g, "view", "size").as<ArgList>()[0].as<SymInt>();
    EXPECT_EQ(str(rows), "s27*s77");
    EXPECT_EQ(rows.hint(), batch * seq);
    // Reading the graph, meta functions included, specialized no size.
    std::shared_ptr<SizeGuards> guards = size_guards_of(g);
    ASSERT_NE(guards, nullptr);
    EXPECT_TRUE(guards->specialized(symbol_values(g)).empty()) << size_guards_str(g);
    // Its assertion `s77 >= 2` is the symbol's range and a guard a call is checked against.
    ASSERT_EQ(guards->guards().size(), 1u) << size_guards_str(g);
    EXPECT_EQ(guards->guards()[0].str(), "s77 >= 2");
    EXPECT_EQ(guards->guards()[0].why, "the graph's assertion ge");
    EXPECT_EQ(guards->range_of("s77").lo, 2);
    EXPECT_EQ(symbol_values(g), (std::map<std::string, int64_t>{{"s27", seq}, {"s77", batch}}));
  }
  SizeValues one{{"s77", 1}, {"s27", 3}};
  EXPECT_EQ(test::user_error_of([&] { parse_graph(kSymbolicGraph, "dynamic.py", &one); }),
            "Runtime assertion failed for expression s77 >= 2 on node 'ge' (sizes s27=3, s77=1)");
  SizeValues partial{{"s77", 4}};
  EXPECT_EQ(test::user_error_of([&] { parse_graph(kSymbolicGraph, "dynamic.py", &partial); }),
            "symbolic size 's27' has no value (given: s77=4)");
  EXPECT_NE(test::user_error_of([&] { parse(kSymbolicGraph); })
                .find("this graph has symbolic sizes, and coil compiles it for their values"),
            std::string::npos);
}

TEST(SymbolicSizes, AssertionsOnOneSymbolAreItsRange) {
  EXPECT_EQ(symbol_bound("s0 >= 2")->lo, 2);
  EXPECT_EQ(symbol_bound("s0 < 513")->hi, 512);
  EXPECT_EQ(symbol_bound("4 <= s1")->lo, 4);
  EXPECT_EQ(symbol_bound("3 > s1")->hi, 2);
  EXPECT_FALSE(symbol_bound("s0 + s1 >= 2"));
  EXPECT_FALSE(symbol_bound("Eq(s0, 4)"));
  // torch.export states a Dim's maximum so: s0's range becomes [2, 64], and the assertion a guard.
  const char *text = R"G(class GraphModule(torch.nn.Module):
    def forward(self, n: "Sym(s0)", x: "f32[s0, 4][4, 1]cpu"):
        le: "Sym(s0 <= 64)" = n <= 64
        _assert_scalar = torch.ops.aten._assert_scalar.default(le, "Runtime assertion failed for expression s0 <= 64 on node 'le'");  le = _assert_scalar = None
        return (x,)
)G";
  SizeValues sizes{{"s0", 5}};
  Graph g = parse_graph(text, "bounded.py", &sizes);
  std::shared_ptr<SizeGuards> guards = size_guards_of(g);
  ASSERT_NE(guards, nullptr);
  EXPECT_EQ(guards->range_of("s0"), (ir::Interval{2, 64}));
  ASSERT_EQ(guards->guards().size(), 1u);
  EXPECT_EQ(guards->guards()[0].str(), "s0 <= 64");
  const SymInt &rows = g.type(g.inputs()[0]).sizes[0];
  EXPECT_TRUE(rows < 100);  // decided by the range: no guard
  EXPECT_EQ(guards->guards().size(), 1u);
}

TEST(SymbolicSizes, ValuesAreReadFromTheInputsShapes) {
  std::vector<InputDecl> inputs = declared_inputs(kSymbolicGraph, "dynamic.py");
  ASSERT_EQ(inputs.size(), 4u);
  EXPECT_EQ(inputs[1].annotation, "Sym(s77)");
  std::map<std::string, Shape> shapes{{"arg0_1", {32, 16}}, {"arg3_1", {5, 9, 16}}};
  auto shape_of = [&](const std::string &name) -> std::optional<Shape> {
    if (auto it = shapes.find(name); it != shapes.end()) return it->second;
    return std::nullopt;
  };
  EXPECT_EQ(bind_sizes(inputs, shape_of), (SizeValues{{"s77", 5}, {"s27", 9}}));
  EXPECT_TRUE(bind_sizes(declared_inputs(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 4][4, 1]cpu"):
        return (x,)
)", "static.py"), shape_of).empty());
  // One symbol, two inputs that disagree.
  std::string two = R"(class GraphModule(torch.nn.Module):
    def forward(self, a: "f32[s0, 4][4, 1]cpu", b: "f32[s0][1]cpu"):
        return (a, b)
)";
  shapes = {{"a", {6, 4}}, {"b", {5}}};
  EXPECT_EQ(test::user_error_of([&] { bind_sizes(declared_inputs(two, "two.py"), shape_of); }),
            "symbolic size s0 is 6 by input 'a' dim 0 but 5 by input 'b' dim 0");
  // A symbol that is no input's dim.
  std::string hidden = R"G(class GraphModule(torch.nn.Module):
    def forward(self, n: "Sym(s1)", a: "f32[2*s1, 4][4, 1]cpu"):
        return (a,)
)G";
  shapes = {{"a", {6, 4}}};
  EXPECT_EQ(test::user_error_of([&] { bind_sizes(declared_inputs(hidden, "hidden.py"), shape_of); }),
            "symbolic size s1 of input 'n' (Sym(s1)) is no input's dim: its value cannot be read from the inputs' "
            "shapes");
}

TEST(Registry, EveryOpHasAParsedSchemaAndTarget) {
  const Registry &r = Registry::get();
  EXPECT_GT(r.ops().size(), 40u);
  for (const OpDef *op : r.ops()) {
    EXPECT_EQ(op->target, op->schema.target());
    EXPECT_TRUE(op->meta) << op->target;
  }
  const OpDef *add = r.find("aten.add.Tensor");
  ASSERT_NE(add, nullptr);
  ASSERT_EQ(add->schema.args.size(), 3u);
  EXPECT_TRUE(add->schema.args[2].kwarg_only);
  EXPECT_EQ(add->schema.args[2].default_value->integer(), 1);
  EXPECT_EQ(r.find("aten.var_mean.correction")->schema.returns.size(), 2u);
  EXPECT_EQ(r.find("aten._assert_tensor_metadata.default")->schema.returns.size(), 0u);
}

}  // namespace
}  // namespace coil::frontend
