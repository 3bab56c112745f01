// A graph compiled for the CPU, loaded: the shared library that driver/compile.h's
// build_for_cpu built, called on memory its caller lays out (CpuModule::Call: the one run
// path, which the public API's cpu target and the tests' run() take). The calling side of
// coil/artifact.h (runtime/include/coil/artifact.h). Tests: tests/unit/runtime_test.cpp,
// tests/unit/api_test.cpp, tests/unit/cpp_backend_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/host_tensor.h"
#include "runtime/loader.h"

struct coil_tensor_desc;
struct coil_kernel_profile;

namespace coil {

/// Copies the elements of a tensor of `sizes` from `src` (its element 0, laid out by
/// `src_strides`) to `dst` (by `dst_strides`), `itemsize` bytes each, in one walk over both
/// layouts; strides in elements. Allocates nothing.
void copy_strided(std::byte *dst, std::span<const int64_t> dst_strides, const std::byte *src,
                  std::span<const int64_t> src_strides, std::span<const int64_t> sizes, int64_t itemsize);

/// One kernel's row of a profiled module (coil_profile in coil/artifact.h).
struct KernelProfile {
  std::string name;     // kernel0
  std::string summary;  // what it computes: "pointwise over [64, 256]: add, relu"
  int64_t calls = 0;
  double seconds = 0;   // over every call
};

class CpuModule {
  struct Scratch;  // a thread's pointer arrays, staging and arena (cpu_module.cpp)
  static Scratch &thread_scratch();
  /// What a call needs of an input or output, worked out at load (at the sizes compiled
  /// for) or at a call's sizes into the thread's scratch, whose vectors keep their capacity.
  struct Layout {
    DType dtype = DType::F32;
    int64_t itemsize = 0;
    std::vector<int64_t> sizes, strides;      // the library's
    std::vector<int64_t> dense;               // contiguous strides: for callers that give none
    int64_t offset = 0;                       // storage_offset: element 0 within the allocation
    int64_t elements = 0;                     // storage_elements: what the allocation spans
    int32_t kind = 0;                         // outputs: coil_output_kind
    bool whole = false;                       // owned outputs: the view spans its whole allocation
    size_t staging = 0;                       // inputs and owned outputs: where in the staging its copy goes
  };
  /// A call's layouts: every input's and output's, the staging and the arena they need.
  struct Layouts {
    std::vector<Layout> in, out;
    size_t staging_bytes = 0;  // every staged copy of one call
    int64_t arena_bytes = 0;
  };

 public:
  /// Loads the library and gives it the option num_threads (read now, so that a malformed
  /// COIL_NUM_THREADS is a UserError before any kernel runs; 0 leaves the library to its
  /// default).
  explicit CpuModule(const std::string &so_path);

  /// The graph's inputs (graph inputs, then constants) and outputs as the library lays
  /// them out (coil/artifact.h).
  int num_inputs() const { return num_inputs_(); }
  int num_outputs() const { return num_outputs_(); }
  const coil_tensor_desc &input(int i) const { return *input_(i); }
  const coil_tensor_desc &output(int i) const { return *output_(i); }

  /// The graph's symbolic sizes, in the order a Call takes their values (coil_symbol), and
  /// the values compiled for; empty for a graph of static sizes.
  const std::vector<std::string> &symbols() const { return symbols_; }
  const std::vector<int64_t> &compiled_sizes() const { return compiled_sizes_; }
  /// For symbol i, the input and dim its value is read from; input -1 when none holds it.
  std::pair<int, int> symbol_source(size_t i) const { return sources_[i]; }
  /// Checks `sizes` (a value per symbol) against the graph's checks: a UserError naming the
  /// one they fail.
  void check_sizes(std::span<const int64_t> sizes) const;

  /// An output's layout at some sizes (coil_layout).
  struct OutputLayout {
    std::vector<int64_t> sizes, strides;
    int64_t storage_offset = 0, storage_elements = 0;
  };
  /// Every output's at `sizes`, checked first (check_sizes).
  std::vector<OutputLayout> outputs_at(std::span<const int64_t> sizes) const;

  /// One call on memory the caller lays out, the one way a module runs: give every input
  /// and output, then run(). A tensor with the library's strides (input(i), output(i)) is
  /// used in place; one of other strides is copied into staging before the call (inputs,
  /// and owned outputs whose view is not their whole allocation) or out of it after
  /// (outputs, views that alias included). The pointer arrays and the staging are the
  /// calling thread's and reused, sized from what the module worked out at load: a call
  /// allocates nothing once its thread has made one (the staging, once one had to copy).
  /// The arena of the graph's intermediates is the thread's too, shared by every module
  /// called on it and as large as the largest asked for (coil_run_in). One Call per thread
  /// at a time. A graph of symbolic sizes runs at `sizes` (a value per symbol, in the order
  /// of symbols(); empty: the sizes compiled for), its layouts worked out by the library
  /// for them; sizes that fail the graph's checks are a UserError naming the failing one.
  class Call {
   public:
    explicit Call(const CpuModule &m, std::span<const int64_t> sizes = {});
    ~Call();
    Call(const Call &) = delete;
    Call &operator=(const Call &) = delete;

