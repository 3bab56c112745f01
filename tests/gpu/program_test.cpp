// Whole graphs on a real GPU: each graph text is compiled (generate_triton, Triton's
// compiler through the cache), run by CudaProgram and compared with the reference
// interpreter of the loop IR; then the bundled examples against PyTorch eager, and the
// executor's contract (outputs that alias, a caller's stream, concurrent calls, timing,
// errors). Not part of ctest (CI has no GPU); run it on a GPU machine with Python and
// triton, from the source folder:
//   cmake -S . -B build-gpu -G Ninja && ninja -C build-gpu coil_gpu_program_test
//   COIL_CACHE_DIR=$(mktemp -d) build-gpu/tests/coil_gpu_program_test [CASE_DIR...]
// CASE_DIRs (holding graph.py, inputs.safetensors, expected.safetensors) default to
// examples/* when ./examples exists. Prints PASS or FAIL per check and exits 0 only when
// every check passed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include "codegen/gpu/gpu_epilogue.h"
#include "driver/compile.h"
#include "frontend/parser.h"
#include "io/compare.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"
#include "ir/interpreter.h"
#include "ir/specialize.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_extern.h"
#include "runtime/cuda_program.h"
#include "runtime/cuda_programs.h"
#include "runtime/compiler.h"
#include "runtime/triton_build.h"
#include "runtime/triton_interpret.h"
#include "support/error.h"
#include "support/files.h"
#include "gpu_check.h"
#include "support/options.h"

namespace coil {
namespace {

// The GPU's schedule: extern epilogues where cuBLASLt takes them (gpu_epilogue.h).
sched::ScheduleOptions gpu_schedule_options() { return codegen::gpu_schedule_options(sched::ScheduleOptions{}); }

// A graph compiled for the GPU, with its loaded program.
struct Compiled {
  Compilation c;
  std::unique_ptr<CudaProgram> program;
};

Compiled compile_for_gpu(const Graph &g) {
  Compiled out{compile_graph(g, gpu_schedule_options()), nullptr};
  CudaBuild build = build_cuda(out.c.schedule);
  out.program = std::make_unique<CudaProgram>(out.c.schedule, std::move(build.program), build.binaries);
  return out;
}

// Deterministic values for every input of `p`: floats in [-2, 2], small integers, both bools.
TensorList make_inputs(const ir::Program &p, uint64_t seed) {
  TensorList out;
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return double(state >> 11) / double(1ULL << 53);  // [0, 1)
  };
  for (ir::BufferId id : p.inputs) {
    const ir::Buffer &b = p.buffer(id);
    HostTensor h = HostTensor::zeros(b.type.dtype, b.type.sizes);
    for (int64_t i = 0; i < h.numel(); ++i) {
      double f = next() * 4 - 2;
      int64_t n = int64_t(next() * 11) - 5;
      switch (h.dtype) {
        case DType::F64: h.ptr<double>()[i] = f; break;
        case DType::F32: h.ptr<float>()[i] = float(f); break;
        case DType::F16: h.ptr<uint16_t>()[i] = float_to_half(float(f)); break;
        case DType::BF16: h.ptr<uint16_t>()[i] = float_to_bf16(float(f)); break;
        case DType::I64: h.ptr<int64_t>()[i] = n; break;
        case DType::I32: h.ptr<int32_t>()[i] = int32_t(n); break;
        case DType::I16: h.ptr<int16_t>()[i] = int16_t(n); break;
        case DType::I8: h.ptr<int8_t>()[i] = int8_t(n); break;
        case DType::U8: h.ptr<uint8_t>()[i] = uint8_t(n + 5); break;
        case DType::Bool: h.ptr<uint8_t>()[i] = uint8_t(n > 0); break;
      }
    }
    out.emplace_back(b.name, std::move(h));
  }
  return out;
}

// Each output against `want` with the testing tiers' tolerance (by the reductions of
// `lowered`); empty when all match.
std::string compare_outputs(const ir::Program &lowered, const std::vector<HostTensor> &got,
                            const std::vector<const HostTensor *> &want) {
  if (got.size() != want.size()) return str_cat(got.size(), " outputs, expected ", want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Tolerance tol = default_tolerance(want[i]->dtype, ir::max_reduction_size(lowered, lowered.outputs[i]));
    Comparison cmp = compare(got[i], *want[i], tol);
    if (!cmp.pass)
      return str_cat(output_tensor_name(i), " ", got[i].describe(), ": ", cmp.mismatches, " mismatches, first ",
                     cmp.first_mismatch, ", max abs error ", cmp.max_abs_error);
  }
  return "";
}

std::string compare_with_reference(const Compilation &c, const std::vector<HostTensor> &got, const TensorList &inputs) {
  std::vector<HostTensor> ref = ir::interpret(c.lowered, inputs);
  std::vector<const HostTensor *> want;
  for (const HostTensor &r : ref) want.push_back(&r);
  return compare_outputs(c.lowered, got, want);
}

// Bitwise equality of two runs' outputs.
bool same_bits(const std::vector<HostTensor> &a, const std::vector<HostTensor> &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].dtype != b[i].dtype || a[i].sizes != b[i].sizes || a[i].data.size() != b[i].data.size() ||
        std::memcmp(a[i].data.data(), b[i].data.data(), a[i].data.size()) != 0)
      return false;
  return true;
}

struct GraphCase {
  std::string name;
  std::string text;
};

