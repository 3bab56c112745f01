#include "runtime/library_loader.h"

#include <cstdlib>

#include "support/error.h"

namespace coil::cuda {

void *open_first(const std::vector<std::string> &names, std::string &why) {
  std::vector<std::string> tried;
  for (const std::string &name : names) {
    if (void *lib = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    const char *error = ::dlerror();
    tried.push_back(error ? error : name + ": unknown reason");
  }
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    for (const std::string &name : names)
      if (void *lib = ::dlopen(str_cat(home, "/lib64/", name).c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
  std::string list;
  for (size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  why = str_cat(list, " cannot be loaded (", tried.empty() ? "" : tried.front(), ")");
  return nullptr;
}

}  // namespace coil::cuda