    /// Input i at `data` (its element 0), `strides` in elements (empty: contiguous); dtype
    /// and sizes are the graph's at the call's sizes (the caller checked them: input_sizes).
    void input(int i, const void *data, std::span<const int64_t> strides);
    /// Output i likewise, written by run(); in place when the caller's allocation holds the
    /// library's (element 0 storage_offset elements into storage_elements; -1: unknown).
    void output(int i, void *data, std::span<const int64_t> strides, int64_t storage_offset = -1,
                int64_t storage_elements = -1);

    /// Copies in, calls the library, copies out. A UserError with the library's message
    /// when it fails.
    void run();
    /// run() with the library's call repeated `iterations` times after one to warm up (the
    /// copies made once): the median time of one call, in seconds.
    double median_seconds(int iterations);

    /// Input i, or output i (at its element 0, in the allocation its layout asks for), in
    /// the library's layout at this call's sizes: used in place.
    void input_as_laid_out(int i, const void *data);
    void output_as_laid_out(int i, void *data);

    /// The sizes of input i, or output i, at this call's sizes.
    std::span<const int64_t> input_sizes(int i) const;
    std::span<const int64_t> output_sizes(int i) const;

   private:
    void copy_in();
    void copy_out();
    void run_library();

    const CpuModule &m_;
    Scratch &s_;
    const Layouts *l_;  // the module's (at the sizes compiled for) or the scratch's
    std::span<const int64_t> sizes_;
  };

  /// Runs the graph on `inputs` (by name) and returns its outputs, dense row-major, through
  /// a Call. A UserError on a missing or mistyped input and on an error inside a kernel.
  std::vector<HostTensor> run(const TensorList &inputs) const;

  /// The median time of one call over `iterations` calls, in seconds (Call::median_seconds).
  double median_seconds(const TensorList &inputs, int iterations) const;

  /// Each kernel's calls and time since this module was made or reset_profile(), in call
  /// order; empty when the graph was compiled without cpp.profile (its library has no
  /// coil_profile). The library keeps the counts: calls through another module of it
  /// count too.
  std::vector<KernelProfile> profile() const;

  /// The most threads the library's kernels run on now: the option num_threads as it was
  /// when this module was made, else the library's default (coil/artifact.h).
  int num_threads() const;

  /// Starts profile() from zero: to leave out the first call's one-time work (OpenMP's
  /// threads, oneDNN's primitives).
  void reset_profile();

  /// The bytes of intermediates one call at the sizes compiled for needs (coil_arena_bytes).
  int64_t arena_bytes() const;
  /// The bytes of the calling thread's arena: the largest any module called on it asked
  /// for (rounded up to 64), 0 before its first call. Kept for the thread's life.
  static int64_t thread_arena_bytes();

 private:
  /// An input's or output's layout at the sizes compiled for, as its descriptor says.
  static Layout layout_of(const coil_tensor_desc &d);
  /// `l` finished from its dtype, sizes, strides, offset, elements and kind: its dense
  /// strides, whether it is whole, and its place in the staging (after staging_bytes).
  static void finish(Layout &l, size_t &staging_bytes);
  /// `into` made the layouts at `sizes` (coil_layout, coil_arena_bytes_at).
  void layouts_at(std::span<const int64_t> sizes, Layouts &into) const;
  /// coil_run_sized on the calling thread's arena; a UserError with the library's message
  /// when it fails.
  void call(const int64_t *sizes, void *const *inputs, void **outputs, void *arena) const;
  /// The sizes of a call on `inputs`, by name: each symbol from the input dim that holds it.
  std::vector<int64_t> sizes_of(const TensorList &inputs) const;
  std::vector<HostTensor> bind_named(Call &call, const TensorList &inputs) const;
  std::vector<KernelProfile> library_profile() const;

  SharedLibrary lib_;
  int (*num_inputs_)();
  int (*num_outputs_)();
  const coil_tensor_desc *(*input_)(int);
  const coil_tensor_desc *(*output_)(int);
  int (*run_)(const int64_t *, void *const *, void **, void *);  // coil_run_sized
  int32_t (*check_sizes_)(const int64_t *);
  const char *(*size_check_)(int32_t);
  int32_t (*layout_)(int32_t, int32_t, const int64_t *, int64_t *, int64_t *, int64_t *, int64_t *);
  int64_t (*arena_bytes_at_)(const int64_t *);
  const char *(*error_message_)(int);
  int32_t (*profile_)(coil_kernel_profile *, int32_t) = nullptr;  // optional
  int32_t (*set_num_threads_)(int32_t);
  int32_t (*num_threads_)();
  // What the library had counted before this module or the last reset: a library
  // dlclose'd may stay loaded (GCC's unique symbols keep it), counts and all.
  std::vector<KernelProfile> profile_baseline_;
  std::vector<std::string> symbols_;
  std::vector<int64_t> compiled_sizes_;
  std::vector<std::pair<int, int>> sources_;
  Layouts compiled_;  // at compiled_sizes_
};

}  // namespace coil
