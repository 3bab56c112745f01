// Matching tensor files to graphs: inputs by placeholder (and constant) name, expected
// outputs as out0, out1, ... in return order.
#pragma once

#include <string>

#include "graph/graph.h"
#include "io/host_tensor.h"

namespace coil {

/// Checks that `tensors` (read from `file`) holds every input and constant of `g` with
/// its dtype and sizes. Throws UserError naming the tensor and what was expected.
void check_graph_inputs(const Graph &g, const TensorList &tensors, const std::string &file);

/// Checks that `tensors` holds out0..outN-1 with the dtype and sizes of g's outputs.
void check_graph_outputs(const Graph &g, const TensorList &tensors, const std::string &file);

/// The name of output i in tensor files: out0, out1, ...
std::string output_tensor_name(size_t i);

}  // namespace coil
