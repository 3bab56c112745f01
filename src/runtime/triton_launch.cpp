#include "runtime/triton_launch.h"

#include <limits>

#include "support/int_math.h"

namespace coil::cuda {
namespace {

// Without opting in, a block may use 48 KiB of shared memory; more needs the attribute.
constexpr int64_t kDefaultSharedLimit = 48 * 1024;
// cuMemAlloc aligns to at least this; Triton asks for less.
constexpr int64_t kAllocationAlignment = 256;
constexpr int64_t kMaxGridX = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxGridYZ = 65535;

// Bytes of a kernel parameter of Triton type `type`; 0 when coil does not know it.
size_t parameter_bytes(const std::string &type) {
  if (!type.empty() && type[0] == '*') return 8;
  static const std::map<std::string, size_t> kSizes = {
      {"i1", 1},  {"i8", 1},  {"u1", 1},   {"u8", 1},   {"i16", 2},  {"u16", 2},  {"fp16", 2}, {"bf16", 2},
      {"i32", 4}, {"u32", 4}, {"fp32", 4}, {"f32", 4},  {"i64", 8},  {"u64", 8},  {"fp64", 8}, {"f64", 8}};
  auto it = kSizes.find(type);
  return it == kSizes.end() ? 0 : it->second;
}

uint32_t programs_along(const char *axis, int64_t numel, int64_t block, int64_t limit) {
  COIL_ASSERT(numel >= 0 && block > 0, "grid axis ", axis, ": ", numel, " elements in blocks of ", block);
  int64_t programs = ceil_div(numel, block);
  if (programs > limit)
    throw UserError(str_cat("a launch needs ", programs, " programs along ", axis, " (", numel, " elements in blocks of ",
                            block, "); CUDA allows ", limit));
  return uint32_t(programs);
}

}  // namespace

LaunchGrid block_grid(int64_t xnumel, int64_t xblock, int64_t ynumel, int64_t yblock, int64_t znumel, int64_t zblock) {
  return {programs_along("x", xnumel, xblock, kMaxGridX), programs_along("y", ynumel, yblock, kMaxGridYZ),
          programs_along("z", znumel, zblock, kMaxGridYZ)};
}

CudaModule::CudaModule(std::string_view cubin, std::string label, const Device &device)
    : label_(std::move(label)), device_(&device) {
  device.make_current();
  // The driver reads the image's length from its ELF header; the bytes must outlive the call only.
  check(driver().cuModuleLoadData(&module_, cubin.data()), "cuModuleLoadData", str_cat("loading kernel ", label_));
}

CudaModule::~CudaModule() {
  if (!module_) return;
  try {
    device_->make_current();
    driver().cuModuleUnload(module_);
  } catch (const UserError &) {  // a destructor does not throw; the process is going anyway
  }
}

CUfunction CudaModule::function(const std::string &name) const {
  CUfunction f = nullptr;
  check(driver().cuModuleGetFunction(&f, module_, name.c_str()), "cuModuleGetFunction",
        str_cat("looking up ", name, " in the cubin of ", label_));
  return f;
}

CudaKernel::CudaKernel(std::shared_ptr<const CudaModule> module, TritonLaunchFacts facts)
    : module_(std::move(module)), facts_(std::move(facts)), scratch_(facts_.hidden_args.size()) {
  const Driver &d = driver();
  const std::string &name = facts_.name;
  // Clusters and cooperative or programmatic launches need cuLaunchKernelEx: none of coil's kernels asks for them.
  if (facts_.num_ctas != 1 || facts_.cooperative_grid || facts_.pdl)
    throw UserError(str_cat("kernel ", name, " needs a launch coil does not make (num_ctas ", facts_.num_ctas,
                            facts_.cooperative_grid ? ", cooperative grid" : "", facts_.pdl ? ", PDL" : "", ")"));
  for (const TritonHiddenArg &h : facts_.hidden_args)
    COIL_ASSERT(h.align <= kAllocationAlignment, "kernel ", name, " wants ", h.name, " aligned to ", h.align);
  module_->device().make_current();
  function_ = module_->function(name);

  int max_threads = 0;
  check(d.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function_), "cuFuncGetAttribute",
        str_cat("reading the thread limit of ", name));
  if (32 * facts_.num_warps > max_threads)
    throw UserError(str_cat("kernel ", name, " has ", facts_.num_warps, " warps, but its registers allow only ",
                            max_threads, " threads per block; compile it with fewer warps"));
  if (facts_.shared > kDefaultSharedLimit) {
    int64_t limit = module_->device().max_shared_per_block();
    if (facts_.shared > limit)
      throw UserError(str_cat("kernel ", name, " needs ", facts_.shared, " bytes of shared memory; this GPU allows ",
                              limit, " per block"));
    check(d.cuFuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(facts_.shared)),
          "cuFuncSetAttribute", str_cat("raising the shared memory limit of ", name, " to ", facts_.shared, " bytes"));
  }
  check_parameters();
}

