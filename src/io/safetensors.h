// Reading and writing safetensors files: how example inputs and expected outputs
// reach coil, and how coil hands results back to PyTorch.
//
// The format is an 8-byte little-endian header length N, N bytes of JSON mapping each
// tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (plus an optional
// "__metadata__" object of strings), then the data buffer the offsets point into.
// Files are untrusted input: the reader checks every length and offset against the
// bytes actually present before using it, and reports each problem as a UserError
// whose location names the file. Tensors keep the header's order in both directions.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "io/host_tensor.h"

namespace coil {

/// Decodes a whole safetensors file held in memory; `filename` is used only in errors.
TensorList parse_safetensors(const std::byte *data, size_t size, const std::string &filename);

/// Reads `path` and decodes it.
TensorList read_safetensors(const std::string &path);

/// Encodes tensors (laid out in list order) and string metadata. The JSON header is
/// padded with spaces so the data buffer starts at a multiple of 8 bytes. Throws
/// UserError for duplicate or reserved names and for text that is not UTF-8.
std::vector<std::byte> serialize_safetensors(const TensorList &tensors,
                                             const std::map<std::string, std::string> &metadata = {});

/// Writes the encoding to `path` atomically: the bytes go to a temporary file in the
/// same directory, which is renamed over `path` only once complete, so readers see the
/// old file or the new one and a failure leaves neither a partial file nor the
/// temporary behind.
void write_safetensors(const std::string &path, const TensorList &tensors,
                       const std::map<std::string, std::string> &metadata = {});

}  // namespace coil
