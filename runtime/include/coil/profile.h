// Timing each kernel of a graph compiled with the option cpp.profile: the wrapper keeps
// one KernelTime per kernel, times each call with a KernelTimer and exports the totals
// through coil_profile (coil/artifact.h). Concurrent calls of the graph add up without a
// lock; the steady clock's resolution (nanoseconds on Linux) bounds what a row can show.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "coil/artifact.h"

namespace coil_rt {

struct KernelTime {
  const char *name;     // kernel0
  const char *summary;  // what it computes, as the comment above the kernel says
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> total_ns{0};
};

// Adds the time from its construction to its destruction to one kernel's row.
class KernelTimer {
 public:
  explicit KernelTimer(KernelTime &k) : k_(k), start_(std::chrono::steady_clock::now()) {}
  KernelTimer(const KernelTimer &) = delete;
  KernelTimer &operator=(const KernelTimer &) = delete;
  ~KernelTimer() {
    auto elapsed = std::chrono::steady_clock::now() - start_;
    k_.total_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count(),
                          std::memory_order_relaxed);
    k_.calls.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  KernelTime &k_;
  std::chrono::steady_clock::time_point start_;
};

// coil_profile's body: copies min(n, capacity) rows and returns n.
inline int32_t read_profile(const KernelTime *kernels, int32_t n, coil_kernel_profile *rows, int32_t capacity) {
  for (int32_t i = 0; rows && i < n && i < capacity; ++i) {
    rows[i].name = kernels[i].name;
    rows[i].summary = kernels[i].summary;
    rows[i].calls = kernels[i].calls.load(std::memory_order_relaxed);
    rows[i].total_ns = kernels[i].total_ns.load(std::memory_order_relaxed);
  }
  return n;
}

}  // namespace coil_rt
