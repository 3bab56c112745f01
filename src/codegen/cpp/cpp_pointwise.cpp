// Pointwise kernels of the C++ dialect (cpp_kernel.h): vector loops over the kernel's
// ranges, or 32x32 tiles of the last two dims when a load walks them transposed; then
// scans (each row in order) and scatters (the copy, then the writes in order).
#include "codegen/cpp/cpp_kernel.h"

#include "codegen/common/access.h"
#include "codegen/cpp/cpp_extern.h"
#include "support/error.h"

namespace coil::codegen::detail {

// ---- pointwise kernels and their transposed tiles -------------------------------------

void KernelEmitter::emit_tiled_pointwise() {
  int n = int(k_.ranges.size());
  const int64_t kTile = plan_.tile;
  std::string tile = std::to_string(kTile);
  push();
  std::vector<std::pair<std::string, SymInt>> loops;  // loop variable, trip count
  for (int d = 0; d < n - 2; ++d)
    if (!known_eq(k_.ranges[size_t(d)], 1) && !known_eq(k_.ranges[size_t(d)], 0)) loops.push_back({var(VarId{d}), k_.ranges[size_t(d)]});
  for (int d = n - 2; d < n; ++d) loops.push_back({var(VarId{d}) + "t", sym_floor_div(k_.ranges[size_t(d)] + (kTile - 1), kTile)});
  bool region = open_parallel_for(" collapse(" + std::to_string(loops.size()) + ")", checked_numel(k_.ranges) * body_work());
  for (const auto &[x, count] : loops) w_.open("for (int64_t " + x + " = 0; " + x + " < " + cpp_size(count) + "; ++" + x + ")");
  std::string row = var(VarId{n - 2}), col = var(VarId{n - 1});
  const SymInt &rows = k_.ranges[size_t(n - 2)], &cols = k_.ranges[size_t(n - 1)];
  w_.line("const int64_t " + row + "s = " + row + "t * " + tile + ", " + col + "s = " + col + "t * " + tile + ";");
  if (region) {
    std::vector<VarId> outer;
    for (int d = 0; d < n - 2; ++d) outer.push_back(VarId{d});
    emit_reach(outer, {{n - 2, row + "s"}, {n - 1, col + "s"}});
  }
  int lanes = plan_.tile_lanes;
  bool edges = plan_.tile_edges;
  COIL_ASSERT(edges == (rows.symbolic() || cols.symbolic() || rows.hint() % kTile != 0 || cols.hint() % kTile != 0),
              "the plan of ", k_.name, " misjudges its edge tiles");
  if (lanes > 0) {
    if (edges)
      w_.open("if (" + row + "s + " + tile + " <= " + cpp_size(rows) + " && " + col + "s + " + tile + " <= " +
              cpp_size(cols) + ")");
    push();
    emit_vector_tile(lanes);
    pop();
    if (edges) {
      w_.close();
      w_.open("else");
    }
  }
  if (lanes == 0 || edges) {
    push();
    emit_scalar_tile();
    pop();
    if (lanes > 0) w_.close();
  }
  close_loops(int(loops.size()) + (region ? 1 : 0));
  pop();
}

void KernelEmitter::emit_vector_tile(int lanes) {
  int n = int(k_.ranges.size());
  const int64_t kTile = plan_.tile;
  std::string tile = std::to_string(kTile), row = var(VarId{n - 2}), col = var(VarId{n - 1});
  auto at_tile_start = [&](VarId v) { return v.id == n - 2 ? row + "s" : v.id == n - 1 ? col + "s" : var(v); };
  for (const CppLoadRef &ref : plan_.transposed) {
    const Instr *i = &p_.nodes[size_t(ref.node)].body.instrs[size_t(ref.instr)];
    std::string name = "tile" + std::to_string(tiles_.size()), type = storage_type(p_.buffer(i->buffer).type.dtype);
    std::optional<ir::Expr> stride = ir::stride_of(i->index, VarId{n - 1}, ranges_);
    COIL_ASSERT(stride, "the transposed load of tile ", name, " has no stride along its last dim");
    w_.line("alignas(64) " + type + " " + name + "[" + std::to_string(kTile * kTile) + "];");
    w_.line("coil_rt::transpose_tile<" + type + ", " + tile + ">(" + names_.at(i->buffer) + " + " +
            cpp_index(ir::simplify(i->index, ranges_), at_tile_start, ranges_) + ", " + cpp_index(*stride, at_tile_start, ranges_) +
            ", " + name + ");");
    tiles_[forward_key(i->buffer, i->index)] = name;
  }
  tile_position_ = "(" + row + " - " + row + "s) * " + tile + " + " + col + " - " + col + "s";
  w_.open("for (int64_t " + row + " = " + row + "s; " + row + " < " + row + "s + " + tile + "; ++" + row + ")");
  w_.open("for (int64_t " + col + " = " + col + "s; " + col + " < " + col + "s + " + tile + "; " + col + " += " +
          std::to_string(lanes) + ")");
  vector_body(VarId{n - 1}, lanes, false, [&] {
    for (int m : k_.nodes) emit_pointwise_member(p_.nodes[size_t(m)]);
  });
  close_loops(2);
  tiles_.clear();
}

void KernelEmitter::emit_scalar_tile() {
  int n = int(k_.ranges.size());
  for (int d = n - 2; d < n; ++d) {
    std::string x = var(VarId{d}), size = cpp_size(k_.ranges[size_t(d)]);
    if (d == n - 1) w_.line("#pragma omp simd");
    w_.open("for (int64_t " + x + " = " + x + "s; " + x + " < std::min<int64_t>(" + size + ", " + x + "s + " +
            std::to_string(plan_.tile) + "); ++" + x + ")");
  }
  push();
  for (int m : k_.nodes) emit_pointwise_member(p_.nodes[size_t(m)]);
  pop();
  close_loops(2);
}

void KernelEmitter::emit_pointwise() {
  if (plan_.strategy == CppStrategy::TransposedTiles) return emit_tiled_pointwise();
  push();
  emit_nest(k_.ranges, 0, true, checked_numel(k_.ranges) * body_work(), std::string(), plan_.lanes, [&] {
    for (int n : k_.nodes) emit_pointwise_member(p_.nodes[size_t(n)]);
  });
  pop();
}

// ---- scans and scatters --------------------------------------------------------------

void KernelEmitter::emit_scan() {
  const Node &first = p_.nodes[size_t(k_.nodes[0])];
  int dim = first.scan_dim;
  const SymShape &rows = k_.ranges;
  push();
  // Rows: every dim but the scanned one, in parallel; the scan runs in order.
  std::vector<int> dims;
  for (size_t d = 0; d < rows.size(); ++d)
    if (int(d) != dim) dims.push_back(int(d));
  SymInt work = checked_numel(k_.ranges) * body_work();
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i == 0) w_.line("#pragma omp parallel for" + (dims.size() > 1 ? " collapse(" + std::to_string(dims.size()) + ")" : std::string()) +
                        " num_threads(coil_rt::threads_for(" + cpp_size(work) + "))");
    std::string x = var(VarId{dims[i]});
    w_.open("for (int64_t " + x + " = 0; " + x + " < " + cpp_size(rows[size_t(dims[i])]) + "; ++" + x + ")");
  }
  if (dims.empty()) w_.open("");
  std::vector<std::string> accs;
  for (int n : k_.nodes) {
    DType in = p_.nodes[size_t(n)].body.at(p_.nodes[size_t(n)].body.results[0]).dtype;
    ir::ScanOp op = p_.nodes[size_t(n)].scan_op;
    bool floating = is_floating(in);
    std::string init = op == ir::ScanOp::Prod ? "1"
                       : op == ir::ScanOp::Max || op == ir::ScanOp::LogAddExp ? (floating ? "-INFINITY" : "INT64_MIN")
                       : op == ir::ScanOp::Min ? (floating ? "INFINITY" : "INT64_MAX")
                                                 : "0";
    accs.push_back("scan" + std::to_string(accs.size()));
    w_.line((floating ? std::string("double ") : "int64_t ") + accs.back() + " = " + init + ";");
  }
  std::string x = var(VarId{dim});
  w_.open("for (int64_t " + x + " = 0; " + x + " < " + cpp_size(rows[size_t(dim)]) + "; ++" + x + ")");
  push();
  for (size_t m = 0; m < k_.nodes.size(); ++m) {
    const Node &n = p_.nodes[size_t(k_.nodes[m])];
    auto v = emit_body(n.body);
    DType in = n.body.at(n.body.results[0]).dtype;
    const std::string &value = v[size_t(n.body.results[0])];
    bool prod = n.scan_op == ir::ScanOp::Prod;
    if (n.scan_op == ir::ScanOp::LogAddExp) {
      w_.line(accs[m] + " = coil_rt::log_add_exp(" + accs[m] + ", double(" + value + "));");
    } else if (n.scan_op == ir::ScanOp::Max || n.scan_op == ir::ScanOp::Min) {
      // A NaN, once seen, stays (max_nan / min_nan); integers by std::max / std::min.
      bool max = n.scan_op == ir::ScanOp::Max;
      std::string fn = is_floating(in) ? (max ? "coil_rt::max_nan(" : "coil_rt::min_nan(")
                                       : (max ? "std::max<int64_t>(" : "std::min<int64_t>(");
      w_.line(accs[m] + " = " + fn + accs[m] + ", " + (is_floating(in) ? "double(" : "int64_t(") + value + "));");
    } else {
      std::string wrapping = prod ? "coil_rt::mul_w<int64_t>(" : "coil_rt::add_w<int64_t>(";
      w_.line(accs[m] + " = " +
              (is_floating(in) ? accs[m] + (prod ? " * " : " + ") + "double(" + value + ")"
                               : wrapping + accs[m] + ", int64_t(" + value + "))") +
              ";");
    }
    store(n, n.outputs[0], cpp_cast(accs[m], is_floating(in) ? DType::F64 : DType::I64, in), in);
  }
  pop();
  w_.close();
  if (dims.empty()) w_.close();
  for (size_t i = 0; i < dims.size(); ++i) w_.close();
  pop();
}

