// Questions asked of small vectors (a kernel's buffers, a group's members).
#pragma once

#include <algorithm>
#include <vector>

namespace coil {

/// Whether `v` holds `x`: a linear search, for the short lists it is used on.
template <typename T>
bool contains(const std::vector<T> &v, const T &x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace coil
