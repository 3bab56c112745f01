#include "codegen/cpp/cpp_extern.h"

#include "codegen/cpp/cpp_ops.h"

namespace coil::codegen {

using ir::BufferId;
using ir::Node;

std::string strided_element(const ir::Program &p, const ir::View &v, const std::string &name,
                            const std::vector<std::string> &idx) {
  std::string at = std::to_string(v.offset);
  for (size_t d = 0; d < idx.size(); ++d) at += " + " + idx[d] + "*" + std::to_string(v.strides[d]);
  return from_storage(name + "[" + at + "]", p.buffer(v.buffer).type.dtype);
}

std::string extern_layout(const ir::Program &, const ir::Kernel &) {
  return "layout: a plain loop (coil was built without a library for this call)";
}

namespace {

std::string array(const Shape &s) {
  std::string out = "{";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.empty() ? "0}" : "}");
}

// An operand read as double, at the last `rank` of the given indices.
std::string getter(const ir::Program &p, const std::map<ir::BufferId, std::string> &names, const ir::View &v,
                   const std::string &params, const std::vector<std::string> &idx) {
  if (v.buffer < 0) return "[](" + params + ") { return 0.0; }";
  std::vector<std::string> tail(idx.end() - long(v.sizes.size()), idx.end());
  for (size_t d = 0; d < v.sizes.size(); ++d)
    if (v.sizes[d] == 1) tail[d] = "0";
  return "[&](" + params + ") { return double(" + strided_element(p, v, names.at(v.buffer), tail) + "); }";
}

}  // namespace

void emit_extern_kernel(const ir::Program &p, const ir::Kernel &k, const std::map<ir::BufferId, std::string> &names, Writer &w) {
  const Node &n = p.nodes[size_t(k.nodes[0])];
  ir::BufferId out = n.outputs[0];
  const TensorType &ot = p.buffer(out).type;
  auto put_at = [&](const std::vector<std::string> &o) {
    std::string at = "0";
    for (size_t d = 0; d < o.size(); ++d) at += " + " + o[d] + "*" + std::to_string(ot.strides[d]);
    return names.at(out) + "[" + at + "] = " + to_storage(cpp_cast("v", DType::F64, ot.dtype), ot.dtype) + ";";
  };
  if (n.extern_op == ir::ExternOp::Convolution) {
    const ir::View &x = n.operands[0], &wt = n.operands[1], &bias = n.operands[2];
    size_t spatial = wt.sizes.size() - 2;
    std::vector<std::string> xi = {"b", "c"}, wi = {"o", "i"}, oi = {"b", "c"};
    for (size_t d = 0; d < spatial; ++d) {
      xi.push_back("p[" + std::to_string(d) + "]");
      wi.push_back("k[" + std::to_string(d) + "]");
      oi.push_back("p[" + std::to_string(d) + "]");
    }
    w.line("static const int64_t out_sizes[] = " + array(ot.sizes) + ", x_sizes[] = " + array(x.sizes) +
           ", w_sizes[] = " + array(wt.sizes) + ";");
    w.line("static const int64_t stride[] = " + array(n.attrs.at("stride")) + ", padding[] = " + array(n.attrs.at("padding")) +
           ", dilation[] = " + array(n.attrs.at("dilation")) + ";");
    bool transposed = n.attrs.count("transposed") && n.attrs.at("transposed")[0];
    w.line("coil_rt::convolution(" + std::to_string(spatial) + ", out_sizes, x_sizes, w_sizes, stride, padding, dilation, " +
           std::to_string(n.attrs.at("groups")[0]) + ", " + (transposed ? "true" : "false") + ", " +
           (bias.buffer >= 0 ? "true" : "false") + ",");
    w.line("    " + getter(p, names, x, "int64_t b, int64_t c, const int64_t *p", xi) + ",");
    w.line("    " + getter(p, names, wt, "int64_t o, int64_t i, const int64_t *k", wi) + ",");
    w.line("    " + getter(p, names, bias, "int64_t c", {"c"}) + ",");
    w.line("    [&](int64_t b, int64_t c, const int64_t *p, double v) { " + put_at(oi) + " });");
    return;
  }
  bool has_bias = n.operands.size() == 3;
  const ir::View &a = n.operands[has_bias ? 1 : 0], &b = n.operands[has_bias ? 2 : 1];
  bool batched = a.sizes.size() == 3, vector = b.sizes.size() == 1;
  int64_t batches = batched ? a.sizes[0] : 1, rows = a.sizes[batched ? 1 : 0], inner = a.sizes.back();
  int64_t cols = vector ? 1 : b.sizes.back();
  double alpha = n.scalars.count("alpha") ? n.scalars.at("alpha") : 1;
  double beta = n.scalars.count("beta") ? n.scalars.at("beta") : 1;
  std::vector<std::string> o = vector ? std::vector<std::string>{"i"} : std::vector<std::string>{"b", "i", "j"};
  std::vector<std::string> otail(o.end() - long(ot.sizes.size()), o.end());
  w.line("coil_rt::matmul(" + std::to_string(batches) + ", " + std::to_string(rows) + ", " + std::to_string(inner) + ", " +
         std::to_string(cols) + ", " + literal(alpha, DType::F64) + ", " + literal(beta, DType::F64) + ", " +
         (has_bias ? "true" : "false") + ",");
  w.line("    " + getter(p, names, a, "int64_t b, int64_t i, int64_t k", {"b", "i", "k"}) + ",");
  w.line("    " +
         getter(p, names, b, "int64_t b, int64_t k, int64_t j",
                vector ? std::vector<std::string>{"k"} : std::vector<std::string>{"b", "k", "j"}) +
         ",");
  w.line("    " +
         (has_bias ? getter(p, names, n.operands[0], "int64_t b, int64_t i, int64_t j", otail)
                   : "[](int64_t, int64_t, int64_t) { return 0.0; }") +
         ",");
  w.line(
      "    [&](int64_t b, int64_t i, int64_t j, double v) { (void)b; "
      "(void)j; " +
      put_at(otail) + " });");
}

}  // namespace coil::codegen