// Small graphs, each aimed at one part of the dialect or of the executor.
std::vector<GraphCase> graph_cases() {
  const std::string head = "class GraphModule(torch.nn.Module):\n    def forward(self, ";
  return {
      {"pointwise chain", head + R"(x: "f32[4099][1]cpu"):
        mul: "f32[4099][1]cpu" = torch.ops.aten.mul.Tensor(x, 2)
        add: "f32[4099][1]cpu" = torch.ops.aten.add.Tensor(mul, 1)
        relu: "f32[4099][1]cpu" = torch.ops.aten.relu.default(add)
        return (relu,)
)"},
      {"broadcast add and tanh", head + R"(x: "f32[64, 256][256, 1]cpu", y: "f32[256][1]cpu"):
        add: "f32[64, 256][256, 1]cpu" = torch.ops.aten.add.Tensor(x, y)
        tanh: "f32[64, 256][256, 1]cpu" = torch.ops.aten.tanh.default(add)
        return (tanh,)
)"},
      {"softmax over the last dim (persistent rows)", head + R"(x: "f32[128, 1000][1000, 1]cpu"):
        _softmax: "f32[128, 1000][1000, 1]cpu" = torch.ops.aten._softmax.default(x, -1, False)
        return (_softmax,)
)"},
      {"sum of everything (split reduction, scratch)", head + R"(x: "f32[1000003][1]cpu"):
        sum_1: "f32[][]cpu" = torch.ops.aten.sum.dim_IntList(x, [])
        return (sum_1,)
)"},
      {"sum over dim 0", head + R"(x: "f32[512, 300][300, 1]cpu"):
        sum_1: "f32[300][1]cpu" = torch.ops.aten.sum.dim_IntList(x, [0])
        return (sum_1,)
)"},
      {"var_mean of long rows (looped reduction)", head + R"(x: "f32[16, 10000][10000, 1]cpu"):
        var_mean = torch.ops.aten.var_mean.correction(x, [-1], correction = 1)
        getitem: "f32[16][1]cpu" = var_mean[0]
        getitem_1: "f32[16][1]cpu" = var_mean[1]
        return (getitem, getitem_1)
)"},
      {"linear, bias and relu (a cuBLASLt epilogue)", head + R"(x: "f32[96, 128][128, 1]cpu", w: "f32[80, 128][128, 1]cpu", b: "f32[80][1]cpu"):
        t: "f32[128, 80][1, 128]cpu" = torch.ops.aten.t.default(w)
        addmm: "f32[96, 80][80, 1]cpu" = torch.ops.aten.addmm.default(b, x, t)
        relu: "f32[96, 80][80, 1]cpu" = torch.ops.aten.relu.default(addmm)
        return (relu,)
)"},
      {"bf16 mm, bias and gelu tanh (a separate kernel: the rounding to bf16 between them)", head + R"(x: "bf16[64, 96][96, 1]cpu", w: "bf16[96, 48][48, 1]cpu", b: "bf16[48][1]cpu"):
        mm: "bf16[64, 48][48, 1]cpu" = torch.ops.aten.mm.default(x, w)
        add: "bf16[64, 48][48, 1]cpu" = torch.ops.aten.add.Tensor(mm, b)
        gelu: "bf16[64, 48][48, 1]cpu" = torch.ops.aten.gelu.default(add, approximate = 'tanh')
        return (gelu,)
)"},
      {"bmm and relu (a cuBLASLt epilogue over batches)", head + R"(x: "f32[4, 32, 64][2048, 64, 1]cpu", y: "f32[4, 64, 24][1536, 24, 1]cpu"):
        bmm: "f32[4, 32, 24][768, 24, 1]cpu" = torch.ops.aten.bmm.default(x, y)
        relu: "f32[4, 32, 24][768, 24, 1]cpu" = torch.ops.aten.relu.default(bmm)
        return (relu,)
)"},
      {"addmm scaled, then relu (bias by cuBLAS, relu by cuBLASLt)", head + R"(x: "f32[40, 72][72, 1]cpu", w: "f32[72, 56][56, 1]cpu", b: "f32[56][1]cpu"):
        addmm: "f32[40, 56][56, 1]cpu" = torch.ops.aten.addmm.default(b, x, w, beta = 0.5, alpha = 2)
        relu: "f32[40, 56][56, 1]cpu" = torch.ops.aten.relu.default(addmm)
        return (relu,)
)"},
      {"channels-last convolutions, 1x1 with a bias and 3x3 (cuDNN in NHWC), and linear+relu", head + R"(x: "f32[2, 16, 10, 10][1600, 1, 160, 16]cpu", w1: "f32[32, 16, 1, 1][16, 1, 16, 16]cpu", b1: "f32[32][1]cpu", w2: "f32[32, 32, 3, 3][288, 1, 96, 32]cpu", y: "f32[20, 40][40, 1]cpu", fw: "f32[24, 40][40, 1]cpu", fb: "f32[24][1]cpu"):
        convolution: "f32[2, 32, 10, 10][3200, 1, 320, 32]cpu" = torch.ops.aten.convolution.default(x, w1, b1, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
        relu: "f32[2, 32, 10, 10][3200, 1, 320, 32]cpu" = torch.ops.aten.relu.default(convolution)
        convolution_1: "f32[2, 32, 10, 10][3200, 1, 320, 32]cpu" = torch.ops.aten.convolution.default(relu, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
        t: "f32[40, 24][1, 40]cpu" = torch.ops.aten.t.default(fw)
        addmm: "f32[20, 24][24, 1]cpu" = torch.ops.aten.addmm.default(fb, y, t)
        relu_1: "f32[20, 24][24, 1]cpu" = torch.ops.aten.relu.default(addmm)
        return (relu_1, convolution_1)
)"},
      {"transposed add (tiles)", head + R"(x: "f32[256, 512][512, 1]cpu", y: "f32[512, 256][256, 1]cpu"):
        permute: "f32[256, 512][1, 256]cpu" = torch.ops.aten.permute.default(y, [1, 0])
        add: "f32[256, 512][512, 1]cpu" = torch.ops.aten.add.Tensor(x, permute)
        return (add,)
)"},
      {"input with transposed strides", head + R"(x: "f32[32, 64][1, 32]cpu"):
        relu: "f32[32, 64][1, 32]cpu" = torch.ops.aten.relu.default(x)
        return (relu,)
)"},
      {"bf16 rmsnorm", head + R"(x: "bf16[64, 256][256, 1]cpu", w: "bf16[256][1]cpu"):
        _to_copy: "f32[64, 256][256, 1]cpu" = torch.ops.aten._to_copy.default(x, dtype = torch.float32)
        pow_1: "f32[64, 256][256, 1]cpu" = torch.ops.aten.pow.Tensor_Scalar(_to_copy, 2)
        mean: "f32[64, 1][1, 1]cpu" = torch.ops.aten.mean.dim(pow_1, [-1], True)
        add: "f32[64, 1][1, 1]cpu" = torch.ops.aten.add.Tensor(mean, 1e-06)
        rsqrt: "f32[64, 1][1, 1]cpu" = torch.ops.aten.rsqrt.default(add)
        mul: "f32[64, 256][256, 1]cpu" = torch.ops.aten.mul.Tensor(_to_copy, rsqrt)
        _to_copy_1: "bf16[64, 256][256, 1]cpu" = torch.ops.aten._to_copy.default(mul, dtype = torch.bfloat16)
        mul_1: "bf16[64, 256][256, 1]cpu" = torch.ops.aten.mul.Tensor(_to_copy_1, w)
        return (mul_1,)
)"},
      {"integers and a comparison", head + R"(a: "i64[1000][1]cpu", b: "i64[1000][1]cpu"):
        add: "i64[1000][1]cpu" = torch.ops.aten.add.Tensor(a, b)
        gt: "b8[1000][1]cpu" = torch.ops.aten.gt.Tensor(a, b)
        return (add, gt)
)"},
      {"outputs that alias an input and each other", head + R"(x: "f32[48, 80][80, 1]cpu"):
        permute: "f32[80, 48][1, 80]cpu" = torch.ops.aten.permute.default(x, [1, 0])
        exp: "f32[48, 80][80, 1]cpu" = torch.ops.aten.exp.default(x)
        return (exp, permute, exp)
)"},
      {"matrix product (extern)", head + R"(a: "f32[64, 128][128, 1]cpu", b: "f32[128, 96][96, 1]cpu"):
        mm: "f32[64, 96][96, 1]cpu" = torch.ops.aten.mm.default(a, b)
        return (mm,)
)"},
      {"matrix product then a reduction", head + R"(a: "f32[64, 128][128, 1]cpu", b: "f32[128, 96][96, 1]cpu"):
        mm: "f32[64, 96][96, 1]cpu" = torch.ops.aten.mm.default(a, b)
        amax: "f32[64][1]cpu" = torch.ops.aten.amax.default(mm, [1])
        return (amax,)
)"},
  };
}

void check_graph_cases(const std::string &mode) {
  for (const GraphCase &gc : graph_cases()) {
    run_check(mode + gc.name, [&] {
      Compiled c = compile_for_gpu(frontend::parse_graph(gc.text, "test.py"));
      TensorList inputs = make_inputs(c.c.lowered, 1);
      std::string problem = compare_with_reference(c.c, c.program->run(inputs), inputs);
      if (!problem.empty()) return problem;
      // What the case's name promises, in the steps' words.
      std::string lines;
      for (const std::string &line : c.program->describe()) lines += "\n     " + line;
      if (gc.name.find("cuBLASLt epilogue") != std::string::npos &&
          lines.find("cuBLASLt cublasLtMatmul with epilogue") == std::string::npos)
        return "no step runs through cuBLASLt:" + lines;
      if (gc.name.find("NHWC") != std::string::npos &&
          (lines.find("kernel0: cuDNN convolution forward (NHWC") == std::string::npos ||
           lines.find("cuBLASLt cublasLtMatmul with epilogue bias+relu") == std::string::npos))
        return "the 1x1 convolution is not in NHWC, or linear+relu not in cuBLASLt:" + lines;
      return std::string();
    });
  }
}

// The bundled examples against PyTorch eager, as scripts/gpu_check.sh runs them through
// the command line; here through CudaProgram alone.
void check_case_dirs(const std::vector<std::filesystem::path> &dirs) {
  for (const auto &dir : dirs) {
    run_check("eager: " + dir.filename().string(), [&] {
      Compiled c = compile_for_gpu(frontend::parse_graph_file((dir / "graph.py").string()));
      TensorList inputs = read_safetensors((dir / "inputs.safetensors").string());
      TensorList expected = read_safetensors((dir / "expected.safetensors").string());
      std::vector<const HostTensor *> want;
      for (size_t i = 0; i < c.c.lowered.outputs.size(); ++i) {
        want.push_back(find_tensor(expected, output_tensor_name(i)));
        if (!want.back()) return str_cat("expected.safetensors has no ", output_tensor_name(i));
      }
      return compare_outputs(c.c.lowered, c.program->run(inputs), want);
    });
  }
}

// The Triton dialect at symbolic sizes on the GPU: each family of dyn_ fixtures (one graph
// captured at several sizes) compiled once with its sizes kept, and its one launch plan run
// by run_plan.py under Triton's JIT at every member's sizes, against eager there; then a
// softmax compiled for rows of 16 run at rows of 9 and 5,000 (its looped variant). Then all
// of them on coil's runtime: each family's kernels built once (CudaPrograms), a program set
// up per size.
void check_symbolic_plans(const std::filesystem::path &fixtures) {
  namespace fs = std::filesystem;
  static const std::regex family_name("(dyn_.*)_s[0-9x]+");
  std::map<std::string, std::vector<fs::path>> families;
  if (fs::is_directory(fixtures))
    for (const auto &e : fs::directory_iterator(fixtures)) {
      std::smatch m;
      std::string base = e.path().filename().string();
      if (std::regex_match(base, m, family_name)) families[m[1].str()].push_back(e.path());
    }
  fs::path root = fs::temp_directory_path() / ("coil_symbolic_gpu_" + std::to_string(::getpid()));
  fs::remove_all(root);
  struct Run {
    std::string family;
    fs::path save;
    ir::Program lowered;  // at the run's sizes
    std::vector<HostTensor> want;
    std::map<std::string, int64_t> values;  // the run's sizes
    fs::path inputs;
  };
  std::vector<Run> runs;
  std::map<std::string, Compilation> compiled;  // per family, once
  std::map<std::string, std::string> failed_to_compile;
  std::string batch = "[";
  auto add_run = [&](const std::string &family, const fs::path &plan, const fs::path &inputs, Run r) {
    r.inputs = inputs;
    batch += std::string(batch.size() > 1 ? ",\n" : "\n") + "{\"plan\": \"" + plan.string() + "\", \"inputs\": \"" +
             inputs.string() + "\", \"save\": \"" + r.save.string() + "\"}";
    runs.push_back(std::move(r));
  };
  auto compile_plan = [&](const std::string &family, Graph g, const fs::path &dir) -> std::optional<Compilation> {
    try {
      Compilation c = compile_graph(std::move(g), gpu_schedule_options(), "", CodegenSizes::Symbolic);
      write_launch_plan(c.schedule, codegen::generate_triton(c.schedule), dir.string());
      compiled.emplace(family, c);
      return c;
    } catch (const std::exception &e) {
      failed_to_compile[family] = e.what();
      return std::nullopt;
    }
  };
  for (auto &[family, dirs] : families) {
    std::sort(dirs.begin(), dirs.end());
    fs::path dir = root / family;
    std::optional<Compilation> c = compile_plan(
        family, frontend::parse_graph_file((dirs[0] / "graph.py").string(), tensor_shapes_in((dirs[0] / "inputs.safetensors").string())),
        dir);
    if (!c) continue;
    for (const fs::path &member : dirs) {
      Graph at = frontend::parse_graph_file((member / "graph.py").string(), tensor_shapes_in((member / "inputs.safetensors").string()));
      fs::path expected = member / "expected_cuda.safetensors";
      if (!fs::exists(expected)) expected = member / "expected.safetensors";
      std::map<std::string, int64_t> values = symbol_values(at);
      Run r{family, dir / (member.filename().string() + ".safetensors"), ir::specialize(c->lowered, values), {}, values, {}};
      TensorList want = read_safetensors(expected.string());
      for (size_t i = 0; i < r.lowered.outputs.size(); ++i)
        if (const HostTensor *t = find_tensor(want, output_tensor_name(i))) r.want.push_back(*t);
      add_run(family, dir / "launch_plan.json", member / "inputs.safetensors", std::move(r));
    }
  }
  const std::string softmax = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, s0][s0, 1]cpu"):
        s: "f32[4, s0][s0, 1]cpu" = torch.ops.aten._softmax.default(x, -1, False)
        return (s,)
)";
  frontend::SizeValues hints{{"s0", 16}};
  if (std::optional<Compilation> c = compile_plan("softmax variants", frontend::parse_graph(softmax, "softmax.py", &hints), root / "softmax"))
    for (int64_t n : {9, 5000}) {
      Run r{"softmax variants", root / "softmax" / str_cat("out_", n, ".safetensors"), ir::specialize(c->lowered, {{"s0", n}}),
            {}, {{"s0", n}}, {}};
      TensorList inputs = make_inputs(r.lowered, uint64_t(n));
      fs::path in = root / "softmax" / str_cat("in_", n, ".safetensors");
      write_safetensors(in.string(), inputs);
      r.want = ir::interpret(r.lowered, inputs);
      add_run("softmax variants", root / "softmax" / "launch_plan.json", in, std::move(r));
    }
  fs::create_directories(root);
  std::ofstream(root / "batch.json") << batch << "]\n";
  ProcessResult result = run_process({triton_python(), triton_helper_file("run_plan.py").string(), "--batch",
                                      (root / "batch.json").string(), "--device", "cuda"});
  std::map<std::string, std::string> problems = failed_to_compile;
  std::map<std::string, int> sizes_run;
  for (const Run &r : runs) {
    if (problems.count(r.family)) continue;
    ++sizes_run[r.family];
    if (fs::exists(r.save.string() + ".error")) {
      problems[r.family] = read_file(r.save.string() + ".error");
      continue;
    }
    if (!fs::exists(r.save)) {
      problems[r.family] = "run_plan.py wrote nothing (exit " + std::to_string(result.exit_code) + "): " + result.err;
      continue;
    }
    TensorList got_named = read_safetensors(r.save.string());
    std::vector<HostTensor> got;
    std::vector<const HostTensor *> want;
    for (size_t i = 0; i < r.want.size(); ++i) {
      const HostTensor *t = find_tensor(got_named, output_tensor_name(i));
      if (!t) break;
      got.push_back(*t);
      want.push_back(&r.want[i]);
    }
    std::string problem = compare_outputs(r.lowered, got, want);
    if (!problem.empty()) problems[r.family] = r.save.filename().string() + ": " + problem;
  }
  std::set<std::string> names;
  for (const auto &[family, dirs] : families) names.insert(family);
  names.insert("softmax variants");
  for (const std::string &family : names)
    run_check("symbolic: " + family + " (" + std::to_string(sizes_run[family]) + " sizes, one launch plan)", [&] {
      return problems.count(family) ? problems.at(family) : std::string();
    });

  // The same families through coil's own runtime: each family's kernels built and loaded
  // once (CudaPrograms), a program set up at each member's sizes and run there.
  std::map<std::string, std::string> runtime_problems = failed_to_compile;
  std::map<std::string, std::unique_ptr<CudaPrograms>> programs;
  std::map<std::string, std::set<std::vector<int64_t>>> distinct;
  for (const Run &r : runs) {
    if (runtime_problems.count(r.family)) continue;
    try {
      std::unique_ptr<CudaPrograms> &p = programs[r.family];
      if (!p) {
        const Compilation &c = compiled.at(r.family);
        CudaBuild b = build_cuda(c.schedule);
        std::set<std::string> symbols = ir::symbols_of(c.schedule.ir);
        p = std::make_unique<CudaPrograms>(c.schedule, std::move(b.program), b.binaries,
                                           std::vector<std::string>(symbols.begin(), symbols.end()));
      }
      std::vector<int64_t> sizes;
      for (const std::string &symbol : p->symbols()) sizes.push_back(r.values.at(symbol));
      distinct[r.family].insert(sizes);
      std::vector<HostTensor> got = p->at(sizes)->run(read_safetensors(r.inputs.string()));
      got.resize(std::min(got.size(), r.want.size()));
      std::vector<const HostTensor *> want;
      for (const HostTensor &w : r.want) want.push_back(&w);
      std::string problem = compare_outputs(r.lowered, got, want);
      if (!problem.empty()) runtime_problems[r.family] = r.inputs.parent_path().filename().string() + ": " + problem;
    } catch (const std::exception &e) {
      runtime_problems[r.family] = e.what();
    }
  }
  for (const std::string &family : names)
    run_check("symbolic on coil's runtime: " + family + " (" + std::to_string(distinct[family].size()) +
                  " sizes, one build)", [&]() -> std::string {
      if (runtime_problems.count(family)) return runtime_problems.at(family);
      int64_t setups = programs.count(family) ? programs.at(family)->setups() : 0;
      if (setups != int64_t(distinct[family].size()))
        return str_cat(setups, " programs were set up for ", distinct[family].size(), " sizes");
      return "";
    });
  // With one size kept set up (triton.sizes_kept), a size called again after another is
  // set up again, and runs as it did.
  run_check("symbolic: sizes kept", [&]() -> std::string {
    if (!compiled.count("softmax variants")) return "the softmax did not compile";
    options::ScopedOverrides one(std::vector<std::pair<std::string, std::string>>{{"triton.sizes_kept", "1"}});
    const Compilation &c = compiled.at("softmax variants");
    CudaBuild b = build_cuda(c.schedule);
    CudaPrograms p(c.schedule, std::move(b.program), b.binaries, {"s0"});
    for (int64_t n : {9, 5000, 9}) {
      ir::Program at = ir::specialize(c.lowered, {{"s0", n}});
      TensorList inputs = make_inputs(at, uint64_t(n));
      std::vector<HostTensor> want = ir::interpret(at, inputs);
      std::vector<const HostTensor *> wanted;
      for (const HostTensor &w : want) wanted.push_back(&w);
      std::vector<int64_t> sizes{n};
      if (std::string problem = compare_outputs(at, p.at(sizes)->run(inputs), wanted); !problem.empty())
        return str_cat("s0 = ", n, ": ", problem);
    }
    return p.setups() == 3 ? "" : str_cat(p.setups(), " programs set up for 3 calls with one size kept");
  });
  fs::remove_all(root);
}

