// Sorting and what builds on it: sort and topk by each element's rank in its row, the
// selections kthvalue, median, nanmedian and mode, randperm (a sort of random keys),
// multinomial (a top-k of random keys, or a count of cumulative weights), and
// bucketize / searchsorted (a count of the boundaries below each value).
#include <limits>

#include "coil/coil.h"
#include "graph/registry.h"
#include "graph/strides.h"
#include "lowering/lowering.h"
#include "support/int_math.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;

// sort, topk: an element's rank along `dim` is the number of elements that come before
// it: smaller ones (larger when descending), NaN after every number (before, descending),
// as eager orders them, and equal ones at earlier positions, so the order is stable (what
// an unstable sort allows too). Each element and its position are then scattered to their
// rank. topk sorts the row and keeps the first k.
//
// A row of up to kSortBlock elements is ranked by counting against the whole row: len * len
// comparisons, in parallel over every element. A longer row is cut into blocks of
// kSortBlock, each sorted that way; an element's rank is then its rank in its own block
// plus, for every other block, how many of that block's elements come before it: a binary
// search of the sorted block (log2(kSortBlock) + 1 loads), since what comes before an
// element is a prefix of a sorted block. So the work per element is kSortBlock plus
// 11 * len / kSortBlock, not len. Rows longer than kMaxSortLength are refused.
constexpr int64_t kSortBlock = 1024;

/// Marks the buffer `self` views as compared: its elements are compared with one another,
/// so every reader must see the same bits (ir::Buffer::compared).
void mark_compared(Lowering &l, const TensorRef &self) {
  if (self.buffer >= 0) l.program().buffers[size_t(self.buffer)].compared = true;
}

/// The order sort puts two values of `compared` dtype in: whether `other` comes before
/// `mine` by value, and whether they tie (NaN ties NaN).
std::pair<int, int> sort_order(BodyBuilder &b, int other, int mine, bool descending, bool floating) {
  int before = b.binary(descending ? Op::Gt : Op::Lt, other, mine, DType::Bool);
  int equal = b.binary(Op::Eq, other, mine, DType::Bool);
  if (floating) {
    int nan_other = b.unary(Op::IsNan, other, DType::Bool);
    int nan_mine = b.unary(Op::IsNan, mine, DType::Bool);
    int first = descending ? nan_other : nan_mine, second = descending ? nan_mine : nan_other;
    int nan_first = b.binary(Op::LogicalAnd, first, b.unary(Op::LogicalNot, second, DType::Bool), DType::Bool);
    before = b.binary(Op::LogicalOr, before, nan_first, DType::Bool);
    equal = b.binary(Op::LogicalOr, equal, b.binary(Op::LogicalAnd, nan_other, nan_mine, DType::Bool), DType::Bool);
  }
  return {before, equal};
}

