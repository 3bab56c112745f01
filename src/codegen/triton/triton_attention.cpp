// The Triton attention kernel (triton_attention.h): its plan, the plans worth timing, and the
// printer, which only prints what the plan and the call's views say.
#include "codegen/triton/triton_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

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
  const ir::View &q, &k, &v;
  const ir::View *mask;
  DType dtype;
  int64_t batch, heads, group, rows, keys, e, ev;
  bool causal;
  double scale;
};

Call call_of(const ir::Program &p, const ir::Kernel &k) {
  const ir::Node &n = p.nodes[size_t(k.nodes[0])];
  COIL_ASSERT(n.kind == ir::NodeKind::Extern && n.extern_op == ir::ExternOp::Attention, k.name, " is no attention call");
  COIL_ASSERT(k.nodes.size() == 1, "an attention kernel takes no epilogue");
  const ir::View &q = n.operands[0], &kk = n.operands[1], &v = n.operands[2];
  return Call{q, kk, v, n.operands.size() > 3 ? &n.operands[3] : nullptr, p.buffer(q.buffer).type.dtype,
              q.sizes[0], q.sizes[1], n.attrs.at("kv_group")[0], q.sizes[2], kk.sizes[2], q.sizes[3], v.sizes[3],
              n.attrs.at("causal")[0] != 0, n.scalars.at("scale")};
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
  } else if (c.dtype == DType::F32) {
    plan = {64, 32, 4, 2};
  } else {
    plan = {128, head > 64 ? 32 : 64, head > 64 ? 8 : 4, 3};
  }
  // Short sequences: no block longer than the sequence (rounded up to the 16 tl.dot needs).
  plan.block_m = std::min(plan.block_m, pow2_at_least(c.rows, 16));
  plan.block_n = std::min(plan.block_n, pow2_at_least(c.keys, 16));
  if (config.block0 > 0) plan.block_m = std::max<int64_t>(config.block0, 16);
  if (config.block1 > 0) plan.block_n = std::max<int64_t>(config.block1, 16);
  if (config.num_warps > 0) plan.warps = config.num_warps;
  if (config.num_stages > 0) plan.stages = config.num_stages;
  return plan;
}

std::vector<AttentionPlan> attention_tuning_plans(const ir::Program &p, const ir::Kernel &k, const AttentionPlan &chosen) {
  Call c = call_of(p, k);
  std::vector<AttentionPlan> out = {chosen};
  // Not worth timing: short sequences (one block either way) and f64 (one plan fits).
  if (c.dtype == DType::F64 || c.batch * c.heads * c.rows * c.keys < (int64_t(1) << 16)) return out;
  int64_t head = std::max(c.e, c.ev);
  std::vector<AttentionPlan> grid;
  for (int64_t bm : {64, 128})
    for (int64_t bn : {32, 64, 128})
      for (int warps : {4, 8})
        for (int stages : {2, 3}) {
          // Tiles whose operands would not fit in registers and shared memory are left out.
          if (bm * head * 2 > 128 * 128 * 2 || (bn == 128 && head > 64) || (warps == 8 && bm == 64)) continue;
          if (c.dtype == DType::F32 && (bm > 64 || bn > 64)) continue;
          grid.push_back({std::min(bm, pow2_at_least(c.rows, 16)), std::min(bn, pow2_at_least(c.keys, 16)), warps, stages});
        }
  for (const AttentionPlan &g : grid) {
    bool seen = std::any_of(out.begin(), out.end(), [&](const AttentionPlan &o) { return o.config() == g.config(); });
    if (!seen && out.size() < 10) out.push_back(g);
  }
  return out;
}

