// Scaled dot-product attention: scaled_dot_product_attention as torch.export keeps it, and
// the fused ops it dispatches to (flash, memory-efficient and cuDNN on CUDA, flash on the
// CPU), which AOTAutograd leaves in graphs. query [..., L, E], key [..., S, E], value
// [..., S, Ev] of one floating dtype, with equal batch dims but the heads (dim -3), where
// key and value may have fewer heads that divide the query's (grouped-query attention);
// an optional mask broadcastable to [..., L, S], boolean (true keeps a key) or additive.
// The output [..., L, Ev] is laid out as the library writes it (the query's layout or
// [B, L, H, Ev] transposed to [B, H, L, Ev] for the fused ops): a graph's annotation may give
// another dense layout
// (OpDef::layout_from_backend). The other outputs (logsumexp, the random state, debug
// masks, the sequence lengths that SymInt outputs carry) are typed as PyTorch's meta
// functions type them; coil computes logsumexp when a graph reads it (a training graph
// saves it for the backward op) and fills the rest, which only dropout would use, with zeros.
#include "graph/meta/common.h"

namespace coil {
namespace {

using meta::contiguous;

struct Attention {
  const TensorType *q, *k, *v;
  SymShape out;  // [..., L, Ev]
};

Attention check_attention(const MetaArgs &a, std::string_view op, const char *mask_name) {
  Attention at{&a.tensor("query"), &a.tensor("key"), &a.tensor("value"), {}};
  const TensorType &q = *at.q, &k = *at.k, &v = *at.v;
  COIL_USER_CHECK(q.rank() >= 3 && k.rank() == q.rank() && v.rank() == q.rank(), op,
                  " expects query, key and value of one rank, at least 3, got shapes ", shape_str(q.sizes), ", ",
                  shape_str(k.sizes), ", ", shape_str(v.sizes));
  COIL_USER_CHECK(is_floating(q.dtype) && k.dtype == q.dtype && v.dtype == q.dtype, op,
                  " expects query, key and value of one floating dtype, got ", short_name(q.dtype), ", ",
                  short_name(k.dtype), ", ", short_name(v.dtype));
  int64_t r = q.rank();
  COIL_USER_CHECK(k.sizes[size_t(r - 1)] == q.sizes[size_t(r - 1)] && k.sizes[size_t(r - 2)] == v.sizes[size_t(r - 2)],
                  op, ": query ", shape_str(q.sizes), ", key ", shape_str(k.sizes), " and value ", shape_str(v.sizes),
                  " do not agree (key's last dim must be query's, key and value one sequence length)");
  for (int64_t d = 0; d < r - 2; ++d) {
    bool heads = d == r - 3;
    const SymInt &qs = q.sizes[size_t(d)], &ks = k.sizes[size_t(d)];
    bool ok = ks == v.sizes[size_t(d)] && (heads ? ks > 0 && sym_mod(qs, ks) == 0 : ks == qs);
    COIL_USER_CHECK(ok, op, ": query ", shape_str(q.sizes), ", key ", shape_str(k.sizes), " and value ",
                    shape_str(v.sizes), " differ in dim ", d,
                    heads ? " (key and value heads must be equal and divide the query's)" : "");
  }
  at.out = q.sizes;
  at.out.back() = v.sizes.back();
  if (mask_name) {
    if (const TensorType *m = a.optional_tensor(mask_name)) {
      COIL_USER_CHECK(m->dtype == DType::Bool || is_floating(m->dtype), op, ": ", mask_name,
                      " must be boolean or floating, got ", short_name(m->dtype));
      SymShape scores = q.sizes;
      scores.back() = k.sizes[size_t(r - 2)];
      bool ok = m->rank() <= r;
      for (size_t i = 0; ok && i < m->sizes.size(); ++i) {
        const SymInt &s = m->sizes[m->sizes.size() - 1 - i];
        ok = s == 1 || s == scores[scores.size() - 1 - i];
      }
      COIL_USER_CHECK(ok, op, ": ", mask_name, " of shape ", shape_str(m->sizes),
                      " does not broadcast to the scores' shape ", shape_str(scores));
    }
  }
  return at;
}

/// [B, H, L, E] laid out as [B, L, H, E]: what the fused kernels write.
TensorType heads_inner(DType dtype, const SymShape &sizes, Device device) {
  TensorType t = contiguous(dtype, sizes, device);
  if (sizes.size() == 4) t.strides = {sizes[1] * sizes[2] * sizes[3], sizes[3], sizes[1] * sizes[3], 1};
  return t;
}

/// The flash and cuDNN kernels write the output in the query's layout where it is dense
/// (PyTorch's empty_like of the query), else as [B, L, H, E].
TensorType like_query(const Attention &at) {
  const TensorType &q = *at.q;
  if (at.out == q.sizes && is_non_overlapping_and_dense(q.sizes, q.strides))
    return TensorType{q.dtype, q.sizes, q.strides, q.device};
  return heads_inner(q.dtype, at.out, q.device);
}

TensorType scalar_i64(Device device) { return contiguous(DType::I64, {}, device); }
TensorType empty(DType dtype, Device device) { return contiguous(dtype, {0}, device); }

SymShape lse_shape(const Attention &at) { return SymShape(at.q->sizes.begin(), at.q->sizes.end() - 1); }

/// The nine outputs of the flash and cuDNN ops: the output, logsumexp of shape `lse`, the
/// sequence offsets and lengths, the random state and the debug mask.
std::vector<TensorType> flash_like_outputs(const Attention &at, const SymShape &lse) {
  Device dev = at.q->device;
  return {like_query(at), contiguous(DType::F32, lse, dev), empty(DType::I64, dev), empty(DType::I64, dev),
          scalar_i64(dev), scalar_i64(dev), scalar_i64(dev), scalar_i64(dev), empty(at.q->dtype, dev)};
}

/// The gradients of query, key and value (and of the bias for the memory-efficient op, of
/// the bias's type, or empty without one), in the query's, key's and value's dtype and
/// sizes, laid out as [B, L, H, E] (`heads_inner`) or contiguous, as the kernel writes them.
std::vector<TensorType> attention_grads(const MetaArgs &a, std::string_view op, const char *mask_name, bool inner,
                                        bool bias_grad) {
  Attention at = check_attention(a, op, mask_name);
  const TensorType &dy = a.tensor(bias_grad ? "grad_out_" : "grad_out");  // the memory-efficient op's name
  COIL_USER_CHECK(dy.sizes == at.out && dy.dtype == at.q->dtype, op, ": grad_out of ", dy.str(),
                  " does not match the output's shape ", shape_str(at.out), " and the query's dtype");
  auto grad = [&](const TensorType &t) {
    return inner ? heads_inner(t.dtype, t.sizes, t.device) : contiguous(t.dtype, t.sizes, t.device);
  };
  std::vector<TensorType> grads = {grad(*at.q), grad(*at.k), grad(*at.v)};
  if (bias_grad) {
    const TensorType *bias = a.optional_tensor(mask_name);
    grads.push_back(bias ? contiguous(bias->dtype, bias->sizes, bias->device) : empty(at.q->dtype, at.q->device));
  }
  return grads;
}

}  // namespace

void register_attention_ops(Registry &r) {
  r.add("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
        "float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
        [](const MetaArgs &a) {
          Attention at = check_attention(a, "scaled_dot_product_attention", "attn_mask");
          return std::vector<TensorType>{contiguous(at.q->dtype, at.out, at.q->device)};
        })
      .layout_from_backend = true;
  r.add("_scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value, float dropout_p=0., "
        "bool is_causal=False, bool return_debug_mask=False, *, float? scale=None) -> (Tensor output, "
        "Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, SymInt max_k, Tensor rng_state, "
        "Tensor unused, Tensor debug_attn_mask)",
        [](const MetaArgs &a) {
          Attention at = check_attention(a, "_scaled_dot_product_flash_attention", nullptr);
          return flash_like_outputs(at, lse_shape(at));
        })
      .layout_from_backend = true;
  r.add("_scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias, "
        "bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, *, float? scale=None) -> "
        "(Tensor output, Tensor log_sumexp, Tensor philox_seed, Tensor philox_offset)",
        [](const MetaArgs &a) {
          Attention at = check_attention(a, "_scaled_dot_product_efficient_attention", "attn_bias");
          Device dev = at.q->device;
          // The memory-efficient kernel pads logsumexp's rows to a multiple of 32.
          SymShape lse = lse_shape(at);
          lse.back() = a.boolean("compute_log_sumexp") ? sym_floor_div(lse.back() + 31, 32) * 32 : SymInt(0);
          return std::vector<TensorType>{heads_inner(at.q->dtype, at.out, dev), contiguous(DType::F32, lse, dev),
                                         scalar_i64(dev), scalar_i64(dev)};
        })
      .layout_from_backend = true;
  r.add("_scaled_dot_product_cudnn_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias, "
        "bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, bool return_debug_mask=False, *, "
        "float? scale=None) -> (Tensor output, Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, "
        "SymInt max_k, Tensor philox_seed, Tensor philox_offset, Tensor debug_attn_mask)",
        [](const MetaArgs &a) {
          Attention at = check_attention(a, "_scaled_dot_product_cudnn_attention", "attn_bias");
          SymShape lse = lse_shape(at);
          lse.push_back(1);
          return flash_like_outputs(at, lse);
        })
      .layout_from_backend = true;
  r.add("_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, float dropout_p=0., "
        "bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor output, Tensor logsumexp)",
        [](const MetaArgs &a) {
          Attention at = check_attention(a, "_scaled_dot_product_flash_attention_for_cpu", "attn_mask");
          Device dev = at.q->device;
          // logsumexp [B, H, L] laid out as [B, L, H].
          SymShape lse = lse_shape(at);
          return std::vector<TensorType>{heads_inner(at.q->dtype, at.out, dev),
                                         TensorType{DType::F32, lse,
                                                    lse.size() == 3 ? SymShape{lse[1] * lse[2], 1, lse[1]} : contiguous_strides(lse),
                                                    dev}};
        })
      .layout_from_backend = true;
  // The backward ops AOTAutograd's backward graphs call (lowering/extern.cpp recomputes the
  // scores and differentiates through them). PyTorch's schemas type attn_bias and the
  // sequence offsets `Tensor`; graphs pass None for them.
  r.add("_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query, Tensor key, "
        "Tensor value, Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, *, Tensor? attn_mask=None, "
        "float? scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)",
        [](const MetaArgs &a) {
          return attention_grads(a, "_scaled_dot_product_flash_attention_for_cpu_backward", "attn_mask", true, false);
        })
      .layout_from_backend = true;
  r.add("_scaled_dot_product_flash_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, "
        "Tensor out, Tensor logsumexp, Tensor? cum_seq_q, Tensor? cum_seq_k, SymInt max_q, SymInt max_k, "
        "float dropout_p, bool is_causal, Tensor philox_seed, Tensor philox_offset, *, float? scale=None) -> "
        "(Tensor grad_query, Tensor grad_key, Tensor grad_value)",
        [](const MetaArgs &a) {
          return attention_grads(a, "_scaled_dot_product_flash_attention_backward", nullptr, false, false);
        })
      .layout_from_backend = true;
  r.add("_scaled_dot_product_efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor key, Tensor value, "
        "Tensor? attn_bias, Tensor out, Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, "
        "float dropout_p, bool[4] grad_input_mask, bool is_causal=False, *, float? scale=None) -> "
        "(Tensor, Tensor, Tensor, Tensor)",
        [](const MetaArgs &a) {
          return attention_grads(a, "_scaled_dot_product_efficient_attention_backward", "attn_bias", true, true);
        })
      .layout_from_backend = true;
  r.add("_scaled_dot_product_cudnn_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, "
        "Tensor out, Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, Tensor? attn_bias, "
        "Tensor? cum_seq_q, Tensor? cum_seq_k, SymInt max_q, SymInt max_k, float dropout_p, bool is_causal, *, "
        "float? scale=None) -> (Tensor, Tensor, Tensor)",
        [](const MetaArgs &a) {
          return attention_grads(a, "_scaled_dot_product_cudnn_attention_backward", "attn_bias", false, false);
        })
      .layout_from_backend = true;
}

}  // namespace coil
