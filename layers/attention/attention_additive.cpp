// Additive (Bahdanau) attention: the fused step op and the module around it.
//   e_j = v . tanh(W_k h_j + W_q s + b);  alpha = masked softmax(e);  c = sum_j alpha_j h_j
//
// Learning? Read layers/attention/attention_composed.cpp first: the same math from
// primitive ops, whose backward autograd derives. This fused op's backward
// spans three files:
//   attention_additive.cpp      the score loops and the recorded op (forward, then backward)
//   attention_rows.cpp     masked softmax and context, forward and backward, per row
//   attention_detail.hpp   the argument checks and the per-row declarations
// docs/backprop-through-attention.md derives every line.
#include <cmath>

#include "autograd/ops.hpp"
#include "core/kernels/detail/fast_math.hpp"
#include "layers/attention/attention.hpp"
#include "layers/attention/detail/attention_detail.hpp"

namespace attend::nn {

namespace {

// The score loops of one batch row, forward and backward, over the real
// positions j and the A components. Separate functions so that they are
// compiled for AVX2 too (ATTEND_SIMD_CLONES), one call per row.
//
// forward: t_j = tanh(k_j + q);  e_j = v . t_j          k (S, A), q (A), t (S, A), e (S)
// One pass over a: each t_j[a] goes into the dot product from its register, in
// 16 running sums (one AVX-512 vector), and is stored only when kKeepT (training:
// the backward reads it). A tanh pass storing t_j, then a dot product reading it
// back, would write and read all of t: twice the memory traffic (`attend bench
// --no-train` at config M times the decoding these scores are part of). The 16 sums are added in a fixed order (below), so e_j does
// not depend on the vector width.
template <class T, bool kKeepT>
ATTEND_SIMD_CLONES void scores_row(const T* __restrict k, const T* __restrict q, const T* __restrict v,
                                   const T* __restrict mask, T* __restrict t, T* __restrict e, std::int64_t S,
                                   std::int64_t A) {
  constexpr std::int64_t kLanes = 16;  // the halving below is written for 16
  for (std::int64_t j = 0; j < S; ++j) {
    if (mask[j] == T(0)) continue;  // padding: no score, weight 0
    const T* k_j = k + j * A;
    T* t_j = kKeepT ? t + j * A : nullptr;  // t is null when not kept
    T lanes[kLanes] = {};
    std::int64_t a = 0;
    for (; a + kLanes <= A; a += kLanes)
      for (std::int64_t l = 0; l < kLanes; ++l) {
        const T t_ja = fast_math::tanh(k_j[a + l] + q[a + l]);
        if constexpr (kKeepT) t_j[a + l] = t_ja;
        lanes[l] += v[a + l] * t_ja;
      }
    for (std::int64_t l = 0; a < A; ++a, ++l) {
      const T t_ja = fast_math::tanh(k_j[a] + q[a]);
      if constexpr (kKeepT) t_j[a] = t_ja;
      lanes[l] += v[a] * t_ja;
    }
    // The 16 sums halved 8, 4, 2, 1, so 4 dependent additions instead of a chain
    // of 16: at A = 64 (4 vectors a score) that chain was half of this loop's time.
    for (int l = 0; l < 8; ++l) lanes[l] += lanes[l + 8];
    for (int l = 0; l < 4; ++l) lanes[l] += lanes[l + 4];
    for (int l = 0; l < 2; ++l) lanes[l] += lanes[l + 2];
    e[j] = lanes[0] + lanes[1];
  }
}

// forward: e_j = v . t_j                dv += de_j t_j;  dt_j = de_j v
// forward: t_j = tanh(k_j + q)          dk_j += dt_j (1 - t_j^2);  dq += dt_j (1 - t_j^2)
// Every pointer is a real array (the caller passes scratch for unwanted ones),
// so the inner loop has no branch and vectorises.
template <class T>
ATTEND_SIMD_CLONES void scores_row_backward(const T* __restrict de, const T* __restrict t, const T* __restrict v,
                                            const T* __restrict mask, T* __restrict dv, T* __restrict dk,
                                            bool dk_per_position, T* __restrict dq, std::int64_t S,
                                            std::int64_t A) {
  for (std::int64_t j = 0; j < S; ++j) {
    if (mask[j] == T(0)) continue;  // de_j = 0: nothing flows to padding
    const T de_j = de[j];
    const T* t_j = t + j * A;
    T* dk_j = dk_per_position ? dk + j * A : dk;
    for (std::int64_t a = 0; a < A; ++a) {
      const T dpre = de_j * v[a] * (T(1) - t_j[a] * t_j[a]);
      dv[a] += de_j * t_j[a];
      dk_j[a] += dpre;
      dq[a] += dpre;
    }
  }
}

}  // namespace

// One recorded op: scores, masked softmax and context for every batch row.
//   q = query_proj (B, A), k = keys (B, S, A), h = values (B, S, Hk), v (A), mask (B, S)
AttentionOutput additive_attention_step(const Tensor& query_proj, const Tensor& keys, const Tensor& values,
                                        const Tensor& v, const Tensor& mask) {
  const char* op = "additive_attention_step";
  const detail::StepDims d = detail::check_step(op, query_proj, keys, values, mask);
  check_same_dtype(op, keys, v);
  if (!(v.shape() == Shape{d.score})) fail("{}: v must be (A) = [{}] to match keys {}, got {}", op, d.score, keys.shape(), v.shape());
  const std::int64_t B = d.batch, S = d.source, A = d.score, Hk = d.value;
  Tensor context = empty({B, Hk}, keys.dtype());  // (B, Hk)
  Tensor weights = empty({B, S}, keys.dtype());   // (B, S)
  // (B, S, A) tanh(k_j + q), kept for the backward; when nothing is recorded
  // (decoding) it is never stored: 2 MB per M decoding step not written
  const bool keep_t = should_record(std::initializer_list<Tensor>{query_proj, keys, values, v});
  Tensor t = keep_t ? empty({B, S, A}, keys.dtype()) : Tensor();
  dispatch(keys.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *pq = query_proj.data<T>(), *pk = keys.data<T>(), *ph = values.data<T>(), *pv = v.data<T>(),
            *pm = mask.data<T>();
    T *pc = context.data<T>(), *pa = weights.data<T>(), *pt = keep_t ? t.data<T>() : nullptr;
    std::vector<T> e(static_cast<std::size_t>(S));
    for (std::int64_t b = 0; b < B; ++b) {
      // e = v . tanh(k + q)
      if (keep_t)
        scores_row<T, true>(pk + b * S * A, pq + b * A, pv, pm + b * S, pt + b * S * A, e.data(), S, A);
      else
        scores_row<T, false>(pk + b * S * A, pq + b * A, pv, pm + b * S, nullptr, e.data(), S, A);
      detail::masked_softmax_row(e.data(), pm + b * S, pa + b * S, S);             // alpha = softmax(e)
      detail::context_row(pa + b * S, ph + b * S * Hk, pc + b * Hk, S, Hk);  // c = sum_j alpha_j h_j
    }
  });
  record("additive_attention_step", {query_proj, keys, values, v}, {&context, &weights},
         [t, alpha = weights.detach(), h = values.detach(), v = v.detach(), mask = mask.detach(), d](Grads& g) {
           const std::int64_t B = d.batch, S = d.source, A = d.score, Hk = d.value;
           dispatch(t.dtype(), [&](auto zero) {
             using T = decltype(zero);
             const T *dc = g.dy(0).data<T>(), *dalpha = g.dy(1).data<T>();
             const T *pt = t.data<T>(), *pa = alpha.data<T>(), *ph = h.data<T>(), *pv = v.data<T>(),
                     *pm = mask.data<T>();
             T* dq = g.needs(0) ? g.dx(0).data<T>() : nullptr;  // (B, A)
             T* dk = g.needs(1) ? g.dx(1).data<T>() : nullptr;  // (B, S, A)
             T* dh = g.needs(2) ? g.dx(2).data<T>() : nullptr;  // (B, S, Hk)
             T* dv = g.needs(3) ? g.dx(3).data<T>() : nullptr;  // (A)
             std::vector<T> de(static_cast<std::size_t>(S));
             // Where an input needs no gradient, its share is added into scratch and dropped.
             std::vector<T> scratch_q(dq ? 0 : A), scratch_k(dk ? 0 : A), scratch_v(dv ? 0 : A);
             for (std::int64_t b = 0; b < B; ++b) {
               // forward: c = sum_j alpha_j h_j, alpha = masked softmax(e)
               //   dalpha_j = dalpha_out_j + dc . h_j;  dh_j += alpha_j dc;
               //   de_j = alpha_j (dalpha_j - sum_k alpha_k dalpha_k), 0 at padding
               detail::context_softmax_backward_row(pa + b * S, pm + b * S, ph + b * S * Hk, dc + b * Hk,
                                                    dalpha + b * S, dh ? dh + b * S * Hk : nullptr, de.data(), S, Hk);
               // forward: e_j = v . t_j, t_j = tanh(k_j + q): see scores_row_backward
               scores_row_backward(de.data(), pt + b * S * A, pv, pm + b * S, dv ? dv : scratch_v.data(),
                                   dk ? dk + b * S * A : scratch_k.data(), dk != nullptr,
                                   dq ? dq + b * A : scratch_q.data(), S, A);
             }
           });
         })
      .replay({"query_proj", "keys", "values", "v"}, [mask](const Tensors& in) {
           const AttentionOutput out = additive_attention_step(in[0], in[1], in[2], in[3], mask);
           return Tensors{out.context, out.weights};
         });
  return {context, weights};
}

