#include "tools/commands.h"

#include <iostream>
#include <map>

#include "frontend/parser.h"
#include "frontend/printer.h"
#include "graph/registry.h"
#include "io/graph_tensors.h"
#include "io/safetensors.h"

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
    Graph g = frontend::parse_graph_file(file);
    if (auto it = p.options.find("--inputs"); it != p.options.end())
      check_graph_inputs(g, read_safetensors(it->second), it->second);
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
  };
  return table;
}

}  // namespace coil::tools
