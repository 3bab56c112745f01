#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <system_error>

namespace coil {

// Tensor bytes are copied verbatim between files and HostTensors, which hold host order.
static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swaps");

namespace {

// Headers are parsed into plain json, never ordered_json: ordered_json's vector-backed
// objects copy their values when they grow, and copying recurses through nesting the
// file controls. The header's key order is recorded separately while parsing.
using Json = nlohmann::json;
// Written headers come from our own tensors, so keeping insertion order is safe there.
using OrderedJson = nlohmann::ordered_json;

constexpr size_t kLengthFieldBytes = 8;
constexpr std::string_view kMetadataKey = "__metadata__";

[[noreturn]] void fail(const std::string &file, const std::string &message) {
  throw UserError(message, SourceLoc{file, 0, 0});
}

std::string errno_text(int err) { return std::generic_category().message(err); }

std::string join(const std::vector<int64_t> &values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += str_cat(i ? ", " : "", values[i]);
  return out + "]";
}

// ---------------------------------------------------------------------------
// Parsing

// One header entry after validation; offsets are relative to the data buffer.
struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Context for the checks of one file.
struct Reader {
  const std::string &file;
  uint64_t buffer_size;

  [[noreturn]] void fail_tensor(const std::string &name, const std::string &message) const {
    fail(file, str_cat("tensor '", name, "': ", message));
  }
};

uint64_t read_u64_le(const std::byte *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | std::to_integer<uint64_t>(p[i]);
  return v;
}

// What to call a JSON value in an error. Numbers are printed; containers are only
// named, since printing one recurses through its nesting, which is attacker-chosen.
std::string describe_json(const Json &j) {
  if (j.is_number()) return j.dump();
  if (j.is_null()) return "null";
  std::string type = j.type_name();
  bool vowel = type == "object" || type == "array";
  return str_cat(vowel ? "an " : "a ", type);
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest is
// what a user needs.
std::string strip_json_exception_id(const std::string &what) {
  size_t close = what.find("] ");
  return what.starts_with("[json.exception.") && close != std::string::npos
             ? what.substr(close + 2)
             : what;
}

// A parsed header and its top-level keys in file order.
struct Header {
  Json json;
  std::vector<std::string> keys;
};

// Records the top-level keys as the parser meets them. That is also where repeated
// keys are caught: nlohmann silently keeps only the last.
Header parse_header_json(const char *begin, const char *end, const std::string &file) {
  Header header;
  std::set<std::string> seen;
  std::optional<std::string> duplicate;
  auto on_event = [&](int depth, Json::parse_event_t event, Json &parsed) {
    if (depth == 1 && event == Json::parse_event_t::key && !duplicate) {
      const auto &key = parsed.get_ref<const std::string &>();
      if (seen.insert(key).second)
        header.keys.push_back(key);
      else
        duplicate = key;
    }
    return true;
  };
  try {
    header.json = Json::parse(begin, end, on_event);
  } catch (const Json::exception &e) {
    fail(file, "header is not valid JSON: " + strip_json_exception_id(e.what()));
  }
  if (!header.json.is_object())
    fail(file, "header must be a JSON object, not " + describe_json(header.json));
  if (duplicate) {
    if (*duplicate == kMetadataKey) fail(file, "__metadata__ appears more than once in the header");
    fail(file, str_cat("tensor '", *duplicate, "' appears more than once in the header"));
  }
  return header;
}

const Json &field(const Reader &r, const std::string &name, const Json &entry, const char *key) {
  auto it = entry.find(key);
  if (it == entry.end()) r.fail_tensor(name, str_cat("missing field '", key, "'"));
  return *it;
}

DType parse_dtype(const Reader &r, const std::string &name, const Json &j) {
  if (!j.is_string()) r.fail_tensor(name, "dtype must be a string, not " + describe_json(j));
  const auto &text = j.get_ref<const std::string &>();
  std::optional<DType> dtype = dtype_from_safetensors_name(text);
  if (!dtype) r.fail_tensor(name, str_cat("unknown dtype '", text, "'"));
  return *dtype;
}

// A non-negative integer that fits in int64, or nothing.
std::optional<int64_t> as_size(const Json &j) {
  if (j.is_number_unsigned()) {
    uint64_t v = j.get<uint64_t>();
    if (v <= uint64_t(INT64_MAX)) return int64_t(v);
  } else if (j.is_number_integer()) {
    int64_t v = j.get<int64_t>();
    if (v >= 0) return v;
  }
  return std::nullopt;
}

std::vector<int64_t> parse_shape(const Reader &r, const std::string &name, const Json &j) {
  if (!j.is_array()) r.fail_tensor(name, "shape must be an array, not " + describe_json(j));
  std::vector<int64_t> shape;
  for (size_t i = 0; i < j.size(); ++i) {
    std::optional<int64_t> size = as_size(j[i]);
    if (!size)
      r.fail_tensor(name, str_cat("shape entry ", i, " must be a non-negative 64-bit integer, not ",
                                  describe_json(j[i])));
    shape.push_back(*size);
  }
  return shape;
}

std::pair<uint64_t, uint64_t> parse_offsets(const Reader &r, const std::string &name,
                                            const Json &j) {
  bool ok = j.is_array() && j.size() == 2 && j[0].is_number_unsigned() && j[1].is_number_unsigned();
  if (!ok) r.fail_tensor(name, "data_offsets must be [begin, end] with non-negative integers");
  uint64_t begin = j[0].get<uint64_t>(), end = j[1].get<uint64_t>();
  if (end < begin)
    r.fail_tensor(name, str_cat("data_offsets [", begin, ", ", end, "] end before they begin"));
  if (end > r.buffer_size)
    r.fail_tensor(name, str_cat("data_offsets [", begin, ", ", end, "] exceed the data buffer of ",
                                r.buffer_size, " bytes"));
  return {begin, end};
}

// The byte count the shape needs; overflow is an error, not wrap-around.
uint64_t required_bytes(const Reader &r, const std::string &name, DType dtype,
                        const std::vector<int64_t> &shape) {
  std::optional<int64_t> numel = try_numel(shape);
  int64_t bytes = 0;
  if (!numel || __builtin_mul_overflow(*numel, int64_t{itemsize(dtype)}, &bytes))
    r.fail_tensor(name, str_cat("shape ", join(shape), " of ", safetensors_name(dtype),
                                " has more bytes than a 64-bit count can hold"));
  return uint64_t(bytes);
}

Entry parse_entry(const Reader &r, const std::string &name, const Json &j) {
  if (!j.is_object()) r.fail_tensor(name, "header entry must be an object, not " + describe_json(j));
  Entry e;
  e.name = name;
  e.dtype = parse_dtype(r, name, field(r, name, j, "dtype"));
  e.shape = parse_shape(r, name, field(r, name, j, "shape"));
  std::tie(e.begin, e.end) = parse_offsets(r, name, field(r, name, j, "data_offsets"));
  uint64_t needed = required_bytes(r, name, e.dtype, e.shape);
  if (needed != e.end - e.begin)
    r.fail_tensor(name, str_cat("shape ", join(e.shape), " of ", safetensors_name(e.dtype), " needs ",
                                needed, " bytes but data_offsets span ", e.end - e.begin));
  return e;
}

void check_metadata(const std::string &file, const Json &j) {
  if (!j.is_object()) fail(file, "__metadata__ must be an object, not " + describe_json(j));
  for (const auto &[key, value] : j.items())
    if (!value.is_string())
      fail(file, str_cat("__metadata__ entry '", key, "' must be a string, not ", describe_json(value)));
}

// Two tensors sharing bytes would alias after loading; the format forbids it.
void check_no_overlap(const std::string &file, const std::vector<Entry> &entries) {
  std::vector<const Entry *> sorted;
  for (const Entry &e : entries)
    if (e.begin < e.end) sorted.push_back(&e);  // empty tensors occupy no bytes
  std::sort(sorted.begin(), sorted.end(), [](const Entry *a, const Entry *b) {
    return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
  });
  const Entry *furthest = nullptr;  // of the tensors so far, the one ending last
  for (const Entry *e : sorted) {
    if (furthest && furthest->end > e->begin)
      fail(file, str_cat("tensors '", furthest->name, "' and '", e->name, "' overlap: data_offsets [",
                         furthest->begin, ", ", furthest->end, "] and [", e->begin, ", ", e->end, "]"));
    if (!furthest || e->end > furthest->end) furthest = e;
  }
}

// ---------------------------------------------------------------------------
// Files

// Closes a descriptor when the scope ends.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// The most bytes read from a pipe or a device; a regular file is read whole, at its size.
constexpr uint64_t kMaxStreamBytes = uint64_t(1) << 30;

std::vector<std::byte> read_file(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open: " + errno_text(errno));
  FdCloser closer{fd};
  std::vector<std::byte> bytes;
  // A regular file is read up to the size fstat gives; anything else (a pipe, a device
  // such as /dev/zero) up to kMaxStreamBytes, so that a stream without end is an error
  // instead of all of memory.
  struct stat st {};
  bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  uint64_t limit = regular ? uint64_t(st.st_size) : kMaxStreamBytes;
  if (regular) bytes.reserve(size_t(st.st_size));
  std::vector<std::byte> chunk(1 << 16);
  for (;;) {
    ssize_t got = ::read(fd, chunk.data(), chunk.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(path, "cannot read: " + errno_text(errno));
    if (got == 0) break;
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + got);
    if (bytes.size() > limit)
      fail(path, regular ? "grew while it was read" : str_cat("more than ", kMaxStreamBytes >> 30,
                                                                 " GiB from a stream that is not a regular file"));
  }
  return bytes;
}

void write_all(const std::string &path, int fd, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    ssize_t put = ::write(fd, bytes.data(), bytes.size());
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) fail(path, "cannot write: " + errno_text(errno));
    bytes = bytes.subspan(size_t(put));
  }
}

// A freshly created temporary file beside the destination, removed on destruction
// unless it was renamed into place.
class TempFile {
 public:
  explicit TempFile(const std::string &dest) : dest_(dest) {
    static std::atomic<unsigned> counter{0};
    // O_EXCL makes creation fail rather than reuse a name another writer (or a
    // crashed run) holds, in which case the next counter value is tried.
    for (int attempt = 0; attempt < 100; ++attempt) {
      name_ = str_cat(dest, ".tmp.", ::getpid(), ".", counter++);
      fd_ = ::open(name_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0 || errno != EEXIST) break;
    }
    if (fd_ < 0) fail(dest_, "cannot write: " + errno_text(errno));
  }
  TempFile(const TempFile &) = delete;
  TempFile &operator=(const TempFile &) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(name_.c_str());
  }

