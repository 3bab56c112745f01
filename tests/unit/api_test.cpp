// The public API (include/coil/coil.h) as a user of it sees it: compile a graph for a
// target, run it on the caller's tensors of any strides (copied in and out, or used in
// place with no allocation), options that hold for one compilation only, and the errors a
// caller gets. The reference is the examples' expected.safetensors (eager PyTorch) and, for
// views, values computed here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <new>
#include <thread>

#include "coil/coil.h"
#include "io/compare.h"
#include "io/safetensors.h"
#include "support/options.h"
#include "test_util.h"

// Every operator new of this test binary counts, per thread, so that a test can say that a
// call allocated nothing (allocations_of). malloc and free underneath, as the default ones.
// Not under AddressSanitizer, whose own operator new and delete check every pairing in the
// whole binary: there the counting tests skip (the g++ run has them).
#ifdef COIL_ASAN
#define COIL_COUNTS_ALLOCATIONS 0
#else
#define COIL_COUNTS_ALLOCATIONS 1
#endif

#if COIL_COUNTS_ALLOCATIONS
namespace {
thread_local int64_t allocations = 0;

void *counted(std::size_t n, std::size_t alignment) {
  ++allocations;
  n = n ? n : 1;
  void *p = alignment <= alignof(std::max_align_t) ? std::malloc(n)
                                                   : std::aligned_alloc(alignment, (n + alignment - 1) / alignment * alignment);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

void *operator new(std::size_t n) { return counted(n, 0); }
void *operator new[](std::size_t n) { return counted(n, 0); }
void *operator new(std::size_t n, std::align_val_t a) { return counted(n, std::size_t(a)); }
void *operator new[](std::size_t n, std::align_val_t a) { return counted(n, std::size_t(a)); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#endif

namespace coil {
namespace {

// How many times `fn` called operator new on this thread (0 where allocations are not
// counted: callers skip there).
int64_t allocations_of(const std::function<void()> &fn) {
#if COIL_COUNTS_ALLOCATIONS
  int64_t before = allocations;
  fn();
  return allocations - before;
#else
  fn();
  return 0;
#endif
}

std::string example(const std::string &name) { return (test::source_dir() / "examples" / name).string(); }

// A caller's tensor of floats: values and a layout.
struct Floats {
  std::vector<float> data;
  std::vector<int64_t> sizes, strides;
  TensorRef ref() { return {data.data(), ScalarType::Float32, sizes, strides, {}}; }
};

// The example's inputs, each passed as the tensors of the safetensors file (dense).
std::vector<TensorRef> example_inputs(const CompiledGraph &g, TensorList &tensors) {
  std::vector<TensorRef> in;
  for (const TensorInfo &t : g.inputs()) {
    HostTensor *h = nullptr;
    for (auto &[name, tensor] : tensors)
      if (name == t.name) h = &tensor;
    EXPECT_TRUE(h) << t.name;
    in.push_back({h->data.data(), t.dtype, h->sizes, {}, {}});
  }
  return in;
}

// Compiles examples/NAME for `target`, runs it, and checks every output against eager's.
void expect_example_matches_eager(const std::string &name, Target target) {
  CompileOptions o;
  o.target = target;
  CompiledGraph g = compile_file(example(name) + "/graph.py", o);
  EXPECT_EQ(g.target(), target);
  TensorList inputs = read_safetensors(example(name) + "/inputs.safetensors");
  TensorList expected = read_safetensors(example(name) + "/expected.safetensors");
  std::vector<TensorRef> in = example_inputs(g, inputs);
  std::vector<HostTensor> results;
  std::vector<TensorRef> out;
  for (const TensorInfo &t : g.outputs()) results.push_back(HostTensor::zeros(expected.at(results.size()).second.dtype, t.sizes));
  for (size_t i = 0; i < results.size(); ++i) out.push_back({results[i].data.data(), g.outputs()[i].dtype, results[i].sizes, {}, {}});
  g.run(in, out);
  for (size_t i = 0; i < results.size(); ++i) {
    const HostTensor &want = expected.at(i).second;
    Comparison c = compare(results[i], want, default_tolerance(want.dtype, g.outputs()[i].reduced_elements));
    EXPECT_TRUE(c.pass) << name << " on " << target_name(target) << " output " << i << ": " << c.first_mismatch;
  }
}

TEST(Api, ExamplesMatchEagerOnEveryHostTarget) {
  for (const char *name : {"softmax_lastdim", "layernorm", "transpose_add", "var_mean_lastdim"}) {
    expect_example_matches_eager(name, Target::Cpu);
    expect_example_matches_eager(name, Target::Reference);
  }
}

TEST(Api, TheTritonDialectUnderTheInterpreter) {
  expect_example_matches_eager("softmax_lastdim", Target::CudaInterpreter);
}

// Scalars JSON has no spelling for (an infinite alpha, a NaN beta) reach the Triton host
// program's interpreter intact (written as %.17g they made its JSON unreadable). How a GEMM
// scales by inf is the library's: eager's gives NaN where inf * 0 meets the sum, so this
// checks only that every element comes out non-finite.
TEST(Api, NonFiniteScalarsReachTheTritonHostProgram) {
  const char *text = R"(class GraphModule(torch.nn.Module):
    def forward(self, c: "f32[2, 3][3, 1]cpu", a: "f32[2, 2][2, 1]cpu", b: "f32[2, 3][3, 1]cpu"):
        addmm: "f32[2, 3][3, 1]cpu" = torch.ops.aten.addmm.default(c, a, b, beta = 1, alpha = inf)
        addmm_1: "f32[2, 3][3, 1]cpu" = torch.ops.aten.addmm.default(c, a, b, beta = nan, alpha = -inf)
        return (addmm, addmm_1)
)";
  Floats c{{1, 2, 3, 4, 5, 6}, {2, 3}, {}}, a{{1, 0, 0, -1}, {2, 2}, {}}, b{{1, 0, -2, 3, 0, 1}, {2, 3}, {}};
  std::vector<TensorRef> in = {c.ref(), a.ref(), b.ref()};
  CompiledGraph g = compile(text, {Target::CudaInterpreter, {}, ""}, "non_finite.py");
  Floats x{std::vector<float>(6), {2, 3}, {}}, y{std::vector<float>(6), {2, 3}, {}};
  std::vector<TensorRef> out = {x.ref(), y.ref()};
  g.run(in, out);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_FALSE(std::isfinite(x.data[i])) << "addmm " << i << ": " << x.data[i];
    EXPECT_FALSE(std::isfinite(y.data[i])) << "addmm_1 " << i << ": " << y.data[i];
  }
}

// neg flips the sign of zeros in the Triton dialect too (Triton's own unary minus is 0 - x).
TEST(Api, NegationFlipsTheSignOfZeroInTriton) {
  const char *text = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4][1]cpu"):
        neg: "f32[4][1]cpu" = torch.ops.aten.neg.default(x)
        return (neg,)
)";
  Floats x{{0.0f, -0.0f, 1.5f, -2.0f}, {4}, {}};
  std::vector<TensorRef> in = {x.ref()};
  for (Target target : {Target::Reference, Target::Cpu, Target::CudaInterpreter}) {
    CompiledGraph g = compile(text, {target, {}, ""}, "neg.py");
    Floats y{std::vector<float>(4, NAN), {4}, {}};
    std::vector<TensorRef> out = {y.ref()};
    g.run(in, out);
    EXPECT_TRUE(y.data[0] == 0 && std::signbit(y.data[0])) << target_name(target) << ": -(+0) is " << y.data[0];
    EXPECT_TRUE(y.data[1] == 0 && !std::signbit(y.data[1])) << target_name(target) << ": -(-0) is " << y.data[1];
    EXPECT_EQ(y.data[2], -1.5f) << target_name(target);
    EXPECT_EQ(y.data[3], 2.0f) << target_name(target);
  }
}

// x of 4x6 read through any strides; outputs: a view of the input (aliases it) and a
// slice of a computed buffer (written at an offset of its allocation), each written into
// tensors of the caller's own layouts.
const char *kViews = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 6][6, 1]cpu"):
        t: "f32[6, 4][1, 6]cpu" = torch.ops.aten.permute.default(x, [1, 0])
        r: "f32[4, 6][6, 1]cpu" = torch.ops.aten.relu.default(x)
        s: "f32[2, 6][6, 1]cpu" = torch.ops.aten.slice.Tensor(r, 0, 2, 4)
        return (t, s)
)";

