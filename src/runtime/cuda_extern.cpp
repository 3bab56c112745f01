// The execution of prepared extern steps (cuda_extern.h): what is decided at load, what
// per workspace, and the library calls of each call.
#include "runtime/cuda_extern.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <utility>
#include <vector>

#include "io/host_tensor.h"
#include "support/error.h"

namespace coil::cuda {

using codegen::GemmCall;
using codegen::GemmOperand;
using codegen::GpuExternLibrary;
using codegen::GpuExternPlan;
using ir::BufferId;
using ir::Node;
using ir::Program;
using ir::View;

namespace {

std::atomic<int64_t> setups{0};

// One set-up: a handle, descriptors, a heuristic's answer or an allocation.
void note_setup() { setups.fetch_add(1, std::memory_order_relaxed); }

void *device_pointer(CUdeviceptr base, int64_t offset, DType t) {
  return reinterpret_cast<void *>(uintptr_t(base + CUdeviceptr(offset * itemsize(t))));
}

int blas_type(DType t) {
  switch (t) {
    case DType::F64: return CUDA_R_64F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

int dnn_type(DType t) {
  switch (t) {
    case DType::F64: return CUDNN_DATA_DOUBLE;
    case DType::F16: return CUDNN_DATA_HALF;
    case DType::BF16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

int dnn_format(codegen::TensorFormat f) { return f == codegen::TensorFormat::NCHW ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC; }

// The byte range [first, last) a view or a buffer spans from its storage's address.
struct Span {
  CUdeviceptr first = 0, last = 0;
  bool overlaps(const Span &o) const { return first < o.last && o.first < last; }
};

Span span_of(const Program &p, const View &v, const BufferAddress &address) {
  const TensorType &t = p.buffer(v.buffer).type;
  int64_t extent = storage_extent(TensorType{t.dtype, v.sizes, v.strides, t.device}, v.offset);
  CUdeviceptr base = address(v.buffer);
  return {base + CUdeviceptr(v.offset * itemsize(t.dtype)),
          base + CUdeviceptr(std::max<int64_t>(extent, v.offset) * itemsize(t.dtype))};
}

View whole(const Program &p, BufferId b) {
  const TensorType &t = p.buffer(b).type;
  return View{b, t.sizes, t.strides, 0};
}

// Whether the product may run in cuBLAS with these addresses: no operand may share memory
// with the output (the bias only when it already is the output, element for element).
bool product_addresses_fit(const Program &p, const Node &n, const GpuExternPlan &plan, const BufferAddress &address,
                           bool &bias_in_place) {
  codegen::ProductShape s = codegen::product_shape(n);
  Span out = span_of(p, whole(p, n.outputs[0]), address);
  for (const View *v : {s.a, s.b})
    if (span_of(p, *v, address).overlaps(out)) return false;
  bias_in_place = false;
  if (plan.gemm.bias_copy.empty()) return true;
  Span bias = span_of(p, *s.bias, address);
  if (!bias.overlaps(out)) return true;
  const TensorType &t = p.buffer(n.outputs[0]).type;
  bool same = bias.first == out.first;
  for (size_t d = 0; d < t.sizes.size() && same; ++d)
    if (t.sizes[d] != 1 && plan.gemm.bias_strides[d] != t.strides[d]) same = false;
  bias_in_place = same;
  return same;
}

// Whether the convolution may run in cuDNN with these addresses: no input overlaps the output.
bool convolution_addresses_fit(const Program &p, const Node &n, const BufferAddress &address) {
  Span out = span_of(p, whole(p, n.outputs[0]), address);
  for (const View &v : n.operands)
    if (v.buffer >= 0 && span_of(p, v, address).overlaps(out)) return false;
  return true;
}

// 1 in dtype `t`, `count` times, as device memory.
DeviceBuffer ones_vector(DType t, int64_t count) {
  size_t size = size_t(itemsize(t)), bytes = size_t(count) * size;
  std::vector<unsigned char> one(size), host(bytes);
  if (t == DType::F32) {
    float v = 1;
    std::memcpy(one.data(), &v, 4);
  } else if (t == DType::F64) {
    double v = 1;
    std::memcpy(one.data(), &v, 8);
  } else {
    uint16_t v = t == DType::BF16 ? float_to_bf16(1.0f) : float_to_half(1.0f);
    std::memcpy(one.data(), &v, 2);
  }
  for (size_t i = 0; i < bytes; i += size) std::memcpy(host.data() + i, one.data(), size);
  note_setup();
  DeviceBuffer out(bytes);
  out.upload(host.data(), bytes);
  return out;
}

// A cuDNN descriptor destroyed with the object, so that an error leaks none.
template <typename T>
struct Descriptor {
  T desc = nullptr;
  cudnnStatus_t (*destroy)(T) = nullptr;
  Descriptor() = default;
  Descriptor(const Descriptor &) = delete;
  Descriptor &operator=(const Descriptor &) = delete;
  ~Descriptor() {
    if (desc && destroy) destroy(desc);
  }
};

// A backend API descriptor, destroyed with the object.
struct BackendDescriptor {
  cudnnBackendDescriptor_t desc = nullptr;
  BackendDescriptor() = default;
  BackendDescriptor(BackendDescriptor &&o) noexcept : desc(std::exchange(o.desc, nullptr)) {}
  BackendDescriptor &operator=(BackendDescriptor &&o) noexcept {
    std::swap(desc, o.desc);
    return *this;
  }
  ~BackendDescriptor() {
    if (desc) cudnn().cudnnBackendDestroyDescriptor(desc);
  }
};

// The backend API's calls, each checked, naming `what` in errors.
struct Backend {
  std::string_view what;

  BackendDescriptor make(int type) const {
    BackendDescriptor d;
    COIL_CUDNN(cudnnBackendCreateDescriptor, type, &d.desc);
    return d;
  }
  template <typename T>
  void set(const BackendDescriptor &d, int name, int type, int64_t count, const T *values) const {
    COIL_CUDNN(cudnnBackendSetAttribute, d.desc, name, type, count, values);
  }
  void set_descriptor(const BackendDescriptor &d, int name, const BackendDescriptor &value) const {
    set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value.desc);
  }
  void finalize(const BackendDescriptor &d) const { COIL_CUDNN(cudnnBackendFinalize, d.desc); }
};

std::vector<int64_t> wide(const std::vector<int> &v) { return {v.begin(), v.end()}; }

// Unique ids of the convolution's tensors in its graph and variant pack.
constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;
// The alignment the backend plan assumes of every address; a workspace whose addresses
// are less aligned runs the legacy calls.
constexpr int64_t kBackendAlignment = 16;

}  // namespace

// ---- handles ---------------------------------------------------------------------------------

ExternHandles::~ExternHandles() {
  // The libraries outlive their handles; a failure here has nobody to report to.
  if (blas_) cublas().cublasDestroy(blas_);
  if (dnn_) cudnn().cudnnDestroy(dnn_);
}

cublasHandle_t ExternHandles::blas(std::string_view what) {
  if (blas_) return blas_;
  note_setup();
  COIL_CUBLAS(cublasCreate, &blas_);
  return blas_;
}

cudnnHandle_t ExternHandles::dnn(std::string_view what) {
  if (dnn_) return dnn_;
  note_setup();
  COIL_CUDNN(cudnnCreate, &dnn_);
  return dnn_;
}

// ---- what a workspace holds ------------------------------------------------------------------

// A GEMM with its operands' addresses resolved.
struct BoundGemm {
  const GemmCall *call = nullptr;
  const void *a = nullptr, *b = nullptr;
  void *c = nullptr;
};

struct BoundExtern {
  ExternHandles *handles = nullptr;
  bool host = false;                // the operands overlap the output here: the host loops
  BufferAddress address;            // every buffer's address (the host loops')
  BufferAddress product_address;    // the same, with the call's output in `result` when the epilogue runs on the host
  std::vector<BoundGemm> gemms;     // the bias copies, then the product (Gemm); the bias copies (Lt)
  std::unique_ptr<LtMatmul> lt;
  const void *lt_a = nullptr, *lt_b = nullptr;
  void *lt_d = nullptr;
  // Conv, in cuDNN's names: a weight gradient writes w (dw) and reads y (dy).
  const void *x = nullptr, *w = nullptr, *bias = nullptr;
  void *y = nullptr;
  // Conv through the backend API: the plan for this workspace's handle (when it is not the
  // one the step was prepared with) and the variant pack of its addresses.
  BackendDescriptor own_plan, variant_pack;
  cudnnBackendDescriptor_t plan = nullptr;
  void *workspace = nullptr;
  DeviceBuffer result;              // the product's own output, read by the host epilogue
};

void BoundExternDelete::operator()(BoundExtern *b) const { delete b; }

bool runs_execution_plan(const BoundExtern &bound) { return bound.plan != nullptr; }

struct PreparedExtern::Cudnn {
  Descriptor<cudnnTensorDescriptor_t> x, y, bias;
  Descriptor<cudnnFilterDescriptor_t> w;
  Descriptor<cudnnConvolutionDescriptor_t> conv;
  int algo = 0;
  int math = 0;
  size_t workspace = 0;  // the algorithm's
  // ConvPlan::repack_filter: the weight as given and as the filter reads it, written at
  // `repacked_at` bytes into the call's workspace.
  Descriptor<cudnnTensorDescriptor_t> w_given, w_repacked;
  size_t repacked_at = 0;
  // The backend API's plan of the call, when an engine takes it (else the legacy calls
  // with `algo`): the engine config the heuristics ranked first among those that build,
  // its execution plan for the handle it was made with, and its workspace.
  BackendDescriptor engine_config, plan;
  cudnnHandle_t planned_with = nullptr;
  int64_t engine = -1;
  size_t plan_workspace = 0;
};

// ---- load time ------------------------------------------------------------------------------

int64_t extern_setups() { return setups.load(std::memory_order_relaxed); }

std::string missing_library(const GpuExternPlan &plan) {
  switch (plan.library) {
    case GpuExternLibrary::Nothing:
    case GpuExternLibrary::HostLoops: return "";
    case GpuExternLibrary::CublasGemm: return cublas_unavailable_reason();
    case GpuExternLibrary::CublasLt:
      if (!cublaslt_available()) return cublaslt_unavailable_reason();
      return plan.gemm.bias_copy.empty() ? "" : cublas_unavailable_reason();
    case GpuExternLibrary::CudnnForward:
    case GpuExternLibrary::CudnnBackwardData:
    case GpuExternLibrary::CudnnBackwardFilter: return cudnn_unavailable_reason();
  }
  return "";
}

namespace {

std::string words_here(const GpuExternPlan &plan, const std::string &missing) {
  if (missing.empty()) return plan.words();
  if (plan.library == GpuExternLibrary::CublasLt)
    return str_cat("host loops for the epilogue (", missing, "); the product: host loops too");
  if (!plan.epilogue_host_reason.empty())
    return str_cat("host loops for the epilogue (", plan.epilogue_host_reason, "); the product: host loops: ", missing);
  return "host loops: " + missing;
}

}  // namespace

PreparedExtern::PreparedExtern(const Program &p, const Node &n, const sched::Epilogue *epilogue, GpuExternPlan plan,
                               std::string_view kernel, ExternHandles &handles)
    : p_(p), n_(n), epilogue_(epilogue), plan_(std::move(plan)) {
  COIL_ASSERT(n.kind == ir::NodeKind::Extern && n.outputs.size() == 1, "an extern step of a node that is not an extern call");
  COIL_ASSERT(plan_.has_epilogue == (epilogue != nullptr), "the extern plan of ", n.origin,
              " was made for another epilogue");
  what_ = str_cat("running extern node ", n.origin.empty() ? std::string("(unnamed)") : n.origin, " (",
                  ir::extern_op_name(n.extern_op), ")", kernel.empty() ? "" : " of kernel ", kernel);
  missing_ = missing_library(plan_);
  switch (plan_.library) {
    case GpuExternLibrary::Nothing: mode_ = Mode::Nothing; break;
    case GpuExternLibrary::HostLoops: mode_ = Mode::Host; break;
    case GpuExternLibrary::CublasGemm: mode_ = missing_.empty() ? Mode::Gemm : Mode::Host; break;
    case GpuExternLibrary::CublasLt: mode_ = missing_.empty() ? Mode::Lt : Mode::Host; break;
    case GpuExternLibrary::CudnnForward:
    case GpuExternLibrary::CudnnBackwardData:
    case GpuExternLibrary::CudnnBackwardFilter: mode_ = missing_.empty() ? Mode::Conv : Mode::Host; break;
  }
  epilogue_on_host_ = epilogue_ && mode_ != Mode::Lt && mode_ != Mode::Nothing;
  if (mode_ == Mode::Lt) workspace_bytes_ = size_t(plan_.workspace_bytes);
  if (mode_ == Mode::Conv) prepare_convolution(handles);
  if ((mode_ == Mode::Gemm || mode_ == Mode::Lt) && plan_.gemm.ones > 0) ones_ = ones_vector(plan_.dtype, plan_.gemm.ones);
}

PreparedExtern::~PreparedExtern() = default;

// The descriptors, and the heuristics' first algorithm that works in the math asked for.
void PreparedExtern::prepare_convolution(ExternHandles &handles) {
  std::string_view what = what_;
  const codegen::ConvPlan &c = plan_.conv;
  const cuda::Cudnn &api = cudnn();
  note_setup();  // the descriptors, the heuristic and the workspace size, once per step
  dnn_ = std::make_unique<Cudnn>();
  Cudnn &d = *dnn_;
  DType t = plan_.dtype;
  int type = dnn_type(t), dims = int(c.x_sizes.size());
  d.x.destroy = d.y.destroy = d.bias.destroy = api.cudnnDestroyTensorDescriptor;
  d.w.destroy = api.cudnnDestroyFilterDescriptor;
  d.conv.destroy = api.cudnnDestroyConvolutionDescriptor;
  COIL_CUDNN(cudnnCreateTensorDescriptor, &d.x.desc);
  COIL_CUDNN(cudnnSetTensorNdDescriptor, d.x.desc, type, dims, c.x_sizes.data(), c.x_strides.data());
  COIL_CUDNN(cudnnCreateTensorDescriptor, &d.y.desc);
  COIL_CUDNN(cudnnSetTensorNdDescriptor, d.y.desc, type, dims, c.y_sizes.data(), c.y_strides.data());
  if (c.repack_filter) {
    d.w_given.destroy = d.w_repacked.destroy = api.cudnnDestroyTensorDescriptor;
    COIL_CUDNN(cudnnCreateTensorDescriptor, &d.w_given.desc);
    COIL_CUDNN(cudnnSetTensorNdDescriptor, d.w_given.desc, type, dims, c.w_sizes.data(), c.w_given_strides.data());
    COIL_CUDNN(cudnnCreateTensorDescriptor, &d.w_repacked.desc);
    COIL_CUDNN(cudnnSetTensorNdDescriptor, d.w_repacked.desc, type, dims, c.w_sizes.data(), c.w_strides.data());
  }
  COIL_CUDNN(cudnnCreateFilterDescriptor, &d.w.desc);
  COIL_CUDNN(cudnnSetFilterNdDescriptor, d.w.desc, type, dnn_format(c.filter), dims, c.w_sizes.data());
  COIL_CUDNN(cudnnCreateConvolutionDescriptor, &d.conv.desc);
  COIL_CUDNN(cudnnSetConvolutionNdDescriptor, d.conv.desc, dims - 2, c.padding.data(), c.stride.data(),
             c.dilation.data(), CUDNN_CROSS_CORRELATION, t == DType::F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT);
  COIL_CUDNN(cudnnSetConvolutionGroupCount, d.conv.desc, c.groups);
  // f32 on FMA kernels only: tensor cores would round inputs to TF32, which PyTorch's
  // default does not and coil's f32 tolerance would not absorb.
  d.math = t == DType::F16 || t == DType::BF16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
  COIL_CUDNN(cudnnSetConvolutionMathType, d.conv.desc, d.math);
  if (c.bias) {
    COIL_CUDNN(cudnnCreateTensorDescriptor, &d.bias.desc);
    COIL_CUDNN(cudnnSetTensorNdDescriptor, d.bias.desc, type, dims, c.bias_sizes.data(), c.bias_strides.data());
  }
  cudnnHandle_t h = handles.dnn(what);
  cudnnAlgoPerf perf[16];
  int returned = 0;
  if (c.weight_grad)
    COIL_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7, h, d.x.desc, d.y.desc, d.conv.desc, d.w.desc, 16, &returned, perf);
  else if (c.transposed)
    COIL_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7, h, d.w.desc, d.x.desc, d.conv.desc, d.y.desc, 16, &returned, perf);
  else
    COIL_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7, h, d.x.desc, d.w.desc, d.conv.desc, d.y.desc, 16, &returned, perf);
  d.algo = c.weight_grad  ? CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1
           : c.transposed ? CUDNN_CONVOLUTION_BWD_DATA_ALGO_1
                          : CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && (d.math != CUDNN_FMA_MATH || perf[i].math_type == CUDNN_FMA_MATH)) {
      d.algo = perf[i].algo;
      if (perf[i].math_type != d.math) {
        d.math = perf[i].math_type;
        COIL_CUDNN(cudnnSetConvolutionMathType, d.conv.desc, d.math);
      }
      break;
    }
  if (c.weight_grad)
    COIL_CUDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize, h, d.x.desc, d.y.desc, d.conv.desc, d.w.desc, d.algo,
               &d.workspace);
  else if (c.transposed)
    COIL_CUDNN(cudnnGetConvolutionBackwardDataWorkspaceSize, h, d.w.desc, d.x.desc, d.conv.desc, d.y.desc, d.algo, &d.workspace);
  else
    COIL_CUDNN(cudnnGetConvolutionForwardWorkspaceSize, h, d.x.desc, d.w.desc, d.conv.desc, d.y.desc, d.algo, &d.workspace);
  plan_backend(h);
  workspace_bytes_ = std::max(d.workspace, d.plan_workspace);
  if (c.repack_filter) {
    size_t elements = 1;
    for (int v : c.w_sizes) elements *= size_t(v);
    d.repacked_at = (workspace_bytes_ + 255) / 256 * 256;
    workspace_bytes_ = d.repacked_at + elements * itemsize(t);
  }
}

