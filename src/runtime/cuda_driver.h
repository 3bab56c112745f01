// The CUDA driver API, loaded at run time (DESIGN.md, decisions 8 and 13): libcuda.so.1 is
// opened with dlopen on first use, so coil builds without cuda.h and runs its CPU path on a
// machine with no GPU or no driver. The few types and functions coil calls are declared
// here; every call is checked, and a failure names the call and the driver's error name.
// Tests: tests/unit/cuda_driver_test.cpp (any machine), tests/gpu/launch_test.cpp (a GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "support/error.h"

// The driver's opaque handles, declared as cuda.h declares them: a CUstream from code that
// includes cuda.h is the same type as ours.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;

namespace coil::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUstream = CUstream_st *;
using CUevent = CUevent_st *;
using CUgraph = CUgraph_st *;
using CUgraphExec = CUgraphExec_st *;

// The enumerators coil uses, with cuda.h's values.
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
inline constexpr int CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
inline constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
inline constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;
inline constexpr int CU_MEMORYTYPE_DEVICE = 2;

/// cuda.h's CUDA_MEMCPY2D (v2), field for field: a copy of `Height` rows of `WidthInBytes`
/// bytes, rows `srcPitch` / `dstPitch` bytes apart. coil fills the device fields only.
struct Memcpy2D {
  size_t srcXInBytes = 0, srcY = 0;
  int srcMemoryType = CU_MEMORYTYPE_DEVICE;
  const void *srcHost = nullptr;
  CUdeviceptr srcDevice = 0;
  void *srcArray = nullptr;
  size_t srcPitch = 0;
  size_t dstXInBytes = 0, dstY = 0;
  int dstMemoryType = CU_MEMORYTYPE_DEVICE;
  void *dstHost = nullptr;
  CUdeviceptr dstDevice = 0;
  void *dstArray = nullptr;
  size_t dstPitch = 0;
  size_t WidthInBytes = 0;
  size_t Height = 0;
};
static_assert(sizeof(Memcpy2D) == 128, "CUDA_MEMCPY2D is 128 bytes on 64-bit targets");

/// Virtual memory management (SharedArena): an allocation's handle, and cuda.h's
/// CUmemAllocationProp and CUmemAccessDesc field for field, filled for pinned memory of
/// device `id`, read and written by that device.
using CUmemGenericAllocationHandle = unsigned long long;
struct MemAllocationProp {
  int type = 1;                  // CU_MEM_ALLOCATION_TYPE_PINNED
  int requested_handle_types = 0;
  int location_type = 1;         // CU_MEM_LOCATION_TYPE_DEVICE
  int location_id = 0;
  void *win32_handle_meta_data = nullptr;
  unsigned char compression_type = 0;
  unsigned char gpu_direct_rdma_capable = 0;
  unsigned short usage = 0;
  unsigned char reserved[4] = {};
};
static_assert(sizeof(MemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes on 64-bit targets");
struct MemAccessDesc {
  int location_type = 1;  // CU_MEM_LOCATION_TYPE_DEVICE
  int location_id = 0;
  int flags = 3;          // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
};
static_assert(sizeof(MemAccessDesc) == 12, "CUmemAccessDesc is 12 bytes");

/// The driver functions coil calls, by their ABI names (cuMemAlloc is cuMemAlloc_v2).
struct Driver {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int *version);
  CUresult (*cuGetErrorName)(CUresult error, const char **name);
  CUresult (*cuGetErrorString)(CUresult error, const char **text);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *context, CUdevice device);
  CUresult (*cuCtxGetCurrent)(CUcontext *context);
  CUresult (*cuCtxSetCurrent)(CUcontext context);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(CUmodule *module, const void *image);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module, const char *name);
  CUresult (*cuFuncGetAttribute)(int *value, int attribute, CUfunction function);
  CUresult (*cuFuncSetAttribute)(CUfunction function, int attribute, int value);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                             CUstream stream, void **params, void **extra);
  CUresult (*cuMemAlloc)(CUdeviceptr *pointer, size_t bytes);
  CUresult (*cuMemFree)(CUdeviceptr pointer);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr destination, const void *source, size_t bytes);
  CUresult (*cuMemcpyDtoH)(void *destination, CUdeviceptr source, size_t bytes);
  CUresult (*cuMemsetD8)(CUdeviceptr destination, unsigned char value, size_t bytes);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr destination, CUdeviceptr source, size_t bytes, CUstream stream);
  CUresult (*cuMemcpy2DAsync)(const Memcpy2D *copy, CUstream stream);
  CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);
  CUresult (*cuDeviceGetName)(char *name, int length, CUdevice device);
  CUresult (*cuEventCreate)(CUevent *event, unsigned flags);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime)(float *milliseconds, CUevent start, CUevent end);
  CUresult (*cuEventDestroy)(CUevent event);
  // Optional: null when the driver lacks it (cuLaunchHostFunc: 10.0+, cuFuncGetParamInfo: 12.4+).
  CUresult (*cuLaunchHostFunc)(CUstream stream, void (*fn)(void *data), void *data);
  CUresult (*cuFuncGetParamInfo)(CUfunction function, size_t index, size_t *offset, size_t *size);
  // Optional: CUDA graphs (driver 12.0+); all null when one is missing.
  CUresult (*cuStreamBeginCapture)(CUstream stream, int mode);
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph *graph);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph, unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);

  // Optional: virtual memory management (driver 10.2+); all null when one is missing.
  CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice device);
  CUresult (*cuMemGetAllocationGranularity)(size_t *granularity, const MemAllocationProp *prop, int option);
  CUresult (*cuMemAddressReserve)(CUdeviceptr *pointer, size_t bytes, size_t alignment, CUdeviceptr address,
                                  unsigned long long flags);
  CUresult (*cuMemCreate)(CUmemGenericAllocationHandle *handle, size_t bytes, const MemAllocationProp *prop,
                          unsigned long long flags);
  CUresult (*cuMemMap)(CUdeviceptr pointer, size_t bytes, size_t offset, CUmemGenericAllocationHandle handle,
                       unsigned long long flags);
  CUresult (*cuMemSetAccess)(CUdeviceptr pointer, size_t bytes, const MemAccessDesc *desc, size_t count);
  CUresult (*cuMemRelease)(CUmemGenericAllocationHandle handle);

  bool has_graphs() const { return cuStreamBeginCapture && cuStreamEndCapture && cuGraphInstantiateWithFlags &&
                                   cuGraphLaunch && cuGraphExecDestroy && cuGraphDestroy; }
  bool has_virtual_memory() const { return cuDeviceTotalMem && cuMemGetAllocationGranularity && cuMemAddressReserve &&
                                           cuMemCreate && cuMemMap && cuMemSetAccess && cuMemRelease; }
};