// The executor's contract on one graph with a split reduction (scratch in the arena), an
// intermediate and two outputs; `mode` names the options set (CUDA graphs, autotuning).
void check_contract(const std::string &mode) {
  const char *text = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[300, 4000][4000, 1]cpu"):
        exp: "f32[300, 4000][4000, 1]cpu" = torch.ops.aten.exp.default(x)
        sum_1: "f32[300][1]cpu" = torch.ops.aten.sum.dim_IntList(exp, [1])
        sum_2: "f32[][]cpu" = torch.ops.aten.sum.dim_IntList(x, [])
        return (sum_1, sum_2)
)";
  std::unique_ptr<Compiled> shared;
  TensorList inputs;
  std::vector<HostTensor> first;
  run_check(mode + "contract: compile and run", [&] {
    shared = std::make_unique<Compiled>(compile_for_gpu(frontend::parse_graph(text, "contract.py")));
    inputs = make_inputs(shared->c.lowered, 7);
    first = shared->program->run(inputs);
    return compare_with_reference(shared->c, first, inputs);
  });
  if (!shared) return;
  const CudaProgram &program = *shared->program;

  run_check(mode + "contract: a second call gives the same bits", [&] {
    return same_bits(program.run(inputs), first) ? "" : "the outputs differ";
  });
  run_check(mode + "contract: on the caller's stream", [&] {
    cuda::Stream stream;
    return same_bits(program.run(inputs, stream.get()), first) ? "" : "the outputs differ";
  });
  run_check(mode + "contract: concurrent calls from 4 threads", [&] {
    std::vector<std::string> problems(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < problems.size(); ++t)
      threads.emplace_back([&, t] {
        try {
          for (int i = 0; i < 10 && problems[t].empty(); ++i)
            if (!same_bits(program.run(inputs), first)) problems[t] = str_cat("thread ", t, " call ", i, " differs");
        } catch (const std::exception &e) {
          problems[t] = e.what();
        }
      });
    for (auto &th : threads) th.join();
    for (const auto &p : problems)
      if (!p.empty()) return p;
    return std::string();
  });
  run_check(mode + "contract: median_seconds", [&] {
    double t = program.median_seconds(inputs, 20);
    std::printf("     median %.1f us per call\n", t * 1e6);
    return t > 0 && std::isfinite(t) && t < 1.0 ? "" : str_cat("median ", t, " s");
  });
  run_check(mode + "contract: describe names every step", [&] {
    std::vector<std::string> lines = program.describe();
    bool graphs = options::get_bool("triton.cudagraphs");
    if (graphs && (lines.empty() || lines[0].rfind("CUDA graph: ", 0) != 0))
      return "CUDA graphs asked for, but the first line is: " + (lines.empty() ? std::string() : lines[0]);
    if (graphs) lines.erase(lines.begin());
    if (lines.size() != program.program().steps.size())
      return str_cat(lines.size(), " lines for ", program.program().steps.size(), " steps");
    for (const std::string &line : lines) {
      std::printf("     %s\n", line.c_str());
      size_t colon = line.find(": ");
      if (colon == std::string::npos || colon == 0) return "a line without its step's name: " + line;
    }
    return std::string();
  });
  run_check(mode + "contract: a missing input is a UserError", [&] {
    try {
      program.run({});
      return std::string("no error");
    } catch (const UserError &e) {
      return e.message() == "missing input tensor 'x'" ? std::string() : "message: " + e.message();
    }
  });
  run_check(mode + "contract: a mistyped input is a UserError", [&] {
    TensorList wrong;
    wrong.emplace_back("x", HostTensor::zeros(DType::F32, {300, 3999}));
    try {
      program.run(wrong);
      return std::string("no error");
    } catch (const UserError &e) {
      return e.message().find("input 'x' is f32[300, 3999]") == 0 ? std::string() : "message: " + e.message();
    }
  });
  run_check(mode + "contract: the program still runs after errors", [&] {
    return same_bits(program.run(inputs), first) ? "" : "the outputs differ";
  });
}