/// The rank of each element in its whole row, from `rank`, its rank in its own block of
/// `block` elements (rows longer than one block).
TensorRef merge_blocks(Lowering &l, const std::string &origin, const TensorRef &self, size_t dim, const TensorRef &rank,
                       int64_t block, bool descending, const TensorType &rank_type) {
  int64_t len = self.sizes[dim], blocks = ceil_div(len, block);
  bool floating = is_floating(self.dtype);
  DType compared = self.dtype == DType::Bool ? DType::U8 : self.dtype;
  auto at_position = [&](const TensorRef &t, const std::vector<Expr> &x) {
    std::vector<Expr> at = x;
    at[dim] = Expr(ir::indirect_var(0));
    return Lowering::offset(t, at);
  };
  // Each block sorted in its own place in the row.
  TensorType sorted_type{self.dtype, self.sizes, contiguous_strides(self.sizes), rank_type.device};
  TensorRef dense{-1, sorted_type.dtype, sorted_type.sizes, sorted_type.strides, 0};
  TensorRef sorted = l.scatter(
      origin + " blocks", sorted_type, self, self.sizes, false,
      [&](BodyBuilder &b, const std::vector<Expr> &x) {
        int start = b.index(floor_div(x[dim], block) * block, DType::I64);
        int to = b.binary(Op::Add, start, Lowering::load_broadcast(b, rank, x), DType::I64);
        return std::pair{Lowering::load_broadcast(b, self, x), std::vector<int>{to}};
      },
      [&](const std::vector<Expr> &x) { return at_position(dense, x); });
  // Over the blocks c of the row: the element's own rank in its block, or the count of block
  // c's elements before it, found by a binary search (what comes before is a prefix).
  int64_t top = 1;
  while (top * 2 <= block) top *= 2;
  return l.reduction(rank_type, {blocks}, ir::ReduceOp::Sum, origin + " merged rank",
                     [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                       Expr own = floor_div(x[dim], block);
                       int c = b.index(r[0], DType::I64), mine_block = b.index(own, DType::I64);
                       int mine = b.cast(Lowering::load_broadcast(b, self, x), compared);
                       int start = b.index(r[0] * block, DType::I64);
                       int size = b.binary(Op::Minimum, b.constant(double(block), DType::I64),
                                           b.index(Expr(len) - r[0] * block, DType::I64), DType::I64);
                       int earlier = b.binary(Op::Lt, c, mine_block, DType::Bool);
                       int count = b.constant(0, DType::I64);
                       for (int64_t step = top; step >= 1; step /= 2) {
                         int candidate = b.binary(Op::Add, count, b.constant(double(step), DType::I64), DType::I64);
                         int last = b.binary(Op::Sub, b.binary(Op::Add, start, candidate, DType::I64),
                                             b.constant(1, DType::I64), DType::I64);
                         last = b.binary(Op::Minimum, last, b.constant(double(len - 1), DType::I64), DType::I64);
                         int other = b.cast(b.indirect_load(sorted.buffer, at_position(sorted, x), sorted.dtype, {last}), compared);
                         auto [before, equal] = sort_order(b, other, mine, descending, floating);
                         int comes_before = b.binary(Op::LogicalOr, before, b.binary(Op::LogicalAnd, equal, earlier, DType::Bool),
                                                     DType::Bool);
                         int inside = b.binary(Op::Le, candidate, size, DType::Bool);
                         count = b.where(b.binary(Op::LogicalAnd, inside, comes_before, DType::Bool), candidate, count, DType::I64);
                       }
                       int own_rank = Lowering::load_broadcast(b, rank, x);
                       return b.where(b.binary(Op::Eq, c, mine_block, DType::Bool), own_rank, count, DType::I64);
                     })[0];
}

