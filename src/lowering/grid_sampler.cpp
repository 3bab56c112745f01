// grid_sampler_2d and grid_sampler_3d: each output samples its input at the grid's
// coordinates (bilinear or trilinear, nearest, or bicubic in 2-d) as one pointwise body.
#include <array>
#include <cmath>

#include "graph/registry.h"
#include "lowering/lowering.h"

namespace coil::lowering {
namespace {

using ir::BodyBuilder;
using ir::Expr;
using ir::Op;

// grid_sampler_2d(input [N, C, H, W], grid [N, Ho, Wo, 2], interpolation, padding,
// align_corners) and grid_sampler_3d (input [N, C, D, H, W], grid [N, Do, Ho, Wo, 3]), as
// ATen's GridSampler.h computes them, in opmath: grid (x, y[, z]) in [-1, 1]
// unnormalized to pixels (align_corners: -1 and 1 are the corner pixels' centers, else their
// outer edges); padding 0 reads zeros outside, 1 (border) clips the coordinate, 2
// (reflection) reflects it about the edges, then clips; interpolation 0 bilinear (the four
// neighbours; trilinear in 3-d, the eight), 1 nearest (rounding half to even), 2 bicubic
// (2-d only: 16 neighbours, A = -0.75, each tap's coordinate padded on its own).
class GridSampler {
 public:
  GridSampler(BodyBuilder &b, const TensorRef &input, int64_t padding, bool align, DType c)
      : b_(b), input_(input), padding_(padding), align_(align), c_(c) {}

  int constant(double v) { return b_.constant(v, c_); }
  int bin(Op op, int x, int y) { return b_.binary(op, x, y, c_); }

  /// The pixel coordinate of normalized `coord` along a dim of `size`.
  int unnormalize(int coord, int64_t size) {
    int one = constant(1);
    if (align_) return bin(Op::Mul, bin(Op::TrueDiv, bin(Op::Add, coord, one), constant(2)), constant(double(size - 1)));
    return bin(Op::TrueDiv, bin(Op::Sub, bin(Op::Mul, bin(Op::Add, coord, one), constant(double(size))), one), constant(2));
  }
  int clip(int coord, int64_t size) {
    return bin(Op::Minimum, constant(double(size - 1)), bin(Op::Maximum, coord, constant(0)));
  }
  /// Reflected into [low / 2, high / 2] (in halves of a pixel).
  int reflect(int coord, int64_t twice_low, int64_t twice_high) {
    if (twice_low == twice_high) return constant(0);
    double low = double(twice_low) / 2, span = double(twice_high - twice_low) / 2;
    int in = b_.unary(Op::Abs, bin(Op::Sub, coord, constant(low)), c_);
    int extra = bin(Op::Fmod, in, constant(span));
    int flips = b_.unary(Op::Floor, bin(Op::TrueDiv, in, constant(span)), c_);
    int even = b_.binary(Op::Eq, bin(Op::Fmod, flips, constant(2)), constant(0), DType::Bool);
    return b_.where(even, bin(Op::Add, extra, constant(low)), bin(Op::Add, bin(Op::Sub, constant(span), extra), constant(low)),
                    c_);
  }
  /// A pixel coordinate after the padding mode.
  int padded(int coord, int64_t size) {
    if (padding_ == 1) return clip(coord, size);
    if (padding_ == 2) {
      coord = align_ ? reflect(coord, 0, 2 * (size - 1)) : reflect(coord, -1, 2 * size - 1);
      return clip(coord, size);
    }
    return coord;
  }
  /// input[n, c, (z,) y, x] for integral float coordinates (in the input's order of spatial
  /// dims), 0 outside the input.
  int at(const std::vector<Expr> &o, const std::vector<int> &coords) {
    auto inside = [&](int v, int64_t size) {
      return b_.binary(Op::LogicalAnd, b_.binary(Op::Ge, v, constant(0), DType::Bool),
                       b_.binary(Op::Le, v, constant(double(size - 1)), DType::Bool), DType::Bool);
    };
    std::vector<Expr> in = {o[0], o[1]};
    std::vector<int> indices;
    int ok = -1;
    for (size_t k = 0; k < coords.size(); ++k) {
      int64_t size = input_.sizes[2 + k];
      int within = inside(coords[k], size);
      ok = ok < 0 ? within : b_.binary(Op::LogicalAnd, ok, within, DType::Bool);
      // Read at the coordinate clipped into the input (NaN reads pixel 0), kept only inside.
      indices.push_back(b_.cast(b_.where(within, coords[k], constant(0), c_), DType::I64));
      in.push_back(Expr(ir::indirect_var(int(k))));
    }
    int v = b_.cast(b_.indirect_load(input_.buffer, Lowering::offset(input_, in), input_.dtype, indices), c_);
    return b_.where(ok, v, constant(0), c_);
  }

