#include "io/graph_tensors.h"

#include <filesystem>
#include <memory>

#include "io/safetensors.h"

namespace coil {
namespace {

void check_tensor(const TensorList &tensors, const std::string &name, const TensorType &want,
                  const std::string &file) {
  const HostTensor *t = find_tensor(tensors, name);
  SourceLoc loc{file, 0, 0};
  if (!t) throw UserError(str_cat("missing tensor '", name, "' (expected ", short_name(want.dtype),
                                  shape_str(want.sizes), ")"), loc);
  // The sizes the graph was read for: a check of the data, not a fact compiled in.
  if (t->dtype != want.dtype || t->sizes != hints(want.sizes))
    throw UserError(str_cat("tensor '", name, "' is ", t->describe(), " but the graph expects ",
                            short_name(want.dtype), shape_str(want.sizes)), loc);
}

}  // namespace

std::string output_tensor_name(size_t i) { return "out" + std::to_string(i); }

void check_graph_inputs(const Graph &g, const TensorList &tensors, const std::string &file) {
  for (const auto &ids : {g.inputs(), g.constants()})
    for (ValueId id : ids) check_tensor(tensors, g.value(id).name, g.type(id), file);
}

void check_graph_outputs(const Graph &g, const TensorList &tensors, const std::string &file) {
  auto outputs = g.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) check_tensor(tensors, output_tensor_name(i), g.type(outputs[i]), file);
}

std::function<std::optional<Shape>(const std::string &)> tensor_shapes_in(const std::string &safetensors_path) {
  auto tensors = std::make_shared<std::optional<TensorList>>();
  return [tensors, safetensors_path](const std::string &name) -> std::optional<Shape> {
    if (!*tensors)
      *tensors = std::filesystem::exists(safetensors_path) ? read_safetensors(safetensors_path) : TensorList{};
    return tensor_shapes(**tensors)(name);
  };
}

std::function<std::optional<Shape>(const std::string &)> tensor_shapes(const TensorList &tensors) {
  return [&tensors](const std::string &name) -> std::optional<Shape> {
    if (const HostTensor *t = find_tensor(tensors, name)) return t->sizes;
    return std::nullopt;
  };
}

}  // namespace coil
