// The whole-array loops of fast_math.hpp. Each float loop calls the inline
// polynomial versions, so GCC vectorises it (built with ATTEND_SIMD_FLAGS, and
// twice on x86-64: see ATTEND_SIMD_CLONES); the double loops call the library.
#include "core/kernels/detail/fast_math.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace attend::fast_math {

namespace {

// Inlined into each caller, so compiled for the caller's target.
template <class T, class F>
void map(const T* x, T* y, std::int64_t n, F f) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

// Lanes of partial sums: one running sum is a chain of dependent additions; eight
// independent ones fill a vector register and keep the adder busy.
constexpr int kLanes = 8;

// Lanes of floats for the loops that keep float lanes: one AVX-512 register (in
// the AVX2 and baseline builds, two and four registers).
constexpr int kFloatLanes = 16;

template <class T, int N>
[[gnu::always_inline]] inline double add_lanes(const T (&lanes)[N]) {
  double total = 0;
  for (int l = 0; l < N; ++l) total += static_cast<double>(lanes[l]);
  return total;
}

}  // namespace

// noipa: not inlined and not analysed, so that callers cannot know the values.
// clang (the fuzz preset) has no noipa; not inlining is what it offers.
#if defined(__clang__)
__attribute__((noinline))
#else
__attribute__((noipa))
#endif
ExpRange exp_range() { return {-87.0f, 88.0f}; }

ATTEND_SIMD_CLONES void tanh(const float* x, float* y, std::int64_t n) {
  map(x, y, n, [](float v) { return fast_math::tanh(v); });
}
void tanh(const double* x, double* y, std::int64_t n) {
  map(x, y, n, [](double v) { return std::tanh(v); });
}
ATTEND_SIMD_CLONES void sigmoid(const float* x, float* y, std::int64_t n) {
  const ExpRange range = exp_range();
  map(x, y, n, [range](float v) { return fast_math::sigmoid(v, range); });
}
void sigmoid(const double* x, double* y, std::int64_t n) {
  map(x, y, n, [](double v) { return fast_math::sigmoid(v); });
}

namespace {
// The float sum is kept in double lanes: a row of 8,000 probabilities added in
// float would lose ~4 digits on the way. Each block of 128 is first added up in
// float lanes (8 additions per lane, no loss worth counting), which costs far
// less than converting every element to double. Inlined into each clone (a
// plain call would run the baseline build).
template <bool kStore>
[[gnu::always_inline]] inline double exp_shifted_sum_lanes(const float* __restrict x, float shift, float* __restrict y,
                                                          std::int64_t n) {
  const ExpRange range = exp_range();
  constexpr std::int64_t kBlock = 8 * kFloatLanes;
  double lanes[kFloatLanes] = {};
  // Element k + i of a block goes into float lane i % 16 on every target, so the
  // sum does not depend on the vector width. The last, partial block takes the
  // same vector path for its whole vectors: at a row of 1,000 logits a scalar
  // tail would leave 104 elements to one double, a chain of dependent additions
  // as long as the rest of the row's work (`attend bench` at config S, V = 1,000).
  for (std::int64_t k = 0; k < n; k += kBlock) {
    const std::int64_t end = std::min(n, k + kBlock);
    float block[kFloatLanes] = {};
    std::int64_t i = k;
    for (; i + kFloatLanes <= end; i += kFloatLanes)
      for (int l = 0; l < kFloatLanes; ++l) {
        const float e = fast_math::exp(x[i + l] - shift, range);
        if constexpr (kStore) y[i + l] = e;
        block[l] += e;
      }
    for (int l = 0; i < end; ++i, ++l) {  // fewer than 16 left
      const float e = fast_math::exp(x[i] - shift, range);
      if constexpr (kStore) y[i] = e;
      block[l] += e;
    }
    for (int l = 0; l < kFloatLanes; ++l) lanes[l] += static_cast<double>(block[l]);
  }
  return add_lanes(lanes);
}
}  // namespace

