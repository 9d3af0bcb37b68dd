// x's rows quantized for the int8 kernels (core/kernels/int8_gemm.hpp), 16
// (AVX-512) or 8 (AVX2) values at a time: the numbers of detail::row_scale and
// detail::quantize_value, which the portable path uses. The steps are exact
// IEEE operations (max, division, round to nearest even, clamp), so the vector
// forms give the same bytes as the scalar one; tests/core/kernels/test_int8_gemm.cpp
// holds every path to a scalar oracle.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/kernels/detail/int8_gemm_detail.hpp"
#include "core/kernels/detail/kernel_vectors.hpp"  // ATTEND_PACKED_WIDE: where the wide paths are built

namespace attend::blas::detail {

namespace {

// A row whose scale is NaN (a value not finite) or 0 keeps u = 128 (q = 0).
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

#if defined(ATTEND_PACKED_WIDE)
// GCC 12 warns inside its own AVX-512 intrinsics, whose unmasked forms pass an
// _mm512_undefined_ps() as the ignored source (a false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// max_k |v_k|, and whether a value is NaN (or infinite: the maximum is then inf).
__attribute__((target("arch=x86-64-v4"))) float abs_max_avx512(const float* v, std::int64_t k, bool& nan) {
  __m512 amax = _mm512_setzero_ps();
  __mmask16 unordered = 0;
  for (std::int64_t kk = 0; kk < k; kk += 16) {
    const __mmask16 m = k - kk >= 16 ? __mmask16(0xffff) : __mmask16((1u << (k - kk)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(m, v + kk);
    unordered |= _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    amax = _mm512_max_ps(amax, _mm512_abs_ps(x));
  }
  nan = unordered != 0;
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, amax);
  return *std::max_element(lanes, lanes + 16);
}

// u[k] = clamp(round(v[k] / scale), -127, 127) + 128
__attribute__((target("arch=x86-64-v4"))) void quantize_avx512(const float* v, std::int64_t k, float scale,
                                                                std::uint8_t* u) {
  const __m512 s = _mm512_set1_ps(scale), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  const __m512i offset = _mm512_set1_epi32(128);
  for (std::int64_t kk = 0; kk < k; kk += 16) {
    const __mmask16 m = k - kk >= 16 ? __mmask16(0xffff) : __mmask16((1u << (k - kk)) - 1);
    __m512 q = _mm512_div_ps(_mm512_maskz_loadu_ps(m, v + kk), s);
    q = _mm512_roundscale_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    q = _mm512_min_ps(_mm512_max_ps(q, lo), hi);
    _mm512_mask_cvtepi32_storeu_epi8(u + kk, m, _mm512_add_epi32(_mm512_cvtps_epi32(q), offset));
  }
}

#pragma GCC diagnostic pop

__attribute__((target("arch=x86-64-v3"))) float abs_max_avx2(const float* v, std::int64_t k, bool& nan) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 amax = _mm256_setzero_ps(), unordered = _mm256_setzero_ps();
  std::int64_t kk = 0;
  for (; kk + 8 <= k; kk += 8) {
    const __m256 x = _mm256_loadu_ps(v + kk);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, x));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, amax);
  float out = 0.0f;
  for (float l : lanes) out = std::max(out, l);
  nan = _mm256_movemask_ps(unordered) != 0;
  for (; kk < k; ++kk) {
    nan = nan || std::isnan(v[kk]);
    out = std::max(out, std::fabs(v[kk]));
  }
  return out;
}

__attribute__((target("arch=x86-64-v3"))) void quantize_avx2(const float* v, std::int64_t k, float scale,
                                                              std::uint8_t* u) {
  const __m256 s = _mm256_set1_ps(scale), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  const __m256i offset = _mm256_set1_epi32(128);
  std::int64_t kk = 0;
  for (; kk + 8 <= k; kk += 8) {
    __m256 q = _mm256_div_ps(_mm256_loadu_ps(v + kk), s);
    q = _mm256_round_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    q = _mm256_min_ps(_mm256_max_ps(q, lo), hi);
    const __m256i i = _mm256_add_epi32(_mm256_cvtps_epi32(q), offset);  // 1 .. 255
    const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(u + kk), _mm_packus_epi16(words, words));
  }
  for (; kk < k; ++kk) u[kk] = static_cast<std::uint8_t>(quantize_value(v[kk], scale) + 128);
}
#endif

}  // namespace

// s_i of row_scale, or NaN when a value is not finite; by the path's instructions.
float scale_of(const float* row, std::int64_t k, [[maybe_unused]] Int8Kernel kernel) {
#if defined(ATTEND_PACKED_WIDE)
  bool nan = false;
  float amax = 0.0f;
  if (kernel == Int8Kernel::Vnni) amax = abs_max_avx512(row, k, nan);
  if (kernel == Int8Kernel::Avx2) amax = abs_max_avx2(row, k, nan);
  if (kernel != Int8Kernel::Portable) return nan || !std::isfinite(amax) ? kNaN : amax / 127.0f;
#endif
  const bool finite = std::all_of(row, row + k, [](float v) { return std::isfinite(v); });
  return finite ? row_scale(row, k) : kNaN;
}

void quantize_rows_of_x(std::int64_t m, const float* x, std::int64_t ldx, std::int64_t k, std::int64_t k4,
                        [[maybe_unused]] Int8Kernel kernel, std::uint8_t* u, float* s) {
  std::fill_n(u, m * k4, std::uint8_t{128});
  for (std::int64_t i = 0; i < m; ++i) {
    const float* row = x + i * ldx;
    std::uint8_t* u_i = u + i * k4;
    const float scale = s[i] = scale_of(row, k, kernel);
    if (!(scale > 0.0f)) continue;  // zeros, or not finite: u stays 128
#if defined(ATTEND_PACKED_WIDE)
    if (kernel == Int8Kernel::Vnni) {
      quantize_avx512(row, k, scale, u_i);
      continue;
    }
    if (kernel == Int8Kernel::Avx2) {
      quantize_avx2(row, k, scale, u_i);
      continue;
    }
#endif
    for (std::int64_t kk = 0; kk < k; ++kk) u_i[kk] = static_cast<std::uint8_t>(quantize_value(row[kk], scale) + 128);
  }
}

}  // namespace attend::blas::detail
