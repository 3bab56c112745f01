// The host program of the Triton dialect as JSON: DIR/launch_plan.json of `coil compile
// --device cuda`, read by python/coil_triton/run_plan.py. The program itself comes from
// generate_triton (triton_codegen.cpp).
#include "codegen/triton/triton_codegen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/specialize.h"
#include "support/error.h"

namespace coil::codegen {

using ir::BufferId;
using ir::Node;

namespace {

std::string json_string(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// The dtype names of the launch plan (torch's short names).
std::string plan_dtype(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::U8: return "u8";
    case DType::I8: return "i8";
    case DType::I16: return "i16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
  }
  return "?";
}

std::string json_ints(const std::vector<int64_t> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

// A size: its number, or its expression in the symbols as a string ("768*s0").
std::string json_size(const SymInt &s) { return s.symbolic() ? json_string(str(s)) : std::to_string(s.hint()); }

// A launch's "when": the conditions of its size bucket, as strings.
std::string json_when(const std::vector<SizeGuard> &conditions) {
  std::string out = "[";
  for (size_t i = 0; i < conditions.size(); ++i) out += (i ? ", " : "") + json_string(conditions[i].str());
  return out + "]";
}

std::string json_sizes(const std::vector<SymInt> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + json_size(v[i]);
  return out + "]";
}

// "symbols": each symbol and the input dim it is read from; "checks": what the call's sizes
// must pass (each symbol's range, then the guards of the compiled graph).
std::string symbols_json(const ir::Program &p) {
  std::shared_ptr<SizeGuards> guards = ir::guards_of(p);
  if (!guards) return "";
  std::string symbols, checks;
  std::set<std::string> found;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const SymShape &sizes = p.buffer(p.inputs[i]).type.sizes;
    for (size_t d = 0; d < sizes.size(); ++d) {
      const ir::Atom *a = sizes[d].symbolic() ? sizes[d].expr().as_atom() : nullptr;
      if (!a || a->kind() != ir::AtomKind::Symbol || !found.insert(a->symbol()).second) continue;
      symbols += str_cat(symbols.empty() ? "" : ", ", "{\"name\": ", json_string(a->symbol()), ", \"input\": ", i,
                         ", \"dim\": ", d, "}");
    }
  }
  // A symbol no input dim is: its value compiled for (the checks hold it there).
  for (const std::string &symbol : ir::symbols_of(p))
    if (!found.count(symbol))
      symbols += str_cat(symbols.empty() ? "" : ", ", "{\"name\": ", json_string(symbol), ", \"value\": ",
                         guards->values().at(symbol), "}");
  for (const SizeGuard &g : guards->checks())
    checks += str_cat(checks.empty() ? "" : ",\n    ", "{\"check\": ", json_string(g.str()), ", \"why\": ",
                      json_string(g.why), "}");
  return "  \"symbols\": [" + symbols + "],\n  \"checks\": [\n    " + checks + "],\n";
}

// A double exactly (17 digits); NaN and the infinities as Python's json module reads them
// (NaN, Infinity, -Infinity), since JSON itself has no spelling for them.
std::string json_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string launch_plan_json(const sched::Schedule &s, const GpuProgram &g) {
  const ir::Program &p = s.ir.program;
  std::string out = "{\n  \"format\": \"coil-launch-plan\", \"version\": 2,\n";
  out += symbols_json(p);
  out += "  \"arena_bytes\": " + json_size(g.arena_bytes) + ",\n  \"buffers\": [\n";
  bool first = true;
  for (const auto &[id, place] : g.places) {
    bool scratch = id >= int(p.buffers.size());
    std::string name = scratch ? g.scratch_names.at(id) : p.buffer(id).name;
    DType t = scratch ? g.scratch_dtypes.at(id) : p.buffer(id).type.dtype;
    SymInt elements = scratch ? g.scratch_elements.at(id) : storage_extent(p.buffer(id).type);
    out += std::string(first ? "" : ",\n") + "    {\"id\": " + std::to_string(id) + ", \"name\": " + json_string(name) +
           ", \"dtype\": \"" + plan_dtype(t) + "\", \"elements\": " + json_size(elements) + ", \"place\": ";
    switch (place.kind) {
      case GpuPlace::Kind::Input: out += "\"input\", \"index\": " + std::to_string(place.index); break;
      case GpuPlace::Kind::Output: out += "\"output\", \"index\": " + std::to_string(place.index); break;
      case GpuPlace::Kind::Arena:
      case GpuPlace::Kind::Scratch: out += "\"arena\", \"offset\": " + json_size(place.offset); break;
    }
    out += "}";
    first = false;
  }
  out += "\n  ],\n  \"inputs\": [\n";
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const ir::Buffer &b = p.buffer(p.inputs[i]);
    out += std::string(i ? ",\n" : "") + "    {\"name\": " + json_string(b.name) + ", \"buffer\": " + std::to_string(p.inputs[i]) +
           ", \"dtype\": \"" + plan_dtype(b.type.dtype) + "\", \"sizes\": " + json_sizes(b.type.sizes) +
           ", \"strides\": " + json_sizes(b.type.strides) + ", \"offset\": 0}";
  }
  out += "\n  ],\n  \"outputs\": [\n";
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    BufferId b = p.outputs[i];
    const ir::View &v = p.output_views[i];
    std::string alias = "none";
    if (std::find(p.inputs.begin(), p.inputs.end(), b) != p.inputs.end()) alias = "input";
    else if (std::find(p.outputs.begin(), p.outputs.end(), b) - p.outputs.begin() < long(i)) alias = "output";
    out += std::string(i ? ",\n" : "") + "    {\"name\": \"out" + std::to_string(i) + "\", \"buffer\": " + std::to_string(b) +
           ", \"dtype\": \"" + plan_dtype(p.buffer(b).type.dtype) + "\", \"sizes\": " + json_sizes(v.sizes) +
           ", \"strides\": " + json_sizes(v.strides) + ", \"offset\": " + json_size(v.offset) + ", \"alias\": \"" + alias + "\"}";
  }
  out += "\n  ],\n  \"steps\": [\n";
  for (size_t i = 0; i < g.steps.size(); ++i) {
    const GpuStep &st = g.steps[i];
    out += i ? ",\n" : "";
    if (st.kind == GpuStep::Kind::Launch) {
      const GpuKernel &k = g.kernels[size_t(st.kernel)];
      std::string consts;
      for (const auto &[name, value] : k.constexprs)
        consts += (consts.empty() ? "" : ", ") + json_string(name) + ": " + std::to_string(std::get<int64_t>(value));
      std::vector<int64_t> args(st.args.begin(), st.args.end());
      std::string sizes;
      for (const std::string &symbol : k.sizes) sizes += (sizes.empty() ? "" : ", ") + json_string(symbol);
      out += "    {\"kind\": \"launch\", \"kernel\": " + json_string(k.name) + ", \"file\": \"kernels/" + k.name +
             ".py\", \"grid\": " + json_sizes({k.grid[0], k.grid[1], k.grid[2]}) + ", \"args\": " + json_ints(args) +
             (sizes.empty() ? "" : ", \"sizes\": [" + sizes + "]") +
             (st.only_if.empty() ? "" : ", \"when\": " + json_when(st.only_if)) +
             ", \"constexprs\": {" + consts + "}, \"num_warps\": " + std::to_string(k.num_warps) +
             ", \"num_stages\": " + std::to_string(k.num_stages) + "}";
      continue;
    }
    const Node &n = p.nodes[size_t(st.node)];
    auto view = [&](const ir::View &v) {
      if (v.buffer < 0) return std::string("{\"buffer\": -1}");
      return "{\"buffer\": " + std::to_string(v.buffer) + ", \"sizes\": " + json_sizes(v.sizes) + ", \"strides\": " +
             json_sizes(v.strides) + ", \"offset\": " + json_size(v.offset) + "}";
    };
    std::string operands;
    for (const ir::View &v : n.operands) operands += (operands.empty() ? "" : ", ") + view(v);
    const ir::Buffer &ob = p.buffer(n.outputs[0]);
    std::string attrs, scalars;
    for (const auto &[name, v] : n.attrs) attrs += (attrs.empty() ? "" : ", ") + json_string(name) + ": " + json_ints(v);
    for (const auto &[name, v] : n.scalars) scalars += (scalars.empty() ? "" : ", ") + json_string(name) + ": " + json_number(v);
    std::string epilogue;
    if (st.epilogue) {
      std::string ops;
      for (const sched::PostOp &op : st.epilogue->ops) {
        std::string ab = "\"alpha\": " + json_number(op.alpha) + ", \"beta\": " + json_number(op.beta);
        ops += std::string(ops.empty() ? "" : ", ") + "{\"kind\": \"" + std::string(sched::post_op_name(op.kind)) + "\", " + ab +
               (op.binary() ? ", \"operand\": " + view(op.operand) : "") + "}";
      }
      epilogue = ", \"epilogue\": {\"ops\": [" + ops + "], \"out\": " + view(st.epilogue->out) + "}";
    }
    out += "    {\"kind\": \"extern\", \"kernel\": " + json_string(st.schedule_kernel) + ", \"op\": \"" +
           std::string(ir::extern_op_name(n.extern_op)) + "\", \"operands\": [" + operands + "], \"out\": " +
           view(ir::View{n.outputs[0], ob.type.sizes, ob.type.strides, 0}) + ", \"attrs\": {" + attrs + "}, \"scalars\": {" +
           scalars + "}" + epilogue + "}";
  }
  out += "\n  ]\n}\n";
  return out;
}

}  // namespace coil::codegen