std::vector<TensorRef> sort_by_rank(Lowering &l, const std::string &origin, const TensorRef &self, int64_t dim_arg,
                                    bool descending, std::optional<int64_t> keep, const TensorType &values_type,
                                    const TensorType &indices_type) {
  if (self.rank() == 0) {
    return {l.pointwise(values_type, origin, [&](BodyBuilder &b, const std::vector<Expr> &x) {
              return Lowering::load_broadcast(b, self, x);
            }),
            l.pointwise(indices_type, origin + " positions",
                        [&](BodyBuilder &b, const std::vector<Expr> &) { return b.constant(0, DType::I64); })};
  }
  size_t dim = size_t(wrap_dim(dim_arg, self.rank()));
  int64_t len = self.sizes[dim];
  COIL_USER_CHECK(len <= kMaxSortLength, "sorting along a dim of ", len,
                  " elements: coil sorts rows of at most ", kMaxSortLength,
                  " (each element is compared with its block of ", kSortBlock, " and searched for in every other)");
  mark_compared(l, self);
  Device device = values_type.device;
  TensorType rank_type{DType::I64, self.sizes, contiguous_strides(self.sizes), device};
  bool floating = is_floating(self.dtype);
  DType compared = self.dtype == DType::Bool ? DType::U8 : self.dtype;
  int64_t block = std::min(len, kSortBlock), blocks = len <= kSortBlock ? 1 : (len + kSortBlock - 1) / kSortBlock;
  // The rank in its own block: the number of the block's elements that come before it.
  TensorRef rank = l.reduction(rank_type, {block}, ir::ReduceOp::Sum, origin + " rank",
                               [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                                 Expr position = blocks == 1 ? r[0] : floor_div(x[dim], block) * block + r[0];
                                 std::vector<Expr> at = x;
                                 at[dim] = blocks == 1 ? position : ir::min(position, Expr(len - 1));
                                 int mine = b.cast(Lowering::load_broadcast(b, self, x), compared);
                                 int other = b.cast(Lowering::load_broadcast(b, self, at), compared);
                                 auto [before, equal] = sort_order(b, other, mine, descending, floating);
                                 int earlier = b.binary(Op::Lt, b.index(position, DType::I64), b.index(x[dim], DType::I64),
                                                        DType::Bool);
                                 int counted = b.binary(Op::LogicalOr, before,
                                                        b.binary(Op::LogicalAnd, equal, earlier, DType::Bool), DType::Bool);
                                 if (blocks > 1)  // the last block's positions past the row
                                   counted = b.binary(Op::LogicalAnd, counted,
                                                      b.binary(Op::Lt, b.index(position, DType::I64), b.constant(double(len), DType::I64),
                                                               DType::Bool),
                                                      DType::Bool);
                                 return b.cast(counted, DType::I64);
                               })[0];
  // The sorted row, full length (topk's keeps the first k of it).
  TensorType sorted_values = keep ? TensorType{self.dtype, self.sizes, contiguous_strides(self.sizes), device} : values_type;
  TensorType sorted_indices = keep ? rank_type : indices_type;
  auto scatter_to_rank = [&](const TensorType &type, const TensorRef &init, const std::string &origin, bool positions) {
    TensorRef dense{-1, type.dtype, type.sizes, type.strides, 0};
    return l.scatter(
        origin, type, init, self.sizes, false,
        [&](BodyBuilder &b, const std::vector<Expr> &x) {
          int value = positions ? b.index(x[dim], DType::I64) : Lowering::load_broadcast(b, self, x);
          return std::pair{value, std::vector<int>{Lowering::load_broadcast(b, rank, x)}};
        },
        [&](const std::vector<Expr> &x) {
          std::vector<Expr> at = x;
          at[dim] = Expr(ir::indirect_var(0));
          return Lowering::offset(dense, at);
        });
  };
  if (blocks > 1) rank = merge_blocks(l, origin, self, dim, rank, block, descending, rank_type);
  // Every element is written: the initial copies (self, the ranks) are only the scatter's start.
  TensorRef values = scatter_to_rank(sorted_values, self, origin, false);
  TensorRef indices = scatter_to_rank(sorted_indices, rank, origin + " positions", true);
  if (!keep) return {values, indices};
  auto first_k = [&](const TensorType &type, const TensorRef &sorted, const std::string &origin) {
    return l.pointwise(type, origin, [&](BodyBuilder &b, const std::vector<Expr> &x) {
      return b.load(sorted.buffer, Lowering::offset(sorted, x), type.dtype);
    });
  };
  return {first_k(values_type, values, origin), first_k(indices_type, indices, origin + " positions")};
}

// ---- selection along a dim: kthvalue, median, nanmedian, mode -----------------------------

/// self as a contiguous 1-d tensor (median and nanmedian of every element).
TensorRef flattened(Lowering &l, const TensorRef &self, const Device &device, const std::string &origin) {
  int64_t n = checked_numel(self.sizes);
  return l.pointwise(TensorType{self.dtype, {n}, {1}, device}, origin + " flat", [&](BodyBuilder &b, const std::vector<Expr> &x) {
    return Lowering::load_broadcast(b, self, unravel(x[0], self.sizes));
  });
}

/// The row of self (along `dim`) that output point `x` reduces: x with the dim put back.
std::vector<Expr> row_of(const std::vector<Expr> &x, size_t dim, bool keepdim, const Expr &along) {
  std::vector<Expr> at = x;
  if (keepdim) {
    at[dim] = along;
  } else {
    at.insert(at.begin() + long(dim), along);
  }
  return at;
}

/// Picks one element of each sorted row (values and their positions, self's shape): the
/// position `pick(b, x)` returns (an i64 value) for output point x.
using PickFn = std::function<int(BodyBuilder &, const std::vector<Expr> &)>;
std::vector<TensorRef> pick_sorted(Lowering &l, const Node &n, const std::vector<TensorRef> &sorted, size_t dim,
                                   bool keepdim, const PickFn &pick) {
  std::vector<TensorRef> outs;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const TensorType &type = l.graph().type(n.outputs[i]);
    outs.push_back(l.pointwise(type, n.name + (i ? " indices" : ""), [&](BodyBuilder &b, const std::vector<Expr> &x) {
      std::vector<Expr> at = row_of(x, dim, keepdim, Expr(ir::indirect_var(0)));
      return b.indirect_load(sorted[i].buffer, Lowering::offset(sorted[i], at), sorted[i].dtype, {pick(b, x)});
    }));
  }
  return outs;
}

