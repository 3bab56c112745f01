#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/library_loader.h"
#include "support/int_math.h"

namespace coil::cuda {
namespace {

constexpr const char *kLibrary = "libcuda.so.1";

// The driver as loaded once per process: its table, or why there is none.
struct Loaded {
  Driver driver{};
  std::string reason;  // empty: usable
};

// An optional set of driver functions is all or none: when one is missing, none is kept.
template <typename... Fn>
void null_all(Fn *&...fns) {
  ((fns = nullptr), ...);
}

// Every function coil needs, or the name of the first one missing.
std::string resolve_all(void *lib, Driver &d) {
  // Names with _v2 are the ABI behind cuda.h's macros (cuMemAlloc -> cuMemAlloc_v2).
  Symbols symbols(lib);
  symbols.need("cuInit", d.cuInit);
  symbols.need("cuDriverGetVersion", d.cuDriverGetVersion);
  symbols.need("cuGetErrorName", d.cuGetErrorName);
  symbols.need("cuGetErrorString", d.cuGetErrorString);
  symbols.need("cuDeviceGetCount", d.cuDeviceGetCount);
  symbols.need("cuDeviceGet", d.cuDeviceGet);
  symbols.need("cuDeviceGetAttribute", d.cuDeviceGetAttribute);
  symbols.need("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain);
  symbols.need("cuCtxGetCurrent", d.cuCtxGetCurrent);
  symbols.need("cuCtxSetCurrent", d.cuCtxSetCurrent);
  symbols.need("cuCtxSynchronize", d.cuCtxSynchronize);
  symbols.need("cuModuleLoadData", d.cuModuleLoadData);
  symbols.need("cuModuleUnload", d.cuModuleUnload);
  symbols.need("cuModuleGetFunction", d.cuModuleGetFunction);
  symbols.need("cuFuncGetAttribute", d.cuFuncGetAttribute);
  symbols.need("cuFuncSetAttribute", d.cuFuncSetAttribute);
  symbols.need("cuLaunchKernel", d.cuLaunchKernel);
  symbols.need("cuMemAlloc_v2", d.cuMemAlloc);
  symbols.need("cuMemFree_v2", d.cuMemFree);
  symbols.need("cuMemcpyHtoD_v2", d.cuMemcpyHtoD);
  symbols.need("cuMemcpyDtoH_v2", d.cuMemcpyDtoH);
  symbols.need("cuMemsetD8_v2", d.cuMemsetD8);
  symbols.need("cuMemcpyDtoDAsync_v2", d.cuMemcpyDtoDAsync);
  symbols.need("cuMemcpy2DAsync_v2", d.cuMemcpy2DAsync);
  symbols.need("cuStreamCreate", d.cuStreamCreate);
  symbols.need("cuStreamDestroy_v2", d.cuStreamDestroy);
  symbols.need("cuStreamSynchronize", d.cuStreamSynchronize);
  symbols.need("cuStreamWaitEvent", d.cuStreamWaitEvent);
  symbols.need("cuDeviceGetName", d.cuDeviceGetName);
  symbols.need("cuEventCreate", d.cuEventCreate);
  symbols.need("cuEventRecord", d.cuEventRecord);
  symbols.need("cuEventSynchronize", d.cuEventSynchronize);
  symbols.need("cuEventElapsedTime", d.cuEventElapsedTime);
  symbols.need("cuEventDestroy_v2", d.cuEventDestroy);
  if (!symbols.missing().empty()) return symbols.missing();
  symbols.want("cuFuncGetParamInfo", d.cuFuncGetParamInfo);
  symbols.want("cuLaunchHostFunc", d.cuLaunchHostFunc);
  // Optional, all or none: CUDA graphs.
  bool graphs = symbols.want("cuStreamBeginCapture_v2", d.cuStreamBeginCapture) &&
                symbols.want("cuStreamEndCapture", d.cuStreamEndCapture) &&
                symbols.want("cuGraphInstantiateWithFlags", d.cuGraphInstantiateWithFlags) &&
                symbols.want("cuGraphLaunch", d.cuGraphLaunch) && symbols.want("cuGraphExecDestroy", d.cuGraphExecDestroy) &&
                symbols.want("cuGraphDestroy", d.cuGraphDestroy);
  // Optional, all or none: virtual memory management.
  bool vmm = symbols.want("cuDeviceTotalMem_v2", d.cuDeviceTotalMem) &&
             symbols.want("cuMemGetAllocationGranularity", d.cuMemGetAllocationGranularity) &&
             symbols.want("cuMemAddressReserve", d.cuMemAddressReserve) && symbols.want("cuMemCreate", d.cuMemCreate) &&
             symbols.want("cuMemMap", d.cuMemMap) && symbols.want("cuMemSetAccess", d.cuMemSetAccess) &&
             symbols.want("cuMemRelease", d.cuMemRelease);
  if (!vmm)
    null_all(d.cuDeviceTotalMem, d.cuMemGetAllocationGranularity, d.cuMemAddressReserve, d.cuMemCreate, d.cuMemMap,
             d.cuMemSetAccess, d.cuMemRelease);
  if (!graphs)
    null_all(d.cuStreamBeginCapture, d.cuStreamEndCapture, d.cuGraphInstantiateWithFlags, d.cuGraphLaunch,
             d.cuGraphExecDestroy, d.cuGraphDestroy);
  return "";
}

std::string error_text_with(const Driver &d, CUresult result) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (d.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name) return str_cat("CUDA error ", result);
  if (d.cuGetErrorString(result, &text) != CUDA_SUCCESS || !text) return name;
  return str_cat(name, " (", text, ")");
}

// dlopen, every symbol, cuInit and at least one device; the first failure is the reason.
Loaded load_driver() {
  Loaded out;
  // Never closed: the driver stays loaded for the process, as any CUDA program keeps it.
  void *lib = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = ::dlerror();
    out.reason = str_cat(kLibrary, " cannot be loaded (", why ? why : "unknown reason",
                         "): this machine has no NVIDIA driver, so GPU kernels cannot run here");
    return out;
  }
  if (std::string missing = resolve_all(lib, out.driver); !missing.empty()) {
    out.reason = str_cat(kLibrary, " has no ", missing, ": the NVIDIA driver is too old for coil");
    return out;
  }
  if (CUresult r = out.driver.cuInit(0); r != CUDA_SUCCESS) {
    out.reason = str_cat("the CUDA driver does not start: cuInit failed with ", error_text_with(out.driver, r));
    return out;
  }
  int count = 0;
  if (CUresult r = out.driver.cuDeviceGetCount(&count); r != CUDA_SUCCESS || count == 0) {
    out.reason = r != CUDA_SUCCESS ? str_cat("cuDeviceGetCount failed with ", error_text_with(out.driver, r))
                                   : std::string("the CUDA driver sees no GPU");
    return out;
  }
  return out;
}

const Loaded &driver_library() {
  static const Loaded l = load_driver();
  return l;
}

int device_attribute(CUdevice device, int attribute, const char *what) {
  int value = 0;
  check(driver().cuDeviceGetAttribute(&value, attribute, device), "cuDeviceGetAttribute", what);
  return value;
}

}  // namespace

