// The host loops of the GPU's extern calls: what no library takes (a view it has no
// layout for, an integer dtype, a missing library) runs as coil's plain loops
// (runtime/include/coil/extern_loops.h) on the host, between a download and an upload; so
// do the post-ops of an epilogue cuBLASLt does not take. Every call waits for the stream's
// earlier work and leaves the result in place for any later work (a CUDA graph cannot
// hold them). The plan says when (codegen/gpu/extern_plan.h); runtime/cuda_extern.h runs.
// Tests: tests/gpu/extern_test.cpp (the integer and strided cases), tests/gpu/program_test.cpp.
#pragma once

#include <functional>

#include "ir/loop_ir.h"
#include "runtime/cuda_driver.h"
#include "scheduler/epilogue.h"

namespace coil::cuda {

/// The device address of element 0 of buffer `b`'s storage, as the executor placed it.
using BufferAddress = std::function<CUdeviceptr(ir::BufferId)>;

/// Runs extern node `n` of `p` on the host: downloads every buffer it touches after the
/// stream's earlier work, computes its output (the whole buffer n.outputs[0]) and uploads it.
void run_extern_on_host(const ir::Program &p, const ir::Node &n, const BufferAddress &address, CUstream stream);

/// The post-ops of epilogue `e` of `n` on the host: reads the product's result at `result`
/// (laid out as the call's output buffer) and every operand, and writes the last value
/// through e.out.
void run_epilogue_on_host(const ir::Program &p, const ir::Node &n, const sched::Epilogue &e, CUdeviceptr result,
                          const BufferAddress &address, CUstream stream);

}  // namespace coil::cuda
