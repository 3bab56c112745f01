// Compiles hand-written Triton kernels with coil's Triton build and launches them through
// coil's launcher on a real GPU, checking every result on the CPU. Not part of ctest (CI
// has no GPU); run it on a GPU machine with Python and triton:
//   cmake -S . -B build-gpu -G Ninja && ninja -C build-gpu coil_gpu_launch_test
//   COIL_CACHE_DIR=$(mktemp -d) build-gpu/tests/coil_gpu_launch_test
// Prints PASS or FAIL per check and exits 0 only when every check passed.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../unit/triton_test_kernels.h"
#include "runtime/cuda_driver.h"
#include "runtime/triton_build.h"
#include "runtime/triton_launch.h"
#include "support/error.h"
#include "gpu_check.h"

namespace coil {
namespace {

using cuda::CUdeviceptr;
using cuda::CudaKernel;
using cuda::DeviceBuffer;
using cuda::LaunchGrid;
using cuda::Stream;

template <typename T>
DeviceBuffer upload(const std::vector<T> &host) {
  DeviceBuffer buffer(host.size() * sizeof(T));
  buffer.upload(host.data(), buffer.size());
  return buffer;
}

template <typename T>
std::vector<T> download(const DeviceBuffer &buffer) {
  std::vector<T> host(buffer.size() / sizeof(T));
  buffer.download(host.data(), buffer.size());
  return host;
}

// The first index where `got` and `want` differ by more than `tolerance`, in words.
std::string first_mismatch(const std::vector<float> &got, const std::vector<float> &want, double tolerance) {
  if (got.size() != want.size()) return "sizes differ";
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(double(got[i]) - double(want[i])) <= tolerance))
      return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
  return "";
}

// fp16 bits of a small integer (|v| <= 2048), exact in half precision.
uint16_t half_of_int(int v) {
  if (v == 0) return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  unsigned magnitude = unsigned(v < 0 ? -v : v);
  int exponent = 31 - __builtin_clz(magnitude);
  unsigned mantissa = (magnitude << (10 - exponent)) & 0x3ff;
  return uint16_t(sign | ((exponent + 15) << 10) | mantissa);
}

std::string check_vector_add(const CudaKernel &add, const Stream &stream) {
  const int n = 1000003;  // not a multiple of XBLOCK: the last program is masked
  std::vector<float> x(n), y(n), want(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float(i % 1000) * 0.5f;
    y[i] = float(i % 7) - 3.0f;
    want[i] = x[i] + y[i];
  }
  DeviceBuffer dx = upload(x), dy = upload(y), out(n * sizeof(float) + 64);
  out.fill(0xff);  // NaN everywhere: a store past n would show below
  CUdeviceptr px = dx.ptr(), py = dy.ptr(), pout = out.ptr();
  add.launch(cuda::block_grid(n, 1024), {&px, &py, &pout, &n}, stream.get());
  stream.synchronize();
  std::vector<float> got = download<float>(out);
  for (size_t i = n; i < got.size(); ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &got[i], sizeof bits);
    if (bits != 0xffffffffu) return "the kernel wrote past n";
  }
  got.resize(n);
  return first_mismatch(got, want, 0.0);
}

std::string check_vector_add_on_default_stream(const CudaKernel &add) {
  const int n = 5;
  std::vector<float> x = {1, 2, 3, 4, 5}, y = {10, 20, 30, 40, 50};
  DeviceBuffer dx = upload(x), dy = upload(y), out(n * sizeof(float));
  CUdeviceptr px = dx.ptr(), py = dy.ptr(), pout = out.ptr();
  add.launch(cuda::block_grid(n, 1024), {&px, &py, &pout, &n}, nullptr);
  COIL_CU(cuCtxSynchronize);
  return first_mismatch(download<float>(out), {11, 22, 33, 44, 55}, 0.0);
}

std::string check_row_sum(const CudaKernel &sum, const Stream &stream) {
  const int rows = 1001, cols = 300;
  std::vector<float> in(size_t(rows) * cols), want(rows);
  for (int r = 0; r < rows; ++r) {
    double total = 0;
    for (int c = 0; c < cols; ++c) {
      float v = std::sin(0.01f * float(r * cols + c));
      in[size_t(r) * cols + c] = v;
      total += v;
    }
    want[r] = float(total);
  }
  DeviceBuffer din = upload(in), out(rows * sizeof(float));
  CUdeviceptr pin = din.ptr(), pout = out.ptr();
  sum.launch(cuda::block_grid(rows, 4), {&pin, &pout, &rows, &cols}, stream.get());
  stream.synchronize();
  return first_mismatch(download<float>(out), want, 1e-4);
}

