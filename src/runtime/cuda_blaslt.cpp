#include "runtime/cuda_blaslt.h"

#include <map>
#include <memory>
#include <mutex>

#include "runtime/library_loader.h"
#include "support/error.h"

namespace coil::cuda {
namespace {

// The library's opaque handles and the few types and values coil uses, as cublasLt.h
// declares them.
using Status = int;
using Handle = void *;
using Desc = void *;
using Layout = void *;
using Preference = void *;
struct Algo {
  uint64_t data[8];
};
struct HeuristicResult {
  Algo algo;
  size_t workspace_size;
  Status state;
  float waves_count;
  int reserved[4];
};

constexpr int kComputeF32 = 68;  // CUBLAS_COMPUTE_32F: no TF32
constexpr int kScaleF32 = 0;     // CUDA_R_32F
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7, kDescBiasPointer = 8;
constexpr int kLayoutBatchCount = 5, kLayoutBatchOffset = 6;
constexpr int kPrefMaxWorkspace = 1;
constexpr int kOpN = 0, kOpT = 1;

struct Api {
  Status (*cublasLtCreate)(Handle *handle);
  Status (*cublasLtMatmulDescCreate)(Desc *desc, int compute, int scale);
  Status (*cublasLtMatmulDescDestroy)(Desc desc);
  Status (*cublasLtMatmulDescSetAttribute)(Desc desc, int attribute, const void *value, size_t bytes);
  Status (*cublasLtMatrixLayoutCreate)(Layout *layout, int type, uint64_t rows, uint64_t cols, int64_t ld);
  Status (*cublasLtMatrixLayoutDestroy)(Layout layout);
  Status (*cublasLtMatrixLayoutSetAttribute)(Layout layout, int attribute, const void *value, size_t bytes);
  Status (*cublasLtMatmulPreferenceCreate)(Preference *preference);
  Status (*cublasLtMatmulPreferenceDestroy)(Preference preference);
  Status (*cublasLtMatmulPreferenceSetAttribute)(Preference preference, int attribute, const void *value, size_t bytes);
  Status (*cublasLtMatmulAlgoGetHeuristic)(Handle handle, Desc desc, Layout a, Layout b, Layout c, Layout d,
                                           Preference preference, int requested, HeuristicResult *results, int *returned);
  Status (*cublasLtMatmul)(Handle handle, Desc desc, const void *alpha, const void *a, Layout a_layout, const void *b,
                           Layout b_layout, const void *beta, const void *c, Layout c_layout, void *d, Layout d_layout,
                           const Algo *algo, void *workspace, size_t workspace_bytes, CUstream stream);
  const char *(*cublasLtGetStatusName)(Status status);  // optional
};

void bind(Symbols &symbols, Api &a) {
  symbols.need("cublasLtCreate", a.cublasLtCreate);
  symbols.need("cublasLtMatmulDescCreate", a.cublasLtMatmulDescCreate);
  symbols.need("cublasLtMatmulDescDestroy", a.cublasLtMatmulDescDestroy);
  symbols.need("cublasLtMatmulDescSetAttribute", a.cublasLtMatmulDescSetAttribute);
  symbols.need("cublasLtMatrixLayoutCreate", a.cublasLtMatrixLayoutCreate);
  symbols.need("cublasLtMatrixLayoutDestroy", a.cublasLtMatrixLayoutDestroy);
  symbols.need("cublasLtMatrixLayoutSetAttribute", a.cublasLtMatrixLayoutSetAttribute);
  symbols.need("cublasLtMatmulPreferenceCreate", a.cublasLtMatmulPreferenceCreate);
  symbols.need("cublasLtMatmulPreferenceDestroy", a.cublasLtMatmulPreferenceDestroy);
  symbols.need("cublasLtMatmulPreferenceSetAttribute", a.cublasLtMatmulPreferenceSetAttribute);
  symbols.need("cublasLtMatmulAlgoGetHeuristic", a.cublasLtMatmulAlgoGetHeuristic);
  symbols.need("cublasLtMatmul", a.cublasLtMatmul);
  symbols.want("cublasLtGetStatusName", a.cublasLtGetStatusName);
}

const LoadedLibrary<Api> &loaded() {
  static const auto l = load_library<Api>(
      {{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, "cuBLASLt", "cuBLASLt 11.4 or newer"}, bind);
  return l;
}

void check_lt(Status status, const char *call, std::string_view what) {
  if (status == 0) return;
  const char *name = loaded().api.cublasLtGetStatusName ? loaded().api.cublasLtGetStatusName(status) : nullptr;
  throw UserError(str_cat(call, " failed with ", name ? std::string(name) : str_cat("cuBLAS status ", status), " while ", what));
}

#define COIL_LT(fn, ...) check_lt(loaded().api.fn(__VA_ARGS__), #fn, what)

// One handle per context, made on first use; cuBLASLt's handles may be shared by threads.
Handle handle_for_current_context(std::string_view what) {
  CUcontext context = nullptr;
  COIL_CU(cuCtxGetCurrent, &context);
  static std::mutex mutex;
  static std::map<CUcontext, Handle> handles;  // never destroyed: they live as long as their contexts
  std::lock_guard<std::mutex> lock(mutex);
  Handle &h = handles[context];
  if (!h) COIL_LT(cublasLtCreate, &h);
  return h;
}

// cublasLtEpilogue_t's value of each epilogue.
int epilogue_value(codegen::LtEpilogue e) {
  using E = codegen::LtEpilogue;
  switch (e) {
    case E::None: return 1;
    case E::Relu: return 2;
    case E::Bias: return 4;
    case E::ReluBias: return 6;
    case E::Gelu: return 32;
    case E::GeluBias: return 36;
  }
  return 1;
}

}  // namespace

bool cublaslt_available() { return loaded().reason.empty(); }
std::string cublaslt_unavailable_reason() { return loaded().reason; }

// The descriptors of one product, made once and destroyed with it.
struct LtMatmul::State {
  Handle handle = nullptr;
  Desc desc = nullptr;
  Layout a = nullptr, b = nullptr, d = nullptr;
  Algo algo{};
  size_t workspace_bytes = 0;
  float alpha = 1, beta = 0;
  ~State() {
    const Api &api = loaded().api;
    for (Layout l : {a, b, d})
      if (l) api.cublasLtMatrixLayoutDestroy(l);
    if (desc) api.cublasLtMatmulDescDestroy(desc);
  }
};

LtMatmul::LtMatmul(const LtGemm &g, size_t workspace_bytes, std::string what_text)
    : s_(std::make_unique<State>()), what_(std::move(what_text)) {
  std::string_view what = what_;
  if (!cublaslt_available()) throw UserError(str_cat(cublaslt_unavailable_reason(), " while ", what));
  State &s = *s_;
  s.handle = handle_for_current_context(what);
  s.workspace_bytes = workspace_bytes;
  s.alpha = float(g.alpha);
  s.beta = float(g.beta);
  COIL_LT(cublasLtMatmulDescCreate, &s.desc, kComputeF32, kScaleF32);
  int ta = g.a.transposed ? kOpT : kOpN, tb = g.b.transposed ? kOpT : kOpN, epilogue = epilogue_value(g.epilogue);
  COIL_LT(cublasLtMatmulDescSetAttribute, s.desc, kDescTransA, &ta, sizeof ta);
  COIL_LT(cublasLtMatmulDescSetAttribute, s.desc, kDescTransB, &tb, sizeof tb);
  COIL_LT(cublasLtMatmulDescSetAttribute, s.desc, kDescEpilogue, &epilogue, sizeof epilogue);
  if (g.bias) COIL_LT(cublasLtMatmulDescSetAttribute, s.desc, kDescBiasPointer, &g.bias, sizeof g.bias);
  // The stored shapes: op(A) is m x k, so A itself is k x m when transposed.
  auto layout = [&](Layout &l, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
    COIL_LT(cublasLtMatrixLayoutCreate, &l, g.type, uint64_t(rows), uint64_t(cols), ld);
    if (g.batches > 1) {
      int count = int(g.batches);
      COIL_LT(cublasLtMatrixLayoutSetAttribute, l, kLayoutBatchCount, &count, sizeof count);
      COIL_LT(cublasLtMatrixLayoutSetAttribute, l, kLayoutBatchOffset, &stride, sizeof stride);
    }
  };
  layout(s.a, g.a.transposed ? g.k : g.m, g.a.transposed ? g.m : g.k, g.a.ld, g.a.batch_stride);
  layout(s.b, g.b.transposed ? g.n : g.k, g.b.transposed ? g.k : g.n, g.b.ld, g.b.batch_stride);
  layout(s.d, g.m, g.n, g.ldd, g.d_batch_stride);
  Preference preference = nullptr;
  COIL_LT(cublasLtMatmulPreferenceCreate, &preference);
  const Api &api = loaded().api;
  struct DropPreference {
    const Api &api;
    Preference p;
    ~DropPreference() { api.cublasLtMatmulPreferenceDestroy(p); }
  } drop{api, preference};
  uint64_t bytes = workspace_bytes;
  COIL_LT(cublasLtMatmulPreferenceSetAttribute, preference, kPrefMaxWorkspace, &bytes, sizeof bytes);
  HeuristicResult result{};
  int returned = 0;
  COIL_LT(cublasLtMatmulAlgoGetHeuristic, s.handle, s.desc, s.a, s.b, s.d, s.d, preference, 1, &result, &returned);
  if (returned == 0)
    throw UserError(str_cat("cuBLASLt has no algorithm for this product with epilogue ",
                            codegen::lt_epilogue_name(g.epilogue), " while ", what));
  s.algo = result.algo;
}

LtMatmul::~LtMatmul() = default;

void LtMatmul::run(const void *a, const void *b, void *d, CUstream stream, void *workspace) const {
  std::string_view what = what_;
  const State &s = *s_;
  COIL_LT(cublasLtMatmul, s.handle, s.desc, &s.alpha, a, s.a, b, s.b, &s.beta, d, s.d, d, s.d, &s.algo, workspace,
          s.workspace_bytes, stream);
}

}  // namespace coil::cuda