/// kthvalue, median and nanmedian: sorted rows (NaN last), then one position of each. For
/// median and nanmedian without a dim, of every element.
enum class Select { Kth, Median, NanMedian };
std::vector<TensorRef> select_sorted(Lowering &l, const Node &n, Select what) {
  const TensorRef &input = tensor_arg(l, n, "self");
  const TensorType &out = l.graph().type(n.outputs[0]);
  bool whole = n.op->schema.find_arg("dim") < 0;
  if (input.rank() == 0 || (whole && checked_numel(input.sizes) == 1)) {
    std::vector<TensorRef> outs = {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &) {
      return Lowering::load_broadcast(b, input, std::vector<Expr>(size_t(input.rank()), Expr(0)));
    })};
    if (n.outputs.size() > 1) outs.push_back(l.fill(l.graph().type(n.outputs[1]), n.name + " indices"));
    return outs;
  }
  TensorRef self = whole ? flattened(l, input, out.device, n.name) : input;
  size_t dim = whole ? 0 : size_t(wrap_dim(arg(n, "dim").integer(), self.rank()));
  bool keepdim = !whole && arg(n, "keepdim").as<bool>();
  int64_t len = self.sizes[dim];
  Shape dense = self.sizes;
  TensorType values_type{self.dtype, dense, contiguous_strides(dense), out.device};
  TensorType indices_type{DType::I64, dense, contiguous_strides(dense), out.device};
  std::vector<TensorRef> sorted = sort_by_rank(l, n.name + " sorted", self, int64_t(dim), false, std::nullopt,
                                               values_type, indices_type);
  auto i64 = [](BodyBuilder &b, double v) { return b.constant(v, DType::I64); };
  if (what == Select::Kth) {
    int64_t k = arg(n, "k").integer();
    return pick_sorted(l, n, sorted, dim, keepdim, [&](BodyBuilder &b, const std::vector<Expr> &) { return i64(b, double(k - 1)); });
  }
  if (what == Select::Median) {
    // The lower median, or where the row holds a NaN (sorted last) that NaN.
    return pick_sorted(l, n, sorted, dim, keepdim, [&](BodyBuilder &b, const std::vector<Expr> &x) {
      int last = b.load(sorted[0].buffer, Lowering::offset(sorted[0], row_of(x, dim, keepdim, Expr(len - 1))), self.dtype);
      int nan = is_floating(self.dtype) ? b.unary(Op::IsNan, last, DType::Bool) : b.constant(0, DType::Bool);
      return b.where(nan, i64(b, double(len - 1)), i64(b, double((len - 1) / 2)), DType::I64);
    });
  }
  // nanmedian: the lower median of the numbers of the row (the first NaN when it has none).
  Shape rows = dense;
  rows.erase(rows.begin() + long(dim));
  TensorRef nans = is_floating(self.dtype)
                       ? l.reduction(TensorType{DType::I64, rows, contiguous_strides(rows), out.device}, {len},
                                     ir::ReduceOp::Sum, n.name + " nans",
                                     [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                                       int v = Lowering::load_broadcast(b, self, row_of(x, dim, false, r[0]));
                                       return b.cast(b.unary(Op::IsNan, v, DType::Bool), DType::I64);
                                     })[0]
                       : l.fill(TensorType{DType::I64, rows, contiguous_strides(rows), out.device}, n.name + " nans");
  return pick_sorted(l, n, sorted, dim, keepdim, [&](BodyBuilder &b, const std::vector<Expr> &x) {
    std::vector<Expr> row = x;
    if (keepdim) row.erase(row.begin() + long(dim));
    int numbers = b.binary(Op::Sub, i64(b, double(len)), b.load(nans.buffer, Lowering::offset(nans, row), DType::I64),
                           DType::I64);
    int k = b.binary(Op::FloorDiv, b.binary(Op::Sub, numbers, i64(b, 1), DType::I64), i64(b, 2), DType::I64);
    return b.binary(Op::Maximum, k, i64(b, 0), DType::I64);
  });
}

