// Specializing a program of symbolic sizes to one call's sizes.
//
// Lowering keeps a graph's symbolic sizes (`s0`, `768*s0`) in the loop IR: in ranges,
// buffer types, views and index expressions, and the scheduler keeps them in its kernels.
// The stages after it (the memory plan, code generation) work on integers until they are
// taught to keep symbols; `specialize` gives them the scheduled program at one set of
// sizes. It decides nothing and records no guard: the caller says why the sizes may be
// fixed (SizeGuards::fix; a test runs one schedule at several sizes).
// Tests: tests/unit/specialize_test.cpp.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "ir/kernel.h"

namespace coil::ir {

/// The symbols `p` mentions anywhere: sizes and strides of buffers, views and ranges, and
/// index expressions.
std::set<std::string> symbols_of(const Program &p);

/// The guards that the symbolic sizes of `p` share (graph/sym_int.h); null when it has none.
std::shared_ptr<SizeGuards> guards_of(const Program &p);

/// `p` with each symbol replaced by its value in `values`, which names every symbol of `p`:
/// a program of integers. Index expressions are put back in canonical form, not simplified.
Program specialize(Program p, const std::map<std::string, int64_t> &values);

/// The symbols of a scheduled program: its program's and its kernels' iteration spaces'.
std::set<std::string> symbols_of(const ScheduledProgram &s);

/// The symbols the code of kernel `k` of `p` may name: those of its iteration spaces, of
/// its nodes (index expressions, ranges, operand views) and of the types of the buffers
/// they read and write.
std::set<std::string> symbols_of(const Program &p, const Kernel &k);

/// `s` specialized so: its program, and its kernels' iteration spaces.
ScheduledProgram specialize(ScheduledProgram s, const std::map<std::string, int64_t> &values);

}  // namespace coil::ir
