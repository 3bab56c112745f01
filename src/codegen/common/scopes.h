// The values a kernel emitter has named, scope by scope, shared by both dialects: each
// value is computed once per scope (a right-hand side an enclosing scope computed is
// reused: CSE), and an element of an internal buffer that a member computed is passed as
// that value to the members that read it (forwarding, by element_key of access.h) instead
// of going through memory.
// A dialect's value is a C++ tmp's name, or a Triton tmp with the block axes it varies along.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/kernel.h"
#include "support/error.h"

namespace coil::codegen {

template <typename V>
class ValueScopes {
 public:
  void push() { scopes_.emplace_back(); }
  void pop() { scopes_.pop_back(); }
  void clear() { scopes_.clear(); }

  /// The innermost scope: a mark that forward() takes to reach back to it.
  size_t innermost() const {
    COIL_ASSERT(!scopes_.empty(), "no scope is open");
    return scopes_.size() - 1;
  }

  /// The value computed from `rhs` in this scope or an enclosing one.
  const V *find(const std::string &rhs) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->values.find(rhs); f != it->values.end()) return &f->second;
    return nullptr;
  }

  /// `v` holds `rhs` from here to the end of the innermost scope.
  void remember(const std::string &rhs, V v) { scopes_.at(innermost()).values[rhs] = std::move(v); }

  /// The element `key` names, as a member of this scope or an enclosing one computed it.
  std::optional<V> forwarded(const std::string &key) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->forwarded.find(key); f != it->forwarded.end()) return f->second;
    return std::nullopt;
  }

  /// The element `key` names is `v` in scope `scope` (by default the innermost) and the
  /// scopes it holds.
  void forward(const std::string &key, V v) { forward(key, std::move(v), innermost()); }
  void forward(const std::string &key, V v, size_t scope) { scopes_.at(scope).forwarded[key] = std::move(v); }

 private:
  struct Scope {
    std::map<std::string, V> values;     // right-hand side -> the value holding it
    std::map<std::string, V> forwarded;  // element key -> the element's value
  };
  std::vector<Scope> scopes_;
};

}  // namespace coil::codegen