/// Whether the driver loaded, initialized and sees at least one GPU. Never throws; the
/// first call loads the driver, later ones return the same answer.
bool available();

/// Why not, in words: "libcuda.so.1 cannot be loaded (...): this machine has no NVIDIA
/// driver". Empty when available().
std::string unavailable_reason();

/// The loaded driver; a UserError with unavailable_reason() when there is none.
const Driver &driver();

/// A driver call that failed: `cuModuleLoadData failed with CUDA_ERROR_INVALID_IMAGE
/// (device kernel image is invalid) while loading kernel add_kernel`.
class CudaError : public UserError {
 public:
  CudaError(std::string message, CUresult code) : UserError(std::move(message)), code_(code) {}
  CUresult code() const { return code_; }

 private:
  CUresult code_;
};

/// Throws a CudaError unless `result` is CUDA_SUCCESS; `while_doing` says what for.
void check(CUresult result, const char *call, std::string_view while_doing = {});

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
std::string error_text(CUresult result);

/// Calls the driver function `fn` with the arguments that follow and checks the result.
#define COIL_CU(fn, ...) ::coil::cuda::check(::coil::cuda::driver().fn(__VA_ARGS__), #fn)

/// One GPU's primary context (the one PyTorch and the CUDA runtime use), retained for the
/// life of the process.
class Device {
 public:
  /// The device `ordinal`, made current on the calling thread; loaded once per process.
  static const Device &get(int ordinal = 0);

  /// Makes this device's context current on the calling thread when it is not already.
  void make_current() const;

  int ordinal() const { return ordinal_; }
  int capability() const { return capability_; }  // 90 for sm_90
  int multiprocessors() const { return multiprocessors_; }
  int max_shared_per_block() const { return max_shared_per_block_; }  // with opt-in
  const std::string &name() const { return name_; }  // "NVIDIA H200"

 private:
  explicit Device(int ordinal);
  int ordinal_ = 0;
  std::string name_;
  CUcontext context_ = nullptr;
  int capability_ = 0;
  int multiprocessors_ = 0;
  int max_shared_per_block_ = 0;
};

/// Device memory, freed with the object. Copies are synchronous (they serve tests and
/// set-up, not the launch path).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes, const Device &device = Device::get());
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t size() const { return size_; }

  void upload(const void *host, size_t bytes, size_t offset = 0);
  void download(void *host, size_t bytes, size_t offset = 0) const;
  void fill(uint8_t value);

 private:
  void release() noexcept;
  CUdeviceptr ptr_ = 0;
  size_t size_ = 0;
  const Device *device_ = nullptr;
};

/// The intermediates of one compiled module in one allocation, sized by the memory plan
/// and made once per module (DESIGN.md, decision 7, on the GPU).
class DeviceArena {
 public:
  explicit DeviceArena(int64_t bytes, const Device &device = Device::get());
  /// The address of the buffer at `offset` (from the memory plan) of `bytes` bytes.
  CUdeviceptr at(int64_t offset, int64_t bytes) const;
  int64_t size() const { return int64_t(memory_.size()); }

