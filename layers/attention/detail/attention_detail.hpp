#pragma once
// What the attention layers share, internal to layers/attention/attention_*.cpp (users go
// through attention.hpp): the argument checks, and for one batch row the masked
// softmax over the scores and the weighted sum of the values, forward and backward.
//
// Shapes for one row: e, alpha, mask (S); h (S, H) row-major; c, dc (H).
//
// Map of a fused attention step: the op and its score loops are in
// attention_additive.cpp / attention_dot.cpp, the softmax and context rows in
// attention_rows.cpp, the checks here. Learning? Start with attention_composed.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/ops.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "layers/attention/attention.hpp"

namespace attend::nn::detail {

// The sizes of one attention step, checked once: query_proj (B, d), keys (B, S, d),
// values (B, S, Hk), mask (B, S).
struct StepDims {
  std::int64_t batch, source, score, value;  // B, S, d, Hk
};

inline StepDims check_step(const char* op, const Tensor& query_proj, const Tensor& keys, const Tensor& values,
                           const Tensor& mask) {
  check_defined(op, query_proj, "the query");
  check_defined(op, keys, "the keys");
  check_defined(op, values, "the values");
  check_defined(op, mask, "the mask");
  check_same_dtype(op, query_proj, keys);
  check_same_dtype(op, keys, values);
  check_same_dtype(op, values, mask);
  if (keys.dim() != 3) fail("{}: keys must be (B, S, d), got {}", op, keys.shape());
  if (values.dim() != 3) fail("{}: values must be (B, S, Hk), got {}", op, values.shape());
  const std::int64_t B = keys.size(0), S = keys.size(1), d = keys.size(2), Hk = values.size(2);
  if (values.size(0) != B || values.size(1) != S)
    fail("{}: keys {} and values {} differ in batch size or source length", op, keys.shape(), values.shape());
  if (query_proj.dim() != 2 || query_proj.size(0) != B || query_proj.size(1) != d)
    fail("{}: the query must be (B, d) = [{}, {}] to match keys {}, got {}", op, B, d, keys.shape(),
         query_proj.shape());
  if (!(mask.shape() == Shape{B, S})) fail("{}: the mask must be (B, S) = [{}, {}], got {}", op, B, S, mask.shape());
  return {B, S, d, Hk};
}

// Like torch.nn.Linear: uniform in +-1/sqrt(fan_in).
inline Tensor init_uniform(const Shape& shape, std::int64_t fan_in, Generator& gen, DType dtype) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return uniform(shape, -bound, bound, gen, dtype);
}

// keys = W h_j for every encoder state: (B, S, Hk) -> (B, S, d), by linear(), or
// by `keys_by` (W prepared already: an int8 model's, for steps that record
// nothing) when it is not empty. Error when keys_by does not give d = W's rows.
inline Tensor project_keys(const char* op, const Tensor& states, const Tensor& weight, const PackedLinear& keys_by) {
  if (keys_by.empty()) return linear(states, weight);
  const std::int64_t B = states.size(0), S = states.size(1);
  Tensor keys = keys_by.forward(reshape(states, Shape{B * S, states.size(2)}));  // (B*S, d)
  if (keys.size(1) != weight.size(0))
    fail("{}: the prepared key projection gives {} values a state, the layer's W has {} rows", op, keys.size(1),
         weight.size(0));
  return reshape(keys, Shape{B, S, keys.size(1)});
}

// The module-level checks of precompute(): encoder states (B, S, key_size), a
// (B, S) mask of 0s and 1s. Returns the mask in the states' dtype.
inline Tensor check_encoder_side(const char* op, const Tensor& encoder_states, const Tensor& mask,
                                 std::int64_t key_size, const Tensor& weight) {
  check_defined(op, encoder_states, "the encoder states");
  check_defined(op, mask, "the mask");
  const Shape& hs = encoder_states.shape();
  if (hs.rank() != 3 || hs[2] != key_size) fail("{}: encoder states must be (B, S, {}), got {}", op, key_size, hs);
  if (hs[1] == 0) fail("{}: the source length is 0 (encoder states {})", op, hs);
  if (weight.defined()) check_same_dtype(op, encoder_states, weight);
  if (!(mask.shape() == Shape{hs[0], hs[1]}))
    fail("{}: the mask must be (B, S) = [{}, {}] like the encoder states {}, got {}", op, hs[0], hs[1], hs,
         mask.shape());
  Tensor m = mask.to(encoder_states.dtype()).detach();
  const std::vector<double> values = m.to_vector();
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] != 0.0 && values[i] != 1.0)
      fail("{}: mask values must be 0 (padding) or 1 (real token), got {} at [{}, {}]", op, values[i],
           static_cast<std::int64_t>(i) / hs[1], static_cast<std::int64_t>(i) % hs[1]);
  return m;
}

// The module-level checks of step(): query (B, query_size) against keys from precompute().
inline void check_query_side(const char* op, const Tensor& query, const AttentionKeys& keys,
                             std::int64_t query_size) {
  check_defined(op, query, "the query");
  if (!keys.keys.defined() || !keys.values.defined() || !keys.mask.defined())
    fail("{}: the keys are empty; get them from precompute()", op);
  check_same_dtype(op, query, keys.values);
  const Shape& hs = keys.values.shape();
  if (query.dim() != 2 || query.size(1) != query_size)
    fail("{}: the query must be (B, {}), got {}", op, query_size, query.shape());
  if (query.size(0) != hs[0])
    fail("{}: the query's batch size {} differs from the keys' {} (query {}, encoder states {})", op, query.size(0),
         hs[0], query.shape(), hs);
}

// The rows below are in layers/attention/attention_rows.cpp, for float and double, each
// one call per batch row (compiled for AVX2 too).

// forward: alpha = masked softmax(e) over the real positions; alpha_j = 0 where
// mask_j = 0, and a row without a real position gets alpha = 0, not 0/0. Only
// real positions of e are read: padded scores may be left unset.
template <class T>
void masked_softmax_row(const T* e, const T* mask, T* alpha, std::int64_t S);

// forward: c = sum_j alpha_j h_j (positions with alpha_j = 0 are skipped, so
// whatever sits in padded values never reaches c).
template <class T>
void context_row(const T* alpha, const T* h, T* c, std::int64_t S, std::int64_t H);

// Undoes context_row and then masked_softmax_row for one row. dalpha_out is the
// gradient reaching the weights output directly (a loss may use the weights).
// Writes de (S) and adds into dh (S, H) if dh is not null.
template <class T>
void context_softmax_backward_row(const T* alpha, const T* mask, const T* h, const T* dc, const T* dalpha_out, T* dh,
                                  T* de, std::int64_t S, std::int64_t H);

}  // namespace attend::nn::detail
