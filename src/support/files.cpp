#include "support/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <system_error>
#include <utility>

#include "support/error.h"

namespace coil {
namespace {

// The reason for `err`, which the caller read from errno right after the failing call:
// anything called in between (a destructor, a stream) may change errno.
std::string reason(int err) { return std::generic_category().message(err); }

[[noreturn]] void fail(const std::string &file, const std::string &what, int err) {
  throw UserError(str_cat(what, ": ", reason(err)), SourceLoc{file, 0, 0});
}

// Closes a descriptor when the scope ends.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_file(const std::string &path, uint64_t stream_limit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open", errno);
  FdCloser closer{fd};
  std::string bytes;
  // The size from fstat only saves reallocations; what read() returns is what counts.
  struct stat st {};
  bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (regular && st.st_size > 0) bytes.reserve(size_t(st.st_size));
  char chunk[1 << 16];
  for (;;) {
    ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(path, "cannot read", errno);
    if (got == 0) break;
    bytes.append(chunk, size_t(got));
    if (!regular && bytes.size() > stream_limit)
      throw UserError(str_cat("more than ", stream_limit >> 20, " MiB from a stream that is not a regular file"),
                      SourceLoc{path, 0, 0});
  }
  return bytes;
}

AtomicFile::AtomicFile(std::string dest) : dest_(std::move(dest)) {
  static std::atomic<unsigned> counter{0};
  // O_EXCL makes creation fail rather than reuse a name another writer (or a crashed
  // run) holds, in which case the next counter value is tried.
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp_ = str_cat(dest_, ".tmp.", ::getpid(), ".", counter++);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0 || errno != EEXIST) break;
  }
  if (fd_ < 0) fail(dest_, "cannot write", errno);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFile::write(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    ssize_t put = ::write(fd_, bytes.data(), bytes.size());
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) fail(dest_, "cannot write", errno);
    bytes = bytes.subspan(size_t(put));
  }
}

void AtomicFile::write(std::string_view text) { write(std::as_bytes(std::span(text.data(), text.size()))); }

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail(dest_, "cannot write", errno);
  int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail(dest_, "cannot write", errno);
  if (::rename(temp_.c_str(), dest_.c_str()) != 0) fail(dest_, "cannot move the temporary file into place", errno);
  committed_ = true;
}

void write_file_atomically(const std::string &path, std::string_view text) {
  AtomicFile file(path);
  file.write(text);
  file.commit();
}

}  // namespace coil
