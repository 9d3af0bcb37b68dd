// Element-wise ops. Each forward is followed by its backward; the comment
// above each op is the formula pair, forward then backward.
#include <cmath>
#include <type_traits>

#include "autograd/ops/detail/broadcast.hpp"
#include "autograd/ops.hpp"
#include "core/kernels/detail/fast_math.hpp"

namespace attend {

namespace {

// Forward of a broadcasting binary op: y[i] = f(a[ia], b[ib]).
template <class F>
Tensor binary_forward(const char* op, const Tensor& a, const Tensor& b, F f) {
  check_same_dtype(op, a, b);
  Tensor y = empty(broadcast_shapes(op, a.shape(), b.shape()), a.dtype());
  dispatch(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.data<T>();
    if (a.shape() == b.shape()) {  // the common case, without index arithmetic
      for (std::int64_t i = 0, n = y.numel(); i < n; ++i) py[i] = f(pa[i], pb[i]);
    } else {
      BroadcastIter(y.shape(), a.shape(), b.shape()).run([&](std::int64_t i, std::int64_t ia, std::int64_t ib) {
        py[i] = f(pa[ia], pb[ib]);
      });
    }
  });
  return y;
}

// Backward of a broadcasting binary op: calls g(i, ia, ib) for each output element.
template <class G>
void binary_backward(const Shape& y, const Shape& a, const Shape& b, G g) {
  if (a == b) {
    for (std::int64_t i = 0, n = y.numel(); i < n; ++i) g(i, i, i);
  } else {
    BroadcastIter(y, a, b).run(g);
  }
}

// What a binary op's backward keeps besides dy: add and sub only the shapes of
// a and b; mul and div a and b themselves, alive until the backward runs.
struct KeptShapes {
  Shape a, b;
  KeptShapes(const Tensor& x, const Tensor& y) : a(x.shape()), b(y.shape()) {}
  const Shape& shape_a() const { return a; }
  const Shape& shape_b() const { return b; }
};
struct KeptValues {
  Tensor a, b;
  KeptValues(const Tensor& x, const Tensor& y) : a(x.detach()), b(y.detach()) {}
  const Shape& shape_a() const { return a.shape(); }
  const Shape& shape_b() const { return b.shape(); }
};
constexpr std::false_type kShapesOnly{};  // -> KeptShapes
constexpr std::true_type kKeepsValues{};  // -> KeptValues

// The skeleton of add, sub, mul and div, which differ only in their formulas:
//   forward   y[i] = f(a[ia], b[ib])                          over the broadcast shape
//   backward  da[ia] += grad_a(dy[i], a[ia], b[ib]);  db[ib] += grad_b(dy[i], a[ia], b[ib])
// BroadcastIter visits every output element, so the sum over broadcast axes
// happens by itself. Recorded as `op`; `self` is the op again, for its replay.
template <class Keeps, class F, class GA, class GB>
Tensor binary_op(const char* op, const Tensor& a, const Tensor& b, Tensor (*self)(const Tensor&, const Tensor&),
                 Keeps, F f, GA grad_a, GB grad_b) {
  using Kept = std::conditional_t<Keeps::value, KeptValues, KeptShapes>;
  Tensor y = binary_forward(op, a, b, f);
  record(op, {a, b}, {&y}, [kept = Kept(a, b), grad_a, grad_b](Grads& g) {
    dispatch(g.dy().dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      [[maybe_unused]] const T* pa = nullptr;
      [[maybe_unused]] const T* pb = nullptr;
      if constexpr (Keeps::value) {
        pa = kept.a.template data<T>();
        pb = kept.b.template data<T>();
      }
      T* da = g.needs(0) ? g.dx(0).data<T>() : nullptr;
      T* db = g.needs(1) ? g.dx(1).data<T>() : nullptr;
      binary_backward(g.dy().shape(), kept.shape_a(), kept.shape_b(),
                      [&](std::int64_t i, std::int64_t ia, std::int64_t ib) {
                        T u = T(0), v = T(0);  // a[ia], b[ib]; unread by add and sub
                        if constexpr (Keeps::value) {
                          u = pa[ia];
                          v = pb[ib];
                        }
                        if (da) da[ia] += grad_a(dy[i], u, v);
                        if (db) db[ib] += grad_b(dy[i], u, v);
                      });
    });
  })
      .replay({"a", "b"}, [self](const Tensors& in) { return Tensors{self(in[0], in[1])}; });
  return y;
}

// Forward of a unary op over the whole array at once: f(x, y, n), e.g. one of
// the vectorised loops of core/kernels/detail/fast_math.hpp.
template <class F>
Tensor unary_forward_array(const char* op, const Tensor& x, F f) {
  check_defined(op, x);
  Tensor y = empty_like(x);
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    f(x.data<T>(), y.data<T>(), x.numel());
  });
  return y;
}

// Forward of a unary op: y[i] = f(x[i]).
template <class F>
Tensor unary_forward(const char* op, const Tensor& x, F f) {
  return unary_forward_array(op, x, [&](const auto* px, auto* py, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) py[i] = f(px[i]);
  });
}

// Backward of a unary op: dx[i] += g(i) where g reads dy and saved values.
template <class T, class G>
void unary_backward(Tensor& dx, G g) {
  T* pdx = dx.data<T>();
  for (std::int64_t i = 0, n = dx.numel(); i < n; ++i) pdx[i] += g(i);
}

}  // namespace

// y = a + b   da += dy;  db += dy   (summed over broadcast axes)
Tensor add(const Tensor& a, const Tensor& b) {
  return binary_op("add", a, b, add, kShapesOnly, [](auto a, auto b) { return a + b; },
                   [](auto dy, auto, auto) { return dy; },   // da += dy
                   [](auto dy, auto, auto) { return dy; });  // db += dy
}

