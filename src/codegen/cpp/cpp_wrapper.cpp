#include "codegen/cpp/cpp_wrapper.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "codegen/cpp/cpp_ops.h"
#include "ir/specialize.h"
#include "support/error.h"
#include "support/vectors.h"

namespace coil::codegen {

using ir::BufferId;

Storage place_buffers(const sched::Schedule &s) {
  const ir::Program &p = s.ir.program;
  Storage st;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    st.where[p.inputs[i]] = "static_cast<char *>(inputs[" + std::to_string(i) + "])";
    st.key[p.inputs[i]] = "input" + std::to_string(i);
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    BufferId b = p.outputs[i];
    if (st.where.count(b)) continue;
    st.where[b] = "static_cast<char *>(outputs[" + std::to_string(i) + "])";
    st.key[b] = "output" + std::to_string(i);
  }
  for (size_t i = 0; i < s.lives.size(); ++i) {
    BufferId b = s.life_buffers[i];
    st.where[b] = "(arena + " + cpp_size(s.memory.offsets[i]) + ")";
    st.key[b] = "arena" + cpp_size(s.memory.offsets[i]);
    st.in_arena.insert(b);
  }
  return st;
}

namespace {

// `{8, 768}`: at the sizes compiled for.
std::string shape_array(const SymShape &s) {
  std::string out = "{";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i].hint());
  return out + (s.empty() ? "0}" : "}");
}

// An input's or output's layout, for the descriptors (at the sizes compiled for) and for
// coil_layout (at a call's sizes).
struct Layout {
  std::string name;
  TensorType type;  // dtype, the view's sizes and strides
  SymInt offset, elements;
  int kind = 0, alias = -1;
};

std::vector<Layout> input_layouts(const ir::Program &p) {
  std::vector<Layout> out;
  for (BufferId b : p.inputs) {
    const ir::Buffer &buffer = p.buffer(b);
    out.push_back({buffer.name, buffer.type, 0, storage_extent(buffer.type), 0, -1});
  }
  return out;
}

std::vector<Layout> output_layouts(const ir::Program &p) {
  std::vector<Layout> out;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    BufferId b = p.outputs[i];
    const ir::View &v = p.output_views[i];
    TensorType t{p.buffer(b).type.dtype, v.sizes, v.strides, {}};
    int kind = 0, alias = -1;
    auto in = std::find(p.inputs.begin(), p.inputs.end(), b);
    auto first = std::find(p.outputs.begin(), p.outputs.end(), b);
    if (in != p.inputs.end()) {
      kind = 1;
      alias = int(in - p.inputs.begin());
    } else if (first - p.outputs.begin() < long(i)) {
      kind = 2;
      alias = int(first - p.outputs.begin());
    }
    out.push_back({"out" + std::to_string(i), t, v.offset, storage_extent(p.buffer(b).type), kind, alias});
  }
  return out;
}

void emit_descriptors(const ir::Program &p, Writer &w) {
  auto desc = [&](const std::string &array, size_t i, const Layout &l) {
    std::string tag = array + std::to_string(i);
    w.line("static const int64_t " + tag + "_sizes[] = " + shape_array(l.type.sizes) + ";");
    w.line("static const int64_t " + tag + "_strides[] = " + shape_array(l.type.strides) + ";");
    return "{\"" + l.name + "\", " + std::to_string(dtype_code(l.type.dtype)) + ", " + std::to_string(l.type.sizes.size()) +
           ", " + tag + "_sizes, " + tag + "_strides, " + std::to_string(l.offset.hint()) + ", " +
           std::to_string(l.elements.hint()) + ", " + std::to_string(l.kind) + ", " + std::to_string(l.alias) + "}";
  };
  std::vector<std::string> ins, outs;
  std::vector<Layout> in_layouts = input_layouts(p), out_layouts = output_layouts(p);
  for (size_t i = 0; i < in_layouts.size(); ++i) ins.push_back(desc("input", i, in_layouts[i]));
  for (size_t i = 0; i < out_layouts.size(); ++i) outs.push_back(desc("output", i, out_layouts[i]));
  w.line("static const coil_tensor_desc inputs_desc[] = {");
  for (const auto &d : ins) w.line("  " + d + ",");
  if (ins.empty()) w.line("  {\"\", 0, 0, nullptr, nullptr, 0, 0, 0, -1},");
  w.line("};");
  w.line("static const coil_tensor_desc outputs_desc[] = {");
  for (const auto &d : outs) w.line("  " + d + ",");
  if (outs.empty()) w.line("  {\"\", 0, 0, nullptr, nullptr, 0, 0, 0, -1},");
  w.line("};");
}

