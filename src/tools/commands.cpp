#include "tools/commands.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <cstdio>
#include <iostream>
#include <map>

#include "coil/coil.h"
#include "driver/compile.h"
#include "frontend/parser.h"
#include "frontend/printer.h"
#include "graph/registry.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"
#include "io/compare.h"
#include "support/options.h"
#include "tools/cache_command.h"
#include "tools/compile_command.h"
#include "tools/config_command.h"
#include "tools/coverage.h"

namespace coil::tools {
namespace {

/// Command-line arguments: positional files and `--flag VALUE` options.
struct ParsedArgs {
  std::vector<std::string> files;
  std::map<std::string, std::string> options;
};

ParsedArgs parse_args(const std::string &command, const std::vector<std::string> &args,
                      const std::vector<std::string> &value_options) {
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    if (a.rfind("--", 0) != 0) {
      out.files.push_back(a);
      continue;
    }
    if (a == "--set" && i + 1 < args.size()) {
      options::set_override(args[++i]);
      continue;
    }
    bool known = std::find(value_options.begin(), value_options.end(), a) != value_options.end();
    if (!known) throw UserError(str_cat("coil ", command, ": unknown option '", a, "' (see coil ", command, " --help)"));
    if (i + 1 >= args.size()) throw UserError(str_cat("coil ", command, ": option ", a, " needs a value"));
    out.options[a] = args[++i];
  }
  return out;
}

std::string one_file(const std::string &command, const ParsedArgs &p) {
  if (p.files.size() != 1)
    throw UserError(str_cat("coil ", command, ": expected one graph file, got ", p.files.size(),
                            " (see coil ", command, " --help)"));
  return p.files[0];
}

// Reports a user error for one file and goes on with the next.
int for_each_file(const std::vector<std::string> &files, const std::function<void(const std::string &)> &fn) {
  int status = 0;
  for (const auto &f : files) {
    try {
      fn(f);
    } catch (const UserError &e) {
      std::cerr << e.render() << "\n";
      status = 1;
    }
  }
  return status;
}

int run_check(const std::vector<std::string> &args) {
  ParsedArgs p = parse_args("check", args, {"--inputs", "--expect"});
  if (p.files.empty()) throw UserError("coil check: expected at least one graph file (see coil check --help)");
  bool with_tensors = p.options.count("--inputs") || p.options.count("--expect");
  if (with_tensors && p.files.size() != 1) throw UserError("coil check: --inputs and --expect take one graph file");
  return for_each_file(p.files, [&](const std::string &file) {
    TensorList inputs;
    if (auto it = p.options.find("--inputs"); it != p.options.end()) inputs = read_safetensors(it->second);
    Graph g = frontend::parse_graph_file(file, tensor_shapes(inputs));
    if (auto it = p.options.find("--inputs"); it != p.options.end()) check_graph_inputs(g, inputs, it->second);
    if (auto it = p.options.find("--expect"); it != p.options.end())
      check_graph_outputs(g, read_safetensors(it->second), it->second);
    std::cout << file << ": ok (" << g.nodes().size() << " nodes, " << g.inputs().size() << " inputs, "
              << g.outputs().size() << " outputs)\n";
  });
}

int run_print(const std::vector<std::string> &args) {
  ParsedArgs p = parse_args("print", args, {});
  std::cout << frontend::print_graph(frontend::parse_graph_file(one_file("print", p)));
  return 0;
}

void print_values(const Graph &g, const std::vector<ValueId> &ids) {
  size_t width = 0;
  for (ValueId id : ids) width = std::max(width, g.value(id).name.size());
  for (ValueId id : ids)
    std::cout << "  " << g.value(id).name << std::string(width + 2 - g.value(id).name.size(), ' ')
              << g.type(id).str() << "\n";
}

int run_info(const std::vector<std::string> &args) {
  ParsedArgs p = parse_args("info", args, {});
  std::string file = one_file("info", p);
  Graph g = frontend::parse_graph_file(file);
  std::map<std::string, int> counts;
  for (const Node &n : g.nodes()) ++counts[n.target()];
  std::cout << "graph " << file << "\n";
  std::cout << "inputs (" << g.inputs().size() << "):\n";
  print_values(g, g.inputs());
  if (!g.constants().empty()) {
    std::cout << "constants (" << g.constants().size() << "):\n";
    print_values(g, g.constants());
  }
  std::cout << "outputs (" << g.outputs().size() << "):\n";
  print_values(g, g.outputs());
  std::cout << "ops (" << g.nodes().size() << " nodes, " << counts.size() << " distinct):\n";
  for (const auto &[target, n] : counts) std::cout << "  " << n << "  " << target << "\n";
  return 0;
}

double number_option(const ParsedArgs &p, const std::string &name, double fallback) {
  auto it = p.options.find(name);
  if (it == p.options.end()) return fallback;
  try {
    size_t used = 0;
    double v = std::stod(it->second, &used);
    if (used == it->second.size() && v >= 0) return v;
  } catch (const std::exception &) {
  }
  throw UserError(str_cat("coil run: ", name, " expects a non-negative number, got '", it->second, "'"));
}

// --seed: any 64-bit integer, as PyTorch's seeds are.
int64_t seed_option(const ParsedArgs &p) {
  auto it = p.options.find("--seed");
  if (it == p.options.end()) return 0;
  const std::string &v = it->second;
  int64_t seed = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seed);
  if (ec == std::errc() && end == v.data() + v.size()) return seed;
  throw UserError(str_cat("coil run: --seed expects a 64-bit integer, got '", v, "'"));
}

