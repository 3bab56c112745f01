// The Triton attention kernel (triton_attention.h): its plan, the plans worth timing, and the
// printer, which only prints what the plan and the call's views say.
#include "codegen/triton/triton_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "codegen/common/writer.h"
#include "codegen/cpp/cpp_wrapper.h"
#include "codegen/triton/triton_ops.h"
#include "support/error.h"

namespace coil::codegen {
namespace {

int64_t pow2_at_least(int64_t n, int64_t floor) {
  int64_t p = floor;
  while (p < n) p *= 2;
  return p;
}

struct Call {
  ir::AttentionCall c;
  const ir::View &q, &k, &v;
  DType dtype;
  SymInt batch, heads;
  int64_t group;
  SymInt rows, keys;
  int64_t e, ev;  // the head's elements: constexpr block shapes (guarded when symbolic)
};

Call call_of(const ir::Program &p, const ir::Kernel &k) {
  COIL_ASSERT(k.nodes.size() == 1, "an attention kernel takes no epilogue");
  const ir::Node &n = p.nodes[size_t(k.nodes[0])];
  ir::AttentionCall c = ir::attention_call(n);
  const ir::View &q = *c.q, &kk = *c.k, &v = *c.v;
  return Call{c, q, kk, v, p.buffer(q.buffer).type.dtype, q.sizes[0], q.sizes[1], c.group, q.sizes[2], kk.sizes[2],
              q.sizes[3], v.sizes[3]};
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string AttentionPlan::str() const {
  return str_cat("BLOCK_M=", block_m, " BLOCK_N=", block_n, " warps=", warps, " stages=", stages);
}

AttentionPlan plan_attention(const ir::Program &p, const ir::Kernel &k, const TritonConfig &config) {
  Call c = call_of(p, k);
  AttentionPlan plan;
  int64_t head = std::max(c.e, c.ev);
  if (c.dtype == DType::F64) {
    plan = {16, 16, 4, 1};  // broadcast products: the tile's cube lives in registers
  } else if (c.c.gradient()) {
    // A program keeps its own block (query rows or keys) of the operands it multiplies by
    // and its gradient's accumulator, and walks the other side's blocks.
    plan = c.dtype == DType::F32 ? AttentionPlan{32, 32, 4, 1} : AttentionPlan{64, 64, head > 64 ? 8 : 4, 2};
  } else if (c.dtype == DType::F32) {
    plan = {64, 32, 4, 2};
  } else {
    plan = {128, head > 64 ? 32 : 64, head > 64 ? 8 : 4, 3};
  }
  // Short sequences: no block longer than the sequence (rounded up to the 16 tl.dot needs).
  plan.block_m = std::min(plan.block_m, pow2_at_least(c.rows.hint(), 16));
  plan.block_n = std::min(plan.block_n, pow2_at_least(c.keys.hint(), 16));
  if (config.block0 > 0) plan.block_m = std::max<int64_t>(config.block0, 16);
  if (config.block1 > 0) plan.block_n = std::max<int64_t>(config.block1, 16);
  if (config.num_warps > 0) plan.warps = config.num_warps;
  if (config.num_stages > 0) plan.stages = config.num_stages;
  return plan;
}

std::vector<AttentionPlan> attention_tuning_plans(const ir::Program &p, const ir::Kernel &k, const AttentionPlan &chosen) {
  Call c = call_of(p, k);
  std::vector<AttentionPlan> out = {chosen};
  // Not worth timing: short sequences (one block either way), f64 (one plan fits) and the
  // gradients (one plan, for now).
  if (c.dtype == DType::F64 || c.c.gradient() || c.batch.hint() * c.heads.hint() * c.rows.hint() * c.keys.hint() < (int64_t(1) << 16))
    return out;
  int64_t head = std::max(c.e, c.ev);
  std::vector<AttentionPlan> grid;
  for (int64_t bm : {64, 128})
    for (int64_t bn : {32, 64, 128})
      for (int warps : {4, 8})
        for (int stages : {2, 3}) {
          // Tiles whose operands would not fit in registers and shared memory are left out.
          if (bm * head * 2 > 128 * 128 * 2 || (bn == 128 && head > 64) || (warps == 8 && bm == 64)) continue;
          if (c.dtype == DType::F32 && (bm > 64 || bn > 64)) continue;
          grid.push_back({std::min(bm, pow2_at_least(c.rows.hint(), 16)), std::min(bn, pow2_at_least(c.keys.hint(), 16)), warps, stages});
        }
  for (const AttentionPlan &g : grid) {
    bool seen = std::any_of(out.begin(), out.end(), [&](const AttentionPlan &o) { return o.config() == g.config(); });
    if (!seen && out.size() < 10) out.push_back(g);
  }
  return out;
}

GpuKernel emit_attention(const ir::Program &p, const ir::Kernel &k, const AttentionPlan &plan, std::vector<int> &args) {
  Call c = call_of(p, k);
  const bool grads = c.c.gradient();
  const ir::Node &n = p.nodes[size_t(k.nodes[0])];
  const ir::View *mask = c.c.mask;
  // One pointer per distinct buffer (q, k and v are often views of one qkv buffer).
  std::vector<std::pair<int, std::string>> params;
  int inputs = 0, outputs = 0;
  auto name_of = [&](ir::BufferId b, bool output) {
    for (const auto &[id, name] : params)
      if (id == b) return name;
    params.push_back({b, output ? "out_ptr" + std::to_string(outputs++) : "in_ptr" + std::to_string(inputs++)});
    return params.back().second;
  };
  std::string qp = name_of(c.q.buffer, false), kp = name_of(c.k.buffer, false), vp = name_of(c.v.buffer, false);
  std::string dop, lsep, deltap;
  if (grads) {
    dop = name_of(c.c.grad_out->buffer, false);
    lsep = name_of(c.c.lse->buffer, false);
    deltap = name_of(c.c.delta->buffer, false);
  }
  std::string mp = mask ? name_of(mask->buffer, false) : "";
  std::vector<std::string> outs;  // the results' pointers, in the node's order
  for (ir::BufferId b : n.outputs) outs.push_back(name_of(b, true));

  bool f64 = c.dtype == DType::F64, f32 = c.dtype == DType::F32, bf16 = c.dtype == DType::BF16;
  std::string acc_t = f64 ? "tl.float64" : "tl.float32";
  // Sizes in the code: numbers, or expressions of the symbols the kernel then takes.
  std::set<std::string> symbols;
  auto sz = [&](const SymInt &s) {
    if (s.symbolic()) ir::collect_symbols(s.expr(), symbols);
    return triton_size(s);
  };
  int64_t dp = pow2_at_least(c.e, 16), dvp = pow2_at_least(c.ev, 16);
  SymInt blocks_m = triton_blocks(c.rows, plan.block_m), blocks_n = triton_blocks(c.keys, plan.block_n);
  const double log2e = 1.4426950408889634;
  // Bounds that the block sizes do not already keep: a mask only where a block overhangs.
  bool m_tail = blocks_may_overrun(c.rows, plan.block_m), n_tail = blocks_may_overrun(c.keys, plan.block_n);
  bool d_tail = dp != c.e, dv_tail = dvp != c.ev;
  auto both = [](const std::string &a, const std::string &b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    return "(" + a + ") & (" + b + ")";
  };
  auto masked = [](const std::string &m, const std::string &other) {
    return m.empty() ? std::string() : ", mask=" + m + ", other=" + other;
  };
  auto base = [&](const ir::View &v, const char *head) {
    return str_cat("(", sz(v.offset), " + b * ", sz(v.strides[0]), " + ", head, " * ", sz(v.strides[1]), ")");
  };
  // A tile of view `v` (4-d): `rows` (an index vector) along dim 2 and `cols` along dim 3,
  // laid out [rows, cols] (`across` false) or [cols, rows]; `bound` masks where it overhangs.
  auto tile = [&](const std::string &ptr, const ir::View &v, const char *head, const std::string &rows,
                  const std::string &cols, bool across, const std::string &bound) {
    std::string r = across ? rows + "[None, :]" : rows + "[:, None]", cl = across ? cols + "[:, None]" : cols + "[None, :]";
    return str_cat("tl.load(", ptr, " + ", base(v, head), " + ", r, " * ", sz(v.strides[2]), " + ", cl, " * ",
                   sz(v.strides[3]), masked(bound, "0.0"), ")");
  };
  // The bounds of query rows and keys laid along a tile's second dim (`second`) or its
  // first, and of the head's elements along its first dim (`first`) or its second.
  auto row_bound = [&](const std::string &rows, bool second) {
    return m_tail ? str_cat(rows, second ? "[None, :]" : "[:, None]", " < ", sz(c.rows)) : std::string();
  };
  auto key_bound = [&](const std::string &cols, bool second) {
    return n_tail ? str_cat(cols, second ? "[None, :]" : "[:, None]", " < ", sz(c.keys)) : std::string();
  };
  auto d_bound = [&](bool first) { return d_tail ? str_cat(first ? "offs_d[:, None]" : "offs_d[None, :]", " < ", c.e) : std::string(); };
  auto e_bound = [&](bool first) { return dv_tail ? str_cat(first ? "offs_e[:, None]" : "offs_e[None, :]", " < ", c.ev) : std::string(); };
  Writer w;
  w.indent();
  // `target = a @ b` as statements. Triton's interpreter multiplies bf16 tiles wrongly (it
  // has no bf16 in numpy): there, and only there, the tiles are widened to f32 first.
  auto dot = [&](const std::string &target, const std::string &a, const std::string &b, const std::string &tail) {
    if (f64) return w.line(str_cat(target, "tl.sum(", a, "[:, :, None] * ", b, "[None, :, :], 1)", tail));
    if (!bf16) return w.line(str_cat(target, "tl.dot(", a, ", ", b, f32 ? ", input_precision=\"ieee\")" : ")", tail));
    w.line("if INTERPRETED:");
    w.line(str_cat("  ", target, "tl.dot(", a, ".to(tl.float32), ", b, ".to(tl.float32))", tail));
    w.line("else:");
    w.line(str_cat("  ", target, "tl.dot(", a, ", ", b, ")", tail));
  };
  // A product's operand in the inputs' dtype: probabilities and score gradients are
  // rounded to it before they multiply, as fused kernels hand them to their matrix units.
  auto operand = [&](const std::string &x) { return f32 || f64 ? x : x + ".to(" + qp + ".dtype.element_ty)"; };
  // Scores in log2 units (scale * log2 e folded in) of tile `qk` ([rows, cols], or
  // [cols, rows] when `across`): the mask's bias or drop, causality, keys past the end and
  // (`rows_bounded`) query rows past the end at -inf.
  auto finish_scores = [&](const std::string &qk, const std::string &rows, const std::string &cols, bool across,
                           bool rows_bounded) {
    std::string r = across ? rows + "[None, :]" : rows + "[:, None]", cl = across ? cols + "[:, None]" : cols + "[None, :]";
    if (mask) {
      bool bool_mask = p.buffer(mask->buffer).type.dtype == DType::Bool;
      w.line(str_cat("mv = tl.load(", mp, " + ", base(*mask, "h"), " + ", r, " * ", sz(mask->strides[2]), " + ", cl, " * ",
                     sz(mask->strides[3]), masked(both(row_bound(rows, across), key_bound(cols, !across)), bool_mask ? "0" : "0.0"),
                     ")"));
      w.line(bool_mask ? str_cat(qk, " = tl.where(mv != 0, ", qk, ", float(\"-inf\"))")
                       : str_cat(qk, " += mv.to(", acc_t, ") * ", num(log2e)));
    }
    std::string keep = both(key_bound(cols, !across), c.c.causal ? str_cat(r, " >= ", cl) : "");
    if (rows_bounded) keep = both(keep, row_bound(rows, across));
    if (!keep.empty()) w.line(str_cat(qk, " = tl.where(", keep, ", ", qk, ", float(\"-inf\"))"));
  };
  // The rows' logsumexp (log2 units; 0 where it is -inf, so that a row of dropped keys
  // has probabilities 0) and D, for query rows `rows`.
  auto row_stats = [&](const std::string &rows) {
    std::string bound = m_tail ? str_cat(", mask=", rows, " < ", sz(c.rows), ", other=0.0") : "";
    const ir::View &l = *c.c.lse, &d = *c.c.delta;
    w.line(str_cat("lse = tl.load(", lsep, " + ", base(l, "h"), " + ", rows, " * ", sz(l.strides[2]), bound, ")"));
    w.line(str_cat("shift = tl.where(lse == float(\"-inf\"), 0.0, lse) * ", num(log2e)));
    w.line(str_cat("delta = tl.load(", deltap, " + ", base(d, "h"), " + ", rows, " * ", sz(d.strides[2]), bound, ")"));
  };
  // Result `i` (a [B, H, rows, cols] buffer) at rows `rows` (the query rows, or `keys`)
  // and the head's elements (offs_d over E where `head_d`, else offs_e over Ev) from tile
  // `value`.
  auto store_tile = [&](size_t i, const std::string &rows, bool keys, bool head_d, const std::string &value) {
    const TensorType &t = p.buffer(n.outputs[i]).type;
    std::string bound = both(keys ? key_bound(rows, false) : row_bound(rows, false), head_d ? d_bound(false) : e_bound(false));
    w.line(str_cat("tl.store(", outs[i], " + ", base(ir::View{n.outputs[i], t.sizes, t.strides, 0}, "h"), " + ", rows,
                   "[:, None] * ", sz(t.strides[2]), " + ", head_d ? "offs_d" : "offs_e", "[None, :] * ", sz(t.strides[3]), ", ",
                   value, ".to(", outs[i], ".dtype.element_ty)", bound.empty() ? "" : ", mask=" + bound, ")"));
  };

  // Programs: per (batch, head), one per block of query rows (the forward, dq), and for the
  // gradients first one per block of keys (dk and dv), so that no two add to one row.
  const SymInt key_programs = grads ? blocks_n * c.batch * c.heads : SymInt(0);
  w.line("pid = tl.program_id(0)");
  w.line(str_cat("offs_d = tl.arange(0, ", dp, ")"));
  w.line(str_cat("offs_e = tl.arange(0, ", dvp, ")"));
  // The program's block `var` among `blocks` of its (b, h), from pid less `first`.
  auto head_of = [&](const char *var, const SymInt &blocks, const SymInt &first) {
    std::string id = known_eq(first, 0) ? std::string("pid") : str_cat("(pid - ", sz(first), ")");
    w.line(str_cat(var, " = ", id, " % ", sz(blocks)));
    w.line(str_cat("bh = (", id, " // ", sz(blocks), ").to(tl.int64)"));
    w.line(str_cat("b = bh // ", sz(c.heads)));
    w.line(str_cat("h = bh % ", sz(c.heads)));
    w.line(str_cat("hk = h // ", c.group));
  };

  if (grads) {
    // dk and dv of a block of keys: dS and P against each block of query rows.
    w.line(str_cat("if pid < ", sz(key_programs), ":"));
    w.indent();
    head_of("start_n", blocks_n, 0);
    w.line("cols = start_n * BLOCK_N + tl.arange(0, BLOCK_N)");
    w.line(str_cat("k = ", tile(kp, c.k, "hk", "cols", "offs_d", false, both(key_bound("cols", false), d_bound(false)))));
    w.line(str_cat("v = ", tile(vp, c.v, "hk", "cols", "offs_e", false, both(key_bound("cols", false), e_bound(false)))));
    w.line(str_cat("dk = tl.zeros([BLOCK_N, ", dp, "], ", acc_t, ")"));
    w.line(str_cat("dv = tl.zeros([BLOCK_N, ", dvp, "], ", acc_t, ")"));
    // Causal: the rows before a key's own see none of the block's keys.
    if (c.c.causal)
      w.line(str_cat("for start_m in range(0 if INTERPRETED else (start_n * BLOCK_N // BLOCK_M) * BLOCK_M, ", sz(c.rows),
                     ", BLOCK_M):"));
    else
      w.line(str_cat("for start_m in range(0, ", sz(c.rows), ", BLOCK_M):"));
    w.indent();
    w.line("offs_m = start_m + tl.arange(0, BLOCK_M)");
    // The query rows and dO once each, [BLOCK_M, D or Dv] for the products, transposed
    // for the scores and dP.
    w.line(str_cat("qr = ", tile(qp, c.q, "h", "offs_m", "offs_d", false, both(row_bound("offs_m", false), d_bound(false)))));
    w.line(str_cat("do = ", tile(dop, *c.c.grad_out, "h", "offs_m", "offs_e", false,
                                 both(row_bound("offs_m", false), e_bound(false)))));
    dot("qk = ", "k", "tl.trans(qr)", str_cat(" * ", num(c.c.scale * log2e)));
    finish_scores("qk", "offs_m", "cols", true, true);
    row_stats("offs_m");
    w.line("p = tl.math.exp2(qk - shift[None, :])");
    dot("dv += ", operand("p"), "do", "");
    dot("dp = ", "v", "tl.trans(do)", "");
    w.line(str_cat("ds = p * (dp - delta[None, :]) * ", num(c.c.scale)));
    dot("dk += ", operand("ds"), "qr", "");
    w.dedent();
    store_tile(1, "cols", true, true, "dk");
    store_tile(2, "cols", true, false, "dv");
    w.dedent();
    w.line("else:");
    w.indent();
  }
  // A block of query rows: the output (and the logsumexp) by the online softmax, or dq.
  head_of("start_m", blocks_m, key_programs);
  w.line("offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)");
  w.line(str_cat("q = ", tile(qp, c.q, "h", "offs_m", "offs_d", false, both(row_bound("offs_m", false), d_bound(false)))));
  w.line(str_cat("k_base = ", kp, " + ", base(c.k, "hk")));
  w.line(str_cat("v_base = ", vp, " + ", base(c.v, "hk")));
  if (grads) {
    w.line(str_cat("do = ", tile(dop, *c.c.grad_out, "h", "offs_m", "offs_e", false,
                                 both(row_bound("offs_m", false), e_bound(false)))));
    row_stats("offs_m");
    w.line(str_cat("acc = tl.zeros([BLOCK_M, ", dp, "], ", acc_t, ")"));
  } else {
    w.line(str_cat("m_i = tl.full([BLOCK_M], float(\"-inf\"), ", acc_t, ")"));
    w.line(str_cat("l_i = tl.zeros([BLOCK_M], ", acc_t, ")"));
    w.line(str_cat("acc = tl.zeros([BLOCK_M, ", dvp, "], ", acc_t, ")"));
  }
  // Causal programs stop at their last row's block. Triton's interpreter cannot loop to a
  // bound computed from the program id: there, and only there, they visit every block.
  if (c.c.causal)
    w.line(str_cat("for start_n in range(0, ", sz(c.keys), " if INTERPRETED else tl.minimum(", sz(c.keys),
                   ", (start_m + 1) * BLOCK_M), BLOCK_N):"));
  else
    w.line(str_cat("for start_n in range(0, ", sz(c.keys), ", BLOCK_N):"));
  w.indent();
  w.line("cols = start_n + tl.arange(0, BLOCK_N)");
  if (grads) {
    // The keys once, [BLOCK_N, D] for dq += dS k, transposed for the scores.
    w.line(str_cat("kr = tl.load(k_base + cols[:, None] * ", sz(c.k.strides[2]), " + offs_d[None, :] * ", sz(c.k.strides[3]),
                   masked(both(key_bound("cols", false), d_bound(false)), "0.0"), ")"));
    dot("qk = ", "q", "tl.trans(kr)", str_cat(" * ", num(c.c.scale * log2e)));
  } else {
    w.line(str_cat("k = tl.load(k_base + cols[None, :] * ", sz(c.k.strides[2]), " + offs_d[:, None] * ", sz(c.k.strides[3]),
                   masked(both(key_bound("cols", true), d_bound(true)), "0.0"), ")"));
    dot("qk = ", "q", "k", str_cat(" * ", num(c.c.scale * log2e)));
  }
  finish_scores("qk", "offs_m", "cols", false, false);
  if (grads) {
    w.line("p = tl.math.exp2(qk - shift[:, None])");
    w.line(str_cat("vt = tl.load(v_base + cols[None, :] * ", sz(c.v.strides[2]), " + offs_e[:, None] * ", sz(c.v.strides[3]),
                   masked(both(key_bound("cols", true), e_bound(true)), "0.0"), ")"));
    dot("dp = ", "do", "vt", "");
    w.line(str_cat("ds = p * (dp - delta[:, None]) * ", num(c.c.scale)));
    dot("acc += ", operand("ds"), "kr", "");
    w.dedent();
    store_tile(0, "offs_m", false, true, "acc");
  } else {
    w.line("m_new = tl.maximum(m_i, tl.max(qk, 1))");
    w.line("m_safe = tl.where(m_new == float(\"-inf\"), 0.0, m_new)");
    w.line("p = tl.math.exp2(qk - m_safe[:, None])");
    w.line("alpha = tl.math.exp2(m_i - m_safe)");
    w.line("l_i = l_i * alpha + tl.sum(p, 1)");
    w.line(str_cat("v = tl.load(v_base + cols[:, None] * ", sz(c.v.strides[2]), " + offs_e[None, :] * ", sz(c.v.strides[3]),
                   masked(both(key_bound("cols", false), e_bound(false)), "0.0"), ")"));
    dot("acc = acc * alpha[:, None] + ", operand("p"), "v", "");
    w.line("m_i = m_new");
    w.dedent();
    w.line("acc = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]");
    store_tile(0, "offs_m", false, false, "acc");
    if (c.c.writes_logsumexp) {
      // log(sum) in natural units from the log2 ones: (m + log2 l) ln 2.
      w.line(str_cat("lse = tl.where(l_i == 0.0, float(\"-inf\"), (m_i + tl.math.log2(tl.where(l_i == 0.0, 1.0, l_i))) * ",
                     num(1 / log2e), ")"));
      const TensorType &t = p.buffer(n.outputs[1]).type;
      w.line(str_cat("tl.store(", outs[1], " + ", base(ir::View{n.outputs[1], t.sizes, t.strides, 0}, "h"), " + offs_m * ",
                     sz(t.strides[2]), ", lse", m_tail ? str_cat(", mask=offs_m < ", sz(c.rows)) : "", ")"));
    }
  }
  if (grads) w.dedent();

  GpuKernel g;
  g.name = k.name;
  std::string sig;
  args.clear();
  for (const auto &[id, name] : params) {
    g.signature.push_back({name, triton_pointer_type(p.buffer(id).type.dtype)});
    sig += name + ", ";
    args.push_back(id);
  }
  // The symbols as 64-bit integers: the kernel's offsets are 64-bit (bh) already.
  for (const std::string &symbol : symbols) {
    g.signature.push_back({symbol, "i64"});
    g.sizes.push_back(symbol);
    sig += symbol + ", ";
  }
  g.signature.push_back({"BLOCK_M", "constexpr"});
  g.signature.push_back({"BLOCK_N", "constexpr"});
  g.constexprs["BLOCK_M"] = plan.block_m;
  g.constexprs["BLOCK_N"] = plan.block_n;
  g.num_warps = plan.warps;
  g.num_stages = plan.stages;
  g.grid = {key_programs + blocks_m * c.batch * c.heads, 1, 1};
  g.attrs = {{"layout", str_cat("fused attention, ", ir::attention_part_name(c.c.part),
                                c.c.writes_logsumexp ? " with the logsumexp" : "", ": ", c.c.causal ? "causal, " : "",
                                mask ? "masked, " : "", "scale ", num(c.c.scale),
                                c.group > 1 ? str_cat(", ", c.group, " query heads per key head") : "",
                                grads ? ", a program per block of keys (dk, dv) and per block of query rows (dq)" : "")},
             {"plan", plan.str()},
             {"grid", str_cat(str(g.grid[0]), "x1x1")}};
  std::string head = "# " + ir::kernel_summary(p, k) + "\n";
  for (const auto &[key, value] : g.attrs) head += "# " + key + ": " + value + "\n";
  std::string prelude = "import triton\nimport triton.language as tl\n";
  if (bf16 || c.c.causal)
    prelude = "import os\n\n" + prelude + "\nINTERPRETED = tl.constexpr(os.environ.get(\"TRITON_INTERPRET\", \"0\") == \"1\")\n";
  g.source = head + prelude + "\n\n@triton.jit\ndef " + k.name + "(" + sig +
             "BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):\n" + w.str();
  return g;
}

}  // namespace coil::codegen
