#include "runtime/device_copy.h"

#include <algorithm>
#include <cstring>

#include "graph/tensor_type.h"
#include "support/error.h"

namespace coil::cuda {
namespace {

struct Dim {
  int64_t size, src, dst;  // strides in elements
};

std::string strides_str(std::span<const int64_t> s) { return shape_str(Shape(s.begin(), s.end())); }

// The dims that move anything, outer to inner in the destination's order, merged where
// both layouts are contiguous across two of them:
//   (n, a*m, b*m) (m, a, b) -> (n*m, a, b)
// A dim the destination broadcasts (stride 0) is kept only when the source varies along
// it, and then refused by the caller.
std::vector<Dim> canonical_dims(std::span<const int64_t> sizes, std::span<const int64_t> src,
                                std::span<const int64_t> dst) {
  std::vector<Dim> dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1 || (src[d] == 0 && dst[d] == 0)) continue;
    dims.push_back({sizes[d], src[d], dst[d]});
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [](const Dim &a, const Dim &b) { return a.dst != b.dst ? a.dst > b.dst : a.src > b.src; });
  std::vector<Dim> merged;
  for (const Dim &d : dims) {
    if (!merged.empty()) {
      Dim &outer = merged.back();
      if (outer.src == d.src * d.size && outer.dst == d.dst * d.size) {
        outer = {outer.size * d.size, d.src, d.dst};
        continue;
      }
    }
    merged.push_back(d);
  }
  return merged;
}

}  // namespace

int64_t StridedCopy::pieces() const {
  if (row_bytes == 0) return 0;
  int64_t n = 1;
  for (int64_t s : loop_sizes) n *= s;
  return n;
}

std::string StridedCopy::str() const {
  int64_t n = pieces();
  return str_cat(n, n == 1 ? " copy of " : " copies of ", rows, rows == 1 ? " row of " : " rows of ", row_bytes,
                 " bytes");
}

std::optional<StridedCopy> plan_strided_copy(std::span<const int64_t> sizes, std::span<const int64_t> src_strides,
                                             std::span<const int64_t> dst_strides, int64_t element_bytes,
                                             std::string *why) {
  COIL_ASSERT(src_strides.size() == sizes.size() && dst_strides.size() == sizes.size(), "a copy of ", sizes.size(),
              " dims with ", src_strides.size(), " and ", dst_strides.size(), " strides");
  auto refuse = [&](std::string reason) -> std::optional<StridedCopy> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  StridedCopy c;
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0) return c;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 1 && (src_strides[d] < 0 || dst_strides[d] < 0))
      return refuse(str_cat("negative strides (", strides_str(src_strides), " to ", strides_str(dst_strides), ")"));

  std::vector<Dim> dims = canonical_dims(sizes, src_strides, dst_strides);
  for (const Dim &d : dims)
    if (d.dst == 0)
      return refuse(str_cat("the destination's strides ", strides_str(dst_strides), " write ", d.size,
                            " different elements to one place"));
  // The row: the innermost dim when it is contiguous on both sides, else one element.
  int64_t row_elements = 1;
  if (!dims.empty() && dims.back().src == 1 && dims.back().dst == 1) {
    row_elements = dims.back().size;
    dims.pop_back();
  }
  c.row_bytes = row_elements * element_bytes;
  c.src_pitch = c.dst_pitch = c.row_bytes;
  // The rows: the innermost dim whose pitches on both sides leave room for a row.
  for (size_t i = dims.size(); i-- > 0;) {
    const Dim &d = dims[i];
    if (d.src * element_bytes < c.row_bytes || d.dst * element_bytes < c.row_bytes) continue;
    c.rows = d.size;
    c.src_pitch = d.src * element_bytes;
    c.dst_pitch = d.dst * element_bytes;
    dims.erase(dims.begin() + std::ptrdiff_t(i));
    break;
  }
  for (const Dim &d : dims) {
    c.loop_sizes.push_back(d.size);
    c.loop_src_bytes.push_back(d.src * element_bytes);
    c.loop_dst_bytes.push_back(d.dst * element_bytes);
  }
  if (c.pieces() > kMaxCopyPieces)
    return refuse(str_cat("copying strides ", strides_str(src_strides), " to ", strides_str(dst_strides), " takes ",
                          c.str(), ", more than the ", kMaxCopyPieces, " allowed"));
  return c;
}

void enqueue_copy(const StridedCopy &c, CUdeviceptr dst, CUdeviceptr src, CUstream stream, std::string_view what) {
  const Driver &d = driver();
  for_each_piece(c, [&](int64_t src_at, int64_t dst_at) {
    if (c.rows == 1) {
      check(d.cuMemcpyDtoDAsync(dst + CUdeviceptr(dst_at), src + CUdeviceptr(src_at), size_t(c.row_bytes), stream),
            "cuMemcpyDtoDAsync", what);
      return;
    }
    Memcpy2D m;
    m.srcDevice = src + CUdeviceptr(src_at);
    m.srcPitch = size_t(c.src_pitch);
    m.dstDevice = dst + CUdeviceptr(dst_at);
    m.dstPitch = size_t(c.dst_pitch);
    m.WidthInBytes = size_t(c.row_bytes);
    m.Height = size_t(c.rows);
    check(d.cuMemcpy2DAsync(&m, stream), "cuMemcpy2DAsync", what);
  });
}

void copy_on_host(const StridedCopy &c, std::byte *dst, const std::byte *src) {
  for_each_piece(c, [&](int64_t src_at, int64_t dst_at) {
    for (int64_t r = 0; r < c.rows; ++r)
      std::memcpy(dst + dst_at + r * c.dst_pitch, src + src_at + r * c.src_pitch, size_t(c.row_bytes));
  });
}

}  // namespace coil::cuda