TEST(Api, TensorsOfAnyStridesInAndOut) {
  CompiledGraph g = compile(kViews, {}, "views.py");
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0].strides, (std::vector<int64_t>{6, 1}));
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.outputs()[0].sizes, (std::vector<int64_t>{6, 4}));
  auto x = [](int64_t i, int64_t j) { return float(i * 6 + j) - 11.5f; };
  for (bool transposed_input : {false, true}) {
    // The input dense, or stored column-major (strides 1, 4): the same values either way.
    Floats in{std::vector<float>(24), {4, 6}, transposed_input ? std::vector<int64_t>{1, 4} : std::vector<int64_t>{}};
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j) in.data[size_t(transposed_input ? j * 4 + i : i * 6 + j)] = x(i, j);
    Floats t{std::vector<float>(24, NAN), {6, 4}, {}};
    Floats s{std::vector<float>(12, NAN), {2, 6}, {1, 2}};  // column-major
    std::vector<TensorRef> ins = {in.ref()}, outs = {t.ref(), s.ref()};
    g.run(ins, outs);
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(t.data[size_t(j * 4 + i)], x(i, j)) << i << "," << j;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(s.data[size_t(i + j * 2)], std::max(x(i + 2, j), 0.0f)) << i << "," << j;
  }
}

TEST(Api, RunsFromSeveralThreadsAtOnce) {
  CompiledGraph g = compile(kViews, {}, "views.py");
  auto work = [&](float shift, bool *ok) {
    for (int round = 0; round < 50; ++round) {
      Floats in{std::vector<float>(24), {4, 6}, {}};
      for (size_t k = 0; k < 24; ++k) in.data[k] = float(k) + shift;
      Floats t{std::vector<float>(24), {6, 4}, {}}, s{std::vector<float>(12), {2, 6}, {}};
      std::vector<TensorRef> ins = {in.ref()}, outs = {t.ref(), s.ref()};
      g.run(ins, outs);
      for (size_t k = 0; k < 12; ++k) *ok = *ok && s.data[k] == float(k + 12) + shift;
    }
  };
  bool ok1 = true, ok2 = true;
  std::thread a(work, 0.0f, &ok1), b(work, 1000.0f, &ok2);
  a.join();
  b.join();
  EXPECT_TRUE(ok1 && ok2);
}