  int fd() const { return fd_; }

  // Makes the bytes durable, then atomically replaces the destination.
  void commit() {
    if (::fsync(fd_) != 0) fail(dest_, "cannot write: " + errno_text(errno));
    int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail(dest_, "cannot write: " + errno_text(errno));
    if (::rename(name_.c_str(), dest_.c_str()) != 0)
      fail(dest_, "cannot move the temporary file into place: " + errno_text(errno));
    committed_ = true;
  }

 private:
  std::string dest_;
  std::string name_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

TensorList parse_safetensors(const std::byte *data, size_t size, const std::string &filename) {
  if (size < kLengthFieldBytes)
    fail(filename, str_cat("file is ", size, " bytes, shorter than the 8-byte header length"));
  uint64_t header_size = read_u64_le(data);
  if (header_size > size)
    fail(filename, str_cat("header length ", header_size, " exceeds the file size ", size));
  if (header_size > size - kLengthFieldBytes)
    fail(filename, str_cat("header length ", header_size,
                           " plus the 8-byte length field exceeds the file size ", size));

  const char *header_text = reinterpret_cast<const char *>(data + kLengthFieldBytes);
  Header header = parse_header_json(header_text, header_text + header_size, filename);

  const std::byte *buffer = data + kLengthFieldBytes + header_size;
  Reader reader{filename, size - kLengthFieldBytes - header_size};
  std::vector<Entry> entries;
  for (const std::string &name : header.keys) {
    const Json &value = header.json.at(name);
    if (name == kMetadataKey)
      check_metadata(filename, value);
    else
      entries.push_back(parse_entry(reader, name, value));
  }
  check_no_overlap(filename, entries);

  TensorList tensors;
  tensors.reserve(entries.size());
  for (Entry &e : entries) {
    HostTensor t;
    t.dtype = e.dtype;
    t.sizes = std::move(e.shape);
    t.data = AlignedBuffer(e.end - e.begin);
    if (e.end > e.begin) std::memcpy(t.data.data(), buffer + e.begin, e.end - e.begin);
    tensors.emplace_back(std::move(e.name), std::move(t));
  }
  return tensors;
}

TensorList read_safetensors(const std::string &path) {
  std::vector<std::byte> bytes = read_file(path);
  return parse_safetensors(bytes.data(), bytes.size(), path);
}

std::vector<std::byte> serialize_safetensors(const TensorList &tensors,
                                             const std::map<std::string, std::string> &metadata) {
  OrderedJson header = OrderedJson::object();
  // The reference safetensors writer (which PyTorch uses) puts the metadata first and
  // pads with spaces; matching it makes our files byte-identical to PyTorch's.
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const auto &[name, t] : tensors) {
    if (name == kMetadataKey)
      throw UserError("the tensor name '__metadata__' is reserved for metadata");
    if (!names.insert(name).second)
      throw UserError(str_cat("tensor '", name, "' appears more than once"));
    COIL_ASSERT(t.data.size() == t.nbytes(), "tensor '", name, "' ", t.describe(), " holds ",
                t.data.size(), " bytes");
    uint64_t end = offset + t.data.size();
    header[name] = {{"dtype", safetensors_name(t.dtype)},
                    {"shape", t.sizes},
                    {"data_offsets", OrderedJson::array({offset, end})}};
    offset = end;
  }

