// Softmax family: softmax, log_softmax, masked_softmax, masked_fill.
//
// Every op here works on "rows": the elements of x along `axis`, one row per
// position of the other axes. A tensor of shape (outer..., n, inner...) has
// outer * inner rows of n elements; the elements of one row sit `inner` apart
// in memory (1 when axis is the last axis, the common case).
//
// Stability: exp(x_k) overflows float32 for x_k > 88, so every row subtracts
// its maximum m first. softmax is unchanged by it (the factor exp(-m) cancels
// between numerator and denominator) and every exponent is then <= 0.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "autograd/ops/detail/broadcast.hpp"
#include "autograd/ops.hpp"

namespace attend {

namespace {

// Rows along one axis: row (o, j) starts at o * n * inner + j; element k of it
// is at start + k * inner.
struct Rows {
  std::int64_t outer = 1, n = 1, inner = 1;

  template <class F>
  void each(F f) const {  // f(start of the row)
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t j = 0; j < inner; ++j) f(o * n * inner + j);
  }
};

Rows rows_along(const char* op, const Tensor& x, int axis) {
  check_defined(op, x);
  const Shape& s = x.shape();
  const int a = normalize_axis(op, axis, s);
  Rows r;
  r.n = s[a];
  r.outer = s.count(0, a);
  r.inner = s.count(a + 1, s.rank());
  return r;
}

// The mask expanded to x's shape as one byte per element of x (1 keep, 0 mask).
// The mask broadcasts NumPy-style: its axes line up with x's last axes, each
// is 1 or equal to x's, missing leading axes count as 1. So for x (B, T, S)
// a mask (B, 1, S) masks the same source positions for every target step, and
// (S) the same for the whole batch. The values must be exactly 0 or 1: an
// additive mask (0 / -inf, PyTorch's attn_mask style) is a different thing and
// is refused rather than silently misread.
std::vector<std::uint8_t> expand_mask(const char* op, const Tensor& mask, const Shape& x) {
  check_defined(op, mask, "mask");
  const Shape& m = mask.shape();
  bool ok = m.rank() <= x.rank();
  for (int i = 0; ok && i < m.rank(); ++i) {
    const std::int64_t md = m[i], xd = x[x.rank() - m.rank() + i];
    ok = md == 1 || md == xd;
  }
  if (!ok)
    fail("{}: mask of shape {} does not broadcast to x of shape {} (mask axes line up with x's last axes; "
         "each must be 1 or equal to x's)",
         op, m, x);
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(x.numel()));
  dispatch(mask.dtype(), [&](auto zero) {
    using M = decltype(zero);
    const M* pm = mask.data<M>();
    for (std::int64_t i = 0, n = mask.numel(); i < n; ++i)
      if (pm[i] != M(0) && pm[i] != M(1))
        fail("{}: mask values must be 0 (masked) or 1 (kept), found {} at flat index {}", op, pm[i], i);
    if (m == x) {
      for (std::int64_t i = 0, n = x.numel(); i < n; ++i) keep[i] = pm[i] != M(0);
    } else {
      BroadcastIter(x, x, m).run([&](std::int64_t i, std::int64_t, std::int64_t im) { keep[i] = pm[im] != M(0); });
    }
  });
  return keep;
}

// Forward of one row: y = softmax over the kept positions, 0 elsewhere.
// keep == nullptr keeps everything (plain softmax). A row with nothing kept is
// all zeros: there is no maximum to subtract and no mass to share.
template <class T>
void softmax_row(const T* x, T* y, const std::uint8_t* keep, std::int64_t n, std::int64_t stride) {
  T m = -std::numeric_limits<T>::infinity();
  bool any = false;
  for (std::int64_t k = 0; k < n; ++k) {
    if (keep && !keep[k * stride]) continue;
    m = std::max(m, x[k * stride]);  // skips a NaN, but exp(NaN - m) still makes the row NaN
    any = true;
  }
  if (!any) {
    for (std::int64_t k = 0; k < n; ++k) y[k * stride] = T(0);
    return;
  }
  double s = 0;  // >= 1: the maximum contributes exp(0)
  for (std::int64_t k = 0; k < n; ++k) {
    const T e = (keep && !keep[k * stride]) ? T(0) : std::exp(x[k * stride] - m);
    y[k * stride] = e;
    s += e;
  }
  const T inv = static_cast<T>(1.0 / s);
  for (std::int64_t k = 0; k < n; ++k) y[k * stride] *= inv;
}

// Backward of one softmax row. With y_k = exp(x_k) / sum_j exp(x_j):
//   dy_k/dx_i = y_k * ([k == i] - y_i)
//   dx_i = sum_k dy_k * y_k * ([k == i] - y_i) = y_i * dy_i - y_i * sum_k y_k dy_k
//        = y_i * (dy_i - dot(y, dy))
// Masked positions have y_i exactly 0, so they get exactly 0 and add nothing to
// dot(y, dy): the kept positions see the softmax of the kept ones only.
template <class T>
void softmax_row_backward(const T* y, const T* dy, T* dx, std::int64_t n, std::int64_t stride) {
  double dot = 0;
  for (std::int64_t k = 0; k < n; ++k) dot += double(y[k * stride]) * dy[k * stride];
  const T d = static_cast<T>(dot);
  for (std::int64_t k = 0; k < n; ++k) dx[k * stride] += y[k * stride] * (dy[k * stride] - d);
}

