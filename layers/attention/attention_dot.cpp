// Dot-product attention (plain, Luong's general, projected; optionally scaled):
// the fused step op and the module around it.
//   e_j = scale * k_j . q;  alpha = masked softmax(e);  c = sum_j alpha_j h_j
// where k_j is W_K h_j, W h_j or h_j, and q is W_Q s or s.
//
// Learning? Read layers/attention/attention_composed.cpp first: the same math from
// primitive ops, whose backward autograd derives. This fused op's backward
// spans three files:
//   attention_dot.cpp           the scores and the recorded op (forward, then backward)
//   attention_rows.cpp     masked softmax and context, forward and backward, per row
//   attention_detail.hpp   the argument checks and the per-row declarations
// docs/backprop-through-attention.md derives every line.
#include <cmath>
#include <vector>

#include "autograd/ops.hpp"
#include "layers/attention/attention.hpp"
#include "layers/attention/detail/attention_detail.hpp"

namespace attend::nn {

// One recorded op: scores, masked softmax and context for every batch row.
//   q = query_proj (B, d), k = keys (B, S, d), h = values (B, S, Hk), mask (B, S)
// For plain dot the keys and the values are the same tensor; their gradients
// then land in the same slot and add up.
AttentionOutput dot_attention_step(const Tensor& query_proj, const Tensor& keys, const Tensor& values,
                                   const Tensor& mask, double scale) {
  const char* op = "dot_attention_step";
  const detail::StepDims d = detail::check_step(op, query_proj, keys, values, mask);
  const std::int64_t B = d.batch, S = d.source, D = d.score, Hk = d.value;
  Tensor context = empty({B, Hk}, keys.dtype());  // (B, Hk)
  Tensor weights = empty({B, S}, keys.dtype());   // (B, S)
  dispatch(keys.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *pq = query_proj.data<T>(), *pk = keys.data<T>(), *ph = values.data<T>(), *pm = mask.data<T>();
    T *pc = context.data<T>(), *pa = weights.data<T>();
    const T sc = static_cast<T>(scale);
    std::vector<T> e(static_cast<std::size_t>(S));
    for (std::int64_t b = 0; b < B; ++b) {
      const T* q = pq + b * D;
      for (std::int64_t j = 0; j < S; ++j) {
        if (pm[b * S + j] == T(0)) continue;  // padding: no score, weight 0
        const T* kj = pk + (b * S + j) * D;
        T dot = 0;
        for (std::int64_t i = 0; i < D; ++i) dot += kj[i] * q[i];
        e[j] = sc * dot;  // e_j = scale * k_j . q
      }
      detail::masked_softmax_row(e.data(), pm + b * S, pa + b * S, S);       // alpha = softmax(e)
      detail::context_row(pa + b * S, ph + b * S * Hk, pc + b * Hk, S, Hk);  // c = sum_j alpha_j h_j
    }
  });
  record("dot_attention_step", {query_proj, keys, values}, {&context, &weights},
         [q = query_proj.detach(), k = keys.detach(), h = values.detach(), alpha = weights.detach(),
          mask = mask.detach(), d, scale](Grads& g) {
           const std::int64_t B = d.batch, S = d.source, D = d.score, Hk = d.value;
           dispatch(k.dtype(), [&](auto zero) {
             using T = decltype(zero);
             const T *dc = g.dy(0).data<T>(), *dalpha = g.dy(1).data<T>();
             const T *pq = q.data<T>(), *pk = k.data<T>(), *ph = h.data<T>(), *pa = alpha.data<T>(),
                     *pm = mask.data<T>();
             const T sc = static_cast<T>(scale);
             T* dq = g.needs(0) ? g.dx(0).data<T>() : nullptr;  // (B, d)
             T* dk = g.needs(1) ? g.dx(1).data<T>() : nullptr;  // (B, S, d)
             T* dh = g.needs(2) ? g.dx(2).data<T>() : nullptr;  // (B, S, Hk)
             std::vector<T> de(static_cast<std::size_t>(S));
             for (std::int64_t b = 0; b < B; ++b) {
               // forward: c = sum_j alpha_j h_j, alpha = masked softmax(e)
               //   dalpha_j = dalpha_out_j + dc . h_j;  dh_j += alpha_j dc;
               //   de_j = alpha_j (dalpha_j - sum_k alpha_k dalpha_k), 0 at padding
               detail::context_softmax_backward_row(pa + b * S, pm + b * S, ph + b * S * Hk, dc + b * Hk,
                                                    dalpha + b * S, dh ? dh + b * S * Hk : nullptr, de.data(), S, Hk);
               // forward: e_j = scale * k_j . q     dk_j += scale de_j q;  dq += scale de_j k_j
               for (std::int64_t j = 0; j < S; ++j) {
                 if (pm[b * S + j] == T(0)) continue;  // de_j = 0: nothing flows to padding
                 const T s = sc * de[j];
                 const T* kj = pk + (b * S + j) * D;
                 const T* qb = pq + b * D;
                 if (dk)
                   for (std::int64_t i = 0; i < D; ++i) dk[(b * S + j) * D + i] += s * qb[i];
                 if (dq)
                   for (std::int64_t i = 0; i < D; ++i) dq[b * D + i] += s * kj[i];
               }
             }
           });
         })
      .replay({"query_proj", "keys", "values"}, [mask, scale](const Tensors& in) {
           const AttentionOutput out = dot_attention_step(in[0], in[1], in[2], mask, scale);
           return Tensors{out.context, out.weights};
         });
  return {context, weights};
}

