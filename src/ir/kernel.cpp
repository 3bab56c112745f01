#include "ir/kernel.h"

#include <algorithm>
#include <sstream>

namespace coil::ir {

std::string_view kernel_kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::Pointwise: return "pointwise";
    case KernelKind::Reduction: return "reduction";
    case KernelKind::Scan: return "scan";
    case KernelKind::Extern: return "extern";
    case KernelKind::Scatter: return "scatter";
  }
  return "?";
}

std::optional<size_t> Kernel::only_pass() const {
  std::optional<size_t> pass;
  for (size_t s = 0; s < steps.size(); ++s) {
    if (!steps[s].inner) continue;
    if (pass) return std::nullopt;
    pass = s;
  }
  return pass;
}

std::string kernel_summary(const Program &p, const Kernel &k) {
  std::string members;
  for (int n : k.nodes) members += (members.empty() ? "" : ", ") + p.nodes[size_t(n)].origin;
  return std::string(kernel_kind_name(k.kind)) + " over " + shape_str(k.ranges) +
         (k.reduction_ranges.empty() ? "" : " reducing " + shape_str(k.reduction_ranges)) + ": " + members;
}

bool ScheduledProgram::in_memory(BufferId b) const {
  const Buffer &buf = program.buffer(b);
  if (buf.kind != Buffer::Kind::Computed) return true;
  for (const Kernel &k : kernels)
    if (std::find(k.stores.begin(), k.stores.end(), b) != k.stores.end()) return true;
  return false;
}

namespace {

KernelKind kind_of(const Node &n) {
  switch (n.kind) {
    case NodeKind::Pointwise: return KernelKind::Pointwise;
    case NodeKind::Reduction: return KernelKind::Reduction;
    case NodeKind::Scan: return KernelKind::Scan;
    case NodeKind::Extern: return KernelKind::Extern;
    case NodeKind::Scatter: return KernelKind::Scatter;
  }
  return KernelKind::Pointwise;
}

std::string buffer_list(const Program &p, const std::vector<BufferId> &ids) {
  std::string out;
  for (BufferId b : ids) out += " " + p.buffer(b).name;
  return out.empty() ? " -" : out;
}

}  // namespace

ScheduledProgram unfused(Program p) {
  ScheduledProgram s;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const Node &n = p.nodes[i];
    Kernel k;
    k.name = "kernel" + std::to_string(i);
    k.kind = kind_of(n);
    k.ranges = n.ranges;
    k.reduction_ranges = n.reduction_ranges;
    k.nodes = {int(i)};
    if (k.is_loop_nest()) k.steps = {Step{true, {int(i)}}};
    for (BufferId b : n.outputs)
      if (b >= 0) k.stores.push_back(b);
    s.kernels.push_back(std::move(k));
  }
  s.program = std::move(p);
  return s;
}

std::string str(const ScheduledProgram &s) {
  const Program &p = s.program;
  std::ostringstream os;
  os << buffers_str(p);
  os << "kernels:\n";
  for (const Kernel &k : s.kernels) {
    os << k.name << ": " << kernel_kind_name(k.kind) << " over " << shape_str(k.ranges);
    if (!k.reduction_ranges.empty()) os << " reducing " << shape_str(k.reduction_ranges);
    os << ", " << k.nodes.size() << (k.nodes.size() == 1 ? " node" : " nodes") << "\n";
    os << "  stores:" << buffer_list(p, k.stores) << "\n";
    if (!k.internal.empty()) os << "  internal:" << buffer_list(p, k.internal) << "\n";
    for (const auto &[key, value] : k.attrs) os << "  " << key << ": " << value << "\n";
    if (k.steps.empty()) {
      for (int n : k.nodes) os << str(p, p.nodes[size_t(n)]);
      continue;
    }
    for (size_t i = 0; i < k.steps.size(); ++i) {
      const Step &step = k.steps[i];
      if (k.kind == KernelKind::Reduction)
        os << "  step " << i << (step.inner ? ": a pass over the reduction ranges\n" : ": once per row\n");
      for (int n : step.nodes) os << str(p, p.nodes[size_t(n)]);
    }
  }
  os << "outputs:";
  for (BufferId b : p.outputs) os << " " << p.buffer(b).name;
  os << "\n";
  return os.str();
}

}  // namespace coil::ir
