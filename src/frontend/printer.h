// The canonical text of a graph: FX's print_readable form with every annotation
// written out (dtype, sizes, strides, device), arguments equal to their schema default
// left out, no comments and no clean-ups. parse(print(g)) prints the same text again.
#pragma once

#include <string>

#include "graph/graph.h"

namespace coil::frontend {

std::string print_graph(const Graph &g);

/// One argument as Python source: 1e-05, [256], torch.float32, device(type='cpu').
std::string print_arg(const Graph &g, const Arg &a);

}  // namespace coil::frontend
