// Symbolic sizes as PyTorch prints them, and their values.
//
// A graph traced with dynamic shapes names its sizes by symbols (DESIGN.md, "The input"):
//
//   def forward(self, arg0_1: "Sym(s77)", arg1_1: "f32[s77, 16][16, 1]cpu"):
//       mul: "Sym(2*s77)" = arg0_1 * 2
//       view: "f32[2*s77, 8][8, 1]cpu" = torch.ops.aten.view.default(arg1_1, [mul, 8])
//
// The expressions are sympy's printing of PyTorch's size expressions: integers, symbols
// (`s0`, `s77`, unbacked `u0`), + - * // % ** with Python's precedence and floor semantics,
// comparisons (`s0 >= 2`, `Eq(s0, 4)`), & and |, and the functions PyTorch's printer writes
// (Max, Min, Mod, FloorDiv, CeilDiv, floor, ceiling, ...). coil compiles such a graph for
// given values of its symbols (SizeValues): the parser evaluates every annotation with them,
// and the values come from the inputs' shapes (bind_sizes), so that a caller never names
// them. Tests: tests/unit/frontend_test.cpp (SymbolicSizes).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor_type.h"
#include "support/error.h"

namespace coil::frontend {

/// Values of a graph's symbolic sizes, by symbol: {"s0": 8, "s77": 128}.
using SizeValues = std::map<std::string, int64_t>;

/// Where a graph's symbolic sizes get their values, for errors about a missing one.
inline constexpr const char *kHowSizesAreGiven =
    "coil run reads them from --inputs' shapes, coil compile takes --size s0=N, the API CompileOptions::sizes";

/// The value of the size expression `text` (`2*s77`, `Max(1, s0 - 1)`, `Eq(s0, 4)`: 1 for
/// true, 0 for false) with `values`. A UserError at `loc` (shifted to the offending
/// character) for a symbol without a value, naming it, for a malformed expression, a
/// division by zero or a result that does not fit in 64 bits.
int64_t eval_size_expr(std::string_view text, const SizeValues &values, const SourceLoc &loc);

/// The same as a SymInt: its value with `values` and its expression in the symbols (a
/// plain integer when it names none), recording into `guards` (graph/sym_int.h): a
/// comparison of symbolic sizes inside it decides by their values and records a guard.
SymInt read_size_expr(std::string_view text, const SizeValues &values, const SourceLoc &loc,
                      const std::shared_ptr<SizeGuards> &guards);

/// The bound `text` states on one symbol, when it is one comparison of a symbol with an
/// integer (`s0 >= 2`, `s0 < 513`, `2 <= s0`); nullopt for anything else.
std::optional<SymbolBound> symbol_bound(std::string_view text);

/// The symbols `text` names, in order of first appearance; empty for a plain integer.
std::vector<std::string> symbols_in(std::string_view text);

/// Whether `text` is a SymInt annotation, `Sym(...)`; then `inner` is what the parentheses hold.
bool is_sym_annotation(std::string_view text, std::string_view *inner = nullptr);

/// A graph input as its forward's header declares it: its name and annotation.
struct InputDecl {
  std::string name;
  std::string annotation;  // "f32[s0, 16][16, 1]cpu" or "Sym(s0)"
  SourceLoc loc;           // of the annotation's first character
};

/// The inputs the forward header of graph text declares, read without the body.
std::vector<InputDecl> declared_inputs(std::string_view text, const std::string &filename);

/// The values of a graph's symbols, read from its inputs' actual shapes: a dim whose
/// annotation is a lone symbol (`s0`) gives it its value. `shape_of` returns the shape of a
/// tensor input by name, nullopt when it has none to give. Nothing is bound for a graph
/// without symbols. A UserError when two inputs give one symbol different values (naming
/// both), or when a symbol the header names gets no value (naming it and where it is).
SizeValues bind_sizes(const std::vector<InputDecl> &inputs,
                      const std::function<std::optional<Shape>(const std::string &)> &shape_of);

/// `s0=8, s77=128`
std::string size_values_str(const SizeValues &values);

}  // namespace coil::frontend
