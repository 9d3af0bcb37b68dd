#pragma once
// Attention (Bahdanau, Cho & Bengio 2015; Luong et al. 2015): the decoder state
// s (the query) looks at every encoder state h_1..h_S (keys and values), scores
// each one, and returns the weighted average of the encoder states.
//
//   additive (Bahdanau):   e_j = v^T tanh(W_k h_j + W_q s + b)
//   dot, projected:        e_j = (W_K h_j) . (W_Q s)        [* 1/sqrt(d) when scaled]
//   dot, general (Luong):  e_j = s^T W h_j  = s . (W h_j)   [* 1/sqrt(d) when scaled]
//   dot, plain:            e_j = h_j . s   (needs Hq == Hk)  [* 1/sqrt(d) when scaled]
//
//   alpha_j = exp(e_j) / sum_k exp(e_k)   over the real positions (mask 1) only;
//             alpha_j = 0 exactly at padding (mask 0); all-padding row: alpha = 0
//   c       = sum_j alpha_j h_j                                   (context)
//
// Shapes: query s (B, Hq); encoder states h (B, S, Hk), which serve as both keys
// and values; mask (B, S), 1 = real token, 0 = padding. Outputs: context (B, Hk),
// weights alpha (B, S).
//
// Cost. The key side (W_k h_j, W_K h_j, W h_j) does not depend on the decoder
// step, so precompute() does it once per source batch: one GEMM of B*S rows,
// O(B*S*Hk*d). Each step() then costs O(B*S*d) for the scores (plus O(B*S*Hk)
// for the context) and one small GEMM for the query projection; no GEMM touches
// the keys again. For t decoder steps: O(B*S*t*d) instead of O(B*S*t*Hk*d).
//
// Each step is ONE recorded op (additive_attention_step / dot_attention_step)
// whose backward is written out by hand next to its forward. The same math built
// from primitive ops (additive_attention_composed / dot_attention_composed)
// stays as the oracle the tests compare against.
//
//   nn::AdditiveAttention attn(/*query_size=*/Hq, /*key_size=*/Hk, gen);
//   nn::AttentionKeys keys = attn.precompute(encoder_states, mask);  // once per batch
//   for (each decoder step) {
//     auto [context, weights] = attn.step(decoder_state, keys);
//     ...
//   }
#include <cstdint>

#include "core/random.hpp"
#include "core/tensor.hpp"
#include "layers/linear.hpp"
#include "layers/module.hpp"

namespace attend::nn {

// The encoder side of attention, computed once per source batch by precompute()
// and read by every step(). Gradients reaching keys and values at every step
// accumulate and flow back (through the recorded projection) to the parameters
// and the encoder states.
struct AttentionKeys {
  Tensor keys;    // (B, S, d): projected keys W_k h_j / W_K h_j / W h_j; for plain dot, h itself
  Tensor values;  // (B, S, Hk): the encoder states h_j
  Tensor mask;    // (B, S): 1 real, 0 padding, in the dtype of the values (never requires grad)
  // The query projection (W_q and b, or W_Q) prepared for the steps
  // (PackedLinear::for_steps): packed when float32, and when precompute()
  // recorded, recorded too, with its weight gradient gathered over every step.
  // Empty for plain dot scores. When precompute() ran without recording and a
  // step records, step() runs linear().
  PackedLinear query;
};

// What step() and forward() return; `auto [context, weights] = attn.step(...)`.
struct AttentionOutput {
  Tensor context;  // (B, Hk)
  Tensor weights;  // (B, S), rows sum to 1 over the real positions (0 for an all-padding row)
};

// ---- The fused step ops (one recorded node with two outputs each) -------------

// Additive scores, masked softmax and context in one op.
//   query_proj (B, A) = W_q s + b;  keys (B, S, A) = W_k h;  values (B, S, Hk);  v (A);  mask (B, S)
//   e_j = v . tanh(keys_j + query_proj);  alpha = masked softmax(e);  c = sum_j alpha_j values_j
AttentionOutput additive_attention_step(const Tensor& query_proj, const Tensor& keys, const Tensor& values,
                                        const Tensor& v, const Tensor& mask);

// Dot-product scores, masked softmax and context in one op.
//   query_proj (B, d);  keys (B, S, d);  values (B, S, Hk);  mask (B, S)
//   e_j = scale * keys_j . query_proj;  alpha = masked softmax(e);  c = sum_j alpha_j values_j
AttentionOutput dot_attention_step(const Tensor& query_proj, const Tensor& keys, const Tensor& values,
                                   const Tensor& mask, double scale);

// ---- Additive (Bahdanau) attention ---------------------------------------------

// Parameters (initialised uniform in +-1/sqrt(fan_in), like torch.nn.Linear):
//   W_k (A, Hk)  key projection        W_q (A, Hq)  query projection
//   b   (A)      bias of the sum       v   (A)      scoring vector
class AdditiveAttention : public Module {
 public:
  // attention_size A: 0 means the query size Hq.
  AdditiveAttention(std::int64_t query_size, std::int64_t key_size, Generator& gen,
                    std::int64_t attention_size = 0, DType dtype = Float32);