// Integer-valued fp16 inputs: every product and partial sum is exact in fp32.
std::string check_matmul(const CudaKernel &mm, const Stream &stream) {
  const int M = 200, N = 136, K = 160;
  std::vector<int> a(M * K), b(K * N);
  for (int i = 0; i < M * K; ++i) a[i] = (i * 7) % 5 - 2;
  for (int i = 0; i < K * N; ++i) b[i] = (i * 3) % 5 - 2;
  std::vector<uint16_t> ha(a.size()), hb(b.size());
  for (size_t i = 0; i < a.size(); ++i) ha[i] = half_of_int(a[i]);
  for (size_t i = 0; i < b.size(); ++i) hb[i] = half_of_int(b[i]);
  std::vector<float> want(M * N, 0.0f);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int total = 0;
      for (int k = 0; k < K; ++k) total += a[m * K + k] * b[k * N + n];
      want[m * N + n] = float(total);
    }
  DeviceBuffer da = upload(ha), db = upload(hb), out(M * N * sizeof(float));
  CUdeviceptr pa = da.ptr(), pb = db.ptr(), pc = out.ptr();
  mm.launch(cuda::block_grid(M, 128, N, 128), {&pa, &pb, &pc, &M, &N, &K}, stream.get());
  stream.synchronize();
  return first_mismatch(download<float>(out), want, 0.0);
}

// Two grid sizes: the second launch needs a larger global scratch buffer than the first.
std::string check_scaled_copy(const CudaKernel &copy, const Stream &stream) {
  for (int size : {64, 256}) {
    std::vector<float> src(size_t(size) * size), want(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
      src[i] = float(i % 97) - 48.0f;
      want[i] = 2.0f * src[i];
    }
    DeviceBuffer dsrc = upload(src), out(src.size() * sizeof(float));
    CUdeviceptr ps = dsrc.ptr(), pd = out.ptr();
    copy.launch(cuda::block_grid(size, 32, size, 32), {&ps, &pd, &size, &size}, stream.get());
    stream.synchronize();
    std::string problem = first_mismatch(download<float>(out), want, 0.0);
    if (!problem.empty()) return str_cat(size, "x", size, ": ", problem);
  }
  return "";
}

int run() {
  if (!cuda::available()) {
    report("cuda driver", false, cuda::unavailable_reason());
    return 1;
  }
  const cuda::Device &device = cuda::Device::get();
  std::printf("GPU 0: capability %d, %d multiprocessors, %d bytes of shared memory per block; Triton %s (%s)\n",
              device.capability(), device.multiprocessors(), device.max_shared_per_block(), triton_version().c_str(),
              triton_python().c_str());
  int cap = device.capability();
  std::vector<TritonBinary> built = build_triton_kernels({test::vector_add_kernel(cap), test::row_sum_kernel(cap),
                                                          test::matmul_kernel(cap), test::scaled_copy_kernel(cap)});
  report("matmul needs more than 48 KiB of shared memory", built[2].facts.shared > 48 * 1024,
         std::to_string(built[2].facts.shared) + " bytes");
  report("scaled_copy needs global scratch",
         !built[3].facts.hidden_args.empty() && built[3].facts.hidden_args[0].size > 0);
  CudaKernel add = cuda::load_triton_kernel(built[0]);
  CudaKernel sum = cuda::load_triton_kernel(built[1]);
  CudaKernel mm = cuda::load_triton_kernel(built[2]);
  CudaKernel copy = cuda::load_triton_kernel(built[3]);
  Stream stream;
  run_check("vector add, masked tail", [&] { return check_vector_add(add, stream); });
  run_check("vector add on the default stream", [&] { return check_vector_add_on_default_stream(add); });
  run_check("row sum (reduction)", [&] { return check_row_sum(sum, stream); });
  run_check("matmul with > 48 KiB shared memory", [&] { return check_matmul(mm, stream); });
  run_check("scaled copy with global scratch", [&] { return check_scaled_copy(copy, stream); });
  run_check("wrong argument count is refused", [&] {
    try {
      add.launch({1, 1, 1}, {}, stream.get());
    } catch (const InternalError &) {
      return std::string();
    }
    return std::string("launched");
  });
  std::printf("%s: %d failed\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace coil

int main() {
  try {
    return coil::run();
  } catch (const std::exception &e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