GpuKernel emit_attention(const ir::Program &p, const ir::Kernel &k, const AttentionPlan &plan, std::vector<int> &args) {
  Call c = call_of(p, k);
  const ir::Node &n = p.nodes[size_t(k.nodes[0])];
  const TensorType &out = p.buffer(n.outputs[0]).type;
  // One pointer per distinct buffer (q, k and v are often views of one qkv buffer).
  std::vector<std::pair<int, std::string>> params;
  int inputs = 0;
  auto name_of = [&](ir::BufferId b, bool output) {
    for (const auto &[id, name] : params)
      if (id == b) return name;
    params.push_back({b, output ? "out_ptr0" : "in_ptr" + std::to_string(inputs++)});
    return params.back().second;
  };
  std::string qp = name_of(c.q.buffer, false), kp = name_of(c.k.buffer, false), vp = name_of(c.v.buffer, false);
  std::string mp = c.mask ? name_of(c.mask->buffer, false) : "";
  std::string op = name_of(n.outputs[0], true);

  bool f64 = c.dtype == DType::F64, f32 = c.dtype == DType::F32;
  std::string acc_t = f64 ? "tl.float64" : "tl.float32";
  int64_t dp = pow2_at_least(c.e, 16), dvp = pow2_at_least(c.ev, 16);
  int64_t blocks_m = (c.rows + plan.block_m - 1) / plan.block_m;
  const double log2e = 1.4426950408889634;
  // Bounds that the block sizes do not already keep: a mask only where a block overhangs.
  // A causal program's last block may pass its bound, never the last key.
  bool m_tail = c.rows % plan.block_m != 0, n_tail = c.keys % plan.block_n != 0;
  bool d_tail = dp != c.e, dv_tail = dvp != c.ev;
  auto both = [](const std::string &a, const std::string &b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    return "(" + a + ") & (" + b + ")";
  };
  auto masked = [](const std::string &m, const std::string &other) {
    return m.empty() ? std::string() : ", mask=" + m + ", other=" + other;
  };
  auto base = [](const ir::View &v, const char *head) {
    return str_cat("(", v.offset, " + b * ", v.strides[0], " + ", head, " * ", v.strides[1], ")");
  };
  Writer w;
  w.indent();
  bool bf16 = c.dtype == DType::BF16;
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
  std::string row_mask = m_tail ? str_cat("offs_m[:, None] < ", c.rows) : "";
  std::string col_mask = n_tail ? str_cat("cols[None, :] < ", c.keys) : "";


  w.line("pid = tl.program_id(0)");
  w.line(str_cat("start_m = pid % ", blocks_m));
  w.line(str_cat("bh = (pid // ", blocks_m, ").to(tl.int64)"));
  w.line(str_cat("b = bh // ", c.heads));
  w.line(str_cat("h = bh % ", c.heads));
  w.line(str_cat("hk = h // ", c.group));
  w.line("offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)");
  w.line("offs_n = tl.arange(0, BLOCK_N)");
  w.line(str_cat("offs_d = tl.arange(0, ", dp, ")"));
  w.line(str_cat("offs_e = tl.arange(0, ", dvp, ")"));
  w.line(str_cat("q = tl.load(", qp, " + ", base(c.q, "h"), " + offs_m[:, None] * ", c.q.strides[2], " + offs_d[None, :] * ",
                 c.q.strides[3], masked(both(row_mask, d_tail ? str_cat("offs_d[None, :] < ", c.e) : ""), "0.0"), ")"));
  w.line(str_cat("k_base = ", kp, " + ", base(c.k, "hk")));
  w.line(str_cat("v_base = ", vp, " + ", base(c.v, "hk")));
  if (c.mask) w.line(str_cat("mask_base = ", mp, " + ", base(*c.mask, "h"), " + offs_m[:, None] * ", c.mask->strides[2]));
  w.line(str_cat("m_i = tl.full([BLOCK_M], float(\"-inf\"), ", acc_t, ")"));
  w.line(str_cat("l_i = tl.zeros([BLOCK_M], ", acc_t, ")"));
  w.line(str_cat("acc = tl.zeros([BLOCK_M, ", dvp, "], ", acc_t, ")"));
  // Causal programs stop at their last row's block. Triton's interpreter cannot loop to a
  // bound computed from the program id: there, and only there, they visit every block.
  if (c.causal)
    w.line(str_cat("for start_n in range(0, ", c.keys, " if INTERPRETED else tl.minimum(", c.keys,
                   ", (start_m + 1) * BLOCK_M), BLOCK_N):"));
  else
    w.line(str_cat("for start_n in range(0, ", c.keys, ", BLOCK_N):"));
  w.indent();
  w.line("cols = start_n + offs_n");
  w.line(str_cat("k = tl.load(k_base + cols[None, :] * ", c.k.strides[2], " + offs_d[:, None] * ", c.k.strides[3],
                 masked(both(col_mask, d_tail ? str_cat("offs_d[:, None] < ", c.e) : ""), "0.0"), ")"));
  dot("qk = ", "q", "k", str_cat(" * ", num(c.scale * log2e)));
  if (c.mask) {
    bool bool_mask = p.buffer(c.mask->buffer).type.dtype == DType::Bool;
    w.line(str_cat("mv = tl.load(mask_base + cols[None, :] * ", c.mask->strides[3],
                   masked(both(row_mask, col_mask), bool_mask ? "0" : "0.0"), ")"));
    w.line(bool_mask ? "qk = tl.where(mv != 0, qk, float(\"-inf\"))" : str_cat("qk += mv.to(", acc_t, ") * ", num(log2e)));
  }
  std::string keep = both(col_mask, c.causal ? "offs_m[:, None] >= cols[None, :]" : "");
  if (!keep.empty()) w.line("qk = tl.where(" + keep + ", qk, float(\"-inf\"))");
  w.line("m_new = tl.maximum(m_i, tl.max(qk, 1))");
  w.line("m_safe = tl.where(m_new == float(\"-inf\"), 0.0, m_new)");
  w.line("p = tl.math.exp2(qk - m_safe[:, None])");
  w.line("alpha = tl.math.exp2(m_i - m_safe)");
  w.line("l_i = l_i * alpha + tl.sum(p, 1)");
  w.line(str_cat("v = tl.load(v_base + cols[:, None] * ", c.v.strides[2], " + offs_e[None, :] * ", c.v.strides[3],
                 masked(both(n_tail ? str_cat("cols[:, None] < ", c.keys) : "", dv_tail ? str_cat("offs_e[None, :] < ", c.ev) : ""),
                        "0.0"),
                 ")"));
  dot("acc = acc * alpha[:, None] + ", f32 || f64 ? "p" : "p.to(v.dtype)", "v", "");
  w.line("m_i = m_new");
  w.dedent();
  w.line("acc = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]");
  std::string store_mask = both(row_mask, dv_tail ? str_cat("offs_e[None, :] < ", c.ev) : "");
  w.line(str_cat("tl.store(", op, " + ", base(ir::View{n.outputs[0], out.sizes, out.strides, 0}, "h"), " + offs_m[:, None] * ",
                 out.strides[2], " + offs_e[None, :] * ", out.strides[3], ", acc.to(", op, ".dtype.element_ty)",
                 store_mask.empty() ? "" : ", mask=" + store_mask, ")"));

  GpuKernel g;
  g.name = k.name;
  std::string sig;
  args.clear();
  for (const auto &[id, name] : params) {
    g.signature.push_back({name, triton_pointer_type(p.buffer(id).type.dtype)});
    sig += name + ", ";
    args.push_back(id);
  }
  g.signature.push_back({"BLOCK_M", "constexpr"});
  g.signature.push_back({"BLOCK_N", "constexpr"});
  g.constexprs["BLOCK_M"] = plan.block_m;
  g.constexprs["BLOCK_N"] = plan.block_n;
  g.num_warps = plan.warps;
  g.num_stages = plan.stages;
  g.grid = {blocks_m * c.batch * c.heads, 1, 1};
  g.attrs = {{"layout", str_cat("fused attention: ", c.causal ? "causal, " : "", c.mask ? "masked, " : "", "scale ", num(c.scale),
                                   c.group > 1 ? str_cat(", ", c.group, " query heads per key head") : "")},
             {"plan", plan.str()},
             {"grid", str_cat(g.grid[0], "x1x1")}};
  std::string head = "# " + ir::kernel_summary(p, k) + "\n";
  for (const auto &[key, value] : g.attrs) head += "# " + key + ": " + value + "\n";
  std::string prelude = "import triton\nimport triton.language as tl\n";
  if (bf16 || c.causal)
    prelude = "import os\n\n" + prelude + "\nINTERPRETED = tl.constexpr(os.environ.get(\"TRITON_INTERPRET\", \"0\") == \"1\")\n";
  g.source = head + prelude + "\n\n@triton.jit\ndef " + k.name + "(" + sig +
             "BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):\n" + w.str();
  return g;
}

}  // namespace coil::codegen
