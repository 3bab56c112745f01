// Pointwise kernels of the Triton dialect (triton_kernel.h): blocks of XBLOCK elements, or
// YBLOCK x XBLOCK tiles when a load walks the last two dims transposed; then scans (rows
// scanned in steps of RBLOCK with a carry) and scatters (the copy, then the writes).
#include "codegen/triton/triton_kernel.h"

#include <algorithm>

#include "codegen/common/access.h"
#include "codegen/triton/triton_kernel_plan.h"
#include "codegen/triton/triton_ops.h"
#include "support/error.h"

namespace coil::codegen::detail {
namespace {

/// Where a running maximum (minimum, log-sum-exp) starts: -inf (inf, -inf), or an i64's extreme.
std::string extremum_start(ir::ScanOp op, DType acc) {
  bool max = op == ir::ScanOp::Max || op == ir::ScanOp::LogAddExp;
  if (is_floating(acc)) return max ? "float('-inf')" : "float('inf')";
  return max ? "-9223372036854775807 - 1" : "9223372036854775807";
}

}  // namespace

// ---- pointwise --------------------------------------------------------------------------

void TritonEmitter::emit_pointwise() {
  set_index_bits();
  SymInt numel = checked_numel(k_.ranges);
  Layout l;
  std::map<std::string, std::string> attrs;
  int n = int(k_.ranges.size());
  if (plan_.strategy == TritonStrategy::Tiles) {
    SymInt rows = 1;
    for (int d = 0; d < n - 1; ++d) rows *= k_.ranges[size_t(d)];
    l.two_d = true;
    l.b0 = "YBLOCK";
    l.b1 = "XBLOCK";
    l.block0 = plan_.block0;
    l.block1 = plan_.block1;
    l.n0 = rows;
    l.n1 = k_.ranges.back();
    for (int d = 0; d < n - 1; ++d) l.vars0.push_back({VarId{d}, k_.ranges[size_t(d)]});
    l.vars1.push_back({VarId{n - 1}, k_.ranges.back()});
    l.program_axis0 = 1;
    // The planner chose tiles where the rows' blocks fit the grid's second axis; at other
    // sizes the kernel relies on it (a guard where the rows are symbolic).
    bool fits_grid = triton_blocks(rows, l.block0) <= 65535;
    COIL_ASSERT(fits_grid, k_.name, ": ", str(rows), " rows in tiles of ", l.block0, " exceed the grid's second axis");
    attrs["layout"] = "YBLOCK x XBLOCK tiles of the last two dims: a load walks them transposed";
  } else {
    COIL_ASSERT(plan_.strategy == TritonStrategy::Blocks, "pointwise ", k_.name, " planned as ", strategy_name(plan_.strategy));
    l.block0 = plan_.block0;
    l.n0 = numel;
    for (int d = 0; d < n; ++d) l.vars0.push_back({VarId{d}, k_.ranges[size_t(d)]});
    attrs["layout"] = "blocks of XBLOCK elements" + std::string(blocks_may_overrun(numel, l.block0) ? ", masked" : ", no mask");
  }
  begin(kernel_name(), l);
  emit_prologue();
  for (int m : k_.nodes) emit_pointwise_member(p_.nodes[size_t(m)]);
  int warps = plan_.warps;
  std::array<SymInt, 3> grid = l.two_d ? std::array<SymInt, 3>{triton_blocks(l.n1, l.block1), triton_blocks(l.n0, l.block0), 1}
                                       : std::array<SymInt, 3>{triton_blocks(numel, l.block0), 1, 1};
  end(buffer_params(), warps, grid, attrs);
}

// ---- scans -------------------------------------------------------------------------------

void TritonEmitter::emit_scan() {
  set_index_bits();
  const Node &first = p_.nodes[size_t(k_.nodes[0])];
  int dim = first.scan_dim;
  SymInt len = k_.ranges[size_t(dim)], rows = 1;
  for (int d = 0; d < int(k_.ranges.size()); ++d)
    if (d != dim) rows *= k_.ranges[size_t(d)];
  if (known_eq(len, 0)) rows = 0;
  Layout l;
  l.two_d = true;
  l.looped = true;
  l.n0 = rows;
  l.n1 = len;
  for (int d = 0; d < int(k_.ranges.size()); ++d)
    if (d != dim) l.vars0.push_back({VarId{d}, k_.ranges[size_t(d)]});
  l.vars1.push_back({VarId{dim}, len});
  l.block1 = std::min<int64_t>(1024, next_pow2(std::max<int64_t>(len.hint(), 1)));
  l.block0 = std::clamp<int64_t>(1024 / l.block1, 1, std::min<int64_t>(64, next_pow2(std::max<int64_t>(rows.hint(), 1))));
  begin(kernel_name(), l);
  emit_prologue();
  w_.line("rbase = tl.arange(0, RBLOCK)[None, :]");
  std::vector<std::string> carries;
  std::vector<DType> acc_types;
  for (int m : k_.nodes) {
    const Node &n = p_.nodes[size_t(m)];
    DType in = n.body.at(n.body.results[0]).dtype;
    // Floats accumulate in f64, as the C++ dialect's scans do: a prefix of n values rounds
    // once, where an f32 running sum's error grows with n (and pow or exp of it multiplies it).
    DType acc = is_floating(in) ? DType::F64 : DType::I64;
    carries.push_back("carry" + std::to_string(carries.size()));
    acc_types.push_back(acc);
    std::string init = n.scan_op == ir::ScanOp::Prod ? "tl.full(" + shape(kA0) + ", 1, " : "tl.zeros(" + shape(kA0) + ", ";
    if (n.scan_op == ir::ScanOp::Max || n.scan_op == ir::ScanOp::Min || n.scan_op == ir::ScanOp::LogAddExp)
      init = "tl.full(" + shape(kA0) + ", " + extremum_start(n.scan_op, acc) + ", ";
    w_.line(carries.back() + " = " + init + triton_type(acc) + ")");
  }
  w_.line("for roffset in range(0, " + size(len) + ", RBLOCK):");
  w_.indent();
  push();
  open_axis1("roffset");
  std::string all = mask(kBoth);
  for (size_t i = 0; i < k_.nodes.size(); ++i) {
    const Node &n = p_.nodes[size_t(k_.nodes[i])];
    auto v = emit_body(n.body);
    DType in = n.body.at(n.body.results[0]).dtype;
    std::string x = "(" + broadcast(v[size_t(n.body.results[0])], kBoth, in) + ").to(" + triton_type(acc_types[i]) + ")";
    bool prod = n.scan_op == ir::ScanOp::Prod;
    if (n.scan_op == ir::ScanOp::Max || n.scan_op == ir::ScanOp::Min || n.scan_op == ir::ScanOp::LogAddExp) {
      // The block's running extremum (a NaN kept once seen) or log-sum-exp after the carry's.
      std::string helper = n.scan_op == ir::ScanOp::Max   ? "max_nan"
                           : n.scan_op == ir::ScanOp::Min ? "min_nan"
                                                              : "log_add_exp";
      std::string combine = "_" + helper;
      helpers_.insert(helper);
      if (!all.empty()) x = "tl.where(" + all + ", " + x + ", " + extremum_start(n.scan_op, acc_types[i]) + ")";
      Value block = def(x, kBoth);
      Value running = def(combine + "(" + carries[i] + ", tl.associative_scan(" + block.name + ", 1, " + combine + "))", kBoth);
      store(n, n.outputs[0], def(triton_cast(running.name, acc_types[i], in), kBoth), in);
      w_.line(carries[i] + " = " + combine + "(" + carries[i] + ", tl.reduce(" + block.name + ", 1, " + combine + ")[:, None])");
      continue;
    }
    if (!all.empty()) x = "tl.where(" + all + ", " + x + (prod ? ", 1)" : ", 0)");
    Value block = def(x, kBoth);
    if (prod) {
      helpers_.insert("prod");
      Value products = def("tl.cumprod(" + block.name + ", 1) * " + carries[i], kBoth);
      store(n, n.outputs[0], def(triton_cast(products.name, acc_types[i], in), kBoth), in);
      w_.line(carries[i] + " = " + carries[i] + " * tl.reduce(" + block.name + ", 1, _prod)[:, None]");
      continue;
    }
    Value sums = def("tl.cumsum(" + block.name + ", 1) + " + carries[i], kBoth);
    store(n, n.outputs[0], def(triton_cast(sums.name, acc_types[i], in), kBoth), in);
    w_.line(carries[i] + " = " + carries[i] + " + tl.sum(" + block.name + ", 1)[:, None]");
  }
  pop();
  w_.dedent();
  int warps = int(std::clamp<int64_t>(l.block0 * l.block1 / 256, 1, 8));
  end(buffer_params(), warps, {sym_max(triton_blocks(rows, l.block0), 1), 1, 1},
      {{"layout", "rows in XBLOCK, each scanned in steps of RBLOCK with a carry"}});
}

// ---- scatters ----------------------------------------------------------------------------

void TritonEmitter::emit_scatter() {
  set_index_bits();
  const Node &n = p_.nodes[size_t(k_.nodes[0])];
  const ir::View &init = n.operands[0];
  BufferId out = n.outputs[0];
  const TensorType &ot = p_.buffer(out).type;
  DType it = p_.buffer(init.buffer).type.dtype;
  SymInt numel = checked_numel(ot.sizes);
  std::vector<std::pair<int, std::string>> params = buffer_params();
  // The copy of the initial tensor, unless the memory plan placed the output over it
  // (scheduler.cpp, "written_over").
  if (!k_.attrs.count("written_over")) {
    Layout l;
    l.block0 = std::min<int64_t>(1024, next_pow2(std::max<int64_t>(numel.hint(), 1)));
    l.n0 = numel;
    begin(kernel_name("copy"), l);
    // An output the caller passes over the initial tensor's own memory (a graph input updated
    // in place: sched::inputs_writable_by; a KV cache taking its new rows) copies nothing.
    bool identity = init.buffer != out && ir::scatter_copies_in_place_layout(p_, n);
    if (identity) {
      w_.line("if " + names_.at(init.buffer) + ".to(tl.int64) != " + names_.at(out) + ".to(tl.int64):");
      w_.indent();
    }
    w_.line("xoffset = tl.program_id(0) * XBLOCK");
    w_.line("xindex = xoffset + tl.arange(0, XBLOCK)");
    if (blocks_may_overrun(numel, l.block0)) {
      mask0_ = "xmask";
      w_.line("xmask = xindex < " + size(numel));
    }
    std::string src = size(init.offset), dst = "0";
    SymInt stride = 1;
    for (int d = int(ot.sizes.size()) - 1; d >= 0; --d) {
      std::string c = "c" + std::to_string(d);
      w_.line(c + " = (xindex // " + size(stride) + ") % " + size(ot.sizes[size_t(d)]));
      src += " + " + c + "*" + size(init.strides[size_t(d)]);
      dst += " + " + c + "*" + size(ot.strides[size_t(d)]);
      stride *= ot.sizes[size_t(d)];
    }
    std::string m = mask0_.empty() ? "" : ", " + mask0_;
    std::string value = "tl.load(" + names_.at(init.buffer) + " + (" + src + ")" + m + ")";
    if (it == DType::BF16 || it == DType::F16) value += ".to(tl.float32)";
    value = triton_cast(value, it, ot.dtype);
    value = as_storage(value, ot.dtype);
    w_.line("tl.store(" + names_.at(out) + " + (" + dst + "), " + value + m + ")");
    if (identity) w_.dedent();
    std::vector<std::pair<int, std::string>> copy = {{init.buffer, names_.at(init.buffer)}, {out, names_.at(out)}};
    if (init.buffer == out) copy.pop_back();
    end(copy, int(std::clamp<int64_t>(l.block0 / 256, 1, 4)), {sym_max(triton_blocks(numel, l.block0), 1), 1, 1},
        {{"layout", "the copy of the initial tensor, in blocks of XBLOCK"}});
    mask0_.clear();
  }
  SymInt writes = checked_numel(n.ranges);
  Layout l;
  l.block0 = std::min<int64_t>(1024, next_pow2(std::max<int64_t>(writes.hint(), 1)));
  l.n0 = writes;
  for (int d = 0; d < int(n.ranges.size()); ++d) l.vars0.push_back({VarId{d}, n.ranges[size_t(d)]});
  begin(kernel_name(), l);
  emit_prologue();
  auto v = emit_body(n.body);
  auto [at, dims] = index(n.scatter_index, [&](int k) { return v[size_t(n.body.results[size_t(k + 1)])]; });
  DType vt = n.body.at(n.body.results[0]).dtype;
  Value written = v[size_t(n.body.results[0])];
  // A value that is a number (a count's 1) becomes a tensor first: casts and the
  // compare-and-swap below take its .to and .shape.
  if (written.literal) written.name = "(tl.zeros([], " + triton_type(vt) + ") + " + written.name + ")";
  Value value = def(triton_cast(written.name, vt, ot.dtype), written.dims);
  int pdims = dims | value.dims | kA0;
  std::string ptr = pointer(names_.at(out), at, dims, pdims), m = mask(pdims);
  std::string stored = as_storage(value.name, ot.dtype);
  // Atomics: an add of 32/64-bit floats and ints, a max or min of 32/64-bit ints.
  bool wide_int = ot.dtype == DType::I32 || ot.dtype == DType::I64;
  bool wide_float = ot.dtype == DType::F32 || ot.dtype == DType::F64;
  bool extremum = n.combine == Op::Maximum || n.combine == Op::Minimum;
  bool atomic = n.accumulate && ((n.combine == Op::Add && (wide_int || wide_float)) || (extremum && wide_int));
  // Every other combine (a product; a float max or min, NaN kept as torch.maximum keeps
  // it, which an atomic max of the bits would not; any combine of 8- and 16-bit elements,
  // bf16 and f16 adds among them, which Triton's interpreter has no atomics for)
  // by compare-and-swap of the element's bits, retried until every lane's swap found the
  // value it combined with. An element narrower than 32 bits is swapped within the aligned
  // 32-bit word that holds it, the other bytes of the word kept.
  if (n.accumulate && !atomic) {
    int64_t bytes = itemsize(ot.dtype);
    bool narrow = bytes < 4;
    std::string word = bytes == 8 ? "tl.int64" : "tl.int32";
    std::string todo = m.empty() ? "tl.full((" + ptr + ").shape, 1, tl.int1)" : "(" + m + ")";
    std::string lane_ptr = "tl.where(" + todo + ", " + ptr + ", " + names_.at(out) + ")";
    w_.line("cas_todo = " + todo);
    if (narrow) {
      w_.line("cas_addr = " + lane_ptr + ".to(tl.int64)");
      w_.line("cas_ptr = (cas_addr & -4).to(tl.pointer_type(tl.int32))");
      w_.line("cas_shift = ((cas_addr & 3) * 8).to(tl.int32)");
    } else {
      w_.line("cas_ptr = " + lane_ptr + ".to(tl.pointer_type(" + word + "))");
    }
    w_.line("cas_seen = tl.load(cas_ptr, cas_todo)");
    w_.line("while tl.max(cas_todo.to(tl.int32), 0) > 0:");
    w_.indent();
    // The element's current value from the word's bits, combined in the kernel's compute
    // type with the value (as the other scatters compute), and back to the element's bits.
    std::string bits = narrow ? str_cat("((cas_seen >> cas_shift) & ", (int64_t(1) << (8 * bytes)) - 1, ")") : "cas_seen";
    std::string same_width = bytes == 1 ? "tl.int8" : bytes == 2 ? "tl.int16" : word;
    std::string storage = triton_storage_type(ot.dtype);
    std::string current = ot.dtype == DType::Bool     ? bits + " != 0"
                          : is_floating(ot.dtype) ? bits + ".to(" + same_width + ").to(" + storage + ", bitcast=True).to(" +
                                                        triton_type(ot.dtype) + ")"
                                                  : bits + ".to(" + storage + ")";
    w_.line("cas_cur = " + current);
    std::string combined = triton_op(n.combine, ot.dtype, ot.dtype, {"cas_cur", value.name}, helpers_);
    std::string new_bits = is_floating(ot.dtype)
                               ? "(" + combined + ").to(" + storage + ").to(" + same_width + ", bitcast=True)"
                               : "(" + combined + ")";
    if (narrow) {
      std::string mask_bits = str_cat((int64_t(1) << (8 * bytes)) - 1);
      w_.line("cas_bits = (" + new_bits + ".to(tl.int32) & " + mask_bits + ") << cas_shift");
      w_.line("cas_want = tl.where(cas_todo, (cas_seen & ~(" + mask_bits + " << cas_shift)) | cas_bits, cas_seen)");
    } else {
      w_.line("cas_want = tl.where(cas_todo, " + new_bits + ".to(" + word + "), cas_seen)");
    }
    w_.line("cas_found = tl.atomic_cas(cas_ptr, cas_seen, cas_want)");
    w_.line("cas_todo = cas_todo & (cas_found != cas_seen)");
    w_.line("cas_seen = cas_found");
    w_.dedent();
  } else if (atomic) {
    std::string fn = n.combine == Op::Add ? "tl.atomic_add" : n.combine == Op::Maximum ? "tl.atomic_max" : "tl.atomic_min";
    w_.line(fn + "(" + ptr + ", " + stored + (m.empty() ? "" : ", " + m) + ")");
  } else {
    w_.line("tl.store(" + ptr + ", " + stored + (m.empty() ? "" : ", " + m) + ")");
  }
  // The write kernel reads the body's buffers and writes out (never the initial tensor).
  std::vector<std::pair<int, std::string>> write_params;
  for (const auto &pr : params) {
    bool body_reads = false;
    for (const Instr &i : n.body.instrs)
      if (i.op == Op::Load && i.buffer == pr.first) body_reads = true;
    if (body_reads || pr.first == out) write_params.push_back(pr);
  }
  end(write_params, int(std::clamp<int64_t>(l.block0 / 256, 1, 4)), {sym_max(triton_blocks(writes, l.block0), 1), 1, 1},
      {{"layout", std::string(atomic    ? "atomic " + std::string(ir::op_name(n.combine)) + "s"
                              : n.accumulate ? "compare-and-swaps of " + std::string(ir::op_name(n.combine)) + "s"
                                             : "stores") +
                       " at indices read from data, in blocks of XBLOCK"}});
}

}  // namespace coil::codegen::detail
