// The LSTM gate math, forward and backward, for one batch row at a time.
//
// Speed: per step the gates of B rows need 3*B*H sigmoids and 2*B*H tanhs.
// glibc's tanhf costs ~9 ns, so on a (64, 256) step they would take well over
// half as long as the step's GEMM. The float versions below are branch-free, so the
// compiler turns each row loop into SIMD code (this file is built with
// -fno-trapping-math, see layers/CMakeLists.txt: without it GCC does not turn
// the compare-and-select of a clamp into a vector blend).
#include "layers/lstm_kernels.hpp"

#include <bit>
#include <cmath>

namespace attend::nn::lstm_kernels {

namespace {

// e^x for float, within 1 ulp on [-87, 88] (Cephes' expf, without branches):
// x = n ln2 + r with |r| <= ln2/2, e^x = 2^n * e^r, e^r by a degree-7 polynomial.
inline float exp_approx(float x) {
  x = x < -87.0f ? -87.0f : x;  // keeps 2^n a normal float
  x = x > 88.0f ? 88.0f : x;
  // Adding 1.5 * 2^23 rounds x/ln2 to an integer n, which then sits in the low mantissa bits.
  const float magic = 12582912.0f;
  const float shifted = x * 1.44269504088896341f + magic;
  const float n = shifted - magic;
  float r = x - n * 0.693359375f;  // ln2 in two parts, so that n * ln2 is exact enough
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const std::int32_t n_int = std::bit_cast<std::int32_t>(shifted) - std::bit_cast<std::int32_t>(magic);
  const float two_to_n = std::bit_cast<float>((n_int + 127) << 23);
  return p * two_to_n;
}

// σ(x) = 1 / (1 + e^-x); no cancellation anywhere, so the relative error stays small.
inline float sigmoid(float x) { return 1.0f / (1.0f + exp_approx(-x)); }
inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// tanh for float (Cephes' tanhf, without branches). 1 - 2/(e^2|x| + 1) loses
// relative accuracy near 0 (the subtraction cancels), so below 0.625 an odd
// polynomial is used instead. tanh(9) rounds to 1 in float.
inline float tanh_approx(float x) {
  float a = std::fabs(x);
  a = a > 9.0f ? 9.0f : a;
  const float z = a * a;
  float small = -5.70498872745e-3f;
  small = small * z + 2.06390887954e-2f;
  small = small * z - 5.37397155531e-2f;
  small = small * z + 1.33314422036e-1f;
  small = small * z - 3.33332819422e-1f;
  small = small * z * a + a;
  const float large = 1.0f - 2.0f / (exp_approx(2.0f * a) + 1.0f);
  return std::copysign(a < 0.625f ? small : large, x);
}
inline float tanh_of(float x) { return tanh_approx(x); }
inline double tanh_of(double x) { return std::tanh(x); }

// The row loops take every array as a separate __restrict parameter: the
// compiler then knows the gate blocks do not overlap and vectorises without
// run-time overlap checks (there would be too many pairs to check).
//
// On x86-64 each loop is compiled twice, for any x86-64 CPU (SSE2: 4 floats at a
// time) and for x86-64-v3 (AVX2 and FMA: 8 at a time, ~2.5x faster here); the
// dynamic loader picks the one the CPU can run. Only an attribute can say this.
#if defined(__x86_64__)
#define ATTEND_ROW_LOOP_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ATTEND_ROW_LOOP_CLONES
#endif

template <class T>
ATTEND_ROW_LOOP_CLONES
void forward_gates(std::int64_t hidden, T* __restrict ai, T* __restrict af, T* __restrict ag, T* __restrict ao,
                   const T* __restrict bi, const T* __restrict bf, const T* __restrict bg, const T* __restrict bo,
                   const T* __restrict c_prev, T* __restrict c, T* __restrict tanh_c, T* __restrict h) {
  for (std::int64_t j = 0; j < hidden; ++j) {
    // i = σ(a_i + b_i)   f = σ(a_f + b_f)   g = tanh(a_g + b_g)   o = σ(a_o + b_o)
    const T i = sigmoid(ai[j] + bi[j]);
    const T f = sigmoid(af[j] + bf[j]);
    const T g = tanh_of(ag[j] + bg[j]);
    const T o = sigmoid(ao[j] + bo[j]);
    // c = f * c_prev + i * g
    const T c_j = f * c_prev[j] + i * g;
    // h = o * tanh(c)
    const T tanh_c_j = tanh_of(c_j);
    ai[j] = i;
    af[j] = f;
    ag[j] = g;
    ao[j] = o;
    c[j] = c_j;
    tanh_c[j] = tanh_c_j;
    h[j] = o * tanh_c_j;
  }
}

template <class T>
ATTEND_ROW_LOOP_CLONES
void backward_gates(std::int64_t hidden, const T* __restrict i_, const T* __restrict f_, const T* __restrict g_,
                    const T* __restrict o_, const T* __restrict c_prev, const T* __restrict tanh_c,
                    const T* __restrict dh, T* __restrict dc, T* __restrict dai, T* __restrict daf,
                    T* __restrict dag, T* __restrict dao) {
  for (std::int64_t j = 0; j < hidden; ++j) {
    const T i = i_[j], f = f_[j], g = g_[j], o = o_[j];
    // forward: h = o * tanh(c)
    const T d_o = dh[j] * tanh_c[j];
    const T dc_j = dc[j] + dh[j] * o * (1 - tanh_c[j] * tanh_c[j]);  // c reaches the loss through h and directly
    // forward: c = f * c_prev + i * g
    const T df = dc_j * c_prev[j];
    const T di = dc_j * g;
    const T dg = dc_j * i;
    dc[j] = dc_j * f;  // dc_prev = dc * f: from here on dc is the gradient of c_prev
    // forward: i = σ(a_i)  f = σ(a_f)  g = tanh(a_g)  o = σ(a_o)    (σ' = σ(1 - σ), tanh' = 1 - tanh²)
    dai[j] = di * i * (1 - i);
    daf[j] = df * f * (1 - f);
    dag[j] = dg * (1 - g * g);
    dao[j] = d_o * o * (1 - o);
  }
}

#undef ATTEND_ROW_LOOP_CLONES

}  // namespace

template <class T>
void forward_row(std::int64_t hidden, T* a, const T* bias, const T* c_prev, T* c, T* tanh_c, T* h) {
  const std::int64_t H = hidden;
  forward_gates(H, a, a + H, a + 2 * H, a + 3 * H, bias, bias + H, bias + 2 * H, bias + 3 * H, c_prev, c, tanh_c, h);
}

template <class T>
void backward_row(std::int64_t hidden, const T* a, const T* c_prev, const T* tanh_c, const T* dh, T* dc, T* da) {
  const std::int64_t H = hidden;
  backward_gates(H, a, a + H, a + 2 * H, a + 3 * H, c_prev, tanh_c, dh, dc, da, da + H, da + 2 * H, da + 3 * H);
}

template void forward_row<float>(std::int64_t, float*, const float*, const float*, float*, float*, float*);
template void forward_row<double>(std::int64_t, double*, const double*, const double*, double*, double*, double*);
template void backward_row<float>(std::int64_t, const float*, const float*, const float*, const float*, float*,
                                  float*);
template void backward_row<double>(std::int64_t, const double*, const double*, const double*, const double*,
                                   double*, double*);

}  // namespace attend::nn::lstm_kernels