 private:
  DeviceBuffer memory_;
};

/// A stream that does not wait for the legacy default stream, destroyed with the object.
class Stream {
 public:
  explicit Stream(const Device &device = Device::get());
  ~Stream();
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  CUstream get() const { return stream_; }
  void synchronize() const;

 private:
  CUstream stream_ = nullptr;
};

/// A CUDA event, destroyed with the object: the GPU's own clock for timing, or (with
/// CU_EVENT_DISABLE_TIMING) a point in a stream that another stream waits for.
class Event {
 public:
  explicit Event(unsigned flags = 0);
  ~Event();
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  void record(CUstream stream);
  /// Makes `stream` wait (on the GPU, the host returns at once) for the work before the
  /// last record().
  void wait_in(CUstream stream) const;
  /// Waits for this event; `what` names the work it ends, for the error.
  void synchronize(std::string_view what);
  /// Milliseconds from `start` (recorded earlier) to this event, both completed.
  float since(const Event &start) const;

 private:
  CUevent event_ = nullptr;
};

/// The intermediates of every graph loaded on one GPU, in one range of device addresses
/// (DESIGN.md, decision 7, on the GPU): a graph's arena and its extern steps' workspace are
/// at the start of the range, and the range is backed by memory as far as the largest graph
/// loaded so far reaches. The range is reserved once per process (the device's memory
/// size) and memory is mapped onto its end as graphs load, so addresses never move: a
/// training step's forward and backward graphs hold the larger of their arenas, not both.
/// Calls take turns (Turn). Tests: tests/gpu/program_test.cpp (a GPU).
class SharedArena {
 public:
  /// The shared arena of `device`; null when the driver cannot map memory into reserved
  /// addresses (each graph then has an arena of its own).
  static SharedArena *of(const Device &device);

  /// The start of the range, with memory mapped for at least its first `bytes`. A CudaError
  /// naming the size when the device has no more memory (the mapped part is kept).
  CUdeviceptr reach(int64_t bytes);
  /// The bytes mapped so far.
  int64_t mapped() const;

  /// One call's use of the arena, from before its first copy or launch to after its last:
  /// made, it waits for the turn before it on the host only while that one is being
  /// queued (a mutex), and makes `stream` wait on the GPU for that turn's work (an event);
  /// destroyed, it marks the end of this turn's work on `stream`. Turns on one stream cost
  /// the GPU nothing; turns on other streams run one after the other.
  class Turn {
   public:
    Turn(SharedArena &arena, CUstream stream);
    ~Turn();
    Turn(const Turn &) = delete;
    Turn &operator=(const Turn &) = delete;

   private:
    SharedArena &arena_;
    CUstream stream_;
    std::unique_lock<std::mutex> lock_;
  };

 private:
  explicit SharedArena(const Device &device);
  const Device &device_;
  mutable std::mutex map_mutex_;
  std::mutex turn_mutex_;
  Event done_{CU_EVENT_DISABLE_TIMING};  // recorded at the end of the last turn's work
  bool used_ = false;                    // whether done_ was recorded
  MemAllocationProp prop_;  // the device's memory, as mapped onto the range
  MemAccessDesc access_;    // read and written by the device
  CUdeviceptr base_ = 0;
  size_t reserved_ = 0, mapped_ = 0, granularity_ = 0;
};

/// Runs `launches` on `stream` `runs` + 1 times, each run `calls` times back to back
/// between two events, and returns the median milliseconds per call over the runs after
/// the first (which warms up). The host's launches overlap the GPU's work, as in a model.
double median_ms_per_call(CUstream stream, int runs, int calls, const std::function<void()> &launches,
                          std::string_view what);

/// Holds `stream` at the point of construction until release() (or destruction): what is
/// queued after it starts only then, all at once, so that events between the launches time
/// the GPU's work alone, not the host's launching. A host function on the stream waits for
/// the release (at most 10 s, after which the stream goes on). Without cuLaunchHostFunc
/// the stream is not held.
class StreamGate {
 public:
  explicit StreamGate(CUstream stream);
  ~StreamGate() { release(); }
  StreamGate(const StreamGate &) = delete;
  StreamGate &operator=(const StreamGate &) = delete;
  void release();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

/// A captured sequence of work on a stream, replayed as one launch (CUDA graphs).
class Graph {
 public:
  /// Captures what `record` queues on `stream` (thread-local capture mode: other threads'
  /// work is not captured) and instantiates it. A CudaError when the driver has no
  /// graphs, when `record` did something a capture cannot hold, or when instantiation
  /// fails; the stream is left out of capture mode either way.
  Graph(CUstream stream, const std::function<void()> &record);
  ~Graph();
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  void launch(CUstream stream) const;

 private:
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace coil::cuda
