// Facts about how a kernel's loads walk memory that both dialects base their layout on
// (DESIGN.md, decision 6): the C++ dialect tiles loops by them, the Triton dialect picks
// its block shapes by them.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/kernel.h"

namespace coil::codegen {

/// Whether a load walks the last two dims of a kernel the other way round from its store
/// (`x + y.t()`): both dims of at least 16 elements, a load contiguous along the second
/// last and neither contiguous nor broadcast along the last.
bool loads_transposed_in_last_two_dims(const ir::Program &p, const ir::Kernel &k);

/// Whether a reduction's loads are contiguous along its last kept dim and not along the
/// reduced one (a sum over dim 0): neighbouring rows then sit side by side in memory.
bool rows_contiguous_across_reduction(const ir::Program &p, const ir::Kernel &k);

/// The key of element `at` of buffer `b`: "buf3[x0*256 + r0]", with `at` simplified over
/// `ranges` so that equal indices meet (forwarded values, tiles of transposed loads).
std::string element_key(const ir::Program &p, ir::BufferId b, const ir::Expr &at, const ir::Ranges &ranges);

/// The buffers a kernel takes as pointer arguments, in order (every buffer its members
/// read, then write, that is not internal, once each), named in_ptrN when only read and
/// out_ptrN when written: the argument list of a kernel in both dialects.
struct KernelParams {
  std::vector<ir::BufferId> order;
  std::map<ir::BufferId, std::string> names;
};
KernelParams kernel_params(const ir::Program &p, const ir::Kernel &k);

/// `index` as a sum of terms, each a product of atoms printed by `atom` and a coefficient,
/// then the constant: `x0*256 + x1 - 3`. The dialects differ only in how atoms print.
std::string sum_of_terms(const ir::Expr &index, const std::function<std::string(const ir::Atom &)> &atom);

}  // namespace coil::codegen
