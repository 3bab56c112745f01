// The FX text frontend: reads aten-level graphs as PyTorch prints them with
// GraphModule.print_readable(), torch.export programs after run_decompositions(), and
// Inductor's fx_graph_readable.py.
//
//   class GraphModule(torch.nn.Module):
//       def forward(self, a_0: "f32[64, 256][256, 1]cpu"):
//           mul: "f32[64, 256][256, 1]cpu" = torch.ops.aten.mul.Tensor(a_0, 2);  a_0 = None
//           return (mul,)
//
// Every node is checked as it is read: its arguments against the op's schema, and its
// annotation (dtype and sizes exactly, strides of dims larger than 1, device) against
// what the op's meta function computes. Tests: tests/unit/frontend_test.cpp and
// tests/unit/errors_test.cpp.
#pragma once

#include <string>
#include <string_view>

#include "graph/graph.h"

namespace coil::frontend {

/// Parses graph text; `filename` is used in error locations. Throws UserError.
Graph parse_graph(std::string_view text, const std::string &filename);

/// Reads and parses a file. Throws UserError, also when the file cannot be read.
Graph parse_graph_file(const std::string &path);

/// An annotation such as `f32[64, 256][256, 1]cpu`; strides and device are optional.
struct Annotation {
  TensorType type;
  bool has_strides = false;
  bool has_device = false;
};
Annotation parse_annotation(std::string_view text, const SourceLoc &loc);

}  // namespace coil::frontend