namespace {

std::int64_t score_size_of(std::int64_t query_size, std::int64_t key_size, const DotAttentionOptions& o) {
  switch (o.score) {
    case DotScore::Plain: return key_size;
    case DotScore::General: return query_size;
    case DotScore::Projected: return o.attention_size == 0 ? query_size : o.attention_size;
  }
  return 0;
}
}  // namespace

DotProductAttention::DotProductAttention(std::int64_t query_size, std::int64_t key_size, Generator& gen,
                                         DotAttentionOptions options, DType dtype)
    : query_size_(query_size),
      key_size_(key_size),
      score_size_(score_size_of(query_size, key_size, options)),
      options_(options) {
  if (query_size <= 0 || key_size <= 0 || score_size_ <= 0)
    fail("DotProductAttention: sizes must be positive, got query_size {}, key_size {}, attention_size {}",
         query_size, key_size, options.attention_size);
  switch (options.score) {
    case DotScore::Plain:
      if (query_size != key_size)
        fail("DotProductAttention: plain dot scores need query_size == key_size, got {} and {}", query_size,
             key_size);
      break;
    case DotScore::General:
      W = detail::init_uniform({query_size, key_size}, key_size, gen, dtype);
      register_parameter("W", W);
      break;
    case DotScore::Projected:
      W_Q = detail::init_uniform({score_size_, query_size}, query_size, gen, dtype);
      W_K = detail::init_uniform({score_size_, key_size}, key_size, gen, dtype);
      register_parameter("W_Q", W_Q);
      register_parameter("W_K", W_K);
      break;
  }
}

double DotProductAttention::scale() const {
  return options_.scaled ? 1.0 / std::sqrt(static_cast<double>(score_size_)) : 1.0;
}

// keys = h W_K^T or h W^T (one GEMM over the B*S rows, recorded), or h itself.
AttentionKeys DotProductAttention::precompute(const Tensor& encoder_states, const Tensor& mask,
                                              const PackedLinear& keys_by) const {
  const char* op = "DotProductAttention.precompute";
  const Tensor& weight = options_.score == DotScore::General ? W : W_K;  // undefined for plain
  Tensor m = detail::check_encoder_side(op, encoder_states, mask, key_size_, weight);
  if (!keys_by.empty() && !weight.defined()) fail("{}: plain dot scores have no key projection to prepare", op);
  Tensor keys = weight.defined() ? detail::project_keys(op, encoder_states, weight, keys_by) : encoder_states;
  const bool projected = options_.score == DotScore::Projected;
  return {keys, encoder_states, m, projected ? PackedLinear::for_steps(W_Q, Tensor()) : PackedLinear()};
}

// q = W_Q s (one small GEMM) for projected scores, else s itself; then the fused op.
// The fast twin of dot_attention_composed (attention_composed.cpp), which a
// learner reads first: the query through the prepared PackedLinear (linear()'s
// twin), then the fused step op.
AttentionOutput DotProductAttention::step(const Tensor& query, const AttentionKeys& keys) const {
  detail::check_query_side("DotProductAttention.step", query, keys, query_size_);
  Tensor q = query;
  if (options_.score == DotScore::Projected)
    q = keys.query.usable() ? keys.query.forward(query) : linear(query, W_Q);
  return dot_attention_step(q, keys.keys, keys.values, keys.mask, scale());
}

AttentionOutput DotProductAttention::forward(const Tensor& query, const Tensor& encoder_states,
                                             const Tensor& mask) const {
  return step(query, precompute(encoder_states, mask));
}

}  // namespace attend::nn
