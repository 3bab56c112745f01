// Epilogues of extern calls on the GPU (scheduler/epilogue.h): what cuBLASLt runs as part
// of a matrix product, decided from the graph alone so that a schedule does not depend on
// the machine that compiles it. cuBLASLt takes a bias vector along the output's last dim
// (CUBLASLT_EPILOGUE_BIAS) and then relu or gelu with the tanh approximation
// (RELU_BIAS, GELU_BIAS); PyTorch's exact gelu (erf), leaky relu and every other post-op
// stay a separate Triton kernel. Where cuBLASLt cannot be loaded when the graph runs, the
// executor runs the product and its epilogue on the host's loops (runtime/cuda_extern.h); the plan of each call is codegen/gpu/extern_plan.h.
// Tests: tests/unit/cuda_extern_test.cpp (the decision), tests/gpu/extern_test.cpp.
#pragma once

#include <string>

#include "ir/kernel.h"
#include "scheduler/epilogue.h"
#include "scheduler/scheduler.h"

namespace coil::codegen {

/// "" when cuBLASLt runs epilogue `e` of product `call` of `p`, else why not, in words:
/// an f32, f16 or bf16 mm, bmm, addmm or baddbmm (no matrix-vector product), its output
/// with the last dim contiguous and the epilogue's store at the same layout, and post-ops
/// of: [add of a contiguous vector along the last dim of the output's dtype] (only when
/// the call has no bias of its own), then [relu | gelu_tanh], at least one of them.
std::string cublaslt_epilogue_problem(const ir::Program &p, const ir::Node &call, const sched::Epilogue &e);

/// The same, where no post-op is fine too: cuBLASLt then adds the product's own bias alone.
std::string cublaslt_problem(const ir::Program &p, const ir::Node &call, const sched::Epilogue &e);

/// `base` for the GPU: extern epilogues on, where cuBLASLt takes them.
sched::ScheduleOptions gpu_schedule_options(sched::ScheduleOptions base);

}  // namespace coil::codegen