// A launch with the wrong parameter list corrupts memory silently; where the driver can
// list the function's parameters, compare them with the facts before any launch.
void CudaKernel::check_parameters() const {
  const Driver &d = driver();
  if (!d.cuFuncGetParamInfo) return;
  std::vector<size_t> expected;
  for (const TritonArg &a : facts_.args) expected.push_back(parameter_bytes(a.type));
  for (size_t i = 0; i < facts_.hidden_args.size(); ++i) expected.push_back(8);
  size_t offset = 0;
  size_t size = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    CUresult r = d.cuFuncGetParamInfo(function_, i, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE)
      throw UserError(str_cat("kernel ", facts_.name, " takes ", i, " parameters, but its launch facts list ",
                              expected.size(), " (", facts_.args.size(), " arguments and ", facts_.hidden_args.size(),
                              " hidden pointers): the Triton that built it passes arguments differently"));
    check(r, "cuFuncGetParamInfo", str_cat("reading the parameters of ", facts_.name));
    std::string what = i < facts_.args.size() ? str_cat("argument ", facts_.args[i].name, " (", facts_.args[i].type, ")")
                                              : facts_.hidden_args[i - facts_.args.size()].name;
    if (expected[i] != 0 && size != expected[i])
      throw UserError(str_cat("kernel ", facts_.name, "'s parameter ", i, " has ", size, " bytes, but ", what, " has ",
                              expected[i]));
  }
  if (d.cuFuncGetParamInfo(function_, expected.size(), &offset, &size) == CUDA_SUCCESS)
    throw UserError(str_cat("kernel ", facts_.name, " takes more than the ", expected.size(),
                            " parameters its launch facts list: the Triton that built it passes arguments differently"));
}

CUdeviceptr CudaKernel::scratch(size_t hidden, int64_t programs, CUstream stream) const {
  int64_t per_program = facts_.hidden_args[hidden].size;
  if (per_program == 0) return 0;  // the kernel never touches it; Triton passes null too
  size_t bytes = size_t(programs * facts_.num_ctas * per_program);
  std::lock_guard<std::mutex> lock(scratch_mutex_);
  DeviceBuffer &buffer = scratch_[hidden][stream];
  if (buffer.size() >= bytes) return buffer.ptr();
  // Earlier launches on this stream may still use the old buffer: let them finish first.
  if (buffer.size() > 0) COIL_CU(cuStreamSynchronize, stream);
  buffer = DeviceBuffer(bytes, module_->device());
  return buffer.ptr();
}

void CudaKernel::launch(LaunchGrid grid, const std::vector<const void *> &args, CUstream stream) const {
  COIL_ASSERT(args.size() == facts_.args.size(), "kernel ", facts_.name, " takes ", facts_.args.size(),
              " arguments, launched with ", args.size());
  if (grid.programs() == 0) return;
  module_->device().make_current();
  std::vector<CUdeviceptr> hidden(facts_.hidden_args.size());
  for (size_t i = 0; i < hidden.size(); ++i) hidden[i] = scratch(i, grid.programs(), stream);
  // The driver reads each parameter through a pointer to its value.
  std::vector<void *> params;
  params.reserve(args.size() + hidden.size());
  for (const void *a : args) params.push_back(const_cast<void *>(a));
  for (CUdeviceptr &h : hidden) params.push_back(&h);
  check(driver().cuLaunchKernel(function_, grid.x, grid.y, grid.z, unsigned(32 * facts_.num_warps), 1, 1,
                                unsigned(facts_.shared), stream, params.data(), nullptr),
        "cuLaunchKernel", str_cat("launching ", facts_.name, " on a grid of ", grid.x, "x", grid.y, "x", grid.z));
}

CudaKernel load_triton_kernel(const TritonBinary &binary, const Device &device) {
  auto module = std::make_shared<const CudaModule>(binary.cubin, binary.facts.name, device);
  return CudaKernel(std::move(module), binary.facts);
}

}  // namespace coil::cuda
