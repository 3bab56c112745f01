// What every GPU check program shares: one PASS or FAIL line per check, and the count of
// failures main() returns by (scripts/gpu_check.sh reads the lines).
#pragma once

#include <cstdio>
#include <exception>
#include <functional>
#include <string>

namespace coil {

inline int failures = 0;

inline void report(const std::string &name, bool ok, const std::string &detail = "") {
  std::printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name.c_str(), detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

// Runs one check; an exception is its failure, not the end of the program.
inline void run_check(const std::string &name, const std::function<std::string()> &check) {
  try {
    std::string problem = check();
    report(name, problem.empty(), problem);
  } catch (const std::exception &e) {
    report(name, false, e.what());
  }
}

}  // namespace coil