// The most calls --bench times: its timings are kept to take their median.
constexpr int kMaxBenchCalls = 1'000'000;

/// --bench N: 0 (the default) for no timing, else a whole number of calls up to
/// kMaxBenchCalls, checked as text so that no huge or fractional value reaches an int.
int bench_calls(const ParsedArgs &p) {
  auto it = p.options.find("--bench");
  if (it == p.options.end()) return 0;
  const std::string &text = it->second;
  bool digits = !text.empty() && text.size() <= 7 && text.find_first_not_of("0123456789") == std::string::npos;
  int calls = digits ? std::stoi(text) : -1;
  if (calls < 1 || calls > kMaxBenchCalls)
    throw UserError(str_cat("coil run: --bench expects a whole number of calls from 1 to ", kMaxBenchCalls,
                            ", got '", text, "'"));
  return calls;
}

// What `coil run --set cpp.profile=1` prints, slowest kernel first:
//   kernel    calls  total ms   mean us       %  what it computes
//   kernel1      22   313.830   14265.0    62.1  extern over [2, 16, 16, 16]: convolution
//   kernel0      22   191.489    8704.0    37.9  pointwise over [2, 16, 16, 16]: relu
//   total             505.319
std::string profile_table(std::vector<KernelTime> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.seconds > b.seconds; });
  double total = 0;
  size_t name_width = 6;
  for (const auto &r : rows) {
    total += r.seconds;
    name_width = std::max(name_width, r.name.size());
  }
  auto cell = [](double v, int width, int decimals) {
    char text[64];
    std::snprintf(text, sizeof text, "%*.*f", width, decimals, v);
    return std::string(text);
  };
  auto pad = [](const std::string &s, size_t width) { return s + std::string(std::max(width, s.size()) - s.size(), ' '); };
  std::string out = pad("kernel", name_width) + "   calls  total ms   mean us       %  what it computes\n";
  for (const auto &r : rows) {
    double mean_us = r.calls > 0 ? r.seconds / double(r.calls) * 1e6 : 0;
    out += pad(r.name, name_width) + " " + cell(double(r.calls), 7, 0) + " " + cell(r.seconds * 1e3, 9, 3) + " " +
           cell(mean_us, 9, 1) + " " + cell(total > 0 ? r.seconds / total * 100 : 0, 7, 1) + "  " + r.summary + "\n";
  }
  out += pad("total", name_width) + "         " + cell(total * 1e3, 9, 3) + "\n";
  return out;
}

