// Copies of one tensor between two layouts in device memory, queued on a stream: how a
// caller's CUDA tensor of any strides reaches a compiled program's buffer of fixed layout,
// and how an output goes back (runtime/cuda_program.h).
//
// The copy is planned as data first (plan_strided_copy, no GPU needed), then queued
// (enqueue_copy): rows of contiguous bytes, as the driver's 2D copy moves them
// (cuMemcpy2DAsync: `rows` rows of `row_bytes` bytes, `src_pitch` / `dst_pitch` apart),
// repeated over the dims that fit neither the row nor the pitch. The dims are first put in
// the destination's order and merged where both layouts are contiguous across them, so a
// copy between equal dense layouts is one cuMemcpyDtoDAsync, a slice with gaps one 2D
// copy, a transposed matrix one 2D copy per column. A layout no copy of rows can express
// within kMaxCopyPieces driver calls (a destination that writes two elements to one place,
// negative strides, a broadcast of many single elements) is refused with the reason.
// Tests: tests/unit/device_copy_test.cpp (the plans, run on host memory), tests/gpu/device_io_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cuda_driver.h"

namespace coil::cuda {

/// The most driver calls one tensor's copy may take before it is refused.
inline constexpr int64_t kMaxCopyPieces = 4096;

/// One tensor's copy as rows, bytes throughout.
struct StridedCopy {
  int64_t row_bytes = 0;  // 0: nothing to copy (an empty tensor)
  int64_t rows = 1;
  int64_t src_pitch = 0, dst_pitch = 0;
  // The dims left over, outer to inner: each piece (one 2D copy) at their every index.
  std::vector<int64_t> loop_sizes, loop_src_bytes, loop_dst_bytes;

  /// Driver calls the copy takes (0 for an empty tensor).
  int64_t pieces() const;
  /// "1 copy of 48 rows of 256 bytes" / "64 copies of ...", for errors and tests.
  std::string str() const;
};

/// The copy of a tensor of `sizes`, elements of `element_bytes` bytes, from the layout
/// `src_strides` to `dst_strides` (strides in elements, one per dim). Empty, with the
/// reason in `*why` ("the destination's strides [0, 1] write 64 elements to one place"),
/// when rows cannot express it.
std::optional<StridedCopy> plan_strided_copy(std::span<const int64_t> sizes, std::span<const int64_t> src_strides,
                                             std::span<const int64_t> dst_strides, int64_t element_bytes,
                                             std::string *why);

/// Calls `piece(src_offset, dst_offset)` (bytes from the tensors' element 0) once per 2D
/// copy of `c`, in order.
template <typename F>
void for_each_piece(const StridedCopy &c, F &&piece) {
  if (c.row_bytes == 0) return;
  size_t n = c.loop_sizes.size();
  std::vector<int64_t> index(n, 0);
  int64_t src = 0, dst = 0;
  while (true) {
    piece(src, dst);
    size_t d = n;
    while (d > 0) {
      --d;
      if (++index[d] < c.loop_sizes[d]) {
        src += c.loop_src_bytes[d];
        dst += c.loop_dst_bytes[d];
        break;
      }
      src -= c.loop_src_bytes[d] * (c.loop_sizes[d] - 1);
      dst -= c.loop_dst_bytes[d] * (c.loop_sizes[d] - 1);
      index[d] = 0;
      if (d == 0) return;
    }
    if (n == 0) return;
  }
}

/// Queues `c` from `src` to `dst` (element 0 of each) on `stream`; the host does not wait.
/// `what` names the tensor in a driver error ("copying input 'x' into the workspace").
void enqueue_copy(const StridedCopy &c, CUdeviceptr dst, CUdeviceptr src, CUstream stream, std::string_view what);

/// Runs `c` on host memory, row by row with memcpy: what the 2D copies do, for tests.
void copy_on_host(const StridedCopy &c, std::byte *dst, const std::byte *src);

}  // namespace coil::cuda