  std::string text;
  try {
    text = header.dump();
  } catch (const OrderedJson::exception &) {
    throw UserError("tensor names and metadata must be valid UTF-8");
  }
  // Pad so the data buffer starts 8-byte aligned within the file.
  text.append((kLengthFieldBytes - text.size() % kLengthFieldBytes) % kLengthFieldBytes, ' ');

  std::vector<std::byte> out(kLengthFieldBytes + text.size() + offset);
  uint64_t length = text.size();
  for (size_t i = 0; i < kLengthFieldBytes; ++i) out[i] = std::byte(length >> (8 * i));
  std::memcpy(out.data() + kLengthFieldBytes, text.data(), text.size());
  std::byte *cursor = out.data() + kLengthFieldBytes + text.size();
  for (const auto &[name, t] : tensors) {
    if (t.data.size() > 0) std::memcpy(cursor, t.data.data(), t.data.size());
    cursor += t.data.size();
  }
  return out;
}

void write_safetensors(const std::string &path, const TensorList &tensors,
                       const std::map<std::string, std::string> &metadata) {
  std::vector<std::byte> bytes;
  try {
    bytes = serialize_safetensors(tensors, metadata);
  } catch (const UserError &e) {
    fail(path, e.message());
  }
  TempFile temp(path);
  write_all(path, temp.fd(), bytes);
  temp.commit();
}

}  // namespace coil