int run_run(const std::vector<std::string> &all_args) {
  // --interpret is the one option without a value.
  std::vector<std::string> args;
  bool interpret = false;
  for (const std::string &a : all_args) (a == "--interpret" ? interpret = true : (args.push_back(a), false));
  ParsedArgs p =
      parse_args("run", args, {"--device", "--inputs", "--expect", "--rtol", "--atol", "--save", "--bench", "--seed"});
  std::string file = one_file("run", p);
  std::string device = p.options.count("--device") ? p.options["--device"] : "ref";
  if (device != "ref" && device != "cpu" && device != "cuda")
    throw UserError(str_cat("coil run: unknown device '", device, "'; this build has: ref, cpu, cuda"));
  if (interpret && device != "cuda") throw UserError("coil run: --interpret runs the Triton kernels: use it with --device cuda");
  int bench = bench_calls(p);
  if (bench > 0 && (device == "ref" || interpret))
    throw UserError("coil run: --bench times compiled kernels: use it with --device cpu or --device cuda");
  if (!p.options.count("--inputs")) throw UserError("coil run: --inputs IN.safetensors is required");
  // The tensors are checked against the graph before anything is compiled; the graph read
  // here is the one compiled.
  TensorList inputs = read_safetensors(p.options["--inputs"]);
  frontend::SizeValues sizes;
  Graph g = frontend::parse_graph_file(file, tensor_shapes(inputs), &sizes);
  if (!sizes.empty()) std::cerr << "coil run: symbolic sizes " << frontend::size_values_str(sizes) << " (from --inputs)\n";
  check_graph_inputs(g, inputs, p.options["--inputs"]);
  TensorList expected;
  if (auto it = p.options.find("--expect"); it != p.options.end()) {
    expected = read_safetensors(it->second);
    check_graph_outputs(g, expected, it->second);
  }
  CompileOptions o;
  o.target = interpret ? Target::CudaInterpreter : parse_target(device);
  CompiledGraph compiled = compile_parsed(std::move(g), o);
  std::vector<TensorRef> in, out;
  // A graph that draws random numbers takes its state from --inputs, or seed --seed at offset 0.
  if (!compiled.inputs().empty() && compiled.inputs().back().random_state &&
      !find_tensor(inputs, compiled.inputs().back().name)) {
    HostTensor state = HostTensor::zeros(DType::I64, {2});
    int64_t seed = seed_option(p);
    std::memcpy(state.data.data(), &seed, sizeof seed);
    inputs.emplace_back(compiled.inputs().back().name, std::move(state));
  } else if (p.options.count("--seed")) {
    throw UserError("coil run: --seed is for graphs that draw random numbers (or whose --inputs lacks their state)");
  }
  for (const TensorInfo &t : compiled.inputs()) {
    HostTensor *h = const_cast<HostTensor *>(find_tensor(inputs, t.name));
    COIL_ASSERT(h, "input ", t.name, " passed the check but is missing");
    in.push_back({h->data.data(), t.dtype, h->sizes, {}, {}});
  }
  std::vector<HostTensor> outputs;
  for (const TensorInfo &t : compiled.outputs()) outputs.push_back(HostTensor::zeros(internal_dtype(t.dtype), t.sizes));
  for (size_t i = 0; i < outputs.size(); ++i)
    out.push_back({outputs[i].data.data(), compiled.outputs()[i].dtype, outputs[i].sizes, {}, {}});
  if (o.target == Target::Reference && options::get_bool("cpp.profile"))
    std::cerr << "coil run: cpp.profile times compiled kernels: use --device cpu\n";
  if (o.target != Target::Cuda && options::get_bool("triton.profile"))
    std::cerr << "coil run: triton.profile times the steps of a GPU graph: use --device cuda\n";
  compiled.run(in, out);
  if (bench > 0) {
    compiled.reset_profile();  // steady calls only: the first one's one-time work (threads, oneDNN primitives) dominates
    std::cout << "median " << compiled.median_seconds(in, out, bench) * 1e6 << " us per call over " << bench
              << " calls\n";
    for (const std::string &note : compiled.notes()) std::cout << note << "\n";
  }
  if ((o.target == Target::Cpu && options::get_bool("cpp.profile")) ||
      (o.target == Target::Cuda && options::get_bool("triton.profile")))
    std::cout << profile_table(compiled.profile());
  if (auto it = p.options.find("--save"); it != p.options.end()) {
    TensorList named;
    for (size_t i = 0; i < outputs.size(); ++i) named.emplace_back(output_tensor_name(i), outputs[i]);
    write_safetensors(it->second, named);
  }
  if (!p.options.count("--expect")) {
    for (size_t i = 0; i < outputs.size(); ++i) std::cout << output_tensor_name(i) << " " << outputs[i].describe() << "\n";
    return 0;
  }
  bool all_pass = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HostTensor &want = *find_tensor(expected, output_tensor_name(i));
    Tolerance tol = default_tolerance(want.dtype, compiled.outputs()[i].reduced_elements);
    tol.rtol = number_option(p, "--rtol", tol.rtol);
    tol.atol = number_option(p, "--atol", tol.atol);
    Comparison c = compare(outputs[i], want, tol);
    all_pass = all_pass && c.pass;
    std::cout << output_tensor_name(i) << " " << outputs[i].describe() << ": max abs error " << c.max_abs_error
              << ", max rel error " << c.max_rel_error << " (rtol " << tol.rtol << ", atol " << tol.atol << ") "
              << (c.pass ? "PASS" : "FAIL " + std::to_string(c.mismatches) + " mismatches, first " + c.first_mismatch)
              << "\n";
  }
  return all_pass ? 0 : 1;
}

