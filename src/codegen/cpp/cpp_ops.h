// The C++ dialect's tables: the C++ type of each dtype, literals, index expressions as
// C++, and the expression each body op becomes. Adding an op to the backend is one case
// in cpp_ops.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/sym_int.h"
#include "ir/body.h"

namespace coil::codegen {

/// The type a value of `t` has in a kernel (bf16 and f16 compute as float).
std::string value_type(DType t);
/// The type of `lanes` values of `t` in one SIMD vector (coil/vec.h), or value_type(t)
/// when `lanes` is 0. The functions below take `lanes` the same way: 0 is scalar code.
std::string vector_type(DType t, int lanes);
/// The type of an element of a buffer of `t` in memory.
std::string storage_type(DType t);

/// A literal of dtype `t`.
std::string literal(double v, DType t);
/// A literal of dtype `t` in every lane.
std::string vector_literal(double v, DType t, int lanes);

/// `index` as a C++ int64 expression, variables named by `name`.
std::string cpp_index(const ir::Expr &index, const std::function<std::string(ir::VarId)> &name,
                      const ir::Ranges &ranges);

/// A size as C++: the number, or its expression in the graph's symbols (`s0*768`), which
/// a kernel takes as arguments and the wrapper reads from its `sizes`; parenthesized unless
/// it is one name or number.
std::string cpp_size(const SymInt &s);
/// The same of an expression of sizes alone (no loop variable), simplified over `ranges`.
std::string cpp_size(const ir::Expr &e, const ir::Ranges &ranges = {});

/// A value converted from dtype `from` to `to`, rounded as the reference rounds.
std::string cpp_cast(const std::string &v, DType from, DType to, int lanes = 0);
/// A value of `t` read from memory element `element` (storage to value type).
std::string from_storage(const std::string &element, DType t);
/// A value of `t` as it is written to memory.
std::string to_storage(const std::string &v, DType t);

/// The expression of a unary, binary or ternary op applied to `args` (value names) whose
/// operand dtype is `in` and result dtype `out`; `err` names the kernel's error slot.
std::string cpp_op(ir::Op op, DType in, DType out, const std::vector<std::string> &args, int lanes = 0);

}  // namespace coil::codegen
