// Dropout (Srivastava et al. 2014, "inverted" form): in training each element is
// zeroed with probability p and the survivors are scaled by 1/(1-p), so that
// E[y] = (1-p) * x / (1-p) = x and evaluation needs no rescaling at all.
#include <cstdint>

#include "autograd/ops.hpp"

namespace attend {

namespace {

// y = x * mask   dx += dy * mask   (mask already holds 0 or 1/(1-p))
Tensor apply_dropout_mask(const Tensor& x, const Tensor& mask) {
  Tensor y = empty_like(x);
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    const T* pm = mask.data<T>();
    T* py = y.data<T>();
    for (std::int64_t i = 0, n = x.numel(); i < n; ++i) py[i] = px[i] * pm[i];
  });
  record("dropout", {x}, {&y}, [mask](Grads& g) {
    dispatch(mask.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      const T* pm = mask.data<T>();
      T* dx = g.dx(0).data<T>();
      for (std::int64_t i = 0, n = mask.numel(); i < n; ++i) dx[i] += dy[i] * pm[i];
    });
  }).replay({"x"}, [mask](const Tensors& in) { return Tensors{apply_dropout_mask(in[0], mask)}; });  // the same mask
  return y;
}

}  // namespace

// y = x * m,  m_i = 0 with probability p, else 1/(1-p)   dx += dy * m
// In evaluation (or with p == 0) y is x itself: no copy and no node.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  check_defined("dropout", x);
  if (!(p >= 0.0 && p < 1.0)) fail("dropout: p must be in [0, 1), got {}", p);
  if (!training || p == 0.0) return x;
  // The mask, already scaled: the forward and the backward both multiply by it.
  Tensor mask = empty_like(x);
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T scale = static_cast<T>(1.0 / (1.0 - p));
    T* pm = mask.data<T>();
    for (std::int64_t i = 0, n = x.numel(); i < n; ++i) pm[i] = gen.bernoulli(p) ? T(0) : scale;
  });
  return apply_dropout_mask(x, mask);
}

}  // namespace attend