// Extern steps set up once (runtime/cuda_extern.h): the first call may still bind a
// workspace; calls 2 to 30 create no handle, descriptor or cuBLASLt matmul, ask no
// heuristic and allocate nothing for them, and still give the first call's bits.
void check_prepared_once(const std::string &mode) {
  run_check(mode + "extern steps are prepared once, not per call", [&] {
    const std::vector<GraphCase> cases = graph_cases();
    const GraphCase *conv = nullptr;
    for (const GraphCase &gc : cases)
      if (gc.name.find("NHWC") != std::string::npos) conv = &gc;
    if (!conv) return std::string("no convolution case");
    Compiled c = compile_for_gpu(frontend::parse_graph(conv->text, "test.py"));
    TensorList inputs = make_inputs(c.c.lowered, 5);
    std::vector<HostTensor> first = c.program->run(inputs);
    int64_t before = cuda::extern_setups();
    for (int i = 0; i < 29; ++i)
      if (!same_bits(c.program->run(inputs), first)) return str_cat("call ", i + 2, " differs from the first");
    c.program->median_seconds(inputs, 20);
    int64_t after = cuda::extern_setups();
    if (after != before) return str_cat(after - before, " extern set-ups during calls 2 to 30");
    return compare_with_reference(c.c, first, inputs);
  });
}

