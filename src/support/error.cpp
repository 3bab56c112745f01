#include "support/error.h"

namespace coil {

std::string UserError::render() const {
  // An error of the command line or the environment has no file: it is coil's to report.
  if (loc_.file.empty() && loc_.line == 0) return "coil: error: " + message_;
  std::string where = loc_.file.empty() ? std::string("<input>") : loc_.file;
  if (loc_.line > 0) where += str_cat(":", loc_.line, ":", loc_.col > 0 ? loc_.col : 1);
  return where + ": error: " + message_;
}

void throw_internal(const char *file, int line, const std::string &message) {
  throw InternalError(str_cat(file, ":", line, ": ", message));
}

}  // namespace coil