/// mode(self, dim, keepdim): the most frequent value of each row, the smallest among equally
/// frequent ones, and the position of its last occurrence: each element's count of equals,
/// then reductions over the row. As eager (which counts runs of the sorted row), a NaN
/// equals no other element but counts itself once, and loses to any number as frequent.
std::vector<TensorRef> mode(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self");
  const TensorType &out = l.graph().type(n.outputs[0]), &out_indices = l.graph().type(n.outputs[1]);
  if (self.rank() == 0) {
    return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) { return Lowering::load_broadcast(b, self, x); }),
            l.fill(out_indices, n.name + " indices")};
  }
  size_t dim = size_t(wrap_dim(arg(n, "dim").integer(), self.rank()));
  bool keepdim = arg(n, "keepdim").as<bool>();
  int64_t len = self.sizes[dim];
  bool floating = is_floating(self.dtype);
  mark_compared(l, self);
  auto same = [&](BodyBuilder &b, int a, int c) {
    int eq = b.binary(Op::Eq, a, c, DType::Bool);
    if (!floating) return eq;
    return b.binary(Op::LogicalOr, eq,
                    b.binary(Op::LogicalAnd, b.unary(Op::IsNan, a, DType::Bool), b.unary(Op::IsNan, c, DType::Bool),
                             DType::Bool),
                    DType::Bool);
  };
  auto element = [&](BodyBuilder &b, const std::vector<Expr> &at) { return Lowering::load_broadcast(b, self, at); };
  TensorType counts_type{DType::I64, self.sizes, contiguous_strides(self.sizes), out.device};
  TensorRef counts = l.reduction(counts_type, {len}, ir::ReduceOp::Sum, n.name + " counts",
                                 [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                                   std::vector<Expr> other = x;
                                   other[dim] = r[0];
                                   int mine = element(b, x);
                                   int equal = b.binary(Op::Eq, element(b, other), mine, DType::Bool);
                                   if (floating) {  // a NaN counts itself
                                     int itself = b.binary(Op::Eq, b.index(r[0], DType::I64), b.index(x[dim], DType::I64),
                                                           DType::Bool);
                                     equal = b.binary(Op::LogicalOr, equal,
                                                      b.binary(Op::LogicalAnd, itself, b.unary(Op::IsNan, mine, DType::Bool),
                                                               DType::Bool),
                                                      DType::Bool);
                                   }
                                   return b.cast(equal, DType::I64);
                                 })[0];
  Shape rows = self.sizes;
  rows.erase(rows.begin() + long(dim));
  auto over_row = [&](DType t, ir::ReduceOp op, const std::string &what,
                      const std::function<int(BodyBuilder &, const std::vector<Expr> &, const std::vector<Expr> &)> &fn) {
    return l.reduction(TensorType{t, rows, contiguous_strides(rows), out.device}, {len}, op, n.name + " " + what,
                       [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                         return fn(b, x, row_of(x, dim, false, r[0]));
                       })[0];
  };
  auto at_row = [](const TensorRef &t, BodyBuilder &b, const std::vector<Expr> &x) {
    return b.load(t.buffer, Lowering::offset(t, x), t.dtype);
  };
  TensorRef best = over_row(DType::I64, ir::ReduceOp::Max, "best", [&](BodyBuilder &b, const std::vector<Expr> &,
                                                                      const std::vector<Expr> &at) {
    return b.load(counts.buffer, Lowering::offset(counts, at), DType::I64);
  });
  // The numbers as frequent as the most frequent element (NaNs left out).
  auto number_in_running = [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &at) {
    int count = b.load(counts.buffer, Lowering::offset(counts, at), DType::I64);
    int candidate = b.binary(Op::Eq, count, at_row(best, b, x), DType::Bool);
    if (!floating) return candidate;
    return b.binary(Op::LogicalAnd, candidate, b.unary(Op::LogicalNot, b.unary(Op::IsNan, element(b, at), DType::Bool),
                                                       DType::Bool),
                    DType::Bool);
  };
  // What stands in for the elements not in the running: +inf for floats, the row's largest
  // element for integers (no constant is above every i64).
  std::optional<TensorRef> largest, any_number;
  if (!floating) {
    largest = over_row(self.dtype, ir::ReduceOp::Max, "largest",
                       [&](BodyBuilder &b, const std::vector<Expr> &, const std::vector<Expr> &at) { return element(b, at); });
  } else {
    any_number = over_row(DType::Bool, ir::ReduceOp::Any, "any number", number_in_running);
  }
  TensorRef smallest = over_row(self.dtype, ir::ReduceOp::Min, "value", [&](BodyBuilder &b, const std::vector<Expr> &x,
                                                                           const std::vector<Expr> &at) {
    int other = largest ? at_row(*largest, b, x) : b.constant(std::numeric_limits<double>::infinity(), self.dtype);
    return b.where(number_in_running(b, x, at), element(b, at), other, self.dtype);
  });
  // Only NaNs in the running: the mode is NaN.
  TensorRef value = !floating ? smallest : l.pointwise(TensorType{self.dtype, rows, contiguous_strides(rows), out.device},
                                                        n.name + " value", [&](BodyBuilder &b, const std::vector<Expr> &x) {
    return b.where(at_row(*any_number, b, x), at_row(smallest, b, x),
                   b.constant(std::numeric_limits<double>::quiet_NaN(), self.dtype), self.dtype);
  });
  TensorRef last = over_row(DType::I64, ir::ReduceOp::Max, "last", [&](BodyBuilder &b, const std::vector<Expr> &x,
                                                                      const std::vector<Expr> &at) {
    int match = same(b, element(b, at), at_row(value, b, x));
    return b.where(match, b.index(at[dim], DType::I64), b.constant(-1, DType::I64), DType::I64);
  });
  auto unkept = [&](const std::vector<Expr> &x) {
    std::vector<Expr> row = x;
    if (keepdim) row.erase(row.begin() + long(dim));
    return row;
  };
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &x) { return at_row(value, b, unkept(x)); }),
          l.pointwise(out_indices, n.name + " indices",
                      [&](BodyBuilder &b, const std::vector<Expr> &x) { return at_row(last, b, unkept(x)); })};
}