// Softmax of x along an axis, over the positions keep marks (all when null).
Tensor softmax_forward(const Tensor& x, const Rows& r, const std::uint8_t* keep) {
  Tensor y = empty_like(x);
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    r.each([&](std::int64_t start) {
      softmax_row(px + start, py + start, keep ? keep + start : nullptr, r.n, r.inner);
    });
  });
  return y;
}

// The backward shared by softmax and masked_softmax (see softmax_row_backward).
void softmax_backward(const Tensor& y, const Rows& r, Grads& g) {
  dispatch(y.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* py = y.data<T>();
    const T* dy = g.dy().data<T>();
    T* dx = g.dx(0).data<T>();
    r.each([&](std::int64_t start) { softmax_row_backward(py + start, dy + start, dx + start, r.n, r.inner); });
  });
}

}  // namespace

// y = softmax(x) along axis: y_k = exp(x_k - m) / sum_j exp(x_j - m), m = max_j x_j
//   dx += y * (dy - dot(y, dy))   (per row; derivation at softmax_row_backward)
Tensor softmax(const Tensor& x, int axis) {
  const Rows r = rows_along("softmax", x, axis);
  Tensor y = softmax_forward(x, r, nullptr);
  record("softmax", {x}, {&y}, [y = y.detach(), r](Grads& g) { softmax_backward(y, r, g); })
      .replay({"x"}, [axis](const Tensors& in) { return Tensors{softmax(in[0], axis)}; });
  return y;
}

// y = log_softmax(x) along axis: y_k = x_k - lse,  lse = m + log(sum_j exp(x_j - m))
//   dx += dy - softmax(x) * sum(dy)   (per row)
// Derivation: dy_k/dx_i = [k == i] - d(lse)/dx_i = [k == i] - p_i with p = softmax(x), so
//   dx_i = sum_k dy_k ([k == i] - p_i) = dy_i - p_i * sum_k dy_k,   and p_i = exp(y_i).
Tensor log_softmax(const Tensor& x, int axis) {
  const Rows r = rows_along("log_softmax", x, axis);
  Tensor y = empty_like(x);
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const std::int64_t n = r.n, st = r.inner;
    r.each([&](std::int64_t start) {
      const T* xr = px + start;
      T* yr = py + start;
      T m = -std::numeric_limits<T>::infinity();
      for (std::int64_t k = 0; k < n; ++k)
        m = std::max(m, xr[k * st]);
      double s = 0;
      for (std::int64_t k = 0; k < n; ++k) s += std::exp(xr[k * st] - m);
      // (x - m) - log(s) rather than x - (m + log(s)): x - m is exact near the maximum,
      // while m + log(s) would round to the (coarse) spacing of floats near m.
      const T log_s = static_cast<T>(std::log(s));
      for (std::int64_t k = 0; k < n; ++k) yr[k * st] = (xr[k * st] - m) - log_s;
    });
  });
  record("log_softmax", {x}, {&y}, [y = y.detach(), r](Grads& g) {
    dispatch(y.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* py = y.data<T>();
      const T* dy = g.dy().data<T>();
      T* dx = g.dx(0).data<T>();
      const std::int64_t n = r.n, st = r.inner;
      r.each([&](std::int64_t start) {
        double sum_dy = 0;
        for (std::int64_t k = 0; k < n; ++k) sum_dy += dy[start + k * st];
        const T sdy = static_cast<T>(sum_dy);
        for (std::int64_t k = 0; k < n; ++k) {
          const std::int64_t i = start + k * st;
          dx[i] += dy[i] - std::exp(py[i]) * sdy;
        }
      });
    });
  })
      .replay({"x"}, [axis](const Tensors& in) { return Tensors{log_softmax(in[0], axis)}; });
  return y;
}

// y = softmax over the kept positions of each row, exactly 0 at masked ones
//   dx += y * (dy - dot(y, dy))   (per row; exactly 0 where masked; the mask gets no gradient)
// The masked values of x are never read, so they may be anything (even -inf or NaN).
Tensor masked_softmax(const Tensor& x, const Tensor& mask, int axis) {
  const Rows r = rows_along("masked_softmax", x, axis);
  const std::vector<std::uint8_t> keep = expand_mask("masked_softmax", mask, x.shape());
  Tensor y = softmax_forward(x, r, keep.data());
  record("masked_softmax", {x}, {&y}, [y = y.detach(), r](Grads& g) { softmax_backward(y, r, g); })
      .replay({"x"}, [mask, axis](const Tensors& in) {
        return Tensors{masked_softmax(in[0], mask, axis)};
      });
  return y;
}

// y = mask ? x : value   dx += mask ? dy : 0   (the mask gets no gradient)
// The usual use is masked_fill(scores, mask, -inf) before a softmax; masked_softmax
// does the same in one op and also handles rows with nothing kept.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  check_defined("masked_fill", x);
  std::vector<std::uint8_t> keep = expand_mask("masked_fill", mask, x.shape());
  Tensor y = empty_like(x);
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const T v = static_cast<T>(value);
    for (std::int64_t i = 0, n = x.numel(); i < n; ++i) py[i] = keep[i] ? px[i] : v;
  });
  record("masked_fill", {x}, {&y}, [keep = std::move(keep)](Grads& g) {
    dispatch(g.dy().dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      T* dx = g.dx(0).data<T>();
      for (std::size_t i = 0; i < keep.size(); ++i)
        if (keep[i]) dx[i] += dy[i];
    });
  })
      .replay({"x"}, [mask, value](const Tensors& in) {
        return Tensors{masked_fill(in[0], mask, value)};
      });
  return y;
}

}  // namespace attend
