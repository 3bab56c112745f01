#include "runtime/cuda_libraries.h"

#include "runtime/library_loader.h"
#include "support/error.h"

namespace coil::cuda {
namespace {

// The _v2 names are the ABI behind cublas_v2.h's macros.
void bind_cublas(Symbols &symbols, Cublas &c) {
  symbols.need("cublasCreate_v2", c.cublasCreate);
  symbols.need("cublasDestroy_v2", c.cublasDestroy);
  symbols.need("cublasSetStream_v2", c.cublasSetStream);
  symbols.need("cublasGemmStridedBatchedEx", c.cublasGemmStridedBatchedEx);
  symbols.want("cublasGetStatusName", c.cublasGetStatusName);
}

void bind_cudnn(Symbols &symbols, Cudnn &c) {
  symbols.need("cudnnGetErrorString", c.cudnnGetErrorString);
  symbols.need("cudnnCreate", c.cudnnCreate);
  symbols.need("cudnnDestroy", c.cudnnDestroy);
  symbols.need("cudnnSetStream", c.cudnnSetStream);
  symbols.need("cudnnCreateTensorDescriptor", c.cudnnCreateTensorDescriptor);
  symbols.need("cudnnSetTensorNdDescriptor", c.cudnnSetTensorNdDescriptor);
  symbols.need("cudnnDestroyTensorDescriptor", c.cudnnDestroyTensorDescriptor);
  symbols.need("cudnnCreateFilterDescriptor", c.cudnnCreateFilterDescriptor);
  symbols.need("cudnnSetFilterNdDescriptor", c.cudnnSetFilterNdDescriptor);
  symbols.need("cudnnDestroyFilterDescriptor", c.cudnnDestroyFilterDescriptor);
  symbols.need("cudnnCreateConvolutionDescriptor", c.cudnnCreateConvolutionDescriptor);
  symbols.need("cudnnSetConvolutionNdDescriptor", c.cudnnSetConvolutionNdDescriptor);
  symbols.need("cudnnSetConvolutionGroupCount", c.cudnnSetConvolutionGroupCount);
  symbols.need("cudnnSetConvolutionMathType", c.cudnnSetConvolutionMathType);
  symbols.need("cudnnDestroyConvolutionDescriptor", c.cudnnDestroyConvolutionDescriptor);
  symbols.need("cudnnGetConvolutionForwardAlgorithm_v7", c.cudnnGetConvolutionForwardAlgorithm_v7);
  symbols.need("cudnnGetConvolutionForwardWorkspaceSize", c.cudnnGetConvolutionForwardWorkspaceSize);
  symbols.need("cudnnConvolutionForward", c.cudnnConvolutionForward);
  symbols.need("cudnnGetConvolutionBackwardDataAlgorithm_v7", c.cudnnGetConvolutionBackwardDataAlgorithm_v7);
  symbols.need("cudnnGetConvolutionBackwardDataWorkspaceSize", c.cudnnGetConvolutionBackwardDataWorkspaceSize);
  symbols.need("cudnnConvolutionBackwardData", c.cudnnConvolutionBackwardData);
  symbols.need("cudnnGetConvolutionBackwardFilterAlgorithm_v7", c.cudnnGetConvolutionBackwardFilterAlgorithm_v7);
  symbols.need("cudnnGetConvolutionBackwardFilterWorkspaceSize", c.cudnnGetConvolutionBackwardFilterWorkspaceSize);
  symbols.need("cudnnConvolutionBackwardFilter", c.cudnnConvolutionBackwardFilter);
  symbols.need("cudnnAddTensor", c.cudnnAddTensor);
  symbols.need("cudnnTransformTensor", c.cudnnTransformTensor);
  // All of the backend API or none of it.
  bool backend = symbols.want("cudnnBackendCreateDescriptor", c.cudnnBackendCreateDescriptor);
  backend &= symbols.want("cudnnBackendDestroyDescriptor", c.cudnnBackendDestroyDescriptor);
  backend &= symbols.want("cudnnBackendFinalize", c.cudnnBackendFinalize);
  backend &= symbols.want("cudnnBackendSetAttribute", c.cudnnBackendSetAttribute);
  backend &= symbols.want("cudnnBackendGetAttribute", c.cudnnBackendGetAttribute);
  backend &= symbols.want("cudnnBackendExecute", c.cudnnBackendExecute);
  if (!backend) c.cudnnBackendCreateDescriptor = nullptr;
}

// Loaded once, never closed: like the driver, the libraries stay for the life of the process.
const LoadedLibrary<Cublas> &loaded_cublas() {
  static const auto l = load_library<Cublas>(
      {{"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, "cuBLAS", "cuBLAS 11 or newer"}, bind_cublas);
  return l;
}

const LoadedLibrary<Cudnn> &loaded_cudnn() {
  static const auto l = load_library<Cudnn>(
      {{"libcudnn.so.9", "libcudnn.so"}, "cuDNN", "cuDNN 8 or newer with its legacy convolution API"}, bind_cudnn);
  return l;
}

}  // namespace

bool cublas_available() { return loaded_cublas().reason.empty(); }
std::string cublas_unavailable_reason() { return loaded_cublas().reason; }
bool cudnn_available() { return loaded_cudnn().reason.empty(); }
std::string cudnn_unavailable_reason() { return loaded_cudnn().reason; }

const Cublas &cublas() { return loaded_cublas().api; }
const Cudnn &cudnn() { return loaded_cudnn().api; }

namespace {

std::string cublas_status_name(cublasStatus_t status) {
  if (const auto name_of = loaded_cublas().api.cublasGetStatusName)
    if (const char *name = name_of(status)) return name;
  switch (status) {  // cublas_api.h's cublasStatus_t
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return str_cat("cuBLAS status ", status);
  }
}

}  // namespace

void check_cublas(cublasStatus_t status, const char *call, std::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw UserError(str_cat(call, " failed with ", cublas_status_name(status), " while ", what));
}

void check_cudnn(cudnnStatus_t status, const char *call, std::string_view what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const char *name = loaded_cudnn().api.cudnnGetErrorString(status);
  throw UserError(str_cat(call, " failed with ", name ? std::string(name) : str_cat("cuDNN status ", status), " while ", what));
}

}  // namespace coil::cuda
