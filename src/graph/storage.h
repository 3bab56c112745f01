// Where a value lives in memory: views share their base's storage, so a view's element
// offsets are its base's plus where it starts. The verifier uses this to reject a view
// that reaches past its storage (eager raises there; compiled code would read past the
// buffer), and the graph passes to tell when two values share memory.
// Tests: tests/unit/errors_test.cpp (views past their storage), tests/unit/passes_test.cpp.
#pragma once

#include <optional>

#include "graph/graph.h"

namespace coil {

/// Where a view's output starts in the storage it shares with its `self` argument:
/// `offset` elements after self's start, or at `offset` exactly (as_strided with a
/// storage_offset).
struct ViewStart {
  bool absolute = false;
  SymInt offset = 0;
};

/// The start of output `output` of `n` when that output is a view of n's `self` (reshape
/// only when it needs no copy); nothing when the op makes a new tensor.
std::optional<ViewStart> view_start(const Graph &g, const Node &n, int output);

/// The `self` argument of a view node.
ValueId view_base(const Node &n);

/// A value's place in memory: the value owning the storage (a graph input or constant,
/// or the output of a node that makes a new tensor) and the element its view starts at.
struct Placement {
  ValueId root;
  SymInt start = 0;
};

/// Follows v's chain of views to the storage it reads.
Placement placement_of(const Graph &g, ValueId v);

/// How many elements from its start a tensor of type `t` reaches: one past its last
/// element's offset, 0 when it has none (INT64_MAX when that overflows).
int64_t storage_elements(const TensorType &t);

}  // namespace coil
