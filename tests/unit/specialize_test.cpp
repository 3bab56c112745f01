// One lowering and one schedule of a graph of symbolic sizes serve every size: lowering
// keeps the symbols in the loop IR and the scheduler in its kernels, neither records a guard
// for the fixtures' op families, and the program specialized to each size a fixture was
// captured at matches eager there (the reference interpreter, the tolerances of the testing
// tiers from src/io/compare.h). The C++ dialect keeps them too: one library serves every
// size.
#include <gtest/gtest.h>

#include <map>

#include "driver/compile.h"
#include "frontend/parser.h"
#include "io/compare.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"
#include "ir/interpreter.h"
#include "ir/kernel.h"
#include "ir/specialize.h"
#include "lowering/lowering.h"
#include "passes/passes.h"
#include "runtime/cpu_module.h"
#include "scheduler/scheduler.h"
#include "test_util.h"

namespace coil {
namespace {

constexpr const char *kSoftmaxText = R"(class GraphModule(torch.nn.Module):
    def forward(self, a_0: "f32[2, s5, 12][12*s5, 12, 1]cpu"):
        _softmax: "f32[2, s5, 12][12*s5, 12, 1]cpu" = torch.ops.aten._softmax.default(a_0, 1, False);  a_0 = None
        return (_softmax,)
)";

TEST(Specialize, LoweringKeepsSymbolsAndSpecializingGivesIntegers) {
  frontend::SizeValues sizes{{"s5", 5}};
  Graph g = frontend::parse_graph(kSoftmaxText, "softmax.py", &sizes);
  ir::Program p = lowering::lower_symbolic(g);
  EXPECT_EQ(ir::symbols_of(p), std::set<std::string>{"s5"});
  EXPECT_TRUE(size_guards_of(g)->guards().empty()) << size_guards_str(g);
  // The reduction runs over s5 and reads at x0*s5*12 + r0*12 + x1.
  bool reduced_over_symbol = false;
  for (const ir::Node &n : p.nodes)
    if (n.kind == ir::NodeKind::Reduction && n.reduction_ranges.size() == 1)
      reduced_over_symbol |= str(n.reduction_ranges[0]) == "s5";
  EXPECT_TRUE(reduced_over_symbol) << ir::str(p);

  ir::Program q = ir::specialize(p, {{"s5", 9}});
  EXPECT_TRUE(ir::symbols_of(q).empty()) << ir::str(q);
  EXPECT_EQ(shape_str(q.buffer(q.inputs[0]).type.sizes), "[2, 9, 12]");
  EXPECT_EQ(shape_str(q.buffer(q.inputs[0]).type.strides), "[108, 12, 1]");
  EXPECT_TRUE(size_guards_of(g)->guards().empty()) << "specialize records no guard";
}

// A bf16 product on the GPU over a symbolic number of rows (a language model's head, whose
// weight is large enough for aligned rows): the unaligned weight gets its aligned copy, and
// the rows stay symbolic: padding is planned in integers, so a product of symbolic sizes is
// left unpadded rather than fixed to the sizes compiled for. The same with a symbolic
// inner dim (a product of attention scores).
TEST(Specialize, ProductsOverSymbolicRowsAreNotPadded) {
  const char *text = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "bf16[s0, 1024][1024, 1]cuda:0", w: "bf16[1024, 1025][1025, 1]cuda:0", v: "bf16[s0, 1025][1025, 1]cuda:0"):
        mm: "bf16[s0, 1025][1025, 1]cuda:0" = torch.ops.aten.mm.default(x, w)
        permute: "bf16[1025, s0][1, 1025]cuda:0" = torch.ops.aten.permute.default(v, [1, 0])
        mm_1: "bf16[1025, 1024][1024, 1]cuda:0" = torch.ops.aten.mm.default(permute, x)
        return (mm, mm_1)
)";
  for (int64_t rows : {2, 4096}) {
    SCOPED_TRACE(rows);
    frontend::SizeValues sizes{{"s0", rows}};
    Graph g = frontend::parse_graph(text, "head.py", &sizes);
    ir::Program p = lowering::lower_symbolic(g);
    EXPECT_TRUE(size_guards_of(g)->specialized(size_guards_of(g)->values()).empty()) << size_guards_str(g);
    EXPECT_EQ(ir::symbols_of(p), std::set<std::string>{"s0"});
  }
}

TEST(Specialize, LowerGuardsEverySymbolItFixes) {
  frontend::SizeValues sizes{{"s5", 5}};
  Graph g = frontend::parse_graph(kSoftmaxText, "softmax.py", &sizes);
  ir::Program p = lowering::lower(g);
  EXPECT_TRUE(ir::symbols_of(p).empty());
  ASSERT_EQ(size_guards_of(g)->guards().size(), 1u);
  EXPECT_EQ(size_guards_of(g)->guards()[0].str(), "s5 == 5");
}