// Outputs of every kind: owned (a, r), a view of an input (t), a view of another output (v).
const char *kKinds = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 6][6, 1]cpu", y: "f32[6][1]cpu"):
        a: "f32[4, 6][6, 1]cpu" = torch.ops.aten.add.Tensor(x, y)
        t: "f32[6, 4][1, 6]cpu" = torch.ops.aten.permute.default(x, [1, 0])
        r: "f32[4, 6][6, 1]cpu" = torch.ops.aten.relu.default(a)
        v: "f32[24][1]cpu" = torch.ops.aten.view.default(r, [24])
        return (a, t, r, v)
)";

float kinds_x(int64_t i, int64_t j) { return float(i * 6 + j) - 13.25f; }
float kinds_y(int64_t j) { return float(j) * 0.5f - 1.0f; }

// A call whose tensors all have the library's layouts allocates nothing once its thread has
// made one; one that stages copies allocates its staging once, then reuses it.
TEST(Api, ACallInTheLibrarysLayoutsAllocatesNothing) {
  if (!COIL_COUNTS_ALLOCATIONS) GTEST_SKIP() << "AddressSanitizer owns operator new here";
  CompiledGraph g = compile(kKinds, {}, "kinds.py");
  Floats x{std::vector<float>(24), {4, 6}, {}}, y{std::vector<float>(6), {6}, {}};
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) x.data[size_t(i * 6 + j)] = kinds_x(i, j), y.data[size_t(j)] = kinds_y(j);
  Floats a{std::vector<float>(24, NAN), {4, 6}, {}}, r{std::vector<float>(24, NAN), {4, 6}, {}};
  // The views where the library leaves them: t on x's memory, v on r's.
  std::vector<TensorRef> in = {x.ref(), y.ref()};
  std::vector<TensorRef> out = {a.ref(), {x.data.data(), ScalarType::Float32, {6, 4}, {1, 6}}, r.ref(),
                                {r.data.data(), ScalarType::Float32, {24}, {}, {}}};
  auto check = [&] {
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j) {
        float sum = kinds_x(i, j) + kinds_y(j);
        EXPECT_EQ(a.data[size_t(i * 6 + j)], sum) << i << "," << j;
        EXPECT_EQ(r.data[size_t(i * 6 + j)], std::max(sum, 0.0f)) << i << "," << j;
        EXPECT_EQ(x.data[size_t(i * 6 + j)], kinds_x(i, j)) << "the input was written: " << i << "," << j;
      }
  };
  // Column-major x: copied into staging; t in memory of its own: copied out.
  Floats xt{std::vector<float>(24), {4, 6}, {1, 4}};
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) xt.data[size_t(j * 4 + i)] = kinds_x(i, j);
  Floats t{std::vector<float>(24), {6, 4}, {}};
  std::vector<TensorRef> staged_in = {xt.ref(), y.ref()};
  std::vector<TensorRef> staged_out = {a.ref(), t.ref(), r.ref(), {r.data.data(), ScalarType::Float32, {24}, {}, {}}};
  // A fresh thread: its first call makes the thread's storage.
  std::thread([&] {
    EXPECT_GT(allocations_of([&] { g.run(in, out); }), 0) << "the thread's first call makes its pointer arrays";
    check();
    EXPECT_EQ(allocations_of([&] { g.run(in, out); }), 0);
    check();
    EXPECT_GT(allocations_of([&] { g.run(staged_in, staged_out); }), 0) << "the first staged copy makes the staging";
    check();
    EXPECT_EQ(allocations_of([&] { g.run(staged_in, staged_out); }), 0);
    check();
    EXPECT_EQ(allocations_of([&] { g.run(in, out); }), 0);
    check();
  }).join();
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(t.data[size_t(j * 4 + i)], kinds_x(i, j)) << i << "," << j;
}