namespace {

// An execution plan of `config` for `handle`; none when the engine refuses to build.
BackendDescriptor execution_plan(const Backend &be, const BackendDescriptor &config, cudnnHandle_t handle) {
  BackendDescriptor plan = be.make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  be.set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  be.set_descriptor(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
  if (cudnn().cudnnBackendFinalize(plan.desc) != CUDNN_STATUS_SUCCESS) return {};
  return plan;
}

}  // namespace

// The convolution as a graph of one operation in the backend API, and the first engine
// config of the heuristics' ranking that builds an execution plan; for f32, engines that
// round inputs (TF32 tensor cores) are passed over, as the legacy math type does. Leaves
// no plan when the library has no backend API or no engine takes the call (the legacy
// calls then).
void PreparedExtern::plan_backend(cudnnHandle_t h) {
  const cuda::Cudnn &api = cudnn();
  if (!api.cudnnBackendCreateDescriptor) return;
  std::string_view what = what_;
  Backend be{what};
  const codegen::ConvPlan &c = plan_.conv;
  Cudnn &d = *dnn_;
  DType t = plan_.dtype;
  int type = dnn_type(t);
  auto tensor = [&](int64_t uid, const std::vector<int> &sizes, const std::vector<int64_t> &strides) {
    BackendDescriptor out = be.make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    std::vector<int64_t> dims = wide(sizes);
    be.set(out, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    be.set(out, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, int64_t(dims.size()), dims.data());
    be.set(out, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, int64_t(strides.size()), strides.data());
    be.set(out, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    be.set(out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kBackendAlignment);
    be.finalize(out);
    return out;
  };
  try {
    note_setup();
    BackendDescriptor x = tensor(kUidX, c.x_sizes, wide(c.x_strides));
    BackendDescriptor w = tensor(kUidW, c.w_sizes, wide(c.w_strides));
    BackendDescriptor y = tensor(kUidY, c.y_sizes, wide(c.y_strides));

    BackendDescriptor conv = be.make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    int compute = t == DType::F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT, mode = CUDNN_CROSS_CORRELATION;
    int64_t spatial = int64_t(c.x_sizes.size()) - 2;
    std::vector<int64_t> padding = wide(c.padding), stride = wide(c.stride), dilation = wide(c.dilation);
    be.set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    be.set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    be.set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
    be.set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial, dilation.data());
    be.set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial, stride.data());
    be.set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial, padding.data());
    be.set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial, padding.data());
    be.finalize(conv);

