// coil._C: the Python extension module, over the public C++ API (include/coil/coil.h) and
// nothing else. python/coil/ builds the torch.compile backend on it; tensors cross as data
// pointers with their dtype codes, sizes, strides and device (the torch side reads them
// from its tensors), CUDA work goes on the stream the caller names (PyTorch's current
// stream), so nothing is copied at the boundary. Tests: tests/python/test_backend.py.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "coil/coil.h"

namespace nb = nanobind;

namespace {

// (data pointer, dtype code, sizes, strides, device, storage offset, storage elements), as
// python/coil/backend.py passes a tensor; device -1 for host memory, else the CUDA device's
// index; the storage fields as TensorRef's (-1: unknown).
using PyTensor = std::tuple<uintptr_t, int, std::vector<int64_t>, std::vector<int64_t>, int, int64_t, int64_t>;

std::vector<coil::TensorRef> refs(const std::vector<PyTensor> &tensors) {
  std::vector<coil::TensorRef> out;
  out.reserve(tensors.size());
  for (const auto &[data, dtype, sizes, strides, device, storage_offset, storage_elements] : tensors)
    out.push_back({reinterpret_cast<void *>(data), coil::ScalarType(dtype), sizes, strides,
                   device < 0 ? coil::Memory::host() : coil::Memory::cuda(device), storage_offset, storage_elements});
  return out;
}

nb::tuple info_tuple(const coil::TensorInfo &t) {
  return nb::make_tuple(t.name, int(t.dtype), t.sizes, t.strides, t.reduced_elements, t.random_state, t.same_as_input,
                       t.writable_over, t.storage_offset, t.storage_elements, t.view_of_output);
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "coil's compiler and runtime (include/coil/coil.h)";
  // Compiled graphs live in torch.compile's caches until the interpreter exits, after this
  // module's teardown: not a leak to report.
  nb::set_leak_warnings(false);
  static nb::exception<coil::Error> error(m, "CoilError", PyExc_RuntimeError);

  nb::class_<coil::CompiledGraph>(m, "CompiledGraph")
      .def_prop_ro("target", [](const coil::CompiledGraph &g) { return std::string(coil::target_name(g.target())); })
      .def_prop_ro("inputs",
                   [](const coil::CompiledGraph &g) {
                     nb::list out;
                     for (const auto &t : g.inputs()) out.append(info_tuple(t));
                     return out;
                   })
      .def_prop_ro("outputs",
                   [](const coil::CompiledGraph &g) {
                     nb::list out;
                     for (const auto &t : g.outputs()) out.append(info_tuple(t));
                     return out;
                   })
      .def_prop_ro("symbols",
                   [](const coil::CompiledGraph &g) {
                     nb::list out;
                     for (const auto &s : g.symbols())
                       out.append(nb::make_tuple(s.name, s.input, s.dim, s.compiled, s.specialized));
                     return out;
                   },
                   "A graph of symbolic sizes that runs at every size it serves (target cpu): its symbols\n"
                   "as (name, input, dim, value compiled for, specialized), input -1 when no input dim\n"
                   "holds it, specialized when a guard fixes it to that value.")
      .def(
          "outputs_at",
          [](const coil::CompiledGraph &g, const std::vector<int64_t> &sizes) {
            nb::list out;
            for (const auto &t : g.outputs_at(sizes)) out.append(info_tuple(t));
            return out;
          },
          nb::arg("sizes"), "The outputs as `outputs` gives them, at `sizes` (a value per symbol).")
      .def_prop_ro("plans", &coil::CompiledGraph::plans)
      .def_prop_ro("sizes", &coil::CompiledGraph::sizes)
      .def("notes", &coil::CompiledGraph::notes)
      .def(
          "profile",
          [](const coil::CompiledGraph &g) {
            nb::list out;
            for (const coil::KernelTime &k : g.profile()) out.append(nb::make_tuple(k.name, k.summary, k.calls, k.seconds));
            return out;
          },
          "With the option cpp.profile (cpu) or triton.profile (cuda): (kernel, summary, calls, seconds)\n"
          "per kernel since the compile or reset_profile(), in call order; else empty.")
      .def("reset_profile", &coil::CompiledGraph::reset_profile)
      .def(
          "run",
          [](const coil::CompiledGraph &g, const std::vector<PyTensor> &inputs, const std::vector<PyTensor> &outputs,
             uintptr_t stream) {
            std::vector<coil::TensorRef> in = refs(inputs), out = refs(outputs);
            nb::gil_scoped_release release;
            g.run(in, out, reinterpret_cast<void *>(stream));
          },
          nb::arg("inputs"), nb::arg("outputs"), nb::arg("stream") = 0,
          "Runs the graph on (pointer, dtype code, sizes, strides, device, storage offset, storage\n"
          "elements) tensors (device -1: host memory, else the CUDA device's index; storage -1:\n"
          "unknown); writes the outputs. CUDA tensors: the work is queued on `stream`\n"
          "(torch.cuda.current_stream().cuda_stream; 0: the default stream) and the call returns\n"
          "without waiting for it.")
      .def(
          "run_addresses",
          [](const coil::CompiledGraph &g, const std::vector<uintptr_t> &inputs, const std::vector<uintptr_t> &outputs,
             uintptr_t stream, bool outputs_as_stored, const std::vector<int64_t> &sizes) {
            thread_local std::vector<void *> in, out;
            in.clear();
            out.clear();
            for (uintptr_t a : inputs) in.push_back(reinterpret_cast<void *>(a));
            for (uintptr_t a : outputs) out.push_back(reinterpret_cast<void *>(a));
            nb::gil_scoped_release release;
            g.run_addresses(in, out, reinterpret_cast<void *>(stream), outputs_as_stored, sizes);
          },
          nb::arg("inputs"), nb::arg("outputs"), nb::arg("stream") = 0, nb::arg("outputs_as_stored") = false,
          nb::arg("sizes") = std::vector<int64_t>{},
          "run() for tensors exactly as `inputs` and `outputs` describe them, in the target's memory:\n"
          "their data pointers alone (the caller's guards hold their dtypes, sizes and strides;\n"
          "outputs_as_stored: each output lies in its allocation as its storage fields say).\n"
          "`sizes`: a graph with symbols at those sizes, every tensor as outputs_at lays it out.");

  m.def("supported_ops", &coil::supported_ops, "The ops coil compiles natively: aten.add.Tensor, ...");
  m.attr("MAX_SORT_LENGTH") = coil::kMaxSortLength;
  m.def(
      "tolerance",
      [](int dtype, int64_t reduced_elements) {
        coil::Tolerance t = coil::tolerance(coil::ScalarType(dtype), reduced_elements);
        return std::make_pair(t.rtol, t.atol);
      },
      nb::arg("dtype"), nb::arg("reduced_elements") = 1,
      "(rtol, atol) an output of dtype code `dtype` is compared with: by dtype, scaled by sqrt(n) for a reduction over n.");
  m.def("check_options", &coil::check_options, nb::arg("options"),
        "Raises CoilError naming the first unknown or malformed option.");
  m.def("option_value", &coil::option_value, nb::arg("name"), nb::arg("options"),
        "The value (a string) of option `name` under `options`, over the environment's and the defaults.");
  m.def(
      "compile",
      [](const std::string &text, const std::string &target, const std::vector<std::pair<std::string, std::string>> &options,
         const std::string &trace_dir, const std::string &file_name,
         const std::vector<std::pair<std::string, int64_t>> &sizes) {
        coil::CompileOptions o;
        o.target = coil::parse_target(target);
        o.options = options;
        o.trace_dir = trace_dir;
        o.sizes = sizes;
        nb::gil_scoped_release release;
        return coil::compile(text, o, file_name);
      },
      nb::arg("text"), nb::arg("target") = "cpu", nb::arg("options") = std::vector<std::pair<std::string, std::string>>{},
      nb::arg("trace_dir") = "", nb::arg("file_name") = "<graph>",
      nb::arg("sizes") = std::vector<std::pair<std::string, int64_t>>{},
      "Compiles a graph as PyTorch prints it for a target: ref, cpu, cuda or cuda-interpret; a graph of symbolic "
      "sizes for their values `sizes`, [(symbol, value)].");
}