void KernelEmitter::emit_scatter() {
  const Node &n = p_.nodes[size_t(k_.nodes[0])];
  const ir::View &init = n.operands[0];
  BufferId out = n.outputs[0];
  const TensorType &ot = p_.buffer(out).type;
  DType it = p_.buffer(init.buffer).type.dtype;
  push();
  // First the copy of the initial tensor (none when the memory plan placed the output over
  // it: scheduler.cpp, "written_over"), then the writes in iteration order (the last write
  // to an element wins, as on PyTorch's CPU).
  if (auto over = k_.attrs.find("written_over"); over != k_.attrs.end()) {
    w_.line("// written over " + over->second + ", its initial tensor: nothing to copy");
  } else {
    // An output the caller passes over the initial tensor's own memory (a graph input updated
    // in place: sched::inputs_writable_by; a KV cache taking its new rows) is a copy of itself.
    bool identity = ir::scatter_copies_in_place_layout(p_, n);
    if (identity)
      w_.open("if (static_cast<const void *>(" + names_.at(out) + ") != static_cast<const void *>(" +
              names_.at(init.buffer) + "))");
    const SymShape &sizes = ot.sizes;
    int loops = 0;
    for (size_t d = 0; d < sizes.size(); ++d) {
      std::string x = "c" + std::to_string(d);
      w_.open("for (int64_t " + x + " = 0; " + x + " < " + cpp_size(sizes[d]) + "; ++" + x + ")");
      ++loops;
    }
    std::vector<std::string> c;
    std::string dst = "0";
    for (size_t d = 0; d < sizes.size(); ++d) {
      c.push_back("c" + std::to_string(d));
      dst += " + c" + std::to_string(d) + "*" + cpp_size(ot.strides[d]);
    }
    w_.line(names_.at(out) + "[" + dst + "] = " +
            to_storage(cpp_cast(strided_element(p_, init, names_.at(init.buffer), c), it, ot.dtype), ot.dtype) + ";");
    for (int i = 0; i < loops; ++i) w_.close();
    if (identity) w_.close();
  }
  int opened = open_loops(n.ranges, 0, false, false, 0);
  if (opened == 0) w_.open("");
  push();
  auto v = emit_body(n.body);
  std::string at = cpp_index(ir::simplify(n.scatter_index, ranges_),
                             [&](VarId x) {
                               if (x.id >= ir::kIndirectBase)
                                 return "int64_t(" + v[size_t(n.body.results[size_t(x.id - ir::kIndirectBase + 1)])] + ")";
                               return var(x);
                             },
                             ranges_);
  std::string o = def("int64_t", "coil_rt::checked_index(" + at + ", " + cpp_size(storage_extent(ot)) + ", err)");
  DType vt = n.body.at(n.body.results[0]).dtype;
  std::string value = def(value_type(ot.dtype), cpp_cast(v[size_t(n.body.results[0])], vt, ot.dtype));
  std::string current = from_storage(names_.at(out) + "[" + o + "]", ot.dtype);
  std::string written = n.accumulate ? cpp_op(n.combine, ot.dtype, ot.dtype, {current, value}) : value;
  w_.line(names_.at(out) + "[" + o + "] = " + to_storage(written, ot.dtype) + ";");
  pop();
  if (opened == 0) w_.close();
  close_loops(opened);
  pop();
}

}  // namespace coil::codegen::detail
