// The subcommands of the `coil` command line. Each is one entry in kCommands
// (commands.cpp): a name, one line of summary, its help text and the function that runs it.
#pragma once

#include <string>
#include <vector>

namespace coil::tools {

struct Command {
  const char *name;
  const char *summary;
  const char *help;  // usage and options, printed by `coil NAME --help`
  int (*run)(const std::vector<std::string> &args);
};

const std::vector<Command> &commands();

}  // namespace coil::tools
