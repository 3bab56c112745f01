// coil: the command line. `coil --help` lists the commands; `coil CMD --help` explains one.
#include <iostream>

#include "coil/coil.h"
#include "support/error.h"
#include "tools/commands.h"

namespace {

void print_usage(std::ostream &os) {
  os << "usage: coil <command> [options]\n\n"
        "coil compiles graphs of ATen operators, as PyTorch prints them, into fused kernels.\n\n"
        "commands:\n";
  for (const auto &c : coil::tools::commands()) os << "  " << c.name << std::string(10 - std::string(c.name).size(), ' ') << c.summary << "\n";
  os << "\nRun 'coil <command> --help' for the options of one command.\n";
}

int dispatch(int argc, char **argv) {
  if (argc < 2) {
    print_usage(std::cerr);
    return 1;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(std::cout);
    return 0;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const auto &c : coil::tools::commands()) {
    if (name != c.name) continue;
    for (const auto &a : args) {
      if (a == "--help" || a == "-h") {
        std::cout << c.help;
        return 0;
      }
    }
    return c.run(args);
  }
  std::cerr << "coil: unknown command '" << name << "'\n\n";
  print_usage(std::cerr);
  return 1;
}

}  // namespace

int main(int argc, char **argv) {
  try {
    return dispatch(argc, argv);
  } catch (const coil::UserError &e) {
    std::cerr << e.render() << "\n";
    return 1;
  } catch (const coil::InternalError &e) {
    std::cerr << "coil: " << e.what() << "\n";
    return 2;
  } catch (const coil::Error &e) {  // through the public API (include/coil/coil.h)
    bool input = e.kind() == coil::Error::Kind::Input;
    std::cerr << (input ? "" : "coil: ") << e.what() << "\n";
    return input ? 1 : 2;
  } catch (const std::exception &e) {
    std::cerr << "coil: internal error: " << e.what() << "\n";
    return 2;
  }
}