    // The operation's attributes for x, w, y, the convolution, alpha and beta. A transposed
    // convolution is the backward pass of the data (x is dy, y is dx); a weight gradient
    // the backward pass of the filter (w is dw, y is dy).
    struct Names {
      int op, x, w, y, conv, alpha, beta;
    };
    Names names = c.weight_grad
                      ? Names{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA}
                  : c.transposed
                      ? Names{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA}
                      : Names{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
    BackendDescriptor op = be.make(names.op);
    be.set_descriptor(op, names.x, x);
    be.set_descriptor(op, names.w, w);
    be.set_descriptor(op, names.y, y);
    be.set_descriptor(op, names.conv, conv);
    int alpha_name = names.alpha, beta_name = names.beta;
    if (t == DType::F64) {
      double one = 1, zero = 0;
      be.set(op, alpha_name, CUDNN_TYPE_DOUBLE, 1, &one);
      be.set(op, beta_name, CUDNN_TYPE_DOUBLE, 1, &zero);
    } else {
      float one = 1, zero = 0;
      be.set(op, alpha_name, CUDNN_TYPE_FLOAT, 1, &one);
      be.set(op, beta_name, CUDNN_TYPE_FLOAT, 1, &zero);
    }
    be.finalize(op);

    BackendDescriptor graph = be.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    be.set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op.desc);
    be.set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    be.finalize(graph);

