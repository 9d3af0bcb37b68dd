// The LSTM gate math, forward and backward, for one batch row at a time.
//
// Learning? Read lstm_cell_composed in layers/lstm/lstm_cell.cpp first: the same
// step from primitive ops (linear, slice, sigmoid, tanh, mul, add), whose
// backward autograd derives; `attend explain --lstm` prints every gradient of
// it. The fused backward spans three files:
//   lstm_cell.cpp       the one-step op: the GEMMs, then the gate rows (backward: lstm_cell_backward)
//   lstm_sequence.cpp   the whole-sequence op: the same gate rows, the GEMMs batched over time
//   lstm_kernels.cpp    the gate math of one row, forward and backward (lstm_kernels.hpp)
//
// Speed: per step the gates of B rows need 3*B*H sigmoids and 2*B*H tanhs.
// glibc's tanhf is a scalar call, one value at a time, so on a (64, 256) step they
// would rival the step's GEMM (bench_lstm times the layer). The float versions of core/kernels/detail/fast_math.hpp are
// branch-free, so the compiler turns each row loop into SIMD code (this file is
// built with ATTEND_SIMD_FLAGS, see layers/CMakeLists.txt).
#include "layers/lstm/detail/lstm_kernels.hpp"

#include <cmath>
#include <type_traits>

#include "core/kernels/detail/fast_math.hpp"

namespace attend::nn::lstm_kernels {

namespace {

template <class T>
T tanh_of(T x) {
  return fast_math::tanh(x);
}

// The row loops take every array as a separate __restrict parameter: the
// compiler then knows the gate blocks do not overlap and vectorises without
// run-time overlap checks (there would be too many pairs to check).
// ATTEND_SIMD_CLONES: compiled for AVX2 + FMA beside the baseline (core/kernels/detail/fast_math.hpp).

// kY: h also to y (the sequence's output row), from the same register.
template <class T, bool kY>
ATTEND_SIMD_CLONES
void forward_gates(std::int64_t hidden, T* __restrict ai, T* __restrict af, T* __restrict ag, T* __restrict ao,
                   const T* __restrict bi, const T* __restrict bf, const T* __restrict bg, const T* __restrict bo,
                   const T* __restrict c_prev, T* __restrict c, T* __restrict tanh_c, T* __restrict h,
                   T* __restrict y) {
  const fast_math::ExpRange range = fast_math::exp_range();  // see fast_math::ExpRange
  for (std::int64_t j = 0; j < hidden; ++j) {
    // i = σ(a_i + b_i)   f = σ(a_f + b_f)   g = tanh(a_g + b_g)   o = σ(a_o + b_o)
    const T i = fast_math::sigmoid(ai[j] + bi[j], range);
    const T f = fast_math::sigmoid(af[j] + bf[j], range);
    const T g = tanh_of(ag[j] + bg[j]);
    const T o = fast_math::sigmoid(ao[j] + bo[j], range);
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
    if constexpr (kY) y[j] = o * tanh_c_j;
  }
}

// kDy: the row's output gradient dy is added to dh (the sequence's y = h);
// kDb: db += da, the bias gradient, gathered while da is in registers.
template <class T, bool kDy, bool kDb>
ATTEND_SIMD_CLONES
void backward_gates(std::int64_t hidden, const T* __restrict i_, const T* __restrict f_, const T* __restrict g_,
                    const T* __restrict o_, const T* __restrict c_prev, const T* __restrict tanh_c,
                    const T* __restrict dh_, const T* __restrict dy, T* __restrict dc, T* __restrict dai,
                    T* __restrict daf, T* __restrict dag, T* __restrict dao, T* __restrict dbi, T* __restrict dbf,
                    T* __restrict dbg, T* __restrict dbo) {
  for (std::int64_t j = 0; j < hidden; ++j) {
    const T i = i_[j], f = f_[j], g = g_[j], o = o_[j];
    // forward (the sequence): y = h, and h is the next step's h_prev   ->   dh = dy + dh_next
    T dh = dh_[j];
    if constexpr (kDy) dh += dy[j];
    // forward: h = o * tanh(c)
    const T d_o = dh * tanh_c[j];
    const T dc_j = dc[j] + dh * o * (1 - tanh_c[j] * tanh_c[j]);  // c reaches the loss through h and directly
    // forward: c = f * c_prev + i * g
    const T df = dc_j * c_prev[j];
    const T di = dc_j * g;
    const T dg = dc_j * i;
    dc[j] = dc_j * f;  // dc_prev = dc * f: from here on dc is the gradient of c_prev
    // forward: i = σ(a_i)  f = σ(a_f)  g = tanh(a_g)  o = σ(a_o)    (σ' = σ(1 - σ), tanh' = 1 - tanh²)
    const T dai_j = di * i * (1 - i), daf_j = df * f * (1 - f), dag_j = dg * (1 - g * g), dao_j = d_o * o * (1 - o);
    dai[j] = dai_j;
    daf[j] = daf_j;
    dag[j] = dag_j;
    dao[j] = dao_j;
    // forward: a = ... + b_ih + b_hh   ->   db += da
    if constexpr (kDb) {
      dbi[j] += dai_j;
      dbf[j] += daf_j;
      dbg[j] += dag_j;
      dbo[j] += dao_j;
    }
  }
}

}  // namespace

template <class T>
void forward_row(std::int64_t hidden, T* a, const T* bias, const T* c_prev, T* c, T* tanh_c, T* h, T* y) {
  const std::int64_t H = hidden;
  // with and without y as two loops, as in backward_row
  const auto run = [&](auto with_y) {
    forward_gates<T, decltype(with_y)::value>(H, a, a + H, a + 2 * H, a + 3 * H, bias, bias + H, bias + 2 * H,
                                              bias + 3 * H, c_prev, c, tanh_c, h, y);
  };
  if (y != nullptr) return run(std::true_type{});
  run(std::false_type{});
}

template <class T>
void backward_row(std::int64_t hidden, const T* a, const T* c_prev, const T* tanh_c, const T* dh, const T* dy, T* dc,
                  T* da, T* db) {
  const std::int64_t H = hidden;
  // the four cases as four loops: a branch on dy or db inside one would keep it from vectorising
  const auto run = [&](auto with_dy, auto with_db) {
    backward_gates<T, decltype(with_dy)::value, decltype(with_db)::value>(
        H, a, a + H, a + 2 * H, a + 3 * H, c_prev, tanh_c, dh, dy, dc, da, da + H, da + 2 * H, da + 3 * H, db,
        db == nullptr ? nullptr : db + H, db == nullptr ? nullptr : db + 2 * H, db == nullptr ? nullptr : db + 3 * H);
  };
  if (dy != nullptr) {
    if (db != nullptr) return run(std::true_type{}, std::true_type{});
    return run(std::true_type{}, std::false_type{});
  }
  if (db != nullptr) return run(std::false_type{}, std::true_type{});
  run(std::false_type{}, std::false_type{});
}

template void forward_row<float>(std::int64_t, float*, const float*, const float*, float*, float*, float*, float*);
template void forward_row<double>(std::int64_t, double*, const double*, const double*, double*, double*, double*,
                                  double*);
template void backward_row<float>(std::int64_t, const float*, const float*, const float*, const float*, const float*,
                                  float*, float*, float*);
template void backward_row<double>(std::int64_t, const double*, const double*, const double*, const double*,
                                   const double*, double*, double*, double*);

}  // namespace attend::nn::lstm_kernels