AdditiveAttention::AdditiveAttention(std::int64_t query_size, std::int64_t key_size, Generator& gen,
                                     std::int64_t attention_size, DType dtype)
    : query_size_(query_size), key_size_(key_size), attention_size_(attention_size == 0 ? query_size : attention_size) {
  if (query_size <= 0 || key_size <= 0 || attention_size_ <= 0)
    fail("AdditiveAttention: sizes must be positive, got query_size {}, key_size {}, attention_size {}", query_size,
         key_size, attention_size);
  const std::int64_t A = attention_size_;
  W_k = detail::init_uniform({A, key_size}, key_size, gen, dtype);
  W_q = detail::init_uniform({A, query_size}, query_size, gen, dtype);
  b = detail::init_uniform({A}, query_size, gen, dtype);
  v = detail::init_uniform({A}, A, gen, dtype);
  register_parameter("W_k", W_k);
  register_parameter("W_q", W_q);
  register_parameter("b", b);
  register_parameter("v", v);
}

// keys = h W_k^T: (B, S, Hk) -> (B, S, A), one GEMM over the B*S rows, recorded.
AttentionKeys AdditiveAttention::precompute(const Tensor& encoder_states, const Tensor& mask,
                                            const PackedLinear& keys_by) const {
  const char* op = "AdditiveAttention.precompute";
  Tensor m = detail::check_encoder_side(op, encoder_states, mask, key_size_, W_k);
  return {detail::project_keys(op, encoder_states, W_k, keys_by), encoder_states, m, PackedLinear::for_steps(W_q, b)};
}

// q = W_q s + b (one small GEMM), then the fused op.
// The fast twin of additive_attention_composed (attention_composed.cpp), which a
// learner reads first: q = W_q s + b through the PackedLinear that precompute()
// prepared (linear() in autograd/ops/matmul.cpp computes the same), then the
// fused step op.
AttentionOutput AdditiveAttention::step(const Tensor& query, const AttentionKeys& keys) const {
  detail::check_query_side("AdditiveAttention.step", query, keys, query_size_);
  const Tensor q = keys.query.usable() ? keys.query.forward(query) : linear(query, W_q, b);
  return additive_attention_step(q, keys.keys, keys.values, v, keys.mask);
}

AttentionOutput AdditiveAttention::forward(const Tensor& query, const Tensor& encoder_states,
                                           const Tensor& mask) const {
  return step(query, precompute(encoder_states, mask));
}

}  // namespace attend::nn