// A caller's device tensors, each in its buffer's layout (an output in its view's), for
// run(DeviceTensor): bound in place when they come back at the same addresses, bound again
// a few times when they move, then copied (cuda_binding.cpp, "where a call's tensors are
// bound").
struct DeviceCall {
  std::vector<cuda::DeviceBuffer> in, out;
  std::vector<Shape> in_strides, out_strides;
  std::vector<DeviceTensor> ins() const {
    std::vector<DeviceTensor> r;
    for (size_t i = 0; i < in.size(); ++i) r.push_back({in[i].ptr(), in_strides[i]});
    return r;
  }
  std::vector<DeviceTensor> outs() const {
    std::vector<DeviceTensor> r;
    for (size_t i = 0; i < out.size(); ++i) r.push_back({out[i].ptr(), out_strides[i]});
    return r;
  }
};

ir::View view_of_output(const ir::Program &p, size_t k) {
  if (k < p.output_views.size()) return p.output_views[k];
  const TensorType &t = p.buffer(p.outputs[k]).type;
  return {p.outputs[k], t.sizes, t.strides, 0};
}

// Uploads `inputs` (dense) into `into`, each laid out by its buffer's strides.
void upload_inputs(const ir::Program &p, const TensorList &inputs, std::vector<cuda::DeviceBuffer> &into) {
  for (size_t j = 0; j < p.inputs.size(); ++j) {
    const TensorType &t = p.buffer(p.inputs[j]).type;
    int64_t size = itemsize(t.dtype);
    std::vector<std::byte> staged(into[j].size());
    const std::byte *src = find_tensor(inputs, p.buffer(p.inputs[j]).name)->data.data();
    for_each_offset(t.sizes, t.strides, 0, [&](int64_t flat, int64_t at) {
      std::memcpy(staged.data() + at * size, src + flat * size, size_t(size));
    });
    into[j].upload(staged.data(), staged.size());
  }
}

