/* The contract of a graph compiled by coil for the CPU (DESIGN.md, decision 12).
 *
 * A compiled graph is a shared library exporting the functions below. Tensors are
 * strided, in elements; a tensor's allocation starts at the pointer passed and element 0
 * of the tensor is `storage_offset` elements further.
 *
 * Inputs: inputs[i] points at the allocation of input i (graph inputs, then constants,
 * in graph order), laid out as coil_input(i) says (dtype, sizes, strides). coil never
 * writes to an input.
 *
 * Outputs: for each i, coil_output(i) says who provides the memory:
 *   COIL_OUTPUT_OWNED           the caller allocates storage_elements elements (aligned
 *                               to the dtype at least; 64 bytes is best) and passes the
 *                               pointer in outputs[i]; coil writes every element of the
 *                               view and nothing outside the allocation.
 *   COIL_OUTPUT_ALIASES_INPUT   the output is a view of input alias_index (as PyTorch
 *                               returns views): coil_run sets outputs[i] to that input's
 *                               pointer; the caller allocates nothing.
 *   COIL_OUTPUT_ALIASES_OUTPUT  the output is a view of output alias_index's allocation:
 *                               coil_run sets outputs[i] to that output's pointer.
 * Intermediates live in an arena of coil_arena_bytes() bytes: coil_run takes one of the
 * module's own (one per concurrent call, allocated on first use and reused: no allocation
 * per call in steady state); coil_run_in(inputs, outputs, arena) uses the caller's, at
 * least coil_arena_bytes() bytes aligned to 64 that no other call uses meanwhile (NULL:
 * one of the module's own, as coil_run). A caller running several graphs one after the
 * other (a training step's forward and backward) may give them all one arena, of the
 * largest size.
 *
 * Symbolic sizes: a graph traced with symbolic sizes (`f32[s0, 768]`) has
 * coil_num_symbols() symbols; coil_symbol(i) names symbol i, the input dim its value can be
 * read from (input -1 when no input dim is the symbol alone) and the value it was compiled
 * for. coil_run_sized(sizes, ...) runs the graph at the sizes `sizes[i]` (symbol i; NULL
 * for a graph of none): coil_layout(output, i, sizes, ...) gives each input's and output's
 * sizes, strides and allocation at those sizes (the descriptors above give them at the
 * sizes compiled for; dims and strides are arrays of the tensor's rank; it returns COIL_OK,
 * or COIL_ERROR_NULL_POINTER for no such tensor), coil_arena_bytes_at(sizes) the bytes of
 * the arena a call needs (a caller's arena passed to coil_run_sized holds that many). A compiled graph
 * serves the sizes that pass its checks (each symbol's range, then what its code relies
 * on, such as a size it was specialized to): coil_check_sizes(sizes) returns -1 when they
 * pass, else the first check that fails, which coil_size_check(g) states in words
 * ("s0 >= 2 (the range of s0 that the compiled code assumes)"); coil_run_sized returns
 * COIL_ERROR_SIZES for them without running anything. coil_run and coil_run_in run at the
 * sizes compiled for.
 *
 * Errors: coil_run returns COIL_OK or an error code; coil_error_message(code) says what
 * it means. An error inside a kernel (an integer division by zero, an index read from
 * data that is out of range) leaves outputs unspecified.
 *
 * Threads: concurrent coil_run calls on one loaded module are safe (each takes its own
 * arena). Each call runs its kernels on at most coil_num_threads() threads: the count
 * last given to coil_set_num_threads(n) (n >= 1, at most 256; n <= 0 forgets it), else
 * COIL_NUM_THREADS, else OMP_NUM_THREADS (its first count), else one per processor. A
 * variable that is not a whole number is not used, and said once on stderr. Both
 * functions concern this library only and return the count now in force; the count
 * applies to the calls that start after it is set.
 *
 * Profiling (optional: only a graph compiled with the option cpp.profile exports
 * coil_profile; look it up with dlsym): coil_run times each kernel call with a steady
 * clock. coil_profile(rows, capacity) copies the first min(n, capacity) of the n kernels'
 * rows, in the order coil_run calls them, and returns n; rows may be NULL when capacity
 * is 0. A row counts every call from every thread since the library was loaded (opening
 * it twice in one process shares the counts); read while other threads run the graph,
 * its calls and total_ns may be one call apart. The strings live as long as the library. */
