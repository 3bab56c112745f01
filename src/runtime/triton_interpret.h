// The generated Triton kernels run by Triton's interpreter on the CPU: the host program
// (launch_plan.json), the kernel modules and the inputs go to a temporary folder, and
// python/coil_triton/run_plan.py runs the steps on torch CPU tensors, extern calls
// through torch. A check of the Triton dialect on a machine without a GPU
// (`coil run --device cuda --interpret`); the interpreter runs no libdevice calls, which
// run_plan.py replaces with numpy's functions there.
#pragma once

#include <vector>

#include "codegen/triton/triton_codegen.h"
#include "io/host_tensor.h"
#include "scheduler/scheduler.h"

namespace coil {

/// The outputs of `g` (generated from `s`) on `inputs`, in the graph's order. A UserError
/// with the runner's message when a step fails; the folder is kept and named then.
std::vector<HostTensor> run_interpreted(const sched::Schedule &s, const codegen::GpuProgram &g, const TensorList &inputs);

/// Writes the kernels (DIR/kernels/NAME.py) and the host program (DIR/launch_plan.json).
void write_launch_plan(const sched::Schedule &s, const codegen::GpuProgram &g, const std::string &dir);

}  // namespace coil