    BackendDescriptor heuristics = be.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    int heur_mode = CUDNN_HEUR_MODE_A;
    be.set_descriptor(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
    be.set(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heur_mode);
    be.finalize(heuristics);
    int64_t count = 0;
    COIL_CUDNN(cudnnBackendGetAttribute, heuristics.desc, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
               &count, nullptr);
    std::vector<BackendDescriptor> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
      configs.push_back(be.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      raw.push_back(configs.back().desc);
    }
    if (count > 0)
      COIL_CUDNN(cudnnBackendGetAttribute, heuristics.desc, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                 count, &count, raw.data());
    for (int64_t i = 0; i < count; ++i) {
      BackendDescriptor engine = be.make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      int64_t got = 0;
      COIL_CUDNN(cudnnBackendGetAttribute, configs[size_t(i)].desc, CUDNN_ATTR_ENGINECFG_ENGINE,
                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &engine.desc);
      int notes[16] = {};
      COIL_CUDNN(cudnnBackendGetAttribute, engine.desc, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, 16,
                 &got, notes);
      bool rounds = false;
      for (int64_t k = 0; k < got && k < 16; ++k)
        rounds |= notes[k] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || notes[k] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
      if (t == DType::F32 && rounds) continue;
      BackendDescriptor plan = execution_plan(be, configs[size_t(i)], h);
      if (!plan.desc) continue;
      int64_t workspace = 0, index = -1;
      COIL_CUDNN(cudnnBackendGetAttribute, plan.desc, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got,
                 &workspace);
      COIL_CUDNN(cudnnBackendGetAttribute, engine.desc, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got, &index);
      d.engine_config = std::move(configs[size_t(i)]);
      d.plan = std::move(plan);
      d.planned_with = h;
      d.engine = index;
      d.plan_workspace = size_t(workspace);
      return;
    }
  } catch (const UserError &) {
    // A library that refuses a step of the graph API: the legacy calls take the convolution.
    d.plan = {};
    d.engine_config = {};
  }
}