#ifndef COIL_ARTIFACT_H
#define COIL_ARTIFACT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COIL_ABI_VERSION 3

enum coil_dtype {
  COIL_F64 = 0, COIL_F32 = 1, COIL_F16 = 2, COIL_BF16 = 3,
  COIL_I64 = 4, COIL_I32 = 5, COIL_I16 = 6, COIL_I8 = 7, COIL_U8 = 8, COIL_BOOL = 9
};

enum coil_output_kind { COIL_OUTPUT_OWNED = 0, COIL_OUTPUT_ALIASES_INPUT = 1, COIL_OUTPUT_ALIASES_OUTPUT = 2 };

enum coil_status {
  COIL_OK = 0,
  COIL_ERROR_NULL_POINTER = 1,       /* an input or owned output pointer is NULL */
  COIL_ERROR_OUT_OF_MEMORY = 2,      /* the arena could not be allocated */
  COIL_ERROR_DIVISION_BY_ZERO = 3,   /* integer division or remainder by zero */
  COIL_ERROR_INDEX_OUT_OF_RANGE = 4, /* an index read from data is out of range */
  COIL_ERROR_SIZES = 5               /* the sizes fail a check (coil_check_sizes) */
};

typedef struct coil_tensor_desc {
  const char *name;
  int32_t dtype; /* enum coil_dtype */
  int32_t rank;
  const int64_t *sizes;
  const int64_t *strides;
  int64_t storage_offset;
  int64_t storage_elements; /* elements the allocation spans */
  int32_t kind;             /* outputs: enum coil_output_kind; inputs: 0 */
  int32_t alias_index;      /* outputs that alias: the input or output they view */
} coil_tensor_desc;

/* One symbolic size of the graph (coil_symbol). */
typedef struct coil_symbol_desc {
  const char *name;  /* as the graph names it: "s0" */
  int32_t input;     /* an input with a dim of exactly this size, or -1 */
  int32_t dim;       /* that dim */
  int64_t compiled;  /* the value compiled for: the descriptors' sizes */
} coil_symbol_desc;

/* One kernel's row of coil_profile. */
typedef struct coil_kernel_profile {
  const char *name;    /* the kernel's function in the generated source: kernel0, kernel1, ... */
  const char *summary; /* what it computes: "pointwise over [64, 256]: add, relu" */
  int64_t calls;
  int64_t total_ns;    /* summed over every call */
} coil_kernel_profile;

int32_t coil_abi_version(void);
int32_t coil_num_inputs(void);
int32_t coil_num_outputs(void);
const coil_tensor_desc *coil_input(int32_t i);
const coil_tensor_desc *coil_output(int32_t i);
int64_t coil_arena_bytes(void);
int32_t coil_run(void *const *inputs, void **outputs);
int32_t coil_run_in(void *const *inputs, void **outputs, void *arena);
int32_t coil_num_symbols(void);
const coil_symbol_desc *coil_symbol(int32_t i);
int32_t coil_check_sizes(const int64_t *sizes);
const char *coil_size_check(int32_t g);
int32_t coil_layout(int32_t output, int32_t i, const int64_t *sizes, int64_t *dims, int64_t *strides,
                    int64_t *storage_offset, int64_t *storage_elements);
int64_t coil_arena_bytes_at(const int64_t *sizes);
int32_t coil_run_sized(const int64_t *sizes, void *const *inputs, void **outputs, void *arena);
const char *coil_error_message(int32_t status);
int32_t coil_profile(coil_kernel_profile *rows, int32_t capacity); /* optional: see above */
int32_t coil_set_num_threads(int32_t n);
int32_t coil_num_threads(void);

#ifdef __cplusplus
}
#endif

#endif
