// libFuzzer target for the safetensors reader: any bytes either parse or give a
// UserError, and what parses serializes and parses back to the same tensors.
#include <cstdint>
#include <cstdlib>

#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  coil::TensorList tensors;
  try {
    tensors = coil::parse_safetensors(reinterpret_cast<const std::byte *>(data), size, "fuzz.safetensors");
  } catch (const coil::UserError &) {
    return 0;
  }
  auto bytes = coil::serialize_safetensors(tensors);
  coil::TensorList again = coil::parse_safetensors(bytes.data(), bytes.size(), "again.safetensors");
  if (again.size() != tensors.size()) std::abort();
  for (size_t i = 0; i < again.size(); ++i) {
    const auto &a = tensors[i].second;
    const auto &b = again[i].second;
    if (tensors[i].first != again[i].first || a.dtype != b.dtype || a.sizes != b.sizes || a.nbytes() != b.nbytes())
      std::abort();
    for (size_t k = 0; k < a.nbytes(); ++k)
      if (a.data.data()[k] != b.data.data()[k]) std::abort();
  }
  return 0;
}