bool PreparedExtern::on_host() const { return mode_ == Mode::Host || epilogue_on_host_; }

std::string PreparedExtern::words() const {
  std::string out = words_here(plan_, missing_);
  if (dnn_ && dnn_->plan.desc)
    out += str_cat("; execution plan of engine ", dnn_->engine, ", ", dnn_->plan_workspace, " bytes of workspace");
  else if (dnn_)
    out += str_cat("; legacy algorithm ", dnn_->algo, dnn_->math == CUDNN_FMA_MATH ? " (FMA)" : "", ", ", dnn_->workspace,
                   " bytes of workspace");
  return out;
}

// ---- per workspace ---------------------------------------------------------------------------

// The backend plan on this workspace: its addresses in a variant pack, and a plan of its
// own when its handle is not the one the step was prepared with. Nothing (the legacy
// calls) when there is no plan or an address is less aligned than the plan assumes.
void PreparedExtern::bind_backend(BoundExtern &b, ExternHandles &handles) const {
  const Cudnn &d = *dnn_;
  if (!d.plan.desc) return;
  std::string_view what = what_;
  Backend be{what};
  void *w = plan_.conv.repack_filter ? static_cast<std::byte *>(b.workspace) + d.repacked_at : const_cast<void *>(b.w);
  std::array<void *, 3> pointers{const_cast<void *>(b.x), w, b.y};
  for (void *ptr : {pointers[0], pointers[1], pointers[2], b.workspace})
    if (uintptr_t(ptr) % uintptr_t(kBackendAlignment) != 0) return;
  cudnnHandle_t h = handles.dnn(what);
  note_setup();
  b.plan = d.plan.desc;
  if (h != d.planned_with) {
    b.own_plan = execution_plan(be, d.engine_config, h);
    b.plan = b.own_plan.desc;
    if (!b.plan) return;
  }
  std::array<int64_t, 3> uids{kUidX, kUidW, kUidY};
  b.variant_pack = be.make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  be.set(b.variant_pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids.data());
  be.set(b.variant_pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers.data());
  be.set(b.variant_pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &b.workspace);
  be.finalize(b.variant_pack);
}