// randperm(n): the positions of n random keys in sorted order (a draw of 63 random bits
// each; equal keys, rare, keep their order), so every permutation is equally likely up to
// those ties.
std::vector<TensorRef> randperm(Lowering &l, const Node &n) {
  const TensorType &out = l.graph().type(n.outputs[0]);
  int64_t count = out.sizes[0];
  TensorType keys_type{DType::I64, {count}, {1}, out.device};
  int64_t first = l.reserve_draws(count, out.device);
  TensorRef keys = l.pointwise(keys_type, n.name + " keys", [&](BodyBuilder &b, const std::vector<Expr> &x) {
    return l.draw(b, Op::RandBits, DType::I64, first, x, {count});
  });
  return {sort_by_rank(l, n.name, keys, 0, false, std::nullopt, keys_type, out)[1]};
}

// multinomial(self, k, replacement): k categories drawn from each row of weights.
// Without replacement: the k largest of p / E, E an exponential draw per category (-log(1 -
// u)), as eager draws them: a row's top-k of these keys is a sample without replacement
// with the weights p. Zero weights get key -1 and so come last. With replacement: sample j
// is the first category whose share of the row's cumulative sum exceeds a uniform draw u,
// counted as the categories whose share is at most u. The last share is the sum over
// itself, exactly 1 > u, so the count stays inside the row, and a category of zero weight,
// whose share equals its predecessor's, is never the first to exceed u.
std::vector<TensorRef> multinomial(Lowering &l, const Node &n) {
  const TensorRef &self = tensor_arg(l, n, "self");
  const TensorType &out = l.graph().type(n.outputs[0]);
  int64_t k = out.sizes.back(), categories = self.sizes.back();
  size_t last = self.sizes.size() - 1;
  DType wide = self.dtype == DType::F64 ? DType::F64 : DType::F32;
  if (!arg(n, "replacement").as<bool>()) {
    TensorType keys_type{wide, self.sizes, contiguous_strides(self.sizes), out.device};
    int64_t first = l.reserve_draws(checked_numel(self.sizes), out.device);
    TensorRef keys = l.pointwise(keys_type, n.name + " keys", [&](BodyBuilder &b, const std::vector<Expr> &x) {
      int p = b.cast(Lowering::load_broadcast(b, self, x), wide);
      int u = l.draw(b, Op::Rand, wide, first, x, self.sizes);
      int e = b.unary(Op::Neg, b.unary(Op::Log1p, b.unary(Op::Neg, u, wide), wide), wide);
      int positive = b.binary(Op::Gt, p, b.constant(0, wide), DType::Bool);
      return b.where(positive, b.binary(Op::TrueDiv, p, e, wide), b.constant(-1, wide), wide);
    });
    TensorType top_type{wide, out.sizes, out.strides, out.device};
    return {sort_by_rank(l, n.name, keys, -1, true, k, top_type, out)[1]};
  }
  TensorType sums_type{wide, self.sizes, contiguous_strides(self.sizes), out.device};
  TensorRef sums = l.scan(sums_type, int(last), ir::ScanOp::Sum, n.name + " cumulative weights",
                          [&](BodyBuilder &b, const std::vector<Expr> &x) {
                            return b.cast(Lowering::load_broadcast(b, self, x), wide);
                          });
  int64_t first = l.reserve_draws(checked_numel(out.sizes), out.device);
  return l.reduction(out, {categories}, ir::ReduceOp::Sum, n.name,
                     [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                       std::vector<Expr> at = x, end = x;
                       at[last] = r[0];
                       end[last] = Expr(categories - 1);
                       int share = b.binary(Op::TrueDiv, Lowering::load_broadcast(b, sums, at),
                                            Lowering::load_broadcast(b, sums, end), wide);
                       int u = l.draw(b, Op::Rand, wide, first, x, out.sizes);
                       return b.cast(b.binary(Op::Le, share, u, DType::Bool), DType::I64);
                     });
}