DeviceCall device_call(const ir::Program &p) {
  DeviceCall c;
  for (ir::BufferId b : p.inputs) {
    const TensorType &t = p.buffer(b).type;
    c.in.emplace_back(size_t(std::max<int64_t>(storage_extent(t), 1) * itemsize(t.dtype)));
    c.in_strides.push_back(t.strides);
  }
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    ir::View v = view_of_output(p, k);
    TensorType t{p.buffer(p.outputs[k]).type.dtype, v.sizes, v.strides, {}};
    c.out.emplace_back(size_t(std::max<int64_t>(storage_extent(t), 1) * itemsize(t.dtype)));
    c.out_strides.push_back(v.strides);
  }
  return c;
}

// The outputs of a device call, dense, as run(TensorList) gives them.
std::vector<HostTensor> download_outputs(const ir::Program &p, const DeviceCall &c) {
  std::vector<HostTensor> out;
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    ir::View v = view_of_output(p, k);
    DType t = p.buffer(p.outputs[k]).type.dtype;
    std::vector<std::byte> all(c.out[k].size());
    c.out[k].download(all.data(), all.size());
    HostTensor h = HostTensor::zeros(t, v.sizes);
    int64_t size = itemsize(t);
    for_each_offset(v.sizes, v.strides, 0, [&](int64_t flat, int64_t at) {
      std::memcpy(h.data.data() + flat * size, all.data() + at * size, size_t(size));
    });
    out.push_back(std::move(h));
  }
  return out;
}

void check_bound_in_place(const std::string &mode) {
  run_check(mode + "device tensors at the same addresses are bound in place, moved ones copied", [&] {
    const std::vector<GraphCase> cases = graph_cases();
    auto conv = std::find_if(cases.begin(), cases.end(),
                             [](const GraphCase &gc) { return gc.name.find("NHWC") != std::string::npos; });
    if (conv == cases.end()) return std::string("no convolution case");
    Compiled c = compile_for_gpu(frontend::parse_graph(conv->text, "test.py"));
    const ir::Program &p = c.c.schedule.ir.program;
    // Each seed's results as host tensors first: a host call binds the workspace to its
    // own buffers, which would hide what the device calls below do to it.
    std::vector<TensorList> inputs;
    std::vector<std::vector<HostTensor>> want;
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      inputs.push_back(make_inputs(c.c.lowered, seed));
      want.push_back(c.program->run(inputs.back()));
    }
    cuda::Stream stream;
    // A program whose calls all bind in place never allocates buffers of its own for its
    // inputs and outputs (a model's parameters are not held twice).
    {
      Compiled fresh = compile_for_gpu(frontend::parse_graph(conv->text, "test.py"));
      DeviceCall first = device_call(p);
      upload_inputs(p, inputs[0], first.in);
      COIL_CU(cuCtxSynchronize);
      fresh.program->run(first.ins(), first.outs(), stream.get());
      stream.synchronize();
      if (fresh.program->own_bytes() != 0 || fresh.program->copies() != 0)
        return str_cat("a first call on tensors bound in place made ", fresh.program->own_bytes(), " bytes of own buffers and ",
                       fresh.program->copies(), " copies");
      if (!same_bits(download_outputs(p, first), want[0])) return std::string("the first call in place differs");
      if (c.program->own_bytes() <= 0) return std::string("host calls made no buffers of their own");
    }
    // Calls 1 to 3 on the same tensors, with new values each time: nothing copied, and
    // after the first (which binds the steps to the tensors) nothing set up again.
    DeviceCall call = device_call(p);
    int64_t setups = 0;
    for (size_t i = 0; i < 3; ++i) {
      upload_inputs(p, inputs[i], call.in);
      COIL_CU(cuCtxSynchronize);
      if (i == 1) setups = cuda::extern_setups();
      c.program->run(call.ins(), call.outs(), stream.get());
      stream.synchronize();
      if (c.program->copies() != 0) return str_cat("call ", i + 1, ": ", c.program->copies(), " tensors copied");
      if (!same_bits(download_outputs(p, call), want[i]))
        return str_cat("call ", i + 1, " differs from the same inputs as host tensors");
    }
    if (cuda::extern_setups() != setups)
      return str_cat("calls 2 and 3 on the same tensors set up ", cuda::extern_setups() - setups, " extern steps");
    // Every tensor at a new address on each call: bound again where it is, three times (no
    // copy, the steps set up again), then copied on every call, the steps bound again only
    // the first time (cuda_binding.cpp, kRebinds). Every call's tensors stay allocated to
    // the end, so that a call's cannot come back at the addresses of the one before.
    std::vector<DeviceCall> held;
    held.reserve(5);
    for (size_t i = 3; i < 8; ++i) {
      DeviceCall &moved = held.emplace_back(device_call(p));
      upload_inputs(p, inputs[i % 5], moved.in);
      COIL_CU(cuCtxSynchronize);
      int64_t copies = c.program->copies();
      setups = cuda::extern_setups();
      c.program->run(moved.ins(), moved.outs(), stream.get());
      stream.synchronize();
      bool rebound = i < 6;
      int64_t expected = rebound ? 0 : int64_t(p.inputs.size() + p.outputs.size());
      if (c.program->copies() - copies != expected)
        return str_cat("call ", i + 1, " with moved tensors: ", c.program->copies() - copies, " copies, expected ", expected);
      if (rebound && cuda::extern_setups() == setups)
        return str_cat("call ", i + 1, " with moved tensors bound in place set up no extern step");
      if (i == 7 && cuda::extern_setups() != setups)
        return str_cat("the second copied call set up ", cuda::extern_setups() - setups, " extern steps again");
      if (!same_bits(download_outputs(p, moved), want[i % 5]))
        return str_cat("call ", i + 1, " with moved tensors differs from the same inputs as host tensors");
    }
    return std::string();
  });
}