BoundExternPtr PreparedExtern::bind(ExternHandles &handles, const BufferAddress &address,
                                                  CUdeviceptr workspace) const {
  std::string_view what = what_;
  BoundExternPtr b(new BoundExtern);
  b->handles = &handles;
  b->address = address;
  b->workspace = workspace_bytes_ ? reinterpret_cast<void *>(uintptr_t(workspace)) : nullptr;
  b->product_address = address;
  if (epilogue_on_host_) {
    // The product into a buffer of its own, which the epilogue's host loops read.
    const TensorType &t = p_.buffer(n_.outputs[0]).type;
    note_setup();
    b->result = DeviceBuffer(size_t(std::max<int64_t>(storage_extent(t), 1)) * size_t(itemsize(t.dtype)));
    CUdeviceptr result = b->result.ptr();
    BufferId out = n_.outputs[0];
    b->product_address = [address, result, out](BufferId id) { return id == out ? result : address(id); };
  }
  DType t = plan_.dtype;
  auto at = [&](const GemmOperand &o) -> void * {
    if (o.buffer < 0) return reinterpret_cast<void *>(uintptr_t(ones_.ptr()));
    return device_pointer(b->product_address(o.buffer), o.offset, t);
  };
  auto bind_gemm = [&](const GemmCall &g) { b->gemms.push_back({&g, at(g.a), at(g.b), at(g.c)}); };
  switch (mode_) {
    case Mode::Nothing:
    case Mode::Host: break;
    case Mode::Gemm: {
      bool bias_in_place = false;
      if (!product_addresses_fit(p_, n_, plan_, b->product_address, bias_in_place)) {
        b->host = true;
        break;
      }
      handles.blas(what);
      if (!bias_in_place)
        for (const GemmCall &g : plan_.gemm.bias_copy) bind_gemm(g);
      bind_gemm(plan_.gemm.product);
      break;
    }
    case Mode::Lt: {
      if (!plan_.gemm.bias_copy.empty()) handles.blas(what);
      for (const GemmCall &g : plan_.gemm.bias_copy) bind_gemm(g);
      const GemmCall &g = plan_.gemm.product;
      LtGemm call;
      call.type = blas_type(t);
      call.m = g.m, call.n = g.n, call.k = g.k, call.batches = g.batches;
      call.a = {g.a.transposed, g.a.ld, g.a.batch_stride};
      call.b = {g.b.transposed, g.b.ld, g.b.batch_stride};
      call.ldd = g.c.ld;
      call.d_batch_stride = g.c.batch_stride;
      call.alpha = g.alpha;
      call.beta = g.beta;
      call.epilogue = plan_.lt_epilogue;
      if (plan_.lt_bias) call.bias = device_pointer(address(plan_.lt_bias->buffer), plan_.lt_bias->offset, t);
      note_setup();
      b->lt = std::make_unique<LtMatmul>(call, workspace_bytes_, what_);
      b->lt_a = at(g.a), b->lt_b = at(g.b), b->lt_d = at(g.c);
      break;
    }
    case Mode::Conv: {
      if (!convolution_addresses_fit(p_, n_, b->product_address)) {
        b->host = true;
        break;
      }
      handles.dnn(what);
      // The second operand is the weight, or a weight gradient's dy; the output y, or dw.
      const View &x = n_.operands[0], &second = n_.operands[1];
      void *read = device_pointer(address(second.buffer), second.offset, t);
      void *written = device_pointer(b->product_address(n_.outputs[0]), 0, t);
      b->x = device_pointer(address(x.buffer), x.offset, t);
      b->w = plan_.conv.weight_grad ? written : read;
      b->y = plan_.conv.weight_grad ? read : written;
      if (plan_.conv.bias) b->bias = device_pointer(address(n_.operands[2].buffer), n_.operands[2].offset, t);
      bind_backend(*b, handles);
      break;
    }
  }
  return b;
}