// run_addresses: the tensors' addresses alone, in the layouts inputs() and outputs() give
// (each output in memory of its own here, the views copied out as run() copies them);
// nothing allocated once the thread has made its arrays; counts checked.
TEST(Api, AddressesAloneForTensorsInTheCompiledLayouts) {
  CompiledGraph g = compile(kKinds, {}, "kinds.py");
  std::vector<float> x(24), y(6);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) x[size_t(i * 6 + j)] = kinds_x(i, j), y[size_t(j)] = kinds_y(j);
  std::vector<std::vector<float>> outs(4, std::vector<float>(24, NAN));
  std::vector<void *> in = {x.data(), y.data()}, out;
  for (auto &o : outs) out.push_back(o.data());
  auto at = [&](size_t k, int64_t i, int64_t j) {  // element [i, j] of output k ([j, i] of t, [i * 6 + j] of v)
    const std::vector<int64_t> &s = g.outputs()[k].strides;
    int64_t offset = k == 1 ? j * s[0] + i * s[1] : k == 3 ? (i * 6 + j) * s[0] : i * s[0] + j * s[1];
    return outs[k][size_t(offset)];
  };
  std::thread([&] {
    g.run_addresses(in, out);
    if (COIL_COUNTS_ALLOCATIONS) {
      EXPECT_EQ(allocations_of([&] { g.run_addresses(in, out); }), 0);
    }
  }).join();
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      float sum = kinds_x(i, j) + kinds_y(j);
      EXPECT_EQ(at(0, i, j), sum) << i << "," << j;
      EXPECT_EQ(at(1, i, j), kinds_x(i, j)) << i << "," << j;
      EXPECT_EQ(at(2, i, j), std::max(sum, 0.0f)) << i << "," << j;
      EXPECT_EQ(at(3, i, j), std::max(sum, 0.0f)) << i << "," << j;
    }
  std::vector<void *> one = {x.data()};
  try {
    g.run_addresses(one, out);
    ADD_FAILURE() << "one input of two ran";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()), "coil: error: the graph has 2 inputs; 1 were given");
  }
}

