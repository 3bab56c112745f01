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

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "frontend/size_expr.h"
#include "graph/graph.h"

namespace coil::frontend {

/// Parses graph text; `filename` is used in error locations. Throws UserError.
///
/// A graph of symbolic sizes (frontend/size_expr.h) is read for `sizes`, their values: its
/// sizes, strides and SymInt inputs (`s0: "Sym(s0)"`) and nodes (`mul: "Sym(2*s0)" = s0 * 2`)
/// are SymInts (graph/sym_int.h) of those values, whose guards go to one SizeGuards of the
/// graph, and an assertion on sizes (aten._assert_scalar) is checked for the values and kept
/// as a guard. Without `sizes`, a symbol is a UserError saying how to give them.
Graph parse_graph(std::string_view text, const std::string &filename, const SizeValues *sizes = nullptr);

/// Reads and parses a file. Throws UserError, also when the file cannot be read.
Graph parse_graph_file(const std::string &path, const SizeValues *sizes = nullptr);

/// The same for a graph run on given inputs: its symbolic sizes, if it has any, take their
/// values from the inputs' shapes (`shape_of(name)`, bind_sizes), which land in `bound`.
Graph parse_graph_file(const std::string &path, const std::function<std::optional<Shape>(const std::string &)> &shape_of,
                       SizeValues *bound = nullptr);

/// An annotation such as `f32[64, 256][256, 1]cpu`; strides and device are optional.
struct Annotation {
  TensorType type;
  bool has_strides = false;
  bool has_device = false;
};
/// Its symbols' guards go to `guards` (a SizeGuards of its own when null).
Annotation parse_annotation(std::string_view text, const SourceLoc &loc, const SizeValues *sizes = nullptr,
                            std::shared_ptr<SizeGuards> guards = nullptr);

}  // namespace coil::frontend