// ---- per call --------------------------------------------------------------------------------

namespace {

void run_gemm(cublasHandle_t handle, const BoundGemm &bg, DType t, std::string_view what) {
  const GemmCall &g = *bg.call;
  // Scalars in the compute type: double for f64, float otherwise.
  float alpha_f = float(g.alpha), beta_f = float(g.beta);
  double alpha_d = g.alpha, beta_d = g.beta;
  bool f64 = t == DType::F64;
  const void *alpha = f64 ? static_cast<const void *>(&alpha_d) : &alpha_f;
  const void *beta = f64 ? static_cast<const void *>(&beta_d) : &beta_f;
  int type = blas_type(t);
  auto op = [](const GemmOperand &o) { return o.transposed ? CUBLAS_OP_T : CUBLAS_OP_N; };
  COIL_CUBLAS(cublasGemmStridedBatchedEx, handle, op(g.a), op(g.b), int(g.m), int(g.n), int(g.k), alpha, bg.a, type,
              int(g.a.ld), (long long)g.a.batch_stride, bg.b, type, int(g.b.ld), (long long)g.b.batch_stride, beta, bg.c,
              type, int(g.c.ld), (long long)g.c.batch_stride, int(g.batches), f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F,
              CUBLAS_GEMM_DEFAULT);
}

}  // namespace