// bucketize(self, boundaries) and searchsorted(sorted_sequence, self): the position of each
// value among sorted boundaries (1-d, or one row per leading index of self), counted as
// eager's binary search finds it: the boundaries with !(b >= v) (right: !(b > v)), so a NaN
// value lands after every boundary.
std::vector<TensorRef> search_sorted(Lowering &l, const Node &n, const char *boundaries_name) {
  const TensorRef &values = tensor_arg(l, n, "self"), &bounds = tensor_arg(l, n, boundaries_name);
  bool right = arg(n, "right").as<bool>();
  if (n.op->schema.find_arg("side") >= 0 && !arg(n, "side").is_none()) right = arg(n, "side").as<std::string>() == "right";
  COIL_USER_CHECK(n.op->schema.find_arg("sorter") < 0 || arg(n, "sorter").is_none(), n.name,
                  ": searchsorted with a sorter is not supported yet");
  const TensorType &out = l.graph().type(n.outputs[0]);
  int64_t len = bounds.sizes.back();  // the meta function checked a dim is there
  DType c = promote_types(values.dtype, bounds.dtype);
  return {l.reduction(out, {len}, ir::ReduceOp::Sum, n.name,
                     [&](BodyBuilder &b, const std::vector<Expr> &x, const std::vector<Expr> &r) {
                       std::vector<Expr> at(x.begin(), x.end() - (bounds.rank() > 1 ? 1 : long(x.size())));
                       at.push_back(r[0]);
                       int v = b.cast(Lowering::load_broadcast(b, values, x), c);
                       int bound = b.cast(b.load(bounds.buffer, Lowering::offset(bounds, at), bounds.dtype), c);
                       int past = b.binary(right ? Op::Gt : Op::Ge, bound, v, DType::Bool);
                       int counted = b.unary(Op::LogicalNot, past, DType::Bool);
                       return b.cast(counted, out.dtype);
                     })[0]};
}

}  // namespace

void add_sorting_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  for (const char *op : {"aten.sort.default", "aten.sort.stable"})
    t[op] = [](Lowering &l, const Node &n) {
      return sort_by_rank(l, n.name, tensor_arg(l, n, "self"), arg(n, "dim").integer(),
                          arg(n, "descending").as<bool>(), std::nullopt, l.graph().type(n.outputs[0]),
                          l.graph().type(n.outputs[1]));
    };
  t["aten.topk.default"] = [](Lowering &l, const Node &n) {
    return sort_by_rank(l, n.name, tensor_arg(l, n, "self"), arg(n, "dim").integer(), arg(n, "largest").as<bool>(),
                        arg(n, "k").integer(), l.graph().type(n.outputs[0]), l.graph().type(n.outputs[1]));
  };
  t["aten.kthvalue.default"] = [](Lowering &l, const Node &n) { return select_sorted(l, n, Select::Kth); };
  for (const char *op : {"aten.median.default", "aten.median.dim"})
    t[op] = [](Lowering &l, const Node &n) { return select_sorted(l, n, Select::Median); };
  for (const char *op : {"aten.nanmedian.default", "aten.nanmedian.dim"})
    t[op] = [](Lowering &l, const Node &n) { return select_sorted(l, n, Select::NanMedian); };
  t["aten.mode.default"] = mode;
  t["aten.randperm.default"] = randperm;
  t["aten.multinomial.default"] = multinomial;
  t["aten.bucketize.Tensor"] = [](Lowering &l, const Node &n) { return search_sorted(l, n, "boundaries"); };
  t["aten.searchsorted.Tensor"] = [](Lowering &l, const Node &n) { return search_sorted(l, n, "sorted_sequence"); };
}

}  // namespace coil::lowering
