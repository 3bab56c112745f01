// Loading a compiled artifact: a shared object opened with dlopen, closed when the last
// owner goes. Link with -ldl on glibc before 2.34 (later ones have dlopen in libc).
// Tests: tests/unit/runtime_test.cpp.
#pragma once

#include <string>
#include <type_traits>

namespace coil {

/// An open shared object (RTLD_NOW | RTLD_LOCAL: every symbol resolved at load, none
/// visible to other libraries). Movable, not copyable; a moved-from one holds nothing.
class SharedLibrary {
 public:
  /// Opens `path`; a UserError with dlerror()'s text when it cannot be loaded.
  explicit SharedLibrary(const std::string &path);
  ~SharedLibrary();
  SharedLibrary(SharedLibrary &&other) noexcept;
  SharedLibrary &operator=(SharedLibrary &&other) noexcept;
  SharedLibrary(const SharedLibrary &) = delete;
  SharedLibrary &operator=(const SharedLibrary &) = delete;

  /// The function `name` as a pointer of type F: `lib.symbol<int (*)()>("answer")`.
  /// A UserError when the library has no such symbol.
  template <class F>
  F symbol(const char *name) const {
    static_assert(std::is_pointer_v<F> && std::is_function_v<std::remove_pointer_t<F>>,
                  "SharedLibrary::symbol<F> needs a function pointer type");
    return reinterpret_cast<F>(address_of(name));
  }

  /// Like symbol(), but null when the library has no such symbol: an optional entry point.
  template <class F>
  F optional_symbol(const char *name) const {
    static_assert(std::is_pointer_v<F> && std::is_function_v<std::remove_pointer_t<F>>,
                  "SharedLibrary::optional_symbol<F> needs a function pointer type");
    return reinterpret_cast<F>(find_address(name));
  }

  /// The address of the symbol `name`; a UserError when there is none.
  void *address_of(const char *name) const;

  /// The address of the symbol `name`, or null when there is none.
  void *find_address(const char *name) const;

  const std::string &path() const { return path_; }

 private:
  void close();

  void *handle_ = nullptr;
  std::string path_;
};

}  // namespace coil