// An output that may be written over an input (an optimizer's update of its parameter,
// sched::inputs_writable_by), given that input's own address: both are bound there, nothing
// is copied, and after each call the memory holds what the output would, three times over
// (each call's input the last call's result). An output that is an input (g, as a training
// forward returns what its backward reads), given that input, is not copied either.
void check_update_in_place(const std::string &mode) {
  run_check(mode + "an update given its input's address is written there, nothing copied", [&] {
    const std::string text = R"(class GraphModule(torch.nn.Module):
    def forward(self, p: "f32[1000, 33][33, 1]cpu", g: "f32[1000, 33][33, 1]cpu"):
        mul: "f32[1000, 33][33, 1]cpu" = torch.ops.aten.mul.Tensor(g, 0.5)
        sub: "f32[1000, 33][33, 1]cpu" = torch.ops.aten.sub.Tensor(p, mul)
        mul_1: "f32[1000, 33][33, 1]cpu" = torch.ops.aten.mul.Tensor(g, 0.9)
        return (mul_1, sub, g)
)";
    Compiled c = compile_for_gpu(frontend::parse_graph(text, "test.py"));
    // The reference calls on host tensors run on a program of their own: a host call binds
    // a workspace to its own buffers.
    Compiled reference = compile_for_gpu(frontend::parse_graph(text, "test.py"));
    const ir::Program &p = c.c.schedule.ir.program;
    if (sched::inputs_writable_by(c.c.schedule.ir, p.outputs[1]) != std::vector<int>{0})
      return std::string("the update is not writable over p");
    TensorList inputs = make_inputs(c.c.lowered, 3);
    DeviceCall call = device_call(p);
    upload_inputs(p, inputs, call.in);
    COIL_CU(cuCtxSynchronize);
    std::vector<DeviceTensor> ins = call.ins(), outs = call.outs();
    outs[1] = ins[0];  // the update over p
    outs[2] = ins[1];  // g itself
    cuda::Stream stream;
    for (int i = 0; i < 3; ++i) {
      std::vector<HostTensor> want = reference.program->run(inputs);
      c.program->run(ins, outs, stream.get());
      stream.synchronize();
      if (c.program->copies() != 0) return str_cat("call ", i + 1, ": ", c.program->copies(), " tensors copied");
      // p's memory now holds the update: the next call's p.
      HostTensor now = HostTensor::zeros(DType::F32, {1000, 33});
      call.in[0].download(now.data.data(), now.data.size());
      if (!same_bits({now}, {want[1]})) return str_cat("call ", i + 1, ": p's memory does not hold the update");
      std::vector<HostTensor> got = download_outputs(p, call);
      if (!same_bits({got[0]}, {want[0]})) return str_cat("call ", i + 1, ": the other output differs");
      for (auto &[name, t] : inputs)
        if (name == p.buffer(p.inputs[0]).name) t = now;
    }
    return std::string();
  });
}

// Outputs that are views of one computed buffer (a training forward's query, key and value,
// slices of one product), given as views of one allocation of the buffer's extent and said
// so (DeviceTensor's storage fields): the buffer is bound there and written once, nothing
// copied, nothing allocated; given in allocations of their own instead, each is copied.
void check_views_of_one_buffer(const std::string &mode) {
  run_check(mode + "outputs viewing one buffer, given one allocation, are written in place", [&] {
    const std::string text = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[64, 96][96, 1]cpu"):
        relu: "f32[64, 96][96, 1]cpu" = torch.ops.aten.relu.default(x)
        q: "f32[64, 32][96, 1]cpu" = torch.ops.aten.slice.Tensor(relu, 1, 0, 32)
        k: "f32[64, 32][96, 1]cpu" = torch.ops.aten.slice.Tensor(relu, 1, 32, 64)
        v: "f32[64, 32][96, 1]cpu" = torch.ops.aten.slice.Tensor(relu, 1, 64, 96)
        return (k, q, v)
)";
    Compiled c = compile_for_gpu(frontend::parse_graph(text, "test.py"));
    Compiled reference = compile_for_gpu(frontend::parse_graph(text, "test.py"));
    const ir::Program &p = c.c.schedule.ir.program;
    if (p.outputs.size() != 3 || p.outputs[0] != p.outputs[1] || p.outputs[0] != p.outputs[2])
      return std::string("the three outputs are not views of one buffer");
    TensorList inputs = make_inputs(c.c.lowered, 5);
    std::vector<HostTensor> want = reference.program->run(inputs);
    DeviceCall call = device_call(p);
    upload_inputs(p, inputs, call.in);
    cuda::DeviceBuffer whole(size_t(64 * 96 * 4));
    COIL_CU(cuCtxSynchronize);
    std::vector<DeviceTensor> ins = call.ins(), outs;
    for (size_t k = 0; k < 3; ++k) {
      int64_t offset = view_of_output(p, k).offset;
      outs.push_back({whole.ptr() + cuda::CUdeviceptr(offset * 4), call.out_strides[k], offset, 64 * 96});
    }
    cuda::Stream stream;
    for (int i = 0; i < 2; ++i) {
      c.program->run(ins, outs, stream.get());
      stream.synchronize();
      if (c.program->copies() != 0 || c.program->own_bytes() != 0)
        return str_cat("call ", i + 1, ": ", c.program->copies(), " tensors copied, ", c.program->own_bytes(),
                       " bytes of own buffers");
      std::vector<float> got(64 * 96);
      whole.download(got.data(), got.size() * 4);
      for (size_t k = 0; k < 3; ++k) {
        int64_t offset = view_of_output(p, k).offset;
        HostTensor h = HostTensor::zeros(DType::F32, {64, 32});
        for (int64_t r = 0; r < 64; ++r)
          std::memcpy(h.data.data() + r * 32 * 4, got.data() + offset + r * 96, 32 * 4);
        if (!same_bits({h}, {want[k]})) return str_cat("call ", i + 1, ": output ", k, " differs");
      }
    }
    // Allocations of their own, the storage unknown: correct, by copies.
    c.program->run(ins, call.outs(), stream.get());
    stream.synchronize();
    if (c.program->copies() == 0) return std::string("outputs in allocations of their own were not copied");
    if (!same_bits(download_outputs(p, call), want)) return std::string("outputs in allocations of their own differ");
    return std::string();
  });
}