void PreparedExtern::run(BoundExtern &b, CUstream stream) const {
  std::string_view what = what_;
  DType t = plan_.dtype;
  Mode mode = b.host ? Mode::Host : mode_;
  if (mode == Mode::Nothing) return;
  if (!b.gemms.empty()) {
    cublasHandle_t h = b.handles->blas(what);
    COIL_CUBLAS(cublasSetStream, h, stream);
    for (const BoundGemm &g : b.gemms) run_gemm(h, g, t, what);
  }
  switch (mode) {
    case Mode::Nothing:
    case Mode::Gemm: break;
    case Mode::Host: run_extern_on_host(p_, n_, b.product_address, stream); break;
    case Mode::Lt: b.lt->run(b.lt_a, b.lt_b, b.lt_d, stream, b.workspace); break;
    case Mode::Conv: {
      const Cudnn &d = *dnn_;
      cudnnHandle_t h = b.handles->dnn(what);
      COIL_CUDNN(cudnnSetStream, h, stream);
      float one_f = 1, zero_f = 0;
      double one_d = 1, zero_d = 0;
      const void *one = t == DType::F64 ? static_cast<const void *>(&one_d) : &one_f;
      const void *zero = t == DType::F64 ? static_cast<const void *>(&zero_d) : &zero_f;
      const void *w = b.w;
      if (plan_.conv.repack_filter) {
        void *repacked = static_cast<std::byte *>(b.workspace) + d.repacked_at;
        COIL_CUDNN(cudnnTransformTensor, h, one, d.w_given.desc, b.w, zero, d.w_repacked.desc, repacked);
        w = repacked;
      }
      if (b.plan)
        COIL_CUDNN(cudnnBackendExecute, h, b.plan, b.variant_pack.desc);
      else if (plan_.conv.weight_grad)
        COIL_CUDNN(cudnnConvolutionBackwardFilter, h, one, d.x.desc, b.x, d.y.desc, b.y, d.conv.desc, d.algo, b.workspace,
                   d.workspace, zero, d.w.desc, const_cast<void *>(b.w));
      else if (plan_.conv.transposed)
        COIL_CUDNN(cudnnConvolutionBackwardData, h, one, d.w.desc, w, d.x.desc, b.x, d.conv.desc, d.algo, b.workspace,
                   d.workspace, zero, d.y.desc, b.y);
      else
        COIL_CUDNN(cudnnConvolutionForward, h, one, d.x.desc, b.x, d.w.desc, w, d.conv.desc, d.algo, b.workspace,
                   d.workspace, zero, d.y.desc, b.y);
      if (plan_.conv.bias) COIL_CUDNN(cudnnAddTensor, h, one, d.bias.desc, b.bias, one, d.y.desc, b.y);
      break;
    }
  }
  if (epilogue_on_host_) run_epilogue_on_host(p_, n_, *epilogue_, b.result.ptr(), b.address, stream);
}

// ---- one-off calls and words -----------------------------------------------------------------

std::string gpu_extern_library(const Program &p, const Node &n, const sched::Epilogue *epilogue, bool assume_libraries) {
  try {
    GpuExternPlan plan = codegen::plan_gpu_extern(p, n, epilogue);
    return assume_libraries ? plan.words() : words_here(plan, missing_library(plan));
  } catch (const std::exception &e) {
    return str_cat("host loops: ", e.what());
  }
}

std::string gpu_extern_library(const Program &p, const Node &n, bool assume_libraries) {
  return gpu_extern_library(p, n, nullptr, assume_libraries);
}

std::string gpu_extern_library(const Program &p, const Node &n) { return gpu_extern_library(p, n, false); }

void run_gpu_extern(const Program &p, const Node &n, const BufferAddress &address, CUstream stream, std::string_view kernel,
                    const sched::Epilogue *epilogue) {
  COIL_ASSERT(n.kind == ir::NodeKind::Extern && n.outputs.size() == 1, "run_gpu_extern of a node that is not an extern call");
  driver();  // no driver: its reason, before any library is tried
  CUcontext context = nullptr;
  COIL_CU(cuCtxGetCurrent, &context);
  if (!context) Device::get();  // the caller's context when it has one, else device 0's
  ExternHandles handles;
  PreparedExtern step(p, n, epilogue, codegen::plan_gpu_extern(p, n, epilogue), kernel, handles);
  note_setup();
  DeviceBuffer workspace(std::max<size_t>(step.workspace_bytes(), 1));
  BoundExternPtr bound = step.bind(handles, address, workspace.ptr());
  step.run(*bound, stream);
  // The workspace, the handles and the epilogue's buffer go with this call.
  check(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "waiting for the extern call");
}

}  // namespace coil::cuda