bool available() { return driver_library().reason.empty(); }

std::string unavailable_reason() { return driver_library().reason; }

const Driver &driver() {
  const Loaded &l = driver_library();
  if (!l.reason.empty()) throw UserError(l.reason);
  return l.driver;
}

std::string error_text(CUresult result) { return error_text_with(driver(), result); }

void check(CUresult result, const char *call, std::string_view while_doing) {
  if (result == CUDA_SUCCESS) return;
  std::string message = str_cat(call, " failed with ", error_text(result));
  if (!while_doing.empty()) message += str_cat(" while ", while_doing);
  throw CudaError(message, result);
}

Device::Device(int ordinal) : ordinal_(ordinal) {
  const Driver &d = driver();
  int count = 0;
  COIL_CU(cuDeviceGetCount, &count);
  if (ordinal < 0 || ordinal >= count)
    throw UserError(str_cat("there is no GPU ", ordinal, ": the CUDA driver sees ", count));
  CUdevice device = 0;
  check(d.cuDeviceGet(&device, ordinal), "cuDeviceGet", str_cat("opening GPU ", ordinal));
  check(d.cuDevicePrimaryCtxRetain(&context_, device), "cuDevicePrimaryCtxRetain", str_cat("opening GPU ", ordinal));
  capability_ = 10 * device_attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "reading its capability") +
                device_attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "reading its capability");
  multiprocessors_ = device_attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "counting multiprocessors");
  max_shared_per_block_ =
      device_attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "reading its shared memory");
  char name[256] = {};
  check(d.cuDeviceGetName(name, int(sizeof name) - 1, device), "cuDeviceGetName", str_cat("naming GPU ", ordinal));
  name_ = name;
}

const Device &Device::get(int ordinal) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<Device>> devices;  // never destroyed: contexts live as long as the process
  const Device *device = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto &slot = devices[ordinal];
    if (!slot) slot.reset(new Device(ordinal));
    device = slot.get();
  }
  device->make_current();
  return *device;
}

void Device::make_current() const {
  CUcontext current = nullptr;
  COIL_CU(cuCtxGetCurrent, &current);
  if (current != context_) COIL_CU(cuCtxSetCurrent, context_);
}

