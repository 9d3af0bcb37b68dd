#pragma once
// exp, tanh and sigmoid for float that the compiler can turn into SIMD code, and
// the few whole-array loops the hot ops share (tanh of a row, exp-and-sum of a
// row of logits, max, axpy, a dot product).
//
// Why: glibc's tanhf is a scalar call that cannot be vectorised. A training step of
// the additive-attention Seq2Seq takes B*S*A tanhs per decoder step (20,480 at
// B=16, S=20, A=64): one scalar call each, they would dominate the step. The
// float versions here are branch-free polynomials and rational functions (exp is
// Cephes' expf; tanh is our own fit, see below), so a loop over them becomes
// 8-wide AVX2 code.
//
// Accuracy: float exp within 1 ulp on [-87, 88], tanh within 1.5 ulp (tested in
// tests/core/kernels/test_fast_math.cpp against std::exp and std::tanh). double always uses
// the exact library functions: float64 is what the gradient checks run in.
#include <bit>
#include <cmath>
#include <cstdint>

// The array loops, the LSTM gate loops and the attention loops are compiled
// three times on x86-64: for any x86-64 CPU (SSE2, 4 floats at a time), for
// x86-64-v3 (AVX2 and FMA, 8 at a time) and for x86-64-v4
// (AVX-512, 16 at a time); the dynamic loader picks the widest the CPU can run. Only an attribute can say this, hence a macro.
// The files that use it are built with ATTEND_SIMD_FLAGS (top CMakeLists.txt):
// no FP traps, so that GCC turns the compare-and-select of a clamp into a
// vector blend, and contraction of a * b + c into FMA in the AVX2 build.
// clang 14 (the fuzz preset, tests/fuzz/) cannot clone function templates; the
// fuzzers need no AVX2 path, so with clang every loop is compiled once.
#if defined(__x86_64__) && !defined(__clang__)
#define ATTEND_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ATTEND_SIMD_CLONES
#endif

