// Plain loop implementations of the extern calls (matrix products, convolution), used
// when coil is built without a library for them, for calls the library does not take,
// and should the library decline a call at run time. Strided views in elements,
// accumulation in double, as the reference interpreter does (src/ir/interpreter.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "coil/prelude.h"

namespace coil_rt {

struct View {
  int rank;
  const int64_t *sizes;
  const int64_t *strides;
  int64_t offset;
};

template <typename T> inline double load_as_double(const T *p, int64_t i) { return double(p[i]); }
inline double load_as_double(const uint16_t *p, int64_t i, bool bf16) {
  return bf16 ? double(bf16_to_f32(p[i])) : double(f16_to_f32(p[i]));
}

/// out[b, i, j] = beta * bias[b, i, j] + alpha * sum_k A[b, i, k] * B[b, k, j] for the
/// matmul family seen as batched (mm: one batch; mv: B has one column). `get` reads an
/// element of an operand as double, `put` writes one of the output.
template <typename GetA, typename GetB, typename GetBias, typename Put>
void matmul(int64_t batches, int64_t rows, int64_t inner, int64_t cols, double alpha, double beta, bool has_bias,
            GetA get_a, GetB get_b, GetBias get_bias, Put put) {
  int64_t work = batches * rows * cols * (inner > 0 ? inner : 1);
#pragma omp parallel for collapse(2) num_threads(threads_for(work)) schedule(static)
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < inner; ++k) acc += get_a(b, i, k) * get_b(b, k, j);
        double v = alpha * acc;
        if (has_bias && beta != 0) v += beta * get_bias(b, i, j);
        put(b, i, j, v);
      }
}

/// `flat` split row-major over `spatial` dims of `sizes` into `coords`; returns what is
/// left above them (the flat index of the leading dims).
inline int64_t unflatten(int64_t flat, int spatial, const int64_t *sizes, int64_t *coords) {
  for (int d = spatial - 1; d >= 0; --d) {
    coords[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  return flat;
}

/// A direct convolution with groups, stride, padding and dilation over `spatial` dims;
/// transposed, output o gathers input i where o = i*stride - padding + k*dilation.
template <typename GetX, typename GetW, typename GetBias, typename Put>
void convolution(int spatial, const int64_t *out_sizes, const int64_t *x_sizes, const int64_t *w_sizes,
                 const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups,
                 bool transposed, bool has_bias, GetX get_x, GetW get_w, GetBias get_bias, Put put) {
  int64_t cin_g = transposed ? w_sizes[0] / groups : w_sizes[1];
  int64_t cout_g = transposed ? w_sizes[1] : w_sizes[0] / groups;
  int64_t out_points = 1, window = 1;
  for (int d = 0; d < spatial; ++d) {
    out_points *= out_sizes[2 + d];
    window *= w_sizes[2 + d];
  }
  int64_t total = out_sizes[0] * out_sizes[1] * out_points;
#pragma omp parallel for num_threads(threads_for(total * cin_g * window)) schedule(static)
  for (int64_t flat = 0; flat < total; ++flat) {
    std::vector<int64_t> o(static_cast<size_t>(spatial)), kpos(static_cast<size_t>(spatial)), xi(static_cast<size_t>(spatial));
    int64_t rest = unflatten(flat, spatial, out_sizes + 2, o.data());
    int64_t co = rest % out_sizes[1], batch = rest / out_sizes[1], g = co / cout_g;
    double acc = has_bias ? get_bias(co) : 0;
    for (int64_t ci = 0; ci < cin_g; ++ci)
      for (int64_t kflat = 0; kflat < window; ++kflat) {
        bool inside = true;
        unflatten(kflat, spatial, w_sizes + 2, kpos.data());
        for (int d = 0; d < spatial && inside; ++d) {
          int64_t pos = o[size_t(d)] * stride[d] - padding[d] + kpos[size_t(d)] * dilation[d];
          if (transposed) {
            int64_t shifted = o[size_t(d)] + padding[d] - kpos[size_t(d)] * dilation[d];
            if (shifted < 0 || shifted % stride[d] != 0) inside = false;
            pos = shifted / stride[d];
          }
          if (pos < 0 || pos >= x_sizes[2 + d]) inside = false;
          xi[size_t(d)] = pos;
        }
        if (!inside) continue;
        int64_t w0 = transposed ? g * cin_g + ci : co, w1 = transposed ? co % cout_g : ci;
        acc += get_x(batch, g * cin_g + ci, xi.data()) * get_w(w0, w1, kpos.data());
      }
    put(batch, co, o.data(), acc);
  }
}

/// The weight gradient of a convolution (not a transposed one): for each weight element
/// [co, ci, k...], the sum over the batch and the output positions o of dy[b, co, o] times
/// x[b, g*cin_g + ci, o*stride - padding + k*dilation] where that lies inside x.
template <typename GetX, typename GetDy, typename Put>
void convolution_weight_grad(int spatial, const int64_t *dw_sizes, const int64_t *x_sizes, const int64_t *dy_sizes,
                             const int64_t *stride, const int64_t *padding, const int64_t *dilation, int64_t groups,
                             GetX get_x, GetDy get_dy, Put put) {
  int64_t cin_g = dw_sizes[1], cout_g = dw_sizes[0] / groups;
  int64_t out_points = 1, window = 1;
  for (int d = 0; d < spatial; ++d) {
    out_points *= dy_sizes[2 + d];
    window *= dw_sizes[2 + d];
  }
  int64_t total = dw_sizes[0] * cin_g * window;
#pragma omp parallel for num_threads(threads_for(total * dy_sizes[0] * out_points)) schedule(static)
  for (int64_t flat = 0; flat < total; ++flat) {
    std::vector<int64_t> k(static_cast<size_t>(spatial)), o(static_cast<size_t>(spatial)), xi(static_cast<size_t>(spatial));
    int64_t rest = unflatten(flat, spatial, dw_sizes + 2, k.data());
    int64_t ci = rest % cin_g, co = rest / cin_g, channel = co / cout_g * cin_g + ci;
    double acc = 0;
    for (int64_t batch = 0; batch < dy_sizes[0]; ++batch)
      for (int64_t oflat = 0; oflat < out_points; ++oflat) {
        bool inside = true;
        unflatten(oflat, spatial, dy_sizes + 2, o.data());
        for (int d = 0; d < spatial && inside; ++d) {
          xi[size_t(d)] = o[size_t(d)] * stride[d] - padding[d] + k[size_t(d)] * dilation[d];
          inside = xi[size_t(d)] >= 0 && xi[size_t(d)] < x_sizes[2 + d];
        }
        if (inside) acc += get_dy(batch, co, o.data()) * get_x(batch, channel, xi.data());
      }
    put(co, ci, k.data(), acc);
  }
}

}  // namespace coil_rt

// The oneDNN calls of kernels that src/codegen/cpp/cpp_extern.cpp hands to oneDNN: the
// kernel build defines COIL_KERNELS_CALL_ONEDNN and links -ldnnl for those only
// (src/runtime/cpu_module.cpp), so that a graph without them needs no oneDNN at all.
#ifdef COIL_KERNELS_CALL_ONEDNN
#include "coil/onednn.h"
#endif