ATTEND_SIMD_CLONES double exp_shifted_sum(const float* __restrict x, float shift, float* __restrict y,
                                          std::int64_t n) {
  return y ? exp_shifted_sum_lanes<true>(x, shift, y, n) : exp_shifted_sum_lanes<false>(x, shift, y, n);
}
double exp_shifted_sum(const double* __restrict x, double shift, double* __restrict y, std::int64_t n) {
  double total = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const double e = std::exp(x[k] - shift);
    if (y) y[k] = e;
    total += e;
  }
  return total;
}

namespace {
template <class T>
[[gnu::always_inline]] inline double sum_of_squares_lanes(const T* x, std::int64_t n) {
  double lanes[kLanes] = {};
  std::int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(x[k + l]) * static_cast<double>(x[k + l]);
  for (; k < n; ++k) lanes[0] += static_cast<double>(x[k]) * static_cast<double>(x[k]);
  return add_lanes(lanes);
}
}  // namespace

ATTEND_SIMD_CLONES double sum_of_squares(const float* x, std::int64_t n) { return sum_of_squares_lanes(x, n); }
ATTEND_SIMD_CLONES double sum_of_squares(const double* x, std::int64_t n) { return sum_of_squares_lanes(x, n); }

namespace {
// Lanes of running maxima, as with the sums. (x > m ? x : m) keeps m when x is
// NaN. Inlined, as the loops above. The doubles' loop (float64 checks alone).
template <class T>
[[gnu::always_inline]] inline T max_lanes(const T* x, std::int64_t n) {
  T lanes[kFloatLanes];
  for (int l = 0; l < kFloatLanes; ++l) lanes[l] = -std::numeric_limits<T>::infinity();
  std::int64_t k = 0;
  for (; k + kFloatLanes <= n; k += kFloatLanes)
    for (int l = 0; l < kFloatLanes; ++l) lanes[l] = x[k + l] > lanes[l] ? x[k + l] : lanes[l];
  for (; k < n; ++k) lanes[0] = x[k] > lanes[0] ? x[k] : lanes[0];
  T m = lanes[0];
  for (int l = 1; l < kFloatLanes; ++l) m = lanes[l] > m ? lanes[l] : m;
  return m;
}

// The floats' loop, as four SSE-wide vectors (GCC's vector extension): the
// array-of-lanes loop above compiles to 16 scalar maxima per 16 floats in every
// clone, AVX-512's included, and the loss's row maxima run it at every step;
// this is one vector max per 4 floats in each clone. Lane 4 r + l
// sees the elements 16 i + 4 r + l, as above.
using F4 = float __attribute__((vector_size(16)));
[[gnu::always_inline]] inline float max_floats(const float* x, std::int64_t n) {
  constexpr float kLow = -std::numeric_limits<float>::infinity();
  F4 lanes[4];
  for (F4& v : lanes) v = F4{kLow, kLow, kLow, kLow};
  std::int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    for (int r = 0; r < 4; ++r) {
      F4 v;
      std::memcpy(&v, x + k + 4 * r, sizeof v);  // unaligned
      lanes[r] = v > lanes[r] ? v : lanes[r];
    }
  float m = kLow;
  for (const F4& v : lanes)
    for (int l = 0; l < 4; ++l) m = v[l] > m ? v[l] : m;
  for (; k < n; ++k) m = x[k] > m ? x[k] : m;
  return m;
}
}  // namespace

ATTEND_SIMD_CLONES float max(const float* x, std::int64_t n) { return max_floats(x, n); }
double max(const double* x, std::int64_t n) { return max_lanes(x, n); }

ATTEND_SIMD_CLONES void scale_shift(float a, float b, float* y, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) y[k] = a * y[k] + b;
}
void scale_shift(double a, double b, double* y, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) y[k] = a * y[k] + b;
}

ATTEND_SIMD_CLONES void axpy(float a, const float* __restrict x, float* __restrict y, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) y[k] += a * x[k];
}
void axpy(double a, const double* __restrict x, double* __restrict y, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) y[k] += a * x[k];
}

}  // namespace attend::fast_math