// The C++ literal of `text`, which holds node names from the graph file: quotes and
// backslashes escaped, control characters blanked.
std::string c_string(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  return out + "\"";
}

// #include "coil/profile.h"
// static coil_rt::KernelTime kernel_times[] = {
//   {"kernel0", "pointwise over [64, 256]: add, relu"},
// };
void emit_kernel_times(const sched::Schedule &s, const std::vector<std::string> &names, Writer &w) {
  w.line("#include \"coil/profile.h\"");
  w.line("");
  if (names.empty()) return;
  std::map<std::string, const ir::Kernel *> by_name;
  for (const ir::Kernel &k : s.ir.kernels) by_name[k.name] = &k;
  w.line("// cpp.profile: the calls and time of each kernel, in call order, read with coil_profile.");
  w.line("static coil_rt::KernelTime kernel_times[] = {");
  for (const std::string &name : names) {
    auto it = by_name.find(name);
    COIL_ASSERT(it != by_name.end(), "the wrapper calls ", name, ", which is no kernel of the schedule");
    w.line("  {" + c_string(name) + ", " + c_string(ir::kernel_summary(s.ir.program, *it->second)) + "},");
  }
  w.line("};");
  w.line("");
}

}  // namespace

namespace {

// The graph's symbolic sizes as the entry points take them (coil_run_sized's `sizes`, in
// this order), the input dim each can be read from, and the checks a call's sizes must pass.
struct SizeArgs {
  struct Symbol {
    std::string name;
    int input = -1, dim = -1;  // -1: no input dim is this symbol alone
    int64_t compiled = 0;      // its value compiled for
  };
  std::vector<Symbol> symbols;
  std::vector<SizeGuard> checks;
};

SizeArgs size_args(const ir::Program &p) {
  SizeArgs a;
  std::shared_ptr<SizeGuards> guards = ir::guards_of(p);
  if (!guards) return a;
  std::set<std::string> names = ir::symbols_of(p);
  a.checks = guards->checks();
  for (const SizeGuard &g : a.checks) ir::collect_symbols(g.expr, names);
  for (const std::string &name : names) {
    SizeArgs::Symbol sym{name};
    auto value = guards->values().find(name);
    COIL_ASSERT(value != guards->values().end(), "symbol ", name, " has no value compiled for");
    sym.compiled = value->second;
    for (size_t i = 0; i < p.inputs.size() && sym.input < 0; ++i) {
      const SymShape &sizes = p.buffer(p.inputs[i]).type.sizes;
      for (size_t d = 0; d < sizes.size() && sym.input < 0; ++d)
        if (const ir::Atom *at = sizes[d].symbolic() ? sizes[d].expr().as_atom() : nullptr;
            at && at->kind() == ir::AtomKind::Symbol && at->symbol() == name) {
          sym.input = int(i);
          sym.dim = int(d);
        }
    }
    a.symbols.push_back(sym);
  }
  return a;
}

// `const int64_t s0 = sizes[0];` for each symbol: the names kernels and sizes are printed in.
void read_sizes(const SizeArgs &a, Writer &w) {
  for (size_t i = 0; i < a.symbols.size(); ++i)
    w.line("[[maybe_unused]] const int64_t " + a.symbols[i].name + " = sizes[" + std::to_string(i) + "];");
}

std::string check_text(const SizeGuard &g) { return c_string(g.explained()); }

std::string check_holds(const SizeGuard &g) {
  static const char *const kOp[] = {" == 0", " != 0", " < 0", " <= 0"};
  return cpp_size(g.expr) + kOp[size_t(g.op)];
}

// coil_symbol, coil_check_sizes, coil_size_check, coil_layout and coil_arena_bytes_at.
void emit_sizes(const ir::Program &p, const SizeArgs &a, const SymInt &arena_bytes, Writer &w) {
  w.line("static const coil_symbol_desc symbols_desc[] = {");
  for (const SizeArgs::Symbol &s : a.symbols)
    w.line("  {\"" + s.name + "\", " + std::to_string(s.input) + ", " + std::to_string(s.dim) + ", " +
           std::to_string(s.compiled) + "},");
  if (a.symbols.empty()) w.line("  {\"\", -1, -1, 0},");
  w.line("};");
  std::string compiled;
  for (const SizeArgs::Symbol &s : a.symbols) compiled += (compiled.empty() ? "" : ", ") + std::to_string(s.compiled);
  w.line("static const int64_t compiled_sizes[] = {" + (compiled.empty() ? "0" : compiled) + "};");
  w.line("static const char *const size_checks[] = {");
  for (const SizeGuard &g : a.checks) w.line("  " + check_text(g) + ",");
  if (a.checks.empty()) w.line("  \"\",");
  w.line("};");
  w.line("");
  w.open("extern \"C\"");
  w.line("int32_t coil_num_symbols(void) { return " + std::to_string(a.symbols.size()) + "; }");
  w.line("const coil_symbol_desc *coil_symbol(int32_t i) { return i >= 0 && i < coil_num_symbols() ? &symbols_desc[i] : nullptr; }");
  w.line("const char *coil_size_check(int32_t g) { return g >= 0 && g < " + std::to_string(a.checks.size()) +
         " ? size_checks[g] : nullptr; }");
  w.open("int32_t coil_check_sizes(const int64_t *sizes)");
  read_sizes(a, w);
  for (size_t g = 0; g < a.checks.size(); ++g)
    w.line("if (!(" + check_holds(a.checks[g]) + ")) return " + std::to_string(g) + ";");
  w.line("return -1;");
  w.close();
  w.open("int64_t coil_arena_bytes_at(const int64_t *sizes)");
  read_sizes(a, w);
  w.line("return " + cpp_size(arena_bytes) + ";");
  w.close();
  w.open("int32_t coil_layout(int32_t output, int32_t i, const int64_t *sizes, int64_t *dims, int64_t *strides, "
         "int64_t *storage_offset, int64_t *storage_elements)");
  read_sizes(a, w);
  auto layouts = [&](const std::vector<Layout> &ls, const std::string &which) {
    for (size_t i = 0; i < ls.size(); ++i) {
      const Layout &l = ls[i];
      w.open("if (" + which + " && i == " + std::to_string(i) + ")");
      for (size_t d = 0; d < l.type.sizes.size(); ++d)
        w.line("dims[" + std::to_string(d) + "] = " + cpp_size(l.type.sizes[d]) + ", strides[" + std::to_string(d) +
               "] = " + cpp_size(l.type.strides[d]) + ";");
      w.line("*storage_offset = " + cpp_size(l.offset) + ", *storage_elements = " + cpp_size(l.elements) + ";");
      w.line("return COIL_OK;");
      w.close();
    }
  };
  layouts(input_layouts(p), "!output");
  layouts(output_layouts(p), "output");
  w.line("return COIL_ERROR_NULL_POINTER;");
  w.close();
  w.close();
}

}  // namespace