 private:
  BodyBuilder &b_;
  const TensorRef &input_;
  int64_t padding_;
  bool align_;
  DType c_;
};

std::vector<TensorRef> grid_sampler(Lowering &l, const Node &n) {
  const TensorRef &input = l.ref(arg(n, "input").as<ValueId>()), &grid = l.ref(arg(n, "grid").as<ValueId>());
  const TensorType &out = l.graph().type(n.outputs[0]);
  int64_t mode = arg(n, "interpolation_mode").integer(), padding = arg(n, "padding_mode").integer();
  bool align = arg(n, "align_corners").as<bool>();
  DType c = opmath_dtype(out.dtype);
  size_t dims = input.sizes.size() - 2;
  int64_t h = input.sizes[dims], w = input.sizes[dims + 1];
  return {l.pointwise(out, n.name, [&](BodyBuilder &b, const std::vector<Expr> &o) {
    GridSampler s(b, input, padding, align, c);
    auto coord = [&](int64_t k) {  // the grid's k-th coordinate (x, y, z) of this output
      std::vector<Expr> at = {o[0]};
      at.insert(at.end(), o.begin() + 2, o.end());
      at.push_back(Expr(k));
      return b.cast(b.load(grid.buffer, Lowering::offset(grid, at), grid.dtype), c);
    };
    if (mode != 2) {  // bilinear (trilinear in 3-d) or nearest, over the spatial dims
      std::vector<int> p;  // padded pixel coordinates in the input's order: (z,) y, x
      for (size_t k = 0; k < dims; ++k) {
        int64_t size = input.sizes[2 + k];
        p.push_back(s.padded(s.unnormalize(coord(int64_t(dims - 1 - k)), size), size));
      }
      if (mode == 1) {
        for (int &v : p) v = b.unary(Op::Round, v, c);
        return s.at(o, p);
      }
      std::vector<int> low, high;
      for (int v : p) {
        low.push_back(b.unary(Op::Floor, v, c));
        high.push_back(s.bin(Op::Add, low.back(), s.constant(1)));
      }
      auto up = [&](int corner, size_t k) { return ((corner >> (dims - 1 - k)) & 1) != 0; };
      int total = -1;
      for (int corner = 0; corner < (1 << dims); ++corner) {  // the first dim the slowest, as ATen sums them
        std::vector<int> at;
        int weight = -1;
        for (size_t k = dims; k-- > 0;) {  // the weight multiplied x, y(, z), as ATen does
          int part = up(corner, k) ? s.bin(Op::Sub, p[k], low[k]) : s.bin(Op::Sub, high[k], p[k]);
          weight = weight < 0 ? part : s.bin(Op::Mul, weight, part);
        }
        for (size_t k = 0; k < dims; ++k) at.push_back(up(corner, k) ? high[k] : low[k]);
        int term = s.bin(Op::Mul, s.at(o, at), weight);
        total = total < 0 ? term : s.bin(Op::Add, total, term);
      }
      return total;
    }
    // bicubic (2-d only): coordinates unnormalized, each tap padded
    int gx = coord(0), gy = coord(1);
    int x = s.unnormalize(gx, w), y = s.unnormalize(gy, h);
    int x0 = b.unary(Op::Floor, x, c), y0 = b.unary(Op::Floor, y, c);
    auto coefficients = [&](int t) {
      double a = -0.75;
      auto near = [&](int v) {  // ((A + 2) v - (A + 3)) v v + 1
        int p = s.bin(Op::Sub, s.bin(Op::Mul, s.constant(a + 2), v), s.constant(a + 3));
        return s.bin(Op::Add, s.bin(Op::Mul, s.bin(Op::Mul, p, v), v), s.constant(1));
      };
      auto far = [&](int v) {  // ((A v - 5A) v + 8A) v - 4A
        int p = s.bin(Op::Sub, s.bin(Op::Mul, s.constant(a), v), s.constant(5 * a));
        p = s.bin(Op::Add, s.bin(Op::Mul, p, v), s.constant(8 * a));
        return s.bin(Op::Sub, s.bin(Op::Mul, p, v), s.constant(4 * a));
      };
      return std::array<int, 4>{far(s.bin(Op::Add, t, s.constant(1))), near(t), near(s.bin(Op::Sub, s.constant(1), t)),
                                far(s.bin(Op::Sub, s.constant(2), t))};
    };
    auto cx = coefficients(s.bin(Op::Sub, x, x0)), cy = coefficients(s.bin(Op::Sub, y, y0));
    int total = -1;
    for (int j = 0; j < 4; ++j) {
      int row = -1;
      int yj = s.padded(s.bin(Op::Add, y0, s.constant(j - 1)), h);
      for (int i = 0; i < 4; ++i) {
        int xi = s.padded(s.bin(Op::Add, x0, s.constant(i - 1)), w);
        int term = s.bin(Op::Mul, s.at(o, {yj, xi}), cx[size_t(i)]);
        row = row < 0 ? term : s.bin(Op::Add, row, term);
      }
      int term = s.bin(Op::Mul, row, cy[size_t(j)]);
      total = total < 0 ? term : s.bin(Op::Add, total, term);
    }
    return total;
  })};
}

}  // namespace

void add_grid_sampler_lowerings(std::map<std::string, LowerFn, std::less<>> &t) {
  t["aten.grid_sampler_2d.default"] = grid_sampler;
  t["aten.grid_sampler_3d.default"] = grid_sampler;
}

}  // namespace coil::lowering
