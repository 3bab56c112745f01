// The Triton dialect's tables: the Triton type of each dtype, literals, index expressions
// in Python syntax, and the expression each body op becomes, with PyTorch's semantics
// (integer division and remainder signs, NaN-propagating max/min, bf16/f16 computed in
// f32 and rounded where the IR says so). Adding an op to the backend is one case in
// triton_ops.cpp; an op that needs more than one expression uses a @triton.jit helper of
// the kernel module's prelude, named in `helpers`.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "graph/sym_int.h"
#include "ir/body.h"

namespace coil::codegen {

/// The type a value of `t` has in a kernel: tl.float32 for f32, bf16 and f16.
std::string triton_type(DType t);
/// The element type in memory: triton_type but for f16 and bf16, which compute as f32.
std::string triton_storage_type(DType t);
/// `v` (of triton_type(t)) as stored: f16 and bf16 rounded to their own type.
std::string as_storage(const std::string &v, DType t);
/// The type of a pointer to a buffer of `t`: "*fp32", "*bf16", "*i1", ...
std::string triton_pointer_type(DType t);
/// A literal of dtype `t` as a Python expression of that Triton type.
std::string triton_literal(double v, DType t);
/// `index` in Python syntax, variables named by `name`.
std::string triton_index(const ir::Expr &index, const std::function<std::string(ir::VarId)> &name,
                         const ir::Ranges &ranges, std::set<std::string> &helpers);
/// A size of symbols in a kernel's code (a mask's limit, a loop's end, a divisor of a flat
/// index), parenthesized unless a single name: `s0`, `(s0*768)`.
std::string triton_size(const SymInt &s);
/// Whether blocks of `block` elements may run past `n` (or `n` may be 0) at some size: the
/// blocks need a mask.
bool blocks_may_overrun(const SymInt &n, int64_t block);
/// The blocks of `block` elements that cover `n`: ceil(n / block).
SymInt triton_blocks(const SymInt &n, int64_t block);
/// A value of dtype `from` converted to `to`, rounded as the reference rounds.
std::string triton_cast(const std::string &v, DType from, DType to);
/// The expression of a unary, binary or ternary op on `args` whose operand dtype is `in`
/// and result dtype `out`. Helpers it calls are added to `helpers`.
std::string triton_op(ir::Op op, DType in, DType out, const std::vector<std::string> &args, std::set<std::string> &helpers);
/// The @triton.jit helper functions named in `helpers`, as module source.
std::string triton_helpers(const std::set<std::string> &helpers);

}  // namespace coil::codegen