// Two programs of one graph (a product kept in the arena, then a reduction of it) share the
// GPU's arena, at the same offsets. Their calls, queued on two streams without waiting,
// take turns: every call's result is right, as it would not be if the second stream's
// product overwrote the first's before its reduction read it.
void check_shared_arena(const std::string &mode) {
  run_check(mode + "two programs share the GPU's arena, their calls on two streams taking turns", [&] {
    const std::string text = R"(class GraphModule(torch.nn.Module):
    def forward(self, a: "f32[512, 1024][1024, 1]cpu", b: "f32[1024, 2048][2048, 1]cpu"):
        mm: "f32[512, 2048][2048, 1]cpu" = torch.ops.aten.mm.default(a, b)
        amax: "f32[512][1]cpu" = torch.ops.aten.amax.default(mm, [1])
        return (amax,)
)";
    Compiled one = compile_for_gpu(frontend::parse_graph(text, "test.py"));
    Compiled two = compile_for_gpu(frontend::parse_graph(text, "test.py"));
    if (!cuda::SharedArena::of(cuda::Device::get())) return std::string();  // no virtual memory: own arenas
    if (!one.program->in_shared_arena() || !two.program->in_shared_arena())
      return std::string("a program's arena is not in the shared arena");
    if (one.program->program().arena_bytes < 512 * 2048 * 4)
      return str_cat("the product is not in the arena (", one.program->program().arena_bytes, " bytes)");
    if (cuda::SharedArena::of(cuda::Device::get())->mapped() < one.program->program().arena_bytes)
      return std::string("the shared arena maps less than a program's arena");
    const ir::Program &p = one.c.schedule.ir.program;
    TensorList in1 = make_inputs(one.c.lowered, 1), in2 = make_inputs(one.c.lowered, 2);
    std::vector<HostTensor> want1 = one.program->run(in1), want2 = two.program->run(in2);
    DeviceCall c1 = device_call(p), c2 = device_call(p);
    upload_inputs(p, in1, c1.in);
    upload_inputs(p, in2, c2.in);
    constexpr int kCalls = 20;
    std::vector<DeviceCall> outs1, outs2;
    for (int i = 0; i < kCalls; ++i) outs1.push_back(device_call(p)), outs2.push_back(device_call(p));
    COIL_CU(cuCtxSynchronize);
    cuda::Stream s1, s2;
    for (int i = 0; i < kCalls; ++i) {
      one.program->run(c1.ins(), outs1[size_t(i)].outs(), s1.get());
      two.program->run(c2.ins(), outs2[size_t(i)].outs(), s2.get());
    }
    COIL_CU(cuCtxSynchronize);
    for (int i = 0; i < kCalls; ++i) {
      if (!same_bits(download_outputs(p, outs1[size_t(i)]), want1)) return str_cat("call ", i + 1, " of the first differs");
      if (!same_bits(download_outputs(p, outs2[size_t(i)]), want2)) return str_cat("call ", i + 1, " of the second differs");
    }
    // Without the option, a program's arena is its own.
    options::set_override("triton.shared_arena", "0");
    Compiled own = compile_for_gpu(frontend::parse_graph(text, "test.py"));
    options::set_override("triton.shared_arena", "1");
    if (own.program->in_shared_arena()) return std::string("triton.shared_arena=0 still shares the arena");
    if (!same_bits(own.program->run(in1), want1)) return std::string("a program with an arena of its own differs");
    return std::string();
  });
}

// triton.profile (with CUDA graphs asked for, which it turns off): one row per step, each
// counted once per call and timed, the results unchanged; reset_profile starts from zero.
void check_profile() {
  run_check("profile: every step timed on every call", [&] {
    options::set_override("triton.profile", "1");
    const std::vector<GraphCase> cases = graph_cases();
    auto conv = std::find_if(cases.begin(), cases.end(),
                             [](const GraphCase &gc) { return gc.name.find("NHWC") != std::string::npos; });
    if (conv == cases.end()) return std::string("no convolution case");
    Compiled c = compile_for_gpu(frontend::parse_graph(conv->text, "test.py"));
    options::set_override("triton.profile", "0");
    if (c.program->uses_graphs()) return std::string("profiled calls replay a CUDA graph");
    TensorList inputs = make_inputs(c.c.lowered, 7);
    std::vector<HostTensor> first = c.program->run(inputs);
    for (int i = 0; i < 2; ++i) c.program->run(inputs);
    std::vector<StepTime> rows = c.program->profile();
    if (rows.size() != c.program->program().steps.size())
      return str_cat(rows.size(), " rows for ", c.program->program().steps.size(), " steps");
    bool has_extern = false;
    for (const StepTime &r : rows) {
      if (r.calls != 3) return str_cat(r.name, " counted ", r.calls, " calls, not 3");
      if (!(r.seconds > 0 && r.seconds < 1)) return str_cat(r.name, " took ", r.seconds, " s over 3 calls");
      if (r.summary.empty()) return str_cat(r.name, " says nothing of what it computes");
      has_extern = has_extern || r.summary.find("convolution") != std::string::npos;
    }
    if (!has_extern) return std::string("no row for the convolution");
    c.program->reset_profile();
    for (const StepTime &r : c.program->profile())
      if (r.calls != 0 || r.seconds != 0) return str_cat(r.name, " kept its count after reset_profile");
    return compare_with_reference(c.c, first, inputs);
  });
}

int run(int argc, char **argv) {
  if (!cuda::available()) {
    report("cuda driver", false, cuda::unavailable_reason());
    return 1;
  }
  const cuda::Device &device = cuda::Device::get();
  std::printf("GPU 0: capability %d, %d multiprocessors; Triton %s (%s)\n", device.capability(),
              device.multiprocessors(), triton_version().c_str(), triton_python().c_str());
  check_graph_cases("");
  check_contract("");
  check_prepared_once("");
  check_bound_in_place("");
  check_update_in_place("");
  check_views_of_one_buffer("");
  check_shared_arena("");
  // The same contract with every launch replayed from a CUDA graph and every kernel tuned.
  options::set_override("triton.cudagraphs", "1");
  options::set_override("triton.autotune", "1");
  check_contract("graphs+autotune: ");
  run_check("graphs+autotune: the graph is used", [&] {
    Compiled c = compile_for_gpu(frontend::parse_graph(graph_cases()[0].text, "test.py"));
    TensorList inputs = make_inputs(c.c.lowered, 3);
    std::string problem = compare_with_reference(c.c, c.program->run(inputs), inputs);
    if (!problem.empty()) return problem;
    return c.program->uses_graphs() ? std::string() : "not replayed as a graph: " + c.program->graphs_note();
  });
  check_graph_cases("graphs+autotune: ");
  check_prepared_once("graphs+autotune: ");
  check_bound_in_place("graphs+autotune: ");
  check_update_in_place("graphs+autotune: ");
  check_views_of_one_buffer("graphs+autotune: ");
  check_shared_arena("graphs+autotune: ");
  check_profile();
  options::clear_overrides();
  std::vector<std::filesystem::path> dirs;
  for (int i = 1; i < argc; ++i) dirs.emplace_back(argv[i]);
  if (argc <= 1 && std::filesystem::is_directory("examples"))
    for (const auto &e : std::filesystem::directory_iterator("examples"))
      if (std::filesystem::exists(e.path() / "graph.py")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  check_case_dirs(dirs);
  if (argc <= 1) check_symbolic_plans("tests/fixtures");
  std::printf("%s: %d failed\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace coil

int main(int argc, char **argv) {
  try {
    return coil::run(argc, argv);
  } catch (const std::exception &e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
