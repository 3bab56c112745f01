// Whole files read and written with errors for people: each error names the file the
// user gave and the reason the failing system call returned (its errno, read right
// after it), and a written file is whole or absent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace coil {

/// The bytes of the file at `path`: a regular file whole, anything else (a pipe, a device
/// such as /dev/zero) up to `stream_limit` bytes, so that a stream without end is an error
/// instead of all of memory. Throws a UserError placed at `path`: `cannot open: REASON`,
/// `cannot read: REASON` (a directory opens, then reads as "Is a directory"), or `more
/// than N MiB from a stream that is not a regular file`.
std::string read_file(const std::string &path, uint64_t stream_limit = uint64_t(1) << 30);

/// A temporary file created beside `dest` (its name never used before, O_EXCL), renamed
/// onto `dest` by commit() and removed if commit() is never reached. Every error names
/// `dest`, not the temporary file.
class AtomicFile {
 public:
  explicit AtomicFile(std::string dest);
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;
  ~AtomicFile();

  void write(std::span<const std::byte> bytes);
  void write(std::string_view text);
  /// Makes the bytes durable, then atomically replaces `dest`.
  void commit();

 private:
  std::string dest_;
  std::string temp_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Writes `text` to `path` through an AtomicFile.
void write_file_atomically(const std::string &path, std::string_view text);

}  // namespace coil
