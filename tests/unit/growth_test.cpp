// Compile time grows about linearly with the size of a graph: the stages from the text to
// the schedule (parse, passes, lowering, inlining, fusion) on a chain and a deep graph of
// 2,000 nodes and of 8,000; a wide cat and a long chain make kernels of bounded size. The graphs come from bench/growth_bench.py, which also
// measures chains, wide cats and deep graphs up to 100k nodes (bench/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>

#include "driver/compile.h"
#include "frontend/parser.h"
#include "runtime/compiler.h"
#include "test_util.h"

namespace coil {
namespace {

// The graph text of `kind` with `nodes` nodes, or "" without a python3 to write it.
std::string growth_graph(const std::string &kind, int nodes) {
  std::string script = (test::source_dir() / "bench" / "growth_bench.py").string();
  try {
    ProcessResult r = run_process({"python3", script, "emit", kind, std::to_string(nodes)});
    return r.exit_code == 0 ? r.out : "";
  } catch (const UserError &) {
    return "";
  }
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// The CPU time of this thread compiling `text` up to the schedule, the fastest of two: CPU
// time, not wall time, so that other work on the machine does not count.
double seconds_to_schedule(const std::string &text) {
  double best = 1e9;
  for (int i = 0; i < 2; ++i) {
    double start = thread_cpu_seconds();
    Compilation c = compile_graph(frontend::parse_graph(text, "chain.py"), sched::ScheduleOptions{});
    best = std::min(best, thread_cpu_seconds() - start);
    EXPECT_FALSE(c.schedule.ir.kernels.empty());
  }
  return best;
}

// 4 times the nodes: linear is 4 times the time, quadratic 16 times. (Before the inliner
// found consumers through an index and bounded what it recomputes, 1k nodes took 0.75 s
// and 4k 15 s.)
TEST(CompileTime, GrowsLinearlyWithAChainOfPointwiseNodes) {
  std::string small = growth_graph("chain", 2000), large = growth_graph("chain", 8000);
  if (small.empty() || large.empty()) GTEST_SKIP() << "no python3 to run bench/growth_bench.py";
  double t_small = seconds_to_schedule(small), t_large = seconds_to_schedule(large);
  RecordProperty("seconds_2000", std::to_string(t_small));
  RecordProperty("seconds_8000", std::to_string(t_large));
  EXPECT_LT(t_large, 8 * t_small) << "2,000 nodes: " << t_small << " s, 8,000 nodes: " << t_large << " s";
}

// A chain too long for one kernel goes into several, none over 1,024 body instructions
// (a C++ compiler took 44 s on the one kernel of 6,000 this chain made before), each
// refusal saying why.
TEST(CompileTime, AKernelsBodyIsBounded) {
  std::string text = growth_graph("chain", 2000);
  if (text.empty()) GTEST_SKIP() << "no python3 to run bench/growth_bench.py";
  Compilation c = compile_graph(frontend::parse_graph(text, "chain.py"), sched::ScheduleOptions{});
  const ir::ScheduledProgram &s = c.schedule.ir;
  EXPECT_GT(s.kernels.size(), 1u);
  for (const ir::Kernel &k : s.kernels) {
    size_t body = 0;
    for (int n : k.nodes) body += s.program.nodes[size_t(n)].body.instrs.size();
    EXPECT_LE(body, 1024u) << k.name;
  }
  bool said = std::any_of(c.schedule.rejected.begin(), c.schedule.rejected.end(), [](const sched::Rejection &r) {
    return r.reason.find("instructions in one kernel") != std::string::npos;
  });
  EXPECT_TRUE(said);
}

// The same for a deep graph of reductions and broadcasts: fusion's cycle check walks only
// the groups between the pair's levels. (Before, it walked every group reachable from one
// side: 2.8 s at 4,000 nodes and 7.7 s at 8,000.)
TEST(CompileTime, GrowsLinearlyWithADeepGraph) {
  std::string small = growth_graph("deep", 2000), large = growth_graph("deep", 8000);
  if (small.empty() || large.empty()) GTEST_SKIP() << "no python3 to run bench/growth_bench.py";
  double t_small = seconds_to_schedule(small), t_large = seconds_to_schedule(large);
  RecordProperty("seconds_2000", std::to_string(t_small));
  RecordProperty("seconds_8000", std::to_string(t_large));
  EXPECT_LT(t_large, 8 * t_small) << "2,000 nodes: " << t_small << " s, 8,000 nodes: " << t_large << " s";
}

// A cat of 2,000 inputs is concatenated in groups of at most 64 inputs a node, so no
// kernel's body grows with the inputs (one kernel of 20,000 masked loads did not compile).
TEST(CompileTime, AWideCatIsSplitIntoBoundedKernels) {
  std::string text = growth_graph("cat", 2000);
  if (text.empty()) GTEST_SKIP() << "no python3 to run bench/growth_bench.py";
  Compilation c = compile_graph(frontend::parse_graph(text, "cat.py"), sched::ScheduleOptions{});
  const ir::ScheduledProgram &s = c.schedule.ir;
  EXPECT_GT(s.kernels.size(), 1u);
  for (const ir::Kernel &k : s.kernels) {
    size_t body = 0;
    for (int n : k.nodes) body += s.program.nodes[size_t(n)].body.instrs.size();
    EXPECT_LE(body, 1024u) << k.name;
  }
  for (const ir::Node &n : s.program.nodes) {
    size_t loads = size_t(std::count_if(n.body.instrs.begin(), n.body.instrs.end(),
                                        [](const ir::Instr &i) { return i.op == ir::Op::Load; }));
    EXPECT_LE(loads, 64u) << n.origin;
  }
}

}  // namespace
}  // namespace coil
