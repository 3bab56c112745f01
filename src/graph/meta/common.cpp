#include "graph/meta/common.h"

namespace coil::meta {

Device common_device(const std::vector<Operand> &operands) {
  std::optional<Device> device;
  for (const Operand &op : operands) {
    if (op.wrapped_number) continue;
    bool cpu_scalar = op.type.rank() == 0 && op.type.device.kind == Device::Kind::CPU;
    if (cpu_scalar) continue;
    if (!device) {
      device = op.type.device;
      continue;
    }
    COIL_USER_CHECK(*device == op.type.device, "expected all tensors on one device, found ",
                    device->str(), " and ", op.type.device.str());
  }
  if (device) return *device;
  for (const Operand &op : operands)
    if (!op.wrapped_number) return op.type.device;
  return Device{};
}

void check_strided(std::optional<Layout> layout) {
  COIL_USER_CHECK(!layout || *layout == Layout::Strided, "only strided tensors are supported, got layout ",
                  layout_name(*layout));
}

std::vector<bool> reduced_dims(const std::optional<std::vector<int64_t>> &dims, int64_t rank) {
  std::vector<bool> reduced(size_t(rank), false);
  if (!dims || dims->empty()) return std::vector<bool>(size_t(rank), true);
  for (int64_t d : *dims) {
    int64_t w = wrap_dim(d, rank);
    if (rank == 0) continue;
    COIL_USER_CHECK(!reduced[size_t(w)], "dim ", w, " appears multiple times in the list of dims");
    reduced[size_t(w)] = true;
  }
  return reduced;
}

SymShape trilinear_operand(const SymShape &sizes, const std::vector<int64_t> &expand, int64_t rank, std::string_view op) {
  COIL_USER_CHECK(int64_t(sizes.size() + expand.size()) == rank, op, ": an operand of shape ", shape_str(sizes),
                  " expanded at ", expand.size(), " dims does not have the product's ", rank, " dims");
  std::vector<bool> added(size_t(rank), false);
  for (int64_t d : expand) {
    COIL_USER_CHECK(d >= 0 && d < rank && !added[size_t(d)], op, ": expand dim ", d, " is out of range or repeated");
    added[size_t(d)] = true;
  }
  SymShape out;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) out.push_back(added[size_t(d)] ? SymInt(1) : sizes[next++]);
  return out;
}

SymShape reduced_shape(const SymShape &sizes, const std::vector<bool> &reduced, bool keepdim) {
  SymShape out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(sizes[i]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

}  // namespace coil::meta
