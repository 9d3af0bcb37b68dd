// Matrix products. The backward never materialises a transposed copy: it asks
// GEMM to read an operand transposed.
//   Y = A @ B     dA += dY @ B^T     dB += A^T @ dY
#include "autograd/ops.hpp"
#include "core/kernels/blas.hpp"

namespace attend {

namespace {

// One (M, K) @ (K, N) product per batch entry; a_step/b_step are 0 for an operand
// shared by the whole batch.
struct MatmulDims {
  std::int64_t batch, m, k, n, a_step, b_step;
};

MatmulDims matmul_dims(const Tensor& a, const Tensor& b) {
  check_same_dtype("matmul", a, b);
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const bool ok_rank = (sa.rank() == 2 && sb.rank() == 2) || (sa.rank() == 3 && (sb.rank() == 3 || sb.rank() == 2));
  if (!ok_rank) fail("matmul: expected (M, K) @ (K, N), (B, M, K) @ (B, K, N) or (B, M, K) @ (K, N); got {} @ {}", sa, sb);
  const std::int64_t k = sa.back(), kb = sb[sb.rank() - 2];
  if (k != kb) fail("matmul: inner dimensions differ: {} @ {}", sa, sb);
  if (sa.rank() == 3 && sb.rank() == 3 && sa[0] != sb[0]) fail("matmul: batch sizes differ: {} @ {}", sa, sb);
  const std::int64_t n = sb.back();
  if (sa.rank() == 2) return {1, sa[0], k, n, 0, 0};
  if (sb.rank() == 2) return {1, sa[0] * sa[1], k, n, 0, 0};  // (B*M, K) @ (K, N): one GEMM
  return {sa[0], sa[1], k, n, sa[1] * k, k * n};
}

}  // namespace

// Y = A @ B   dA += dY @ B^T;  dB += A^T @ dY   (per batch entry)
Tensor matmul(const Tensor& a, const Tensor& b) {
  const MatmulDims d = matmul_dims(a, b);
  Shape out = a.shape().with(a.dim() - 1, d.n);
  Tensor y = empty(out, a.dtype());
  dispatch(a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.data<T>();
    for (std::int64_t i = 0; i < d.batch; ++i)
      blas::gemm(false, false, d.m, d.n, d.k, T(1), pa + i * d.a_step, d.k, pb + i * d.b_step, d.n, T(0),
                 py + i * d.m * d.n, d.n);
  });
  record("matmul", {a, b}, {&y}, [a = a.detach(), b = b.detach(), d](Grads& g) {
    dispatch(a.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      if (g.needs(0)) {
        T* da = g.dx(0).data<T>();
        for (std::int64_t i = 0; i < d.batch; ++i)  // dA (M, K) += dY (M, N) @ B^T (N, K)
          blas::gemm(false, true, d.m, d.k, d.n, T(1), dy + i * d.m * d.n, d.n, pb + i * d.b_step, d.n, T(1),
                     da + i * d.a_step, d.k);
      }
      if (g.needs(1)) {
        T* db = g.dx(1).data<T>();
        for (std::int64_t i = 0; i < d.batch; ++i)  // dB (K, N) += A^T (K, M) @ dY (M, N)
          blas::gemm(true, false, d.k, d.n, d.m, T(1), pa + i * d.a_step, d.k, dy + i * d.m * d.n, d.n, T(1),
                     db + i * d.b_step, d.n);
      }
    });
  })
      .replay({"a", "b"}, [](const Tensors& in) { return Tensors{matmul(in[0], in[1])}; });
  return y;
}

// y = x @ W^T + b   dx += dy @ W;  dW += dy^T @ x;  db += sum over rows of dy
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_same_dtype("linear", x, weight);
  if (weight.dim() != 2) fail("linear: weight must be (out, in), got {}", weight.shape());
  if (x.dim() < 1 || x.shape().back() != weight.size(1))
    fail("linear: input features differ from the weight's: x {} and weight {} (expected x (..., {}))", x.shape(),
         weight.shape(), weight.size(1));
  const bool has_bias = bias.defined();
  if (has_bias) {
    check_same_dtype("linear", x, bias);
    if (bias.dim() != 1 || bias.size(0) != weight.size(0))
      fail("linear: bias must be ({}) for weight {}, got {}", weight.size(0), weight.shape(), bias.shape());
  }
  const std::int64_t rows = x.numel() / weight.size(1), in = weight.size(1), out = weight.size(0);
  Tensor y = empty(x.shape().with(x.dim() - 1, out), x.dtype());
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* py = y.data<T>();
    if (has_bias) {
      const T* pb = bias.data<T>();
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t o = 0; o < out; ++o) py[r * out + o] = pb[o];
    }
    blas::gemm(false, true, rows, out, in, T(1), x.data<T>(), in, weight.data<T>(), in, has_bias ? T(1) : T(0), py,
               out);
  });
  auto backward = [x = x.detach(), w = weight.detach(), rows, in, out, has_bias](Grads& g) {
    dispatch(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* dy = g.dy().data<T>();
      if (g.needs(0))  // dx (rows, in) += dy (rows, out) @ W (out, in)
        blas::gemm(false, false, rows, in, out, T(1), dy, out, w.data<T>(), in, T(1), g.dx(0).data<T>(), in);
      if (g.needs(1))  // dW (out, in) += dy^T (out, rows) @ x (rows, in)
        blas::gemm(true, false, out, in, rows, T(1), dy, out, x.data<T>(), in, T(1), g.dx(1).data<T>(), in);
      if (has_bias && g.needs(2)) {
        T* db = g.dx(2).data<T>();
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t o = 0; o < out; ++o) db[o] += dy[r * out + o];
      }
    });
  };
  const Recorded node = has_bias ? record("linear", {x, weight, bias}, {&y}, std::move(backward))
                                 : record("linear", {x, weight}, {&y}, std::move(backward));
  node.replay({"x", "weight", "bias"}, [](const Tensors& in) {
    return Tensors{linear(in[0], in[1], in.size() > 2 ? in[2] : Tensor())};
  });
  return y;
}

}  // namespace attend
