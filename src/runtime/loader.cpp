#include "runtime/loader.h"

#include <dlfcn.h>

#include <utility>

#include "support/error.h"

namespace coil {
namespace {

std::string last_dl_error() {
  const char *text = ::dlerror();
  return text ? text : "unknown dlopen error";
}

}  // namespace

SharedLibrary::SharedLibrary(const std::string &path) : path_(path) {
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw UserError(str_cat("cannot load ", path, ": ", last_dl_error()));
}

SharedLibrary::~SharedLibrary() { close(); }

SharedLibrary::SharedLibrary(SharedLibrary &&other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

SharedLibrary &SharedLibrary::operator=(SharedLibrary &&other) noexcept {
  if (this == &other) return *this;
  close();
  handle_ = std::exchange(other.handle_, nullptr);
  path_ = std::move(other.path_);
  return *this;
}

void *SharedLibrary::address_of(const char *name) const {
  COIL_ASSERT(handle_, "symbol '", name, "' asked of a moved-from SharedLibrary");
  ::dlerror();  // clear an older error: a symbol's value may legitimately be null
  void *address = ::dlsym(handle_, name);
  if (const char *error = ::dlerror())
    throw UserError(str_cat("cannot find '", name, "' in ", path_, ": ", error));
  if (!address) throw UserError(str_cat("'", name, "' in ", path_, " is null"));
  return address;
}

void *SharedLibrary::find_address(const char *name) const {
  COIL_ASSERT(handle_, "symbol '", name, "' asked of a moved-from SharedLibrary");
  return ::dlsym(handle_, name);
}

void SharedLibrary::close() {
  if (handle_) ::dlclose(handle_);
  handle_ = nullptr;
}

}  // namespace coil