// y = a - b   da += dy;  db -= dy
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary_op("sub", a, b, sub, kShapesOnly, [](auto a, auto b) { return a - b; },
                   [](auto dy, auto, auto) { return dy; },    // da += dy
                   [](auto dy, auto, auto) { return -dy; });  // db -= dy
}

// y = a * b   da += dy * b;  db += dy * a
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary_op("mul", a, b, mul, kKeepsValues, [](auto a, auto b) { return a * b; },
                   [](auto dy, auto, auto b) { return dy * b; },   // da += dy * b
                   [](auto dy, auto a, auto) { return dy * a; });  // db += dy * a
}

// y = a / b   da += dy / b;  db -= dy * a / (b*b)
Tensor div(const Tensor& a, const Tensor& b) {
  return binary_op("div", a, b, div, kKeepsValues, [](auto a, auto b) { return a / b; },
                   [](auto dy, auto, auto b) { return dy / b; },                 // da += dy / b
                   [](auto dy, auto a, auto b) { return -(dy * a / (b * b)); });  // db -= dy * a / (b*b)
}

// y = -x   dx -= dy
Tensor neg(const Tensor& x) {
  Tensor y = unary_forward("neg", x, [](auto v) { return -v; });
  record("neg", {x}, {&y}, [](Grads& g) {
    dispatch(g.dy().dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      unary_backward<T>(g.dx(0), [&](std::int64_t i) { return -dy[i]; });
    });
  })
      .replay({"x"}, [](const Tensors& in) { return Tensors{neg(in[0])}; });
  return y;
}

// y = x + s   dx += dy
Tensor add(const Tensor& x, double s) {
  Tensor y = unary_forward("add", x, [s](auto v) { return v + static_cast<decltype(v)>(s); });
  record("add_scalar", {x}, {&y}, [](Grads& g) { g.dx(0).add_(g.dy()); })
      .replay({"x"}, [s](const Tensors& in) { return Tensors{add(in[0], s)}; });
  return y;
}

// y = x * s   dx += dy * s
Tensor mul(const Tensor& x, double s) {
  Tensor y = unary_forward("mul", x, [s](auto v) { return v * static_cast<decltype(v)>(s); });
  record("mul_scalar", {x}, {&y}, [s](Grads& g) { g.dx(0).add_(g.dy(), s); })
      .replay({"x"}, [s](const Tensors& in) { return Tensors{mul(in[0], s)}; });
  return y;
}

// y = tanh(x)   dx += dy * (1 - y*y)
Tensor tanh(const Tensor& x) {
  Tensor y = unary_forward_array("tanh", x, [](const auto* px, auto* py, std::int64_t n) { fast_math::tanh(px, py, n); });
  record("tanh", {x}, {&y}, [y = y.detach()](Grads& g) {
    dispatch(y.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      const T* py = y.data<T>();
      unary_backward<T>(g.dx(0), [&](std::int64_t i) { return dy[i] * (T(1) - py[i] * py[i]); });
    });
  })
      .replay({"x"}, [](const Tensors& in) { return Tensors{tanh(in[0])}; });
  return y;
}

// y = 1 / (1 + exp(-x))   dx += dy * y * (1 - y)
Tensor sigmoid(const Tensor& x) {
  Tensor y = unary_forward_array("sigmoid", x,
                                 [](const auto* px, auto* py, std::int64_t n) { fast_math::sigmoid(px, py, n); });
  record("sigmoid", {x}, {&y}, [y = y.detach()](Grads& g) {
    dispatch(y.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      const T* py = y.data<T>();
      unary_backward<T>(g.dx(0), [&](std::int64_t i) { return dy[i] * py[i] * (T(1) - py[i]); });
    });
  })
      .replay({"x"}, [](const Tensors& in) { return Tensors{sigmoid(in[0])}; });
  return y;
}

// y = max(x, 0)   dx += dy * (x > 0)
Tensor relu(const Tensor& x) {
  Tensor y = unary_forward("relu", x, [](auto v) { return v > 0 ? v : decltype(v)(0); });
  record("relu", {x}, {&y}, [x = x.detach()](Grads& g) {
    dispatch(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      const T* px = x.data<T>();
      unary_backward<T>(g.dx(0), [&](std::int64_t i) { return px[i] > T(0) ? dy[i] : T(0); });
    });
  })
      .replay({"x"}, [](const Tensors& in) { return Tensors{relu(in[0])}; });
  return y;
}

// y = exp(x)   dx += dy * y
Tensor exp(const Tensor& x) {
  // std::exp, not fast_math::exp: this op must overflow to inf as the user expects.
  Tensor y = unary_forward("exp", x, [](auto v) { return std::exp(v); });
  record("exp", {x}, {&y}, [y = y.detach()](Grads& g) {
    dispatch(y.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      const T* py = y.data<T>();
      unary_backward<T>(g.dx(0), [&](std::int64_t i) { return dy[i] * py[i]; });
    });
  })
      .replay({"x"}, [](const Tensors& in) { return Tensors{exp(in[0])}; });
  return y;
}

// y = log(x)   dx += dy / x
Tensor log(const Tensor& x) {
  Tensor y = unary_forward("log", x, [](auto v) { return std::log(v); });
  record("log", {x}, {&y}, [x = x.detach()](Grads& g) {
    dispatch(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      const T* px = x.data<T>();
      unary_backward<T>(g.dx(0), [&](std::int64_t i) { return dy[i] / px[i]; });
    });
  })
      .replay({"x"}, [](const Tensors& in) { return Tensors{log(in[0])}; });
  return y;
}

}  // namespace attend
