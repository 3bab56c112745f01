#include "codegen/cpp/cpp_wrapper.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "codegen/cpp/cpp_ops.h"
#include "support/error.h"

namespace coil::codegen {

using ir::BufferId;

bool contains(const std::vector<BufferId> &v, BufferId b) { return std::find(v.begin(), v.end(), b) != v.end(); }


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
    st.where[b] = "(arena + " + std::to_string(s.memory.offsets[i]) + ")";
    st.key[b] = "arena" + std::to_string(s.memory.offsets[i]);
    st.in_arena.insert(b);
  }
  return st;
}

namespace {

std::string shape_array(const Shape &s) {
  std::string out = "{";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.empty() ? "0}" : "}");
}

void emit_descriptors(const ir::Program &p, Writer &w) {
  auto desc = [&](const std::string &array, size_t i, const std::string &name, const TensorType &t, int64_t offset,
                  int64_t elements, int kind, int alias) {
    std::string tag = array + std::to_string(i);
    w.line("static const int64_t " + tag + "_sizes[] = " + shape_array(t.sizes) + ";");
    w.line("static const int64_t " + tag + "_strides[] = " + shape_array(t.strides) + ";");
    return "{\"" + name + "\", " + std::to_string(dtype_code(t.dtype)) + ", " + std::to_string(t.sizes.size()) +
           ", " + tag + "_sizes, " + tag + "_strides, " + std::to_string(offset) + ", " + std::to_string(elements) +
           ", " + std::to_string(kind) + ", " + std::to_string(alias) + "}";
  };
  std::vector<std::string> ins, outs;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const ir::Buffer &b = p.buffer(p.inputs[i]);
    ins.push_back(desc("input", i, b.name, b.type, 0, storage_extent(b.type), 0, -1));
  }
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
    outs.push_back(desc("output", i, "out" + std::to_string(i), t, v.offset, storage_extent(p.buffer(b).type), kind, alias));
  }
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

void emit_wrapper(const sched::Schedule &s, const Storage &st,
                  const std::vector<std::pair<std::string, std::vector<BufferId>>> &calls, bool profile, Writer &w) {
  const ir::Program &p = s.ir.program;
  emit_descriptors(p, w);
  std::vector<std::string> names;
  for (const auto &call : calls) names.push_back(call.first);
  if (profile) emit_kernel_times(s, names, w);
  w.line("static const int64_t kArenaBytes = " + std::to_string(s.memory.arena_bytes) + ";");
  w.line("");
  w.line("// Arenas for concurrent calls: taken from the pool, allocated only when it is empty,");
  w.line("// freed when the library is unloaded.");
  w.open("static struct ArenaPool");
  w.line("std::mutex mutex;");
  w.line("std::vector<char *> free;");
  w.line("~ArenaPool() { for (char *a : free) std::free(a); }");
  w.close("} arena_pool;");
  w.open("static char *take_arena()");
  w.line("if (kArenaBytes == 0) return reinterpret_cast<char *>(64);  // never dereferenced");
  w.open("");
  w.line("std::lock_guard<std::mutex> lock(arena_pool.mutex);");
  w.open("if (!arena_pool.free.empty())");
  w.line("char *a = arena_pool.free.back();");
  w.line("arena_pool.free.pop_back();");
  w.line("return a;");
  w.close();
  w.close();
  w.line("return static_cast<char *>(std::aligned_alloc(64, size_t((kArenaBytes + 63) / 64 * 64)));");
  w.close();
  w.open("static void give_arena(char *a)");
  w.line("if (kArenaBytes == 0) return;");
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
  w.line("int64_t coil_arena_bytes(void) { return kArenaBytes; }");
  if (profile) {
    std::string times = names.empty() ? "nullptr" : "kernel_times";
    w.line("int32_t coil_profile(coil_kernel_profile *rows, int32_t capacity) { return coil_rt::read_profile(" + times +
           ", " + std::to_string(names.size()) + ", rows, capacity); }");
  }
  w.open("const char *coil_error_message(int32_t status)");
  w.open("switch (status)");
  w.line("case COIL_OK: return \"ok\";");
  w.line("case COIL_ERROR_NULL_POINTER: return \"an input or caller-owned output pointer is NULL\";");
  w.line("case COIL_ERROR_OUT_OF_MEMORY: return \"the arena for intermediates could not be allocated\";");
  w.line("case COIL_ERROR_DIVISION_BY_ZERO: return \"integer division by zero\";");
  w.line("case COIL_ERROR_INDEX_OUT_OF_RANGE: return \"an index read from the data is out of range\";");
  w.line("default: return \"unknown status\";");
  w.close();
  w.close();
  w.open("int32_t coil_run_in(void *const *inputs, void **outputs, void *given_arena)");
  w.line("for (int32_t i = 0; i < coil_num_inputs(); ++i) if (!inputs[i]) return COIL_ERROR_NULL_POINTER;");
  w.open("for (int32_t i = 0; i < coil_num_outputs(); ++i)");
  w.line("const coil_tensor_desc &d = outputs_desc[i];");
  w.line("if (d.kind == COIL_OUTPUT_ALIASES_INPUT) outputs[i] = inputs[d.alias_index];");
  w.line("else if (d.kind == COIL_OUTPUT_ALIASES_OUTPUT) outputs[i] = outputs[d.alias_index];");
  w.line("else if (!outputs[i] && d.storage_elements > 0) return COIL_ERROR_NULL_POINTER;");
  w.close();
  w.line("char *arena = given_arena ? static_cast<char *>(given_arena) : take_arena();");
  w.line("if (!arena) return COIL_ERROR_OUT_OF_MEMORY;");
  w.line("coil_rt::Error err{0};");
  for (size_t i = 0; i < calls.size(); ++i) {
    const auto &[name, params] = calls[i];
    std::string args;
    for (BufferId b : params)
      args += "reinterpret_cast<" + storage_type(p.buffer(b).type.dtype) + " *>(" + st.where.at(b) + "), ";
    std::string call = name + "(" + args + "err);";
    if (profile) call = "{ coil_rt::KernelTimer timer(kernel_times[" + std::to_string(i) + "]); " + call + " }";
    w.line(call);
  }
  w.line("if (!given_arena) give_arena(arena);");
  w.line("return err.load();");
  w.close();
  w.line("int32_t coil_run(void *const *inputs, void **outputs) { return coil_run_in(inputs, outputs, nullptr); }");
  w.close();
}


}  // namespace coil::codegen
