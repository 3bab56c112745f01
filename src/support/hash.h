// Combining hashes: the one mixer behind every structural hash (index expressions, loop
// bodies).
#pragma once

#include <cstddef>

namespace coil {

/// boost::hash_combine over a splitmix64 finalizer of v: cheap and well spread.
inline size_t hash_mix(size_t h, size_t v) {
  v += 0x9e3779b97f4a7c15ull;
  v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ull;
  v = (v ^ (v >> 27)) * 0x94d049bb133111ebull;
  v ^= v >> 31;
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

}  // namespace coil