void emit_wrapper(const sched::Schedule &s, const Storage &st, const std::vector<KernelCall> &calls, bool profile,
                  Writer &w) {
  const ir::Program &p = s.ir.program;
  SizeArgs sizes = size_args(p);
  emit_descriptors(p, w);
  std::vector<std::string> names;
  for (const KernelCall &call : calls) names.push_back(call.name);
  if (profile) emit_kernel_times(s, names, w);
  emit_sizes(p, sizes, s.memory.arena_bytes, w);
  w.line("");
  w.line("// Arenas for concurrent calls: taken from the pool (replaced when smaller than a call");
  w.line("// needs), allocated only when it is empty, freed when the library is unloaded.");
  w.open("static struct ArenaPool");
  w.line("std::mutex mutex;");
  w.line("std::vector<std::pair<char *, int64_t>> free;  // an arena and its bytes");
  w.line("~ArenaPool() { for (auto &a : free) std::free(a.first); }");
  w.close("} arena_pool;");
  w.open("static std::pair<char *, int64_t> take_arena(int64_t bytes)");
  w.line("if (bytes == 0) return {reinterpret_cast<char *>(64), 0};  // never dereferenced");
  w.open("");
  w.line("std::lock_guard<std::mutex> lock(arena_pool.mutex);");
  w.open("if (!arena_pool.free.empty())");
  w.line("std::pair<char *, int64_t> a = arena_pool.free.back();");
  w.line("arena_pool.free.pop_back();");
  w.line("if (a.second >= bytes) return a;");
  w.line("std::free(a.first);");
  w.close();
  w.close();
  w.line("int64_t rounded = (bytes + 63) / 64 * 64;");
  w.line("return {static_cast<char *>(std::aligned_alloc(64, size_t(rounded))), rounded};");
  w.close();
  w.open("static void give_arena(std::pair<char *, int64_t> a)");
  w.line("if (a.second == 0) return;");
  w.line("std::lock_guard<std::mutex> lock(arena_pool.mutex);");
  w.line("arena_pool.free.push_back(a);");
  w.close();
  w.line("");
  w.open("extern \"C\"");
  w.line("int32_t coil_abi_version(void) { return COIL_ABI_VERSION; }");
  w.line("int32_t coil_num_inputs(void) { return " + std::to_string(p.inputs.size()) + "; }");
  w.line("int32_t coil_num_outputs(void) { return " + std::to_string(p.outputs.size()) + "; }");
  w.line("const coil_tensor_desc *coil_input(int32_t i) { return i >= 0 && i < coil_num_inputs() ? &inputs_desc[i] : nullptr; }");
  w.line("const coil_tensor_desc *coil_output(int32_t i) { return i >= 0 && i < coil_num_outputs() ? &outputs_desc[i] : nullptr; }");
  w.line("int64_t coil_arena_bytes(void) { return coil_arena_bytes_at(compiled_sizes); }");
  if (profile) {
    std::string times = names.empty() ? "nullptr" : "kernel_times";
    w.line("int32_t coil_profile(coil_kernel_profile *rows, int32_t capacity) { return coil_rt::read_profile(" + times +
           ", " + std::to_string(names.size()) + ", rows, capacity); }");
  }
  w.open("const char *coil_error_message(int32_t status)");
  w.open("switch (status)");
  w.line("case COIL_OK: return \"ok\";");
  w.line("case COIL_ERROR_NULL_POINTER: return \"an input, caller-owned output or sizes pointer is NULL\";");
  w.line("case COIL_ERROR_OUT_OF_MEMORY: return \"the arena for intermediates could not be allocated\";");
  w.line("case COIL_ERROR_DIVISION_BY_ZERO: return \"integer division by zero\";");
  w.line("case COIL_ERROR_INDEX_OUT_OF_RANGE: return \"an index read from the data is out of range\";");
  w.line("case COIL_ERROR_SIZES: return \"the sizes fail a check of the compiled graph (coil_check_sizes says which)\";");
  w.line("default: return \"unknown status\";");
  w.close();
  w.close();
  w.open("int32_t coil_run_sized(const int64_t *sizes, void *const *inputs, void **outputs, void *given_arena)");
  w.line("if (coil_num_symbols() > 0 && !sizes) return COIL_ERROR_NULL_POINTER;");
  w.line("if (coil_check_sizes(sizes) >= 0) return COIL_ERROR_SIZES;");
  read_sizes(sizes, w);
  w.line("for (int32_t i = 0; i < coil_num_inputs(); ++i) if (!inputs[i]) return COIL_ERROR_NULL_POINTER;");
  w.open("for (int32_t i = 0; i < coil_num_outputs(); ++i)");
  w.line("const coil_tensor_desc &d = outputs_desc[i];");
  w.line("if (d.kind == COIL_OUTPUT_ALIASES_INPUT) outputs[i] = inputs[d.alias_index];");
  w.line("else if (d.kind == COIL_OUTPUT_ALIASES_OUTPUT) outputs[i] = outputs[d.alias_index];");
  w.line("else if (!outputs[i] && d.storage_elements > 0) return COIL_ERROR_NULL_POINTER;");
  w.close();
  w.line("std::pair<char *, int64_t> own = given_arena ? std::pair<char *, int64_t>{nullptr, 0} : take_arena(" +
         cpp_size(s.memory.arena_bytes) + ");");
  w.line("char *arena = given_arena ? static_cast<char *>(given_arena) : own.first;");
  w.line("if (!arena) return COIL_ERROR_OUT_OF_MEMORY;");
  w.line("coil_rt::Error err{0};");
  for (size_t i = 0; i < calls.size(); ++i) {
    const KernelCall &c = calls[i];
    std::string args;
    for (BufferId b : c.buffers)
      args += "reinterpret_cast<" + storage_type(p.buffer(b).type.dtype) + " *>(" + st.where.at(b) + "), ";
    for (const std::string &symbol : c.symbols) args += symbol + ", ";
    std::string call = c.name + "(" + args + "err);";
    if (profile) call = "{ coil_rt::KernelTimer timer(kernel_times[" + std::to_string(i) + "]); " + call + " }";
    w.line(call);
  }
  w.line("if (!given_arena) give_arena(own);");
  w.line("return err.load();");
  w.close();
  w.line("int32_t coil_run_in(void *const *inputs, void **outputs, void *arena) { return coil_run_sized(compiled_sizes, inputs, outputs, arena); }");
  w.line("int32_t coil_run(void *const *inputs, void **outputs) { return coil_run_in(inputs, outputs, nullptr); }");
  w.close();
}

}  // namespace coil::codegen
