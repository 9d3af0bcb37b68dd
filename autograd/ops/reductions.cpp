// Reductions: sum and mean, over every element or along one axis. Each forward
// is followed by its backward; the comment above each op is the formula pair.
//
// Sums accumulate in double for both dtypes, so a float32 sum of many elements
// loses no more than its final rounding. The mean of no elements is NaN (0/0),
// as in PyTorch and NumPy.
#include <algorithm>
#include <limits>
#include <string_view>
#include <vector>

#include "autograd/ops.hpp"

namespace attend {

namespace {

// y = scale * sum(x), rank 0.
Tensor reduce_all(const char* op, const Tensor& x, double scale) {
  check_defined(op, x);
  Tensor y = empty(Shape{}, x.dtype());
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    double acc = 0;
    for (std::int64_t i = 0, n = x.numel(); i < n; ++i) acc += px[i];
    y.data<T>()[0] = static_cast<T>(acc * scale);
  });
  record(op, {x}, {&y}, [scale](Grads& g) {
    Tensor& dx = g.dx(0);
    if (dx.numel() == 0) return;
    dispatch(dx.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T d = static_cast<T>(g.dy().data<T>()[0] * scale);  // every element gets the same share
      T* pdx = dx.data<T>();
      for (std::int64_t i = 0, n = dx.numel(); i < n; ++i) pdx[i] += d;
    });
  })
      .replay({"x"}, [mean_of_all = std::string_view(op) == "mean"](const Tensors& in) {
        return Tensors{mean_of_all ? mean(in[0]) : sum(in[0])};
      });
  return y;
}

// y[o, i] = scale * sum_k x[o, k, i], with x seen as (outer, n, inner) around the axis.
Tensor reduce_axis(const char* op, const Tensor& x, int axis, bool keepdim, bool is_mean) {
  check_defined(op, x);
  const int ax = normalize_axis(op, axis, x.shape());
  const Shape& s = x.shape();
  const std::int64_t outer = s.count(0, ax), inner = s.count(ax + 1, s.rank());
  const std::int64_t n = s[ax];
  const double scale = !is_mean ? 1.0 : n == 0 ? std::numeric_limits<double>::quiet_NaN() : 1.0 / n;
  Tensor y = empty(keepdim ? s.with(ax, 1) : s.without(ax), x.dtype());
  if (y.numel() > 0) {
    dispatch(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      T* py = y.data<T>();
      if (inner == 1) {  // the last axis: one contiguous row per output
        for (std::int64_t o = 0; o < outer; ++o) {
          double acc = 0;
          for (std::int64_t k = 0; k < n; ++k) acc += px[o * n + k];
          py[o] = static_cast<T>(acc * scale);
        }
        return;
      }
      std::vector<double> acc(static_cast<std::size_t>(inner));
      for (std::int64_t o = 0; o < outer; ++o) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (std::int64_t k = 0; k < n; ++k) {  // rows of x in memory order; the inner loop is contiguous
          const T* row = px + (o * n + k) * inner;
          for (std::int64_t i = 0; i < inner; ++i) acc[i] += row[i];
        }
        for (std::int64_t i = 0; i < inner; ++i) py[o * inner + i] = static_cast<T>(acc[i] * scale);
      }
    });
  }
  record(op, {x}, {&y}, [outer, n, inner, scale](Grads& g) {
    Tensor& dx = g.dx(0);
    if (dx.numel() == 0) return;
    dispatch(dx.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      T* pdx = dx.data<T>();
      const T c = static_cast<T>(scale);
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t k = 0; k < n; ++k) {
          T* row = pdx + (o * n + k) * inner;
          const T* d = dy + o * inner;
          for (std::int64_t i = 0; i < inner; ++i) row[i] += c * d[i];
        }
    });
  })
      .replay({"x"}, [axis, keepdim, is_mean](const Tensors& in) {
        return Tensors{is_mean ? mean(in[0], axis, keepdim) : sum(in[0], axis, keepdim)};
      });
  return y;
}

}  // namespace

// y = sum_i x[i]   dx[i] += dy
Tensor sum(const Tensor& x) { return reduce_all("sum", x, 1.0); }

// y[.., ..] = sum_k x[.., k, ..]   dx[.., k, ..] += dy[.., ..]   (keepdim keeps the axis as size 1)
Tensor sum(const Tensor& x, int axis, bool keepdim) { return reduce_axis("sum", x, axis, keepdim, false); }

// y = sum_i x[i] / n   dx[i] += dy / n   (NaN when n = 0)
Tensor mean(const Tensor& x) {
  check_defined("mean", x);
  const std::int64_t n = x.numel();
  return reduce_all("mean", x, n == 0 ? std::numeric_limits<double>::quiet_NaN() : 1.0 / static_cast<double>(n));
}

// y[.., ..] = sum_k x[.., k, ..] / n   dx[.., k, ..] += dy[.., ..] / n   (n = size of the axis)
Tensor mean(const Tensor& x, int axis, bool keepdim) { return reduce_axis("mean", x, axis, keepdim, true); }

}  // namespace attend
