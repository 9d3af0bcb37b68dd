// The oracles: attention written with primitive ops only, each one recorded on
// its own, so autograd derives the backward by itself. The fused steps in
// attention_additive.cpp and attention_dot.cpp must agree with these.
//
// Start here to learn attention: every line is one op you can look up in
// autograd/, and `attend explain` prints each of their gradients for a tiny
// model. Then read the fused versions, which undo the same lines by hand.
#include "autograd/ops.hpp"
#include "layers/attention/attention.hpp"
#include "layers/attention/detail/attention_detail.hpp"

namespace attend::nn {

namespace {

// alpha = masked softmax(e) over S; c = alpha @ h as a batched (1, S) @ (S, Hk) product.
AttentionOutput softmax_and_context(const Tensor& e, const Tensor& h, const Tensor& mask) {
  const std::int64_t B = h.size(0), S = h.size(1), Hk = h.size(2);
  Tensor alpha = masked_softmax(e, mask, 1);                                  // (B, S)
  Tensor c = reshape(matmul(reshape(alpha, {B, 1, S}), h), {B, Hk});          // (B, 1, S) @ (B, S, Hk)
  return {c, alpha};
}

}  // namespace

AttentionOutput additive_attention_composed(const AdditiveAttention& attn, const Tensor& query,
                                            const Tensor& encoder_states, const Tensor& mask) {
  Tensor m = detail::check_encoder_side("additive_attention_composed", encoder_states, mask, attn.key_size(), attn.W_k);
  const std::int64_t B = encoder_states.size(0), S = encoder_states.size(1), A = attn.attention_size();
  Tensor k = linear(encoder_states, attn.W_k);                         // (B, S, A)   W_k h_j
  Tensor q = reshape(linear(query, attn.W_q, attn.b), {B, 1, A});      // (B, 1, A)   W_q s + b
  Tensor t = tanh(add(k, q));                                          // (B, S, A)   broadcast over S
  Tensor e = reshape(matmul(t, reshape(attn.v, {A, 1})), {B, S});      // (B, S)      v . t_j
  return softmax_and_context(e, encoder_states, m);
}

AttentionOutput dot_attention_composed(const DotProductAttention& attn, const Tensor& query,
                                       const Tensor& encoder_states, const Tensor& mask) {
  const DotScore kind = attn.options().score;
  const Tensor& key_weight = kind == DotScore::General ? attn.W : attn.W_K;  // undefined for plain
  Tensor m = detail::check_encoder_side("dot_attention_composed", encoder_states, mask, attn.key_size(), key_weight);
  const std::int64_t B = encoder_states.size(0), S = encoder_states.size(1), D = attn.score_size();
  Tensor k = key_weight.defined() ? linear(encoder_states, key_weight) : encoder_states;  // (B, S, d)
  Tensor q = kind == DotScore::Projected ? linear(query, attn.W_Q) : query;              // (B, d)
  Tensor e = reshape(matmul(k, reshape(q, {B, D, 1})), {B, S});                           // (B, S)  k_j . q
  if (attn.options().scaled) e = mul(e, attn.scale());
  return softmax_and_context(e, encoder_states, m);
}

}  // namespace attend::nn
