// Losses. cross_entropy is log_softmax and the negative log-likelihood fused
// into one op: it runs over (B*T, V) logits at every training step, so it makes
// two passes over each row forward (max, then exp and sum) and one backward,
// and never stores a separate log_softmax output.
//
// The composed version it must agree with (tests/test_ops_losses.cpp holds the
// two together): -sum over rows and classes of q * log_softmax(logits), / count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "autograd/ops.hpp"
#include "core/fast_math.hpp"

namespace attend {

namespace {
// max_k x_k and sum_k x_k of a row, with four independent accumulators each: one
// running max or sum is a chain of dependent instructions, four keep the CPU busy
// (and vectorize). A NaN logit is skipped by max but reaches the loss through exp(x - m).
template <class T>
void row_max_sum(const T* x, std::int64_t n, T& max, double& sum) {
  T m[4] = {x[0], x[0], x[0], x[0]};
  double s[4] = {0, 0, 0, 0};
  std::int64_t k = 0;
  for (; k + 4 <= n; k += 4)
    for (int j = 0; j < 4; ++j) {
      m[j] = std::max(m[j], x[k + j]);
      s[j] += x[k + j];
    }
  for (; k < n; ++k) {
    m[0] = std::max(m[0], x[k]);
    s[0] += x[k];
  }
  max = std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
  sum = (s[0] + s[1]) + (s[2] + s[3]);
}
}  // namespace

// With p = softmax(x_i) for row i, t its target and eps the label smoothing, the
// smoothed target distribution is q_k = (1 - eps) [k == t] + eps / V, and
//   L_i = -sum_k q_k log p_k = (1 - eps) * (-log p_t) + eps * mean_k(-log p_k)
//   loss = sum over rows not ignored of L_i / count      (0 when count == 0)
// Forward, per row: m = max_k x_k, lse = m + log(sum_k exp(x_k - m)), log p_k = x_k - lse,
//   so -log p_t = lse - x_t and mean_k(-log p_k) = lse - mean_k x_k.
// Backward: d(lse)/dx_j = p_j, so dL_i/dx_j = -sum_k q_k ([k == j] - p_j) = p_j - q_j
// (sum_k q_k = 1), hence
//   dlogits_ij += (p_ij - q_ij) * dy / count,   ignored rows get nothing.
// The forward keeps p (only when a backward will need it) so the backward needs no exp.
Tensor cross_entropy(const Tensor& logits, const Indices& targets, std::int64_t ignore_index,
                     double label_smoothing) {
  check_defined("cross_entropy", logits, "logits");
  if (logits.dim() != 2) fail("cross_entropy: logits must be (N, V), got shape {}", logits.shape());
  const std::int64_t N = logits.size(0), V = logits.size(1);
  if (targets.shape.rank() != 1 || targets.numel() != N)
    fail("cross_entropy: targets must have shape [{}] to match logits {}, got {}", N, logits.shape(), targets.shape);
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0))
    fail("cross_entropy: label_smoothing must be in [0, 1], got {}", label_smoothing);
  std::int64_t count = 0;
  for (std::int64_t i = 0; i < N; ++i) {
    const std::int64_t t = targets.values[i];
    if (t == ignore_index) continue;
    if (t < 0 || t >= V)
      fail("cross_entropy: target {} at position {} is out of range for {} classes (expected 0 <= target < {}, "
           "or ignore_index {})",
           t, i, V, V, ignore_index);
    ++count;
  }
  const double eps = label_smoothing;
  const bool keep_probs = should_record(std::span<const Tensor>(&logits, 1)) && count > 0;
  Tensor probs = keep_probs ? empty({N, V}, logits.dtype()) : Tensor();  // (N, V), rows not ignored only
  Tensor loss = empty({}, logits.dtype());
  dispatch(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = logits.data<T>();
    T* p = keep_probs ? probs.data<T>() : nullptr;
    double total = 0;
    for (std::int64_t i = 0; i < N; ++i) {
      const std::int64_t t = targets.values[i];
      if (t == ignore_index) continue;
      const T* xi = x + i * V;
      T m;
      double sum_x;
      row_max_sum(xi, V, m, sum_x);
      T* pi = p ? p + i * V : nullptr;
      const double s = fast_math::exp_shifted_sum(xi, m, pi, V);  // p_k = exp(x_k - m), then / s
      if (pi) {
        const T inv = static_cast<T>(1.0 / s);
        for (std::int64_t k = 0; k < V; ++k) pi[k] *= inv;
      }
      const double lse = double(m) + std::log(s);
      double row = lse - double(xi[t]);  // -log p_t
      if (eps > 0) row = (1 - eps) * row + eps * (lse - sum_x / double(V));
      total += row;
    }
    loss.data<T>()[0] = static_cast<T>(count > 0 ? total / double(count) : 0.0);
  });
  record("cross_entropy", {logits}, {&loss},
         [probs, t = targets.values, ignore_index, eps, count, N, V](Grads& g) {
           Tensor& dlogits = g.dx(0);  // touched even when every target is ignored: a zero gradient, not none
           if (count == 0) return;
           dispatch(dlogits.dtype(), [&](auto zero) {
             using T = decltype(zero);
             const T* p = probs.data<T>();
             T* dx = dlogits.data<T>();
             const T scale = static_cast<T>(double(g.dy().data<T>()[0]) / double(count));  // dy / count
             const T off = static_cast<T>(eps / double(V)) * scale;                       // q_k * dy / count, k != t
             const T on = static_cast<T>(1 - eps) * scale;                                // the extra q_t mass
             for (std::int64_t i = 0; i < N; ++i) {
               if (t[i] == ignore_index) continue;
               const T* pi = p + i * V;
               T* dxi = dx + i * V;
               for (std::int64_t k = 0; k < V; ++k) dxi[k] += pi[k] * scale - off;
               dxi[t[i]] -= on;
             }
           });
         });
  return loss;
}

}  // namespace attend