/// The dyn_ fixtures by graph: `dyn_sum_s7` and `dyn_sum_s16` are one graph at two sizes.
std::map<std::string, std::vector<std::filesystem::path>> dynamic_families() {
  std::map<std::string, std::vector<std::filesystem::path>> out;
  for (const auto &dir : test::fixture_dirs())
    if (std::string family = test::dynamic_family(dir); !family.empty()) out[family].push_back(dir);
  return out;
}

// Runs `s` (of the graph `g`, compiled once) specialized to the sizes of each fixture of
// the family `dirs` on the reference interpreter, against eager's outputs there.
void expect_serves_every_size(const Graph &g, const ir::ScheduledProgram &s, const std::vector<std::filesystem::path> &dirs) {
  std::shared_ptr<SizeGuards> guards = size_guards_of(g);
  for (const auto &dir : dirs) {
    SCOPED_TRACE(dir.filename().string());
    std::map<std::string, int64_t> values = symbol_values(test::fixture_graph(dir));
    if (std::optional<SizeGuard> failing = guards->first_failing(values)) {
      ADD_FAILURE() << "the compiled graph does not serve these sizes: " << failing->str() << " (" << failing->why << ")";
      continue;
    }
    ir::ScheduledProgram q = ir::specialize(s, values);
    EXPECT_TRUE(ir::symbols_of(q).empty());
    TensorList inputs = read_safetensors((dir / "inputs.safetensors").string());
    TensorList expected = read_safetensors((dir / "expected.safetensors").string());
    std::vector<HostTensor> outputs = ir::interpret(q, inputs);
    ASSERT_EQ(outputs.size(), g.outputs().size());
    test::expect_outputs_match(outputs, expected, q.program);
  }
}

class OneLowering : public testing::TestWithParam<std::string> {};

TEST_P(OneLowering, ServesEveryFixtureSize) {
  std::vector<std::filesystem::path> dirs = dynamic_families().at(GetParam());
  ASSERT_GE(dirs.size(), 2u);
  Graph g = passes::run_graph_passes(test::fixture_graph(dirs[0]), reference_evaluator());
  ir::Program p = lowering::lower_symbolic(g);
  ASSERT_TRUE(size_guards_of(g));
  EXPECT_FALSE(ir::symbols_of(p).empty()) << "lowering specialized every symbol:\n" << size_guards_str(g);
  expect_serves_every_size(g, ir::unfused(p), dirs);
}

// The scheduler keeps the symbols too: it fuses by the sizes' expressions and records no
// guard, and the kernels it forms, specialized to each size, match eager there.
TEST_P(OneLowering, OneScheduleServesEveryFixtureSize) {
  std::vector<std::filesystem::path> dirs = dynamic_families().at(GetParam());
  Graph g = passes::run_graph_passes(test::fixture_graph(dirs[0]), reference_evaluator());
  ir::Program p = lowering::lower_symbolic(g);
  size_t before = size_guards_of(g)->guards().size();
  sched::Schedule s = sched::schedule_kernels(p);
  EXPECT_EQ(size_guards_of(g)->guards().size(), before) << "scheduling guarded a size:\n" << size_guards_str(g);
  EXPECT_FALSE(ir::symbols_of(s.ir).empty());
  expect_serves_every_size(g, s.ir, dirs);
}

// The C++ dialect keeps them to the end: one library, built for the family's first size,
// runs every fixture's inputs at their own sizes (its kernels take the sizes as arguments,
// its oneDNN calls make a primitive per sizes) and matches eager there, and code generation
// specialized no symbol.
TEST_P(OneLowering, OneCpuLibraryServesEveryFixtureSize) {
  std::vector<std::filesystem::path> dirs = dynamic_families().at(GetParam());
  Compilation c = compile_graph(test::fixture_graph(dirs[0]), sched::ScheduleOptions::from_registry(), "",
                                CodegenSizes::Symbolic);
  CpuModule m(build_cpu(c.schedule).so_path);
  std::shared_ptr<SizeGuards> guards = size_guards_of(c.graph);
  EXPECT_TRUE(guards->specialized(guards->values()).empty()) << size_guards_str(c.graph);
  EXPECT_FALSE(m.symbols().empty());
  for (const auto &dir : dirs) {
    SCOPED_TRACE(dir.filename().string());
    std::map<std::string, int64_t> values = symbol_values(test::fixture_graph(dir));
    TensorList inputs = read_safetensors((dir / "inputs.safetensors").string());
    TensorList expected = read_safetensors((dir / "expected.safetensors").string());
    std::vector<HostTensor> outputs = m.run(inputs);
    ASSERT_EQ(outputs.size(), c.graph.outputs().size());
    // Tolerances by the reductions at these sizes.
    test::expect_outputs_match(outputs, expected, ir::specialize(c.schedule.ir.program, values));
  }
}

std::vector<std::string> family_names() {
  std::vector<std::string> out;
  for (const auto &[name, dirs] : dynamic_families()) out.push_back(name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OneLowering, testing::ValuesIn(family_names()),
                         [](const auto &info) { return info.param; });

}  // namespace
}  // namespace coil
