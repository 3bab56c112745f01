// Matching tensor files to graphs: inputs by placeholder (and constant) name, expected
// outputs as out0, out1, ... in return order.
#pragma once

#include <functional>
#include <optional>
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

/// The shape of the tensor called `name` in `tensors`, nullopt when there is none: where the
/// parser reads a graph's symbolic sizes (frontend::parse_graph_file). `tensors` must outlive
/// the function.
std::function<std::optional<Shape>(const std::string &)> tensor_shapes(const TensorList &tensors);

/// The same for the tensors of a safetensors file, read when first asked (a graph without
/// symbolic sizes never asks); nullopt for every name when there is no such file.
std::function<std::optional<Shape>(const std::string &)> tensor_shapes_in(const std::string &safetensors_path);

}  // namespace coil