  // keys = W_k h: one recorded GEMM over all B*S encoder states. `keys_by`, when
  // not empty, is W_k prepared already (an int8 model's, for steps that record
  // nothing), and multiplies the states in its place.
  AttentionKeys precompute(const Tensor& encoder_states, const Tensor& mask, const PackedLinear& keys_by = {}) const;
  // One decoder step: query (B, Hq) against the precomputed keys.
  AttentionOutput step(const Tensor& query, const AttentionKeys& keys) const;
  // precompute + step, for a single query.
  AttentionOutput forward(const Tensor& query, const Tensor& encoder_states, const Tensor& mask) const;

  std::int64_t query_size() const { return query_size_; }
  std::int64_t key_size() const { return key_size_; }
  std::int64_t attention_size() const { return attention_size_; }

  Tensor W_k, W_q, b, v;

 private:
  std::int64_t query_size_, key_size_, attention_size_;
};

// ---- Dot-product attention -------------------------------------------------------

enum class DotScore {
  Plain,      // e_j = h_j . s;  no parameters; needs Hq == Hk;  d = Hk
  General,    // e_j = s^T W h_j;  W (Hq, Hk);  d = Hq   (Luong's "general")
  Projected,  // e_j = (W_K h_j) . (W_Q s);  W_K (A, Hk), W_Q (A, Hq);  d = A
};

struct DotAttentionOptions {
  DotScore score = DotScore::Projected;
  bool scaled = true;               // divide the scores by sqrt(d)
  std::int64_t attention_size = 0;  // A for Projected; 0 means the query size Hq
};

// Parameters by kind: Plain none; General "W" (Hq, Hk); Projected "W_Q" (A, Hq) and
// "W_K" (A, Hk). The members of the other kinds stay undefined.
class DotProductAttention : public Module {
 public:
  DotProductAttention(std::int64_t query_size, std::int64_t key_size, Generator& gen,
                      DotAttentionOptions options = {}, DType dtype = Float32);

  // keys = W_K h (Projected), W h (General), or h itself (Plain, no GEMM).
  // `keys_by` as in AdditiveAttention::precompute, for W_K or W.
  AttentionKeys precompute(const Tensor& encoder_states, const Tensor& mask, const PackedLinear& keys_by = {}) const;
  AttentionOutput step(const Tensor& query, const AttentionKeys& keys) const;
  AttentionOutput forward(const Tensor& query, const Tensor& encoder_states, const Tensor& mask) const;

  std::int64_t query_size() const { return query_size_; }
  std::int64_t key_size() const { return key_size_; }
  std::int64_t score_size() const { return score_size_; }  // d
  double scale() const;  // 1/sqrt(d) when scaled, else 1
  const DotAttentionOptions& options() const { return options_; }

  Tensor W, W_Q, W_K;

 private:
  std::int64_t query_size_, key_size_, score_size_;
  DotAttentionOptions options_;
};

// ---- The oracles: the same math from primitive ops (linear, add, tanh, matmul,
// reshape, masked_softmax), each op recorded separately. Slower; for tests.
AttentionOutput additive_attention_composed(const AdditiveAttention& attn, const Tensor& query,
                                            const Tensor& encoder_states, const Tensor& mask);
AttentionOutput dot_attention_composed(const DotProductAttention& attn, const Tensor& query,
                                       const Tensor& encoder_states, const Tensor& mask);

}  // namespace attend::nn