namespace attend::fast_math {

// exp's argument is clamped to [lo, hi] = [-87, 88], which keeps 2^n a normal
// float. In a loop, pass the bounds from exp_range(), which the compiler cannot
// see through: with the bounds as constants GCC gives the vector loop a separate
// path for each clamped case (where the result is a constant it can fold), and
// splits exp_shifted_sum's loop into per-case blends; with opaque bounds there
// is one straight path.
struct ExpRange {
  float lo, hi;
};
ExpRange exp_range();  // {-87, 88}, out of line on purpose (core/kernels/fast_math.cpp)

// e^x (Cephes' expf, without branches). The argument is clamped to [lo, hi],
// so this never returns 0 or inf: for softmax rows and gates, not for users' exp.
// x = n ln2 + r with |r| <= ln2/2, e^x = 2^n * e^r, e^r by a degree-7 polynomial.
// F is float, or a GCC vector of floats with I the int32 vector of its width:
// the packed product's kernel (core/kernels/packed_gemm.cpp) runs it on whole registers,
// in place (a vector passed or returned by value has another ABI per target).
template <class F, class I>
[[gnu::always_inline]] inline void exp_lanes(F& x, float lo, float hi) {
  x = x < lo ? F{} + lo : x;
  x = x > hi ? F{} + hi : x;
  // Adding 1.5 * 2^23 rounds x/ln2 to an integer n, which then sits in the low mantissa bits.
  const F magic = F{} + 12582912.0f;
  const F shifted = x * 1.44269504088896341f + magic;
  const F n = shifted - magic;
  F r = x - n * 0.693359375f;  // ln2 in two parts, so that n * ln2 is exact enough
  r = r - n * -2.12194440e-4f;
  F p = F{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // The builtin, not std::bit_cast: a library function returning a vector has the ABI problem above.
  const I n_int = __builtin_bit_cast(I, shifted) - __builtin_bit_cast(I, magic);
  const F two_to_n = __builtin_bit_cast(F, (n_int + 127) << 23);
  x = p * two_to_n;
}
inline float exp(float x, ExpRange range) {
  exp_lanes<float, std::int32_t>(x, range.lo, range.hi);
  return x;
}
inline float exp(float x) { return fast_math::exp(x, ExpRange{-87.0f, 88.0f}); }

// 2^t for t <= 64, for sums of e^(z - ref) = 2^((z - ref) log2 e) where the
// caller keeps z - ref small (the packed kernel's row summaries): no upper clamp,
// t below -125 taken as -125 (2^-125, a normal float; inf - inf and other NaN
// stay NaN). t = n + f with n = round(t), |f| <= 1/2; 2^f by a degree-6
// polynomial (our own fit of its relative error, 1.9e-9 in exact arithmetic);
// 2^n put in the exponent field. Within 1 ulp of the exact value (tested in
// tests/core/kernels/test_fast_math.cpp). Four operations fewer than exp_lanes: no upper
// clamp, and no two-part ln 2, since 2^f needs no reduction by it.
template <class F, class I>
[[gnu::always_inline]] inline void exp2_lanes(F& t) {
  t = t < -125.0f ? F{} - 125.0f : t;
  const F magic = F{} + 12582912.0f;  // 1.5 * 2^23: t + magic rounds t to an integer n in the low bits
  const F shifted = t + magic;
  const F f = t - (shifted - magic);
  F p = F{} + 1.534580021e-4f;
  p = p * f + 1.339993162e-3f;
  p = p * f + 9.618489005e-3f;
  p = p * f + 5.550328776e-2f;
  p = p * f + 2.402264689e-1f;
  p = p * f + 6.931472057e-1f;
  p = p * f + 1.000000001f;
  // 2^n as a float, (n + 127) << 23, n + 127 in [2, 191]: shifted's bits less
  // magic's are n. A multiplication, so that NaN stays NaN.
  const I n_bits = (__builtin_bit_cast(I, shifted) - (__builtin_bit_cast(std::int32_t, 12582912.0f) - 127)) << 23;
  t = p * __builtin_bit_cast(F, n_bits);
}
inline float exp2(float t) {
  exp2_lanes<float, std::int32_t>(t);
  return t;
}

// tanh without branches, both sides computed and one chosen, sharing one
// division. With a = |x| and z = a^2:
//   a < 1:  tanh a = a + a^3 U(z) / Q(z)        (U degree 1, Q degree 2)
//   a >= 1: tanh a = 1 - 2 / (e^2a + 1)        (no cancellation: the result is >= 0.76)
// e^2a = 2^n e^r with n = round(2a / ln2) and r = (2a - n L1) - n L2, where
// L1 + L2 = ln 2 and L1 has 16 significant bits, so n L1 and the first
// subtraction are exact (Cody and Waite): no FMA needed for accuracy. e^r by a
// degree-5 polynomial on |r| <= 0.35. The coefficients are our own minimax fits
// (of the relative error of tanh for U/Q, of e^r for the polynomial).
// Past |a| = 9.0109 tanh rounds to 1 in float; the exponential's argument is
// clamped at 9.03125 (an integer min on the bit pattern, which also sends inf
// and NaN there); a NaN x takes the a < 1 side and stays NaN.
// Accuracy, checked on every float in [-12, 12]: within 1 ulp of the correctly
// rounded tanh, 1.35 ulp of the exact value, with or without FMA contraction
// (tests/core/kernels/test_fast_math.cpp checks a dense grid).
inline float tanh(float x) {
  const float u0 = -0.333333310f, u1 = -1.46312200e-2f;  // U(z) = u0 + u1 z
  const float q1 = 0.443893119f, q2 = 1.56538657e-2f;    // Q(z) = 1 + q1 z + q2 z^2
  const float c0 = 1.00000008f, c1 = 0.999999673f, c2 = 0.499988509f, c3 = 0.166676111f, c4 = 4.19202934e-2f,
              c5 = 8.29694781e-3f;  // e^r = c0 + c1 r + ... + c5 r^5
  const float two_log2e = 2.88539004f, magic = 12582912.0f;  // 2 / ln2; 1.5 * 2^23 (see exp)
  const float L1 = 0.693145752f, L2 = 1.42860677e-6f;
  const float a = std::fabs(x);
  const std::int32_t a_bits = std::bit_cast<std::int32_t>(a), clamp_bits = std::bit_cast<std::int32_t>(9.03125f);
  const float a_c = std::bit_cast<float>(a_bits < clamp_bits ? a_bits : clamp_bits);  // min(a, 9.03125)
  // a < 1
  const float z = a * a;
  const float u = u1 * z + u0;
  const float q = (q2 * z + q1) * z + 1.0f;
  // a >= 1: e = e^2a
  const float shifted = a_c * two_log2e + magic;  // n sits in the low mantissa bits
  const float n = shifted - magic;
  const float r = ((a_c + a_c) - n * L1) - n * L2;
  const float e_r = ((((c5 * r + c4) * r + c3) * r + c2) * r + c1) * r + c0;
  // * 2^n: add n to the exponent field (unsigned, so the bits shifted out are simply dropped)
  const float e = std::bit_cast<float>(std::bit_cast<std::uint32_t>(e_r) + (std::bit_cast<std::uint32_t>(shifted) << 23));
  // Either side as mul * (num / den) + add, so that there is one division.
  const bool large = a >= 1.0f;
  const float num = large ? 2.0f : u;
  const float den = large ? e + 1.0f : q;
  const float mul = large ? -1.0f : a * z;
  const float add = large ? 1.0f : a;
  return std::copysign(mul * (num / den) + add, x);
}

// σ(x) = 1 / (1 + e^-x); no cancellation anywhere, so the relative error stays
// small. exp clamps its argument, so e^-x never overflows to inf.
inline float sigmoid(float x, ExpRange range) { return 1.0f / (1.0f + fast_math::exp(-x, range)); }
inline float sigmoid(float x) { return 1.0f / (1.0f + fast_math::exp(-x)); }

inline double exp(double x) { return std::exp(x); }
// The double versions take a range too, so that a loop templated on the type can
// pass one; double needs no clamp.
inline double exp(double x, ExpRange) { return std::exp(x); }
inline double tanh(double x) { return std::tanh(x); }
// The two branches keep exp from overflowing for large |x|.
inline double sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}
inline double sigmoid(double x, ExpRange) { return fast_math::sigmoid(x); }

// sum_k a_k b_k with eight independent partial sums (so not in index order),
// inline: for a row loop that is itself compiled for AVX2 (ATTEND_SIMD_CLONES)
// and takes many short dot products, where a call per product would cost as
// much as the product.
template <class T>
inline T dot_inline(const T* __restrict a, const T* __restrict b, std::int64_t n) {
  T lanes[8] = {};
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += a[k + l] * b[k + l];
  for (; k < n; ++k) lanes[0] += a[k] * b[k];
  return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
}

// Whole arrays (core/kernels/fast_math.cpp). y may be x.
void tanh(const float* x, float* y, std::int64_t n);
void tanh(const double* x, double* y, std::int64_t n);
void sigmoid(const float* x, float* y, std::int64_t n);
void sigmoid(const double* x, double* y, std::int64_t n);

// y_k = exp(x_k - shift), returns sum_k y_k (added up in double). y may be null:
// then only the sum.
double exp_shifted_sum(const float* x, float shift, float* y, std::int64_t n);
double exp_shifted_sum(const double* x, double shift, double* y, std::int64_t n);

// sum_k x_k^2 in double, with independent accumulators (so not in index order).
double sum_of_squares(const float* x, std::int64_t n);
double sum_of_squares(const double* x, std::int64_t n);

// max_k x_k, skipping NaNs; -inf when n = 0 or every element is NaN.
float max(const float* x, std::int64_t n);
double max(const double* x, std::int64_t n);

// y_k = a y_k + b, in place.
void scale_shift(float a, float b, float* y, std::int64_t n);
void scale_shift(double a, double b, double* y, std::int64_t n);

// y_k += a x_k (x and y may not overlap).
void axpy(float a, const float* x, float* y, std::int64_t n);
void axpy(double a, const double* x, double* y, std::int64_t n);


}  // namespace attend::fast_math
