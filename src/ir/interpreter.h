// The reference interpreter of the loop IR (DESIGN.md, decision 11): runs every node
// of a Program naively, point by point, on the CPU. It checks lowering against PyTorch
// eager before any code generator exists, and is what both dialects are compared with
// when a kernel goes wrong. Tests: tests/unit/reference_test.cpp (every fixture and example).
#pragma once

#include "io/host_tensor.h"
#include "ir/loop_ir.h"

namespace coil::ir {

/// Runs `p` on `inputs` (by the names of the program's input buffers) and returns one
/// dense tensor per program output. Throws UserError when an input is missing or of the
/// wrong dtype or shape, and on integer division by zero.
std::vector<HostTensor> interpret(const Program &p, const TensorList &inputs);

struct ScheduledProgram;
/// Runs a scheduled program kernel by kernel, each fused kernel row by row in its passes
/// as a generated kernel would; an InternalError when a kernel reads a value of an
/// internal buffer that its loop would not have at hand (a fusion bug).
std::vector<HostTensor> interpret(const ScheduledProgram &s, const TensorList &inputs);

}  // namespace coil::ir
