// The Core ATen opset (the ops PyTorch tags `core` in native_functions.yaml: what
// torch.export's core decompositions leave) and the ATen ops coil refuses on purpose, each
// with its reason. `coil coverage` reports every core op as native, extern, refused or
// missing; the parser's error for a refused op gives the reason. Tests:
// tests/unit/frontend_test.cpp (the messages), tests/unit/fixtures_test.cpp (the table).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coil {

/// The Core ATen opset, sorted: "aten._adaptive_avg_pool2d.default", ... (generated from
/// torch by scripts/core_aten_ops.py into core_aten_ops.inc).
const std::vector<std::string_view> &core_aten_ops();

/// Why coil does not compile `target` ("aten.nonzero.default") and will not by adding a
/// lowering alone, or nothing when it does not refuse the op.
std::optional<std::string> refusal(std::string_view target);

/// The ops that compute a size from a tensor (aten.sym_size.int, sym_stride, sym_numel,
/// sym_storage_offset). They are no nodes: the parser reads such a line,
/// `n: "Sym(s0*2)" = torch.ops.aten.sym_size.int(x, 0)`, as the size its annotation states,
/// which every later use of `n` takes (graph/sym_int.h).
bool is_size_op(std::string_view target);

}  // namespace coil
