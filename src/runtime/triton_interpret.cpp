#include "runtime/triton_interpret.h"

#include <cstdlib>
#include <filesystem>

#include "support/files.h"
#include "io/safetensors.h"
#include "runtime/compiler.h"
#include "runtime/triton_build.h"
#include "support/error.h"

namespace coil {

namespace fs = std::filesystem;

void write_launch_plan(const sched::Schedule &s, const codegen::GpuProgram &g, const std::string &dir) {
  fs::path kernels = fs::path(dir) / "kernels";
  fs::create_directories(kernels);
  for (const codegen::GpuKernel &k : g.kernels) write_file_atomically(kernels / (k.name + ".py"), k.source);
  write_file_atomically(fs::path(dir) / "launch_plan.json", codegen::launch_plan_json(s, g));
}

std::vector<HostTensor> run_interpreted(const sched::Schedule &s, const codegen::GpuProgram &g, const TensorList &inputs) {
  std::string pattern = (fs::temp_directory_path() / "coil-interpret-XXXXXX").string();
  COIL_USER_CHECK(mkdtemp(pattern.data()), "cannot make a temporary folder ", pattern);
  fs::path dir(pattern);
  write_launch_plan(s, g, dir.string());
  write_safetensors((dir / "inputs.safetensors").string(), inputs);
  ProcessResult r = run_process({triton_python(), triton_helper_file("run_plan.py").string(), (dir / "launch_plan.json").string(),
                                 "--inputs", (dir / "inputs.safetensors").string(), "--save",
                                 (dir / "outputs.safetensors").string(), "--device", "cpu"});
  if (r.exit_code != 0) {
    std::string message = r.err.empty() ? r.out : r.err;
    while (!message.empty() && message.back() == '\n') message.pop_back();
    throw UserError(str_cat("Triton's interpreter failed (kernels and plan kept in ", dir.string(), "):\n", message));
  }
  TensorList named = read_safetensors((dir / "outputs.safetensors").string());
  std::vector<HostTensor> out;
  for (size_t i = 0; i < s.ir.program.outputs.size(); ++i) {
    const HostTensor *t = find_tensor(named, "out" + std::to_string(i));
    COIL_ASSERT(t, "run_plan.py wrote no out", i);
    out.push_back(*t);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return out;
}

}  // namespace coil