int run_coverage(const std::vector<std::string> &args) {
  ParsedArgs p = parse_args("coverage", args, {});
  if (p.files.empty()) throw UserError("coil coverage: expected at least one fixture directory (see coil coverage --help)");
  Coverage coverage = coverage_of(p.files);
  std::cout << coverage_table(coverage);
  auto missing = uncovered_ops(coverage);
  for (const auto &op : missing) std::cerr << "coil coverage: no graph uses " << op << "\n";
  return missing.empty() ? 0 : 1;
}

}  // namespace

const std::vector<Command> &commands() {
  static const std::vector<Command> table = {
      {"check", "parse and verify graph files",
       "usage: coil check FILE... [--inputs IN.safetensors] [--expect OUT.safetensors]\n\n"
       "Parses each graph, checks every node's arguments against its op's schema and every\n"
       "annotation against the op's meta function. Prints one line per good file and the\n"
       "first error of each bad one as FILE:LINE:COL: error: MESSAGE.\n\n"
       "options:\n"
       "  --inputs F  also check that F holds every input of the graph with its dtype and sizes\n"
       "  --expect F  also check that F holds out0, out1, ... with the outputs' dtypes and sizes\n\n"
       "exit status: 0 when every file is good, 1 otherwise.\n",
       run_check},
      {"print", "print a graph in canonical form",
       "usage: coil print FILE\n\n"
       "Prints the graph as coil reads it: every annotation in full (dtype, sizes, strides,\n"
       "device), arguments equal to their defaults left out, no comments. The output parses\n"
       "back to the same graph.\n",
       run_print},
      {"info", "summarize a graph: inputs, outputs and ops",
       "usage: coil info FILE\n\n"
       "Lists the graph's inputs and outputs with their types, and each op with the number\n"
       "of nodes that call it.\n",
       run_info},
      {"run", "run a graph and compare its outputs with expected ones",
       "usage: coil run FILE --inputs IN.safetensors [--device ref|cpu|cuda [--interpret]] [--expect OUT.safetensors]\n"
       "                [--rtol R] [--atol A] [--save OUT.safetensors] [--set name=value]...\n\n"
       "Compiles the graph (see coil compile) and runs its kernels. Without --expect it prints each output's\n"
       "type; with it, each output's largest absolute and relative error and PASS or FAIL.\n\n"
       "options:\n"
       "  --device D  ref: the reference interpreter of the loop IR (naive, on the CPU)\n"
       "              cpu: generated C++ kernels, compiled and cached\n"
       "              cuda: generated Triton kernels on the GPU, launched through the CUDA driver\n"
       "  --interpret with --device cuda: run the Triton kernels under Triton's interpreter on the\n"
       "              CPU instead (torch CPU tensors; extern calls through torch)\n"
       "  --bench N   with --device cpu or cuda: also time N calls and print the median\n"
       "  --inputs F  one tensor per graph input, by name\n"
       "  --expect F  out0, out1, ... to compare with\n"
       "  --rtol R    relative tolerance (default: by dtype, scaled by sqrt(n) for reductions over n)\n"
       "  --atol A    absolute tolerance (default: likewise)\n"
       "  --save F    write the outputs as out0, out1, ...\n"
       "  --seed S    the seed of a graph that draws random numbers (default 0), unless --inputs\n"
       "              holds its state (coil.random_state: seed, offset)\n"
       "  --set N=V   override an option for this run (see coil config); --set cpp.profile=1 with\n"
       "              --device cpu (triton.profile=1 with --device cuda: each step's GPU time)\n"
       "              prints each kernel's calls and time, slowest first: of the first call, or\n"
       "              with --bench of the calls after it\n\n"
       "exit status: 0 when every output passes, 1 otherwise.\n",
       run_run},
      {"compile", "compile a graph into kernels and write each stage's dump", kCompileHelp, run_compile},
      {"config", "list coil's options with their values", kConfigHelp, run_config},
      {"cache", "show or clear coil's cache of compiled kernels", kCacheHelp, run_cache},
      {"coverage", "tabulate which registered ops the fixture graphs exercise",
       "usage: coil coverage DIR...\n\n"
       "Reads DIR/<case>/graph.py for every case and prints a markdown table with one row per\n"
       "registered op: the dtypes it is used with, whether a size-0 or size-1 dim, a\n"
       "non-contiguous input or a broadcast input occurs, and the number of graphs using it; then\n"
       "one row per op of the Core ATen opset: native, extern, refused (and why) or missing.\n\n"
       "exit status: 1 when a registered op appears in no graph (each is named on stderr).\n",
       run_coverage},
  };
  return table;
}

}  // namespace coil::tools