DeviceBuffer::DeviceBuffer(size_t bytes, const Device &device) : size_(bytes), device_(&device) {
  if (bytes == 0) return;
  device.make_current();
  check(driver().cuMemAlloc(&ptr_, bytes), "cuMemAlloc", str_cat("allocating ", bytes, " bytes"));
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : ptr_(other.ptr_), size_(other.size_), device_(other.device_) {
  other.ptr_ = 0;
  other.size_ = 0;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this == &other) return *this;
  release();
  ptr_ = other.ptr_;
  size_ = other.size_;
  device_ = other.device_;
  other.ptr_ = 0;
  other.size_ = 0;
  return *this;
}

// A destructor cannot throw: a failed free (a context already torn down at exit) is dropped.
void DeviceBuffer::release() noexcept {
  if (ptr_ == 0) return;
  try {
    device_->make_current();
    driver().cuMemFree(ptr_);
  } catch (const UserError &) {
  }
  ptr_ = 0;
  size_ = 0;
}

void DeviceBuffer::upload(const void *host, size_t bytes, size_t offset) {
  COIL_ASSERT(offset + bytes <= size_, "upload of ", bytes, " bytes at ", offset, " into a buffer of ", size_);
  if (bytes == 0) return;
  device_->make_current();
  check(driver().cuMemcpyHtoD(ptr_ + offset, host, bytes), "cuMemcpyHtoD", str_cat("copying ", bytes, " bytes"));
  // From pageable memory the copy may return before its DMA ends, and work on a stream that
  // does not wait for the legacy one could read the buffer half written: wait for it here.
  check(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", str_cat("copying ", bytes, " bytes"));
}

void DeviceBuffer::download(void *host, size_t bytes, size_t offset) const {
  COIL_ASSERT(offset + bytes <= size_, "download of ", bytes, " bytes at ", offset, " from a buffer of ", size_);
  if (bytes == 0) return;
  device_->make_current();
  check(driver().cuMemcpyDtoH(host, ptr_ + offset, bytes), "cuMemcpyDtoH", str_cat("copying ", bytes, " bytes"));
}

void DeviceBuffer::fill(uint8_t value) {
  if (size_ == 0) return;
  device_->make_current();
  check(driver().cuMemsetD8(ptr_, value, size_), "cuMemsetD8", str_cat("filling ", size_, " bytes"));
}

DeviceArena::DeviceArena(int64_t bytes, const Device &device) : memory_(size_t(bytes), device) {
  COIL_ASSERT(bytes >= 0, "arena of ", bytes, " bytes");
}

CUdeviceptr DeviceArena::at(int64_t offset, int64_t bytes) const {
  COIL_ASSERT(offset >= 0 && bytes >= 0 && offset + bytes <= size(), "buffer [", offset, ", ", offset + bytes,
              ") is outside the arena of ", size(), " bytes");
  return memory_.ptr() + CUdeviceptr(offset);
}

SharedArena *SharedArena::of(const Device &device) {
  if (!driver().has_virtual_memory()) return nullptr;
  static std::mutex mutex;
  static std::map<int, SharedArena *> arenas;  // never destroyed: the memory lives as long as the process
  std::lock_guard<std::mutex> lock(mutex);
  SharedArena *&arena = arenas[device.ordinal()];
  if (!arena) arena = new SharedArena(device);
  return arena;
}

SharedArena::SharedArena(const Device &device) : device_(device) {
  device.make_current();
  CUdevice dev = 0;
  COIL_CU(cuDeviceGet, &dev, device.ordinal());
  prop_.location_id = access_.location_id = dev;
  COIL_CU(cuMemGetAllocationGranularity, &granularity_, &prop_, 0 /* CU_MEM_ALLOC_GRANULARITY_MINIMUM */);
  size_t total = 0;
  COIL_CU(cuDeviceTotalMem, &total, dev);
  reserved_ = size_t(round_up(int64_t(total), int64_t(granularity_)));
  COIL_CU(cuMemAddressReserve, &base_, reserved_, granularity_, 0, 0);
}

CUdeviceptr SharedArena::reach(int64_t bytes) {
  std::lock_guard<std::mutex> lock(map_mutex_);
  size_t want = size_t(round_up(std::max<int64_t>(bytes, 1), int64_t(granularity_)));
  if (want <= mapped_) return base_;
  COIL_USER_CHECK(want <= reserved_, "an arena of ", bytes, " bytes is larger than the GPU's memory (", reserved_,
                  " bytes)");
  device_.make_current();
  size_t more = want - mapped_;
  CUmemGenericAllocationHandle handle = 0;
  check(driver().cuMemCreate(&handle, more, &prop_, 0), "cuMemCreate",
        str_cat("growing the shared arena from ", mapped_, " to ", want, " bytes"));
  CUresult mapped = driver().cuMemMap(base_ + mapped_, more, 0, handle, 0);
  driver().cuMemRelease(handle);  // the mapping holds the memory from here on
  check(mapped, "cuMemMap", "growing the shared arena");
  COIL_CU(cuMemSetAccess, base_ + mapped_, more, &access_, 1);
  mapped_ = want;
  return base_;
}

int64_t SharedArena::mapped() const {
  std::lock_guard<std::mutex> lock(map_mutex_);
  return int64_t(mapped_);
}

SharedArena::Turn::Turn(SharedArena &arena, CUstream stream) : arena_(arena), stream_(stream), lock_(arena.turn_mutex_) {
  if (arena_.used_) arena_.done_.wait_in(stream);
}

SharedArena::Turn::~Turn() {
  try {
    arena_.done_.record(stream_);
    arena_.used_ = true;
  } catch (const std::exception &) {
    // The stream is unusable: wait for whatever may still use the arena instead.
    driver().cuCtxSynchronize();
    arena_.used_ = false;
  }
}

Stream::Stream(const Device &device) {
  device.make_current();
  COIL_CU(cuStreamCreate, &stream_, CU_STREAM_NON_BLOCKING);
}

Stream::~Stream() {
  if (stream_) driver().cuStreamDestroy(stream_);
}

void Stream::synchronize() const { COIL_CU(cuStreamSynchronize, stream_); }

Event::Event(unsigned flags) { COIL_CU(cuEventCreate, &event_, flags); }

Event::~Event() {
  if (event_) driver().cuEventDestroy(event_);
}

void Event::record(CUstream stream) { COIL_CU(cuEventRecord, event_, stream); }

void Event::wait_in(CUstream stream) const { COIL_CU(cuStreamWaitEvent, stream, event_, 0); }

void Event::synchronize(std::string_view what) {
  check(driver().cuEventSynchronize(event_), "cuEventSynchronize", str_cat("running ", what));
}

float Event::since(const Event &start) const {
  float ms = 0;
  COIL_CU(cuEventElapsedTime, &ms, start.event_, event_);
  return ms;
}

double median_ms_per_call(CUstream stream, int runs, int calls, const std::function<void()> &launches,
                          std::string_view what) {
  Event start, end;
  std::vector<double> times;
  for (int i = 0; i < std::max(runs, 1) + 1; ++i) {
    start.record(stream);
    for (int c = 0; c < calls; ++c) launches();
    end.record(stream);
    end.synchronize(what);
    if (i > 0) times.push_back(double(end.since(start)) / calls);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct StreamGate::State {
  std::atomic<bool> open{false};
};

StreamGate::StreamGate(CUstream stream) {
  const Driver &d = driver();
  if (!d.cuLaunchHostFunc) return;
  state_ = std::make_shared<State>();
  // The host function owns a reference of its own: the gate may be gone when it runs.
  auto *held = new std::shared_ptr<State>(state_);
  auto wait = [](void *data) {
    auto *state = static_cast<std::shared_ptr<State> *>(data);
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!(*state)->open.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < give_up)
      std::this_thread::yield();
    delete state;
  };
  CUresult r = d.cuLaunchHostFunc(stream, wait, held);
  if (r != CUDA_SUCCESS) {
    delete held;
    state_.reset();
    check(r, "cuLaunchHostFunc", "holding the stream until its work is queued");
  }
}

void StreamGate::release() {
  if (state_) state_->open.store(true, std::memory_order_release);
}

Graph::Graph(CUstream stream, const std::function<void()> &record) {
  const Driver &d = driver();
  if (!d.has_graphs()) throw CudaError("this CUDA driver has no graph functions (cuStreamBeginCapture_v2, ...)", CUDA_ERROR_INVALID_VALUE);
  COIL_CU(cuStreamBeginCapture, stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  try {
    record();
  } catch (...) {
    CUgraph partial = nullptr;
    d.cuStreamEndCapture(stream, &partial);  // leaves capture mode; the error that matters is on its way
    if (partial) d.cuGraphDestroy(partial);
    throw;
  }
  check(d.cuStreamEndCapture(stream, &graph_), "cuStreamEndCapture", "capturing the launches");
  CUresult r = d.cuGraphInstantiateWithFlags(&exec_, graph_, 0);
  if (r != CUDA_SUCCESS) {
    d.cuGraphDestroy(graph_);
    graph_ = nullptr;
    check(r, "cuGraphInstantiateWithFlags", "instantiating the captured launches");
  }
}

Graph::~Graph() {
  if (exec_) driver().cuGraphExecDestroy(exec_);
  if (graph_) driver().cuGraphDestroy(graph_);
}

void Graph::launch(CUstream stream) const { COIL_CU(cuGraphLaunch, exec_, stream); }

}  // namespace coil::cuda
