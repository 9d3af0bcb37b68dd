#pragma once
// Every differentiable op in attend, by family. Each op checks its arguments
// once, in the forward, and throws attend::Error naming itself and the shapes.
// The forward and the backward of an op sit together in the file named here.
//
// Letters used in shape comments: B batch, S source length, T target length,
// H hidden size, V vocabulary size, N rows, D feature size.
#include <cstdint>
#include <functional>
#include <vector>

#include "autograd/node.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"

namespace attend {

// ---- autograd/ops/elementwise.cpp: NumPy broadcasting; backward sums over broadcast axes
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& x);
Tensor add(const Tensor& x, double s);  // x + s
Tensor mul(const Tensor& x, double s);  // x * s
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& x) { return neg(x); }
inline Tensor operator+(const Tensor& x, double s) { return add(x, s); }
inline Tensor operator-(const Tensor& x, double s) { return add(x, -s); }
inline Tensor operator*(const Tensor& x, double s) { return mul(x, s); }
inline Tensor operator*(double s, const Tensor& x) { return mul(x, s); }
inline Tensor operator/(const Tensor& x, double s) { return mul(x, 1.0 / s); }
inline Tensor operator+(double s, const Tensor& x) { return add(x, s); }
inline Tensor operator-(double s, const Tensor& x) { return add(neg(x), s); }  // s - x

// ---- autograd/ops/matmul.cpp: GEMM forward, GEMM-with-transpose backward
// (M, K) @ (K, N) -> (M, N);  (B, M, K) @ (B, K, N) -> (B, M, N);  (B, M, K) @ (K, N) -> (B, M, N)
Tensor matmul(const Tensor& a, const Tensor& b);
// y = x @ W^T + b, PyTorch's Linear layout: x (..., I), W (O, I), b (O) or undefined -> (..., O)
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// ---- autograd/ops/shape.cpp: moving data around
Tensor transpose(const Tensor& x, int axis0, int axis1);
Tensor reshape(const Tensor& x, const Shape& shape);  // same number of elements; shares data
Tensor concat(const std::vector<Tensor>& xs, int axis);
Tensor slice(const Tensor& x, int axis, std::int64_t start, std::int64_t end);  // [start, end)
Tensor stack(const std::vector<Tensor>& xs, int axis);  // a new axis
// Gathers rows of a table: table (N, D), indices of any shape -> (indices..., D).
// The backward scatter-adds, so repeated indices accumulate.
Tensor index_select(const Tensor& table, const Indices& indices);

// ---- autograd/ops/reductions.cpp
Tensor sum(const Tensor& x);  // all elements -> rank 0
Tensor sum(const Tensor& x, int axis, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, int axis, bool keepdim = false);

// ---- autograd/ops/softmax.cpp: numerically stable (the row maximum is subtracted)
Tensor softmax(const Tensor& x, int axis);
Tensor log_softmax(const Tensor& x, int axis);
// mask has x's shape (or broadcasts to it along leading axes, e.g. (B, S) for x (B, S));
// 1 keeps a position, 0 masks it. Masked positions get weight exactly 0 and gradient
// exactly 0; a row with every position masked gives all zeros, not NaN.
Tensor masked_softmax(const Tensor& x, const Tensor& mask, int axis);
// y = x where mask is 1, value where mask is 0 (no gradient flows to masked positions).
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// ---- autograd/ops/losses.cpp
// logits (N, V), targets (N) with values in [0, V) or ignore_index. Fused with
// log_softmax. The mean over targets that are not ignored (0 when all are ignored).
// label_smoothing eps spreads eps of the target mass evenly over the V classes.
Tensor cross_entropy(const Tensor& logits, const Indices& targets, std::int64_t ignore_index = -100,
                     double label_smoothing = 0.0);
// cross_entropy(linear(h, weight, bias), targets, ...) as one op that never
// stores the (N, V) logits: h (N, H), weight (V, H), bias (V) or undefined.
Tensor linear_cross_entropy(const Tensor& h, const Tensor& weight, const Tensor& bias, const Indices& targets,
                            std::int64_t ignore_index = -100, double label_smoothing = 0.0);

// ---- autograd/ops/hooks.cpp
// The identity, calling on_grad with the gradient that flows through it during backward.
Tensor tap(const Tensor& x, std::function<void(const Tensor& dy)> on_grad);

// ---- autograd/ops/dropout.cpp
// In training, zeroes each element with probability p and scales the rest by 1/(1-p);
// in evaluation (training == false) returns x unchanged.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen);

}  // namespace attend