// An output that is an input, element for element in its layout, says which; a view of an
// input (a transpose) or a computed output does not. Handed the input's own memory as that
// output, the call leaves it as it was.
TEST(Api, AnOutputThatIsAnInputSaysWhich) {
  CompiledGraph g = compile(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 3][3, 1]cpu", y: "f32[3][1]cpu"):
        t: "f32[3, 2][1, 3]cpu" = torch.ops.aten.t.default(x)
        add: "f32[2, 3][3, 1]cpu" = torch.ops.aten.add.Tensor(x, y)
        return (y, t, add, x)
)", {}, "same.py");
  std::vector<int64_t> same;
  for (const TensorInfo &o : g.outputs()) same.push_back(o.same_as_input);
  EXPECT_EQ(same, (std::vector<int64_t>{1, -1, -1, 0}));
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y = {10, 20, 30}, t(6), add(6);
  std::vector<void *> in = {x.data(), y.data()}, out = {y.data(), t.data(), add.data(), x.data()};
  g.run_addresses(in, out);
  EXPECT_EQ(x, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(y, (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(add, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(g.outputs()[1].strides, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(t, x) << "t in its layout [1, 3]: x's elements in x's order";
}

// Tensors in none of the library's layouts: views into larger buffers (element 0 at an
// offset, rows padded, every other element), transposed, and views of an input and of an
// output that the caller wants in memory of their own. What lies between the elements
// stays as it was.
TEST(Api, ACallCopiesWhatIsNotInTheLibrarysLayout) {
  CompiledGraph g = compile(kKinds, {}, "kinds.py");
  std::vector<float> xs(3 + 4 * 8, NAN), ys(12, NAN);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) xs[size_t(3 + i * 8 + j)] = kinds_x(i, j), ys[size_t(j * 2)] = kinds_y(j);
  std::vector<float> as(24, NAN), rs(5 + 4 * 7, -7.0f), ts(24, NAN), vs(48, -7.0f);
  std::vector<TensorRef> in = {{xs.data() + 3, ScalarType::Float32, {4, 6}, {8, 1}},
                               {ys.data(), ScalarType::Float32, {6}, {2}, {}}};
  std::vector<TensorRef> out = {{as.data(), ScalarType::Float32, {4, 6}, {1, 4}},
                                {ts.data(), ScalarType::Float32, {6, 4}, {}},
                                {rs.data() + 5, ScalarType::Float32, {4, 6}, {7, 1}},
                                {vs.data(), ScalarType::Float32, {24}, {2}, {}}};
  g.run(in, out);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      float sum = kinds_x(i, j) + kinds_y(j);
      EXPECT_EQ(as[size_t(j * 4 + i)], sum) << i << "," << j;
      EXPECT_EQ(ts[size_t(j * 4 + i)], kinds_x(i, j)) << i << "," << j;
      EXPECT_EQ(rs[size_t(5 + i * 7 + j)], std::max(sum, 0.0f)) << i << "," << j;
      EXPECT_EQ(vs[size_t((i * 6 + j) * 2)], std::max(sum, 0.0f)) << i << "," << j;
    }
  for (size_t k = 0; k < rs.size(); ++k)
    if (k < 5 || (k - 5) % 7 == 6) EXPECT_EQ(rs[k], -7.0f) << "padding of r written at " << k;
  for (size_t k = 1; k < vs.size(); k += 2) EXPECT_EQ(vs[k], -7.0f) << "a gap of v written at " << k;
}

// Options given to compile hold for that compilation only: the registry is as before.
TEST(Api, OptionsHoldForOneCompilation) {
  CompileOptions o;
  o.options = {{"cpp.plan", "kernel0.lanes=4"}};
  CompiledGraph four = compile_file(example("softmax_lastdim") + "/graph.py", o);
  CompiledGraph plain = compile_file(example("softmax_lastdim") + "/graph.py", {});
  EXPECT_NE(four.plans().find("overridden"), std::string::npos) << four.plans();
  EXPECT_EQ(plain.plans().find("overridden"), std::string::npos) << plain.plans();
  EXPECT_EQ(options::get_string("cpp.plan"), "");
  expect_example_matches_eager("softmax_lastdim", Target::Cpu);
}

std::string api_error(const std::function<void()> &fn, Error::Kind kind = Error::Kind::Input) {
  try {
    fn();
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// Outputs that are views of one computed buffer (slices of one relu here; a training
// forward's query, key and value) say where they lie in one allocation of the buffer's
// extent. Given there, by run() with the storage fields or by run_addresses, the buffer is
// written once, in place: nothing staged, nothing allocated. Given in allocations of their
// own, they are copied, and right; storage fields that do not fit the tensor are an error.
TEST(Api, OutputsViewingOneBufferShareOneAllocation) {
  CompiledGraph g = compile(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 6][6, 1]cpu"):
        relu: "f32[4, 6][6, 1]cpu" = torch.ops.aten.relu.default(x)
        a: "f32[4, 2][6, 1]cpu" = torch.ops.aten.slice.Tensor(relu, 1, 0, 2)
        b: "f32[4, 4][6, 1]cpu" = torch.ops.aten.slice.Tensor(relu, 1, 2, 6)
        return (b, a)
)", {}, "slices.py");
  ASSERT_EQ(g.outputs().size(), 2u);
  const TensorInfo &b = g.outputs()[0], &a = g.outputs()[1];
  EXPECT_EQ(std::vector<int64_t>({b.storage_offset, b.storage_elements, b.view_of_output}),
            (std::vector<int64_t>{2, 24, -1}));
  EXPECT_EQ(std::vector<int64_t>({a.storage_offset, a.storage_elements, a.view_of_output}),
            (std::vector<int64_t>{0, 24, 0}));
  Floats x{std::vector<float>(24), {4, 6}, {}};
  for (size_t k = 0; k < 24; ++k) x.data[k] = float(k) - 11.5f;
  std::vector<float> whole(24, NAN);
  auto view = [&](const TensorInfo &t, bool storage) {
    return TensorRef{whole.data() + t.storage_offset, ScalarType::Float32, t.sizes, t.strides, {},
                     storage ? t.storage_offset : -1, storage ? t.storage_elements : -1};
  };
  auto check = [&] {
    for (size_t k = 0; k < 24; ++k) EXPECT_EQ(whole[k], std::max(x.data[k], 0.0f)) << k;
  };
  std::vector<TensorRef> in = {x.ref()}, out = {view(b, true), view(a, true)};
  std::vector<void *> addresses_in = {x.data.data()}, addresses_out = {out[0].data, out[1].data};
  std::thread([&] {
    g.run(in, out);
    check();
    std::fill(whole.begin(), whole.end(), NAN);
    if (COIL_COUNTS_ALLOCATIONS) {
      EXPECT_EQ(allocations_of([&] { g.run(in, out); }), 0) << "the outputs were staged";
    } else {
      g.run(in, out);
    }
    check();
    std::fill(whole.begin(), whole.end(), NAN);
    g.run_addresses(addresses_in, addresses_out, nullptr, true);
    check();
  }).join();
  Floats own_b{std::vector<float>(16, NAN), {4, 4}, {}}, own_a{std::vector<float>(8, NAN), {4, 2}, {}};
  std::vector<TensorRef> own = {own_b.ref(), own_a.ref()};
  g.run(in, own);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      float want = std::max(x.data[size_t(i * 6 + j)], 0.0f);
      EXPECT_EQ(j < 2 ? own_a.data[size_t(i * 2 + j)] : own_b.data[size_t(i * 4 + j - 2)], want) << i << "," << j;
    }
  std::vector<TensorRef> wrong = {view(b, true), view(a, true)};
  wrong[0].storage_offset = 12;  // its last element would be the allocation's 33rd
  EXPECT_EQ(api_error([&] { g.run(in, wrong); }),
            "coil: error: output 'out0' says it lies 12 elements into an allocation of 24 elements, which its sizes "
            "[4, 4] and strides [6, 1] do not fit in (both -1: unknown)");
}

TEST(Api, ErrorsNameWhatWasWrong) {
  EXPECT_NE(api_error([] { compile(kViews, {Target::Cpu, {{"cpp.no_such_option", "1"}}, ""}); })
                .find("unknown option 'cpp.no_such_option'"),
            std::string::npos);
  EXPECT_NE(api_error([] { compile(kViews, {Target::Cpu, {{"num_threads", "-1"}}, ""}); })
                .find("num_threads expects an integer >= 0"),
            std::string::npos);
  std::string bad = "class GraphModule(torch.nn.Module):\n    def forward(self, x: \"f32[4][1]cpu\"):\n"
                    "        y: \"f32[4][1]cpu\" = torch.ops.aten.no_such_op.default(x)\n        return (y,)\n";
  EXPECT_NE(api_error([&] { compile(bad, {}, "bad.py"); }).find("bad.py:3:"), std::string::npos);
  EXPECT_EQ(api_error([] { parse_target("tpu"); }), "unknown target 'tpu'; coil has: ref, cpu, cuda, cuda-interpret");

  CompiledGraph g = compile(kViews, {}, "views.py");
  Floats x{std::vector<float>(24), {4, 6}, {}}, t{std::vector<float>(24), {6, 4}, {}}, s{std::vector<float>(12), {2, 6}, {}};
  std::vector<TensorRef> in = {x.ref()}, out = {t.ref(), s.ref()};
  std::vector<TensorRef> none;
  EXPECT_EQ(api_error([&] { g.run(none, out); }), "coil: error: the graph has 1 inputs; 0 were given");
  std::vector<TensorRef> wrong = {{x.data.data(), ScalarType::Float32, {6, 4}, {}, {}}};
  EXPECT_EQ(api_error([&] { g.run(wrong, out); }), "coil: error: input 'x' is f32[6, 4] but the graph expects f32[4, 6]");
  std::vector<TensorRef> typed = {{x.data.data(), ScalarType::Float64, {4, 6}, {}, {}}};
  EXPECT_EQ(api_error([&] { g.run(typed, out); }), "coil: error: input 'x' is f64[4, 6] but the graph expects f32[4, 6]");
  std::vector<TensorRef> null = {{nullptr, ScalarType::Float32, {4, 6}, {}, {}}};
  EXPECT_EQ(api_error([&] { g.run(null, out); }), "coil: error: input 'x' has no data (a null pointer)");
  CompiledGraph ref = compile(kViews, {Target::Reference, {}, ""}, "views.py");
  EXPECT_NE(api_error([&] { ref.median_seconds(in, out, 3); }).find("target ref has none"), std::string::npos);
}

// A graph of symbolic sizes compiled for one size, called at another: the error says which
// symbol the inputs give what value, and which guard of the compiled graph that fails.
// A graph of symbolic sizes compiled for the CPU runs at other sizes: its kernels take the
// sizes as arguments. Sizes outside what it serves are an error naming the check they fail;
// the reference target, which specializes, names the guard that fixed the symbol. A sum
// over the symbolic dim too: what the API reads of a compiled graph (an output's reduced
// elements) reads hints, never guards a size after the code was generated.
TEST(Api, ACallAtOtherSymbolicSizesRunsOrNamesTheSymbolAndTheGuard) {
  const std::string text = "class GraphModule(torch.nn.Module):\n"
                           "    def forward(self, a: \"f32[s0, 24][24, 1]cpu\"):\n"
                           "        sum_1: \"f32[s0][1]cpu\" = torch.ops.aten.sum.dim_IntList(a, [1])\n"
                           "        sum_2: \"f32[24][1]cpu\" = torch.ops.aten.sum.dim_IntList(a, [0])\n"
                           "        return (sum_1, sum_2)\n";
  Floats sixteen{std::vector<float>(16 * 24, 2), {16, 24}, {}}, sum16{std::vector<float>(16), {16}, {}};
  Floats down16{std::vector<float>(24), {24}, {}};
  std::vector<TensorRef> in16 = {sixteen.ref()}, out16 = {sum16.ref(), down16.ref()};
  // The C++ library, and the Triton kernels under the interpreter: one program at every
  // size, whose call checks its sizes before anything runs.
  for (Target target : {Target::Cpu, Target::CudaInterpreter}) {
    SCOPED_TRACE(target_name(target));
    CompiledGraph g = compile(text, {target, {}, "", {{"s0", 7}}}, "sum.py");
    ASSERT_EQ(g.symbols().size(), 1u);
    EXPECT_EQ(g.symbols()[0].name, "s0");
    EXPECT_EQ(g.symbols()[0].input, 0);
    EXPECT_EQ(g.symbols()[0].compiled, 7);
    EXPECT_FALSE(g.symbols()[0].specialized);
    EXPECT_EQ(g.outputs_at(std::vector<int64_t>{5})[0].sizes, std::vector<int64_t>{5});
    EXPECT_EQ(g.outputs()[1].reduced_elements, 7);
    Floats seven{std::vector<float>(7 * 24, 1), {7, 24}, {}}, sum7{std::vector<float>(7), {7}, {}};
    Floats down7{std::vector<float>(24), {24}, {}};
    std::vector<TensorRef> in = {seven.ref()}, out = {sum7.ref(), down7.ref()};
    g.run(in, out);
    EXPECT_EQ(sum7.data[6], 24);
    EXPECT_EQ(down7.data[0], 7);
    std::fill(sum16.data.begin(), sum16.data.end(), 0.0f);
    g.run(in16, out16);
    EXPECT_EQ(sum16.data, std::vector<float>(16, 48));
    EXPECT_EQ(down16.data, std::vector<float>(24, 32));
    Floats one{std::vector<float>(24), {1, 24}, {}}, sum1{std::vector<float>(1), {1}, {}};
    std::vector<TensorRef> in1 = {one.ref()}, out1 = {sum1.ref(), down7.ref()};
    EXPECT_EQ(api_error([&] { g.run(in1, out1); }),
              "coil: error: the compiled graph does not serve the sizes s0 = 1: it needs s0 >= 2 (the range of s0 that "
              "the compiled code assumes)");
    Floats wrong{std::vector<float>(15), {15}, {}};
    std::vector<TensorRef> out15 = {wrong.ref(), down16.ref()};
    EXPECT_EQ(api_error([&] { g.run(in16, out15); }),
              "coil: error: output 'out0' is f32[15] but at the sizes of this call (s0 = 16) the graph expects f32[16]");
  }

  CompiledGraph ref = compile(text, {Target::Reference, {}, "", {{"s0", 7}}}, "sum.py");
  EXPECT_EQ(api_error([&] { ref.run(in16, out16); }),
            "coil: error: input 'a' is f32[16, 24] but the graph expects f32[7, 24]; the inputs give s0 = 16, and the "
            "compiled graph serves only sizes where s0 == 7 (relied on by code generation for the GPU and the "
            "interpreters, which does not keep symbols yet)");
}

// Device memory goes only to target cuda (tests/gpu/device_io_test.cpp runs it on a GPU):
// the targets that run on the host say so before touching a pointer they cannot read.
TEST(Api, DeviceMemoryOnlyGoesToTheGpu) {
  EXPECT_EQ(memory_name(Memory::host()), "host");
  EXPECT_EQ(memory_name(Memory::cuda(1)), "cuda:1");
  Floats x{std::vector<float>(24), {4, 6}, {}}, t{std::vector<float>(24), {6, 4}, {}}, s{std::vector<float>(12), {2, 6}, {}};
  std::vector<TensorRef> out = {t.ref(), s.ref()};
  std::vector<TensorRef> on_gpu = {x.ref()};
  on_gpu[0].memory = Memory::cuda(0);
  for (Target target : {Target::Cpu, Target::Reference}) {
    CompiledGraph g = compile(kViews, {target, {}, ""}, "views.py");
    EXPECT_EQ(api_error([&] { g.run(on_gpu, out); }),
              "coil: error: input 'x' is in cuda:0 memory; target " + std::string(target_name(target)) +
                  " takes host memory only (copy the tensor to the host, or compile for target cuda)");
  }
}

// Every ScalarType is one of coil's dtypes, named as PyTorch prints it.
TEST(Api, ScalarTypesAreTheArtifactsDTypes) {
  const char *names[] = {"f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "b8"};
  const int64_t sizes[] = {8, 4, 2, 2, 8, 4, 2, 1, 1, 1};
  for (int32_t code = 0; code < 10; ++code) {
    EXPECT_STREQ(scalar_type_name(ScalarType(code)), names[code]);
    EXPECT_EQ(element_size(ScalarType(code)), sizes[code]) << names[code];
  }
  EXPECT_STREQ(scalar_type_name(ScalarType(10)), "?");
  EXPECT_EQ(api_error([] { element_size(ScalarType(10)); }), "coil: error: unknown scalar type 10");
}

}  // namespace
}  // namespace coil
