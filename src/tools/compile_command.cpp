#include "tools/compile_command.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "codegen/cpp/cpp_extern.h"
#include "driver/compile.h"
#include "frontend/parser.h"
#include "runtime/cpu_module.h"
#include "support/error.h"
#include "support/options.h"

namespace coil::tools {

int run_compile(const std::vector<std::string> &args) {
  std::string file, out, device = "cpu";
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
    } else if (a.rfind("--", 0) == 0) {
      throw UserError(str_cat("coil compile: unknown option '", a, "' (see coil compile --help)"));
    } else if (file.empty()) {
      file = a;
    } else {
      throw UserError("coil compile: expected one graph file (see coil compile --help)");
    }
  }
  if (file.empty()) throw UserError("coil compile: expected one graph file (see coil compile --help)");
  if (device != "cpu") throw UserError(str_cat("coil compile: unknown device '", device, "'; this build has: cpu"));
  if (out.empty()) throw UserError("coil compile: --out DIR is required");
  Graph g = frontend::parse_graph_file(file);
  Compilation c = compile_graph(std::move(g), sched::ScheduleOptions::from_registry(), out);
  CpuBuild build = build_cpu(c.schedule);
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
    for (size_t i = 0; i < build.layouts.size(); ++i) {
      const ir::Kernel &k = c.schedule.ir.kernels[i];
      if (k.kind == ir::KernelKind::Extern)
        std::cout << "  " << k.name << " (" << ir::extern_op_name(p.nodes[size_t(k.nodes[0])].extern_op)
                  << ") extern library: " << codegen::extern_library(p, k) << "\n";
      else
        std::cout << "  " << k.name << "  " << build.layouts[i] << "\n";
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
