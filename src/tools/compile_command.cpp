#include "tools/compile_command.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "driver/compile.h"
#include "frontend/parser.h"
#include <chrono>

#include "codegen/gpu/gpu_epilogue.h"
#include "codegen/triton/triton_codegen.h"
#include "runtime/cuda_program.h"
#include "runtime/triton_build.h"
#include "support/error.h"
#include "support/options.h"
#include "support/python_repr.h"

namespace coil::tools {

namespace {

// Why there is no Triton to compile kernels with ("" when there is one).
std::string triton_missing() {
  try {
    triton_version();
    return "";
  } catch (const UserError &e) {
    return e.message();
  }
}

// build_cuda, its errors placed in the graph `file`: "graph.py: error: Triton failed to
// compile kernel 'kernel0' ...".
CudaBuild build_cuda_of(const std::string &file, const sched::Schedule &s) {
  try {
    return build_cuda(s);
  } catch (const UserError &e) {
    if (!e.loc().file.empty()) throw;
    throw UserError(e.message(), SourceLoc{file});
  }
}

// `coil compile --device cuda`: the Triton kernels and the host program that launches
// them; the cubins too where Triton is installed (no GPU needed).
int compile_cuda(const std::string &file, const frontend::SizeValues &sizes, const std::string &out, bool explain) {
  Graph g = frontend::parse_graph_file(file, &sizes);
  sched::ScheduleOptions o = codegen::gpu_schedule_options(sched::ScheduleOptions::from_registry());
  Compilation c = compile_graph(std::move(g), o, out, CodegenSizes::Symbolic);
  auto start = std::chrono::steady_clock::now();
  // With Triton installed: generated, tuned (triton.autotune, on a GPU) and compiled by
  // build_cuda, for this machine's GPU or sm_90. Without: the sources alone, said so. A
  // kernel Triton rejects is an error that names it (build_triton_kernels), never a
  // sources-only success.
  codegen::GpuProgram gpu;
  std::vector<TritonBinary> binaries;
  std::vector<TunedKernel> tuned;
  std::string cubins;
  if (std::string missing = triton_missing(); !missing.empty()) {
    gpu = codegen::generate_triton(c.schedule);
    cubins = "no Triton, so the sources alone and no cubins: " + missing;
  } else {
    CudaBuild build = build_cuda_of(file, c.schedule);
    gpu = std::move(build.program);
    binaries = std::move(build.binaries);
    tuned = std::move(build.tuned);
    int capability = binaries.empty() ? 90 : binaries[0].facts.capability;
    cubins = str_cat(binaries.size(), " cubins for sm_", capability);
  }
  dump_sizes(c, out);  // with what code generation guarded
  std::filesystem::path dir(out), kernels = dir / "kernels";
  std::filesystem::create_directories(kernels);
  for (const codegen::GpuKernel &k : gpu.kernels) write_file_atomically(kernels / (k.name + ".py"), k.source);
  write_file_atomically(dir / "launch_plan.json", codegen::launch_plan_json(c.schedule, gpu));
  write_file_atomically(dir / "kernel_plans.txt", gpu.plans);
  write_file_atomically(dir / "stats.json", stats_json(c));
  for (size_t i = 0; i < binaries.size(); ++i) {
    write_file_atomically(kernels / (gpu.kernels[i].name + ".cubin"), binaries[i].cubin);
    std::filesystem::copy_file(binaries[i].entry / (gpu.kernels[i].name + ".json"), kernels / (gpu.kernels[i].name + ".json"),
                               std::filesystem::copy_options::overwrite_existing);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (explain) {
    std::cout << sched::explain(c.schedule);
    std::cout << "how the Triton dialect runs each kernel:\n";
    const ir::Program &p = c.schedule.ir.program;
    for (const codegen::GpuStep &st : gpu.steps) {
      if (st.kind == codegen::GpuStep::Kind::Extern) {
        const ir::Node &n = p.nodes[size_t(st.node)];
        std::cout << "  " << st.schedule_kernel << " (" << ir::extern_op_name(n.extern_op)
                  << ") extern library: "
                  << (st.extern_plan ? st.extern_plan->words() : "planned at each call's sizes (symbolic)") << "\n";
        continue;
      }
      const codegen::GpuKernel &k = gpu.kernels[size_t(st.kernel)];
      std::cout << "  " << k.name << "  " << k.attrs.at("layout") << "; grid " << k.attrs.at("grid") << ", "
                << k.num_warps << " warps";
      for (const auto &[name, value] : k.constexprs) std::cout << ", " << name << "=" << std::get<int64_t>(value);
      std::cout << "\n";
    }
    if (options::get_bool("triton.autotune")) {
      std::cout << "autotuning (triton.autotune), the winner of each kernel's configs:\n";
      if (tuned.empty()) std::cout << "  nothing tuned (no GPU, or no kernel of 2^16 elements or more)\n";
      for (const TunedKernel &t : tuned) std::cout << "  " << t.describe() << "\n";
    }
  }
  int externs = 0;
  for (const ir::Kernel &k : c.schedule.ir.kernels)  // attention is a Triton kernel here, no library call
    externs += k.kind == ir::KernelKind::Extern && !codegen::is_attention(c.schedule.ir.program, k);
  std::cerr << file << ": " << gpu.kernels.size() << " Triton kernel" << (gpu.kernels.size() == 1 ? ", " : "s, ") << externs
            << " extern " << (externs == 1 ? "call" : "calls") << ", arena " << gpu.arena_bytes << " bytes, " << cubins
            << ", in " << seconds << " s -> " << out << "\n";
  return 0;
}

}  // namespace

int run_compile(const std::vector<std::string> &args) {
  std::string file, out, device = "cpu";
  frontend::SizeValues sizes;
  bool explain = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    auto value = [&]() -> const std::string & {
      if (i + 1 >= args.size()) throw UserError(str_cat("coil compile: option ", a, " needs a value"));
      return args[++i];
    };
    if (a == "--out") {
      out = value();
    } else if (a == "--device") {
      device = value();
    } else if (a == "--set") {
      options::set_override(value());
    } else if (a == "--explain") {
      explain = true;
    } else if (a == "--size") {
      const std::string &v = value();
      size_t eq = v.find('=');
      auto n = eq == std::string::npos ? std::nullopt : parse_python_int(v.substr(eq + 1));
      if (!n || *n < 0 || eq == 0)
        throw UserError(str_cat("coil compile: --size takes SYMBOL=N with N a size, such as s0=8; got '", v, "'"));
      sizes[v.substr(0, eq)] = *n;
    } else if (a.rfind("--", 0) == 0) {
      throw UserError(str_cat("coil compile: unknown option '", a, "' (see coil compile --help)"));
    } else if (file.empty()) {
      file = a;
    } else {
      throw UserError("coil compile: expected one graph file (see coil compile --help)");
    }
  }
  if (file.empty()) throw UserError("coil compile: expected one graph file (see coil compile --help)");
  if (device != "cpu" && device != "cuda")
    throw UserError(str_cat("coil compile: unknown device '", device, "'; this build has: cpu, cuda"));
  if (out.empty()) throw UserError("coil compile: --out DIR is required");
  if (device == "cuda") return compile_cuda(file, sizes, out, explain);
  Graph g = frontend::parse_graph_file(file, &sizes);
  Compilation c = compile_graph(std::move(g), sched::ScheduleOptions::from_registry(), out, CodegenSizes::Symbolic);
  CpuBuild build = build_for_cpu(c, out);
  std::filesystem::path dir(out);
  write_file_atomically(dir / "graph.cpp", build.source);
  std::filesystem::copy_file(build.so_path, dir / "graph.so.tmp", std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(dir / "graph.so.tmp", dir / "graph.so");
  write_file_atomically(dir / "stats.json", stats_json(c));
  if (explain) {
    std::cout << sched::explain(c.schedule);
    // How the C++ dialect runs each kernel, and which library runs each extern call:
    // decisions of the dialect, not of the scheduler.
    std::cout << "how the C++ dialect runs each kernel:\n";
    const ir::Program &p = c.schedule.ir.program;
    for (size_t i = 0; i < build.plans.size(); ++i) {
      const ir::Kernel &k = c.schedule.ir.kernels[i];
      if (k.kind == ir::KernelKind::Extern)
        std::cout << "  " << k.name << " (" << ir::extern_op_name(p.nodes[size_t(k.nodes[0])].extern_op)
                  << ") extern library: " << build.plans[i].library << "\n";
      else
        std::cout << "  " << k.name << "  " << codegen::describe(build.plans[i]) << "\n";
    }
  }
  int kernels = 0, externs = 0;
  for (const ir::Kernel &k : c.schedule.ir.kernels) (k.kind == ir::KernelKind::Extern ? externs : kernels)++;
  std::cerr << file << ": " << kernels << (kernels == 1 ? " kernel, " : " kernels, ") << externs << " extern "
            << (externs == 1 ? "call" : "calls") << ", arena " << c.schedule.memory.arena_bytes << " bytes, built in "
            << build.seconds << " s" << (build.cache_hit ? " (cached)" : "") << " -> " << out << "\n";
  return 0;
}

}  // namespace coil::tools
