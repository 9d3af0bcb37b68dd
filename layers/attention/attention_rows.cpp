// The rows shared by the attention layers (declared in attention_detail.hpp):
// masked softmax over the scores and the weighted sum of the values, forward and
// backward, for one batch row.
//
// Learning? Start with layers/attention/attention_composed.cpp (the same math from
// primitive ops). These rows are the middle of the fused backward of
// attention_additive.cpp and attention_dot.cpp, which record the op, run the
// score loops and call these; attention_detail.hpp declares them.
//
// Shapes for one row: e, alpha, mask (S); h (S, H) row-major; c, dc (H).
// Each function is compiled for AVX2 too (ATTEND_SIMD_CLONES), so that the
// short loops over H inside it are 8-wide and cost no call each; the file is
// built with ATTEND_SIMD_FLAGS (layers/CMakeLists.txt) for fast_math::exp's clamp.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/kernels/detail/fast_math.hpp"
#include "layers/attention/detail/attention_detail.hpp"

namespace attend::nn::detail {

// forward: alpha_j = exp(e_j - m) / sum_k exp(e_k - m) over the real positions
// (m = their largest score, so exp never overflows); alpha_j = 0 exactly where
// mask_j = 0; a row without a real position gets alpha = 0, not 0/0.
// Only real positions of e are read: padded scores may be left unset.
template <class T>
ATTEND_SIMD_CLONES void masked_softmax_row(const T* e, const T* mask, T* alpha, std::int64_t S) {
  bool any = false;
  T m = 0;
  for (std::int64_t j = 0; j < S; ++j)
    if (mask[j] != T(0)) {
      m = any ? std::max(m, e[j]) : e[j];
      any = true;
    }
  T z = 0;
  const fast_math::ExpRange range = fast_math::exp_range();  // see fast_math::ExpRange
  for (std::int64_t j = 0; j < S; ++j) {
    alpha[j] = mask[j] != T(0) ? fast_math::exp(e[j] - m, range) : T(0);
    z += alpha[j];
  }
  if (!any) return;  // alpha is all zeros already
  const T inv = T(1) / z;
  for (std::int64_t j = 0; j < S; ++j) alpha[j] *= inv;
}

// forward: c = sum_j alpha_j h_j   (positions with alpha_j = 0 are skipped, so
// whatever sits in padded values never reaches c)
template <class T>
ATTEND_SIMD_CLONES void context_row(const T* __restrict alpha, const T* __restrict h, T* __restrict c, std::int64_t S,
                                    std::int64_t H) {
  std::fill(c, c + H, T(0));
  for (std::int64_t j = 0; j < S; ++j) {
    if (alpha[j] == T(0)) continue;
    const T a = alpha[j];
    const T* h_j = h + j * H;
    for (std::int64_t i = 0; i < H; ++i) c[i] += a * h_j[i];
  }
}

// Undoes context_row and then masked_softmax_row for one row. dalpha_out is the
// gradient reaching the weights output directly (a loss may use the weights).
// Writes de (S) and adds into dh (S, H) if dh is not null.
template <class T>
ATTEND_SIMD_CLONES void context_softmax_backward_row(const T* __restrict alpha, const T* __restrict mask,
                                                     const T* __restrict h, const T* __restrict dc,
                                                     const T* __restrict dalpha_out, T* __restrict dh,
                                                     T* __restrict de, std::int64_t S, std::int64_t H) {
  // forward: c = sum_j alpha_j h_j
  //   dalpha_j = dalpha_out_j + dc . h_j        dh_j += alpha_j dc
  // forward: alpha = softmax(e) over the real positions
  //   de_j = alpha_j (dalpha_j - sum_k alpha_k dalpha_k);   de_j = 0 at padding
  // (de is first used to hold dalpha, then overwritten in place.)
  T weighted = 0;  // sum_k alpha_k dalpha_k
  for (std::int64_t j = 0; j < S; ++j) {
    if (mask[j] == T(0)) {
      de[j] = T(0);
      continue;
    }
    const T dalpha = dalpha_out[j] + fast_math::dot_inline(dc, h + j * H, H);
    de[j] = dalpha;
    weighted += alpha[j] * dalpha;
    if (dh && alpha[j] != T(0)) {
      const T a = alpha[j];
      T* dh_j = dh + j * H;
      for (std::int64_t i = 0; i < H; ++i) dh_j[i] += a * dc[i];
    }
  }
  for (std::int64_t j = 0; j < S; ++j)
    if (mask[j] != T(0)) de[j] = alpha[j] * (de[j] - weighted);
}

template void masked_softmax_row<float>(const float*, const float*, float*, std::int64_t);
template void masked_softmax_row<double>(const double*, const double*, double*, std::int64_t);
template void context_row<float>(const float*, const float*, float*, std::int64_t, std::int64_t);
template void context_row<double>(const double*, const double*, double*, std::int64_t, std::int64_t);
template void context_softmax_backward_row<float>(const float*, const float*, const float*, const float*,
                                                  const float*, float*, float*, std::int64_t, std::int64_t);
template void context_softmax_backward_row<double>(const double*, const double*, const double*, const double*,
                                                   const double*, double*, double*, std::int64_t, std::int64_t);

}  // namespace attend::nn::detail
