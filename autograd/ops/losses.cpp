// Losses. cross_entropy is log_softmax and the negative log-likelihood fused
// into one op: it runs over (B*T, V) logits at every training step, so it makes
// two passes over each row forward (max, then exp and sum) and one backward,
// and never stores a separate log_softmax output.
//
// The composed version it must agree with (tests/autograd/ops/test_ops_losses.cpp holds the
// two together): -sum over rows and classes of q * log_softmax(logits), / count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "autograd/ops.hpp"
#include "core/kernels/blas.hpp"
#include "core/kernels/detail/fast_math.hpp"

namespace attend {

namespace {
// sum_k x_k of a row in double (needed with label smoothing only).
template <class T>
double row_sum(const T* x, std::int64_t n) {
  double sum = 0;
  for (std::int64_t k = 0; k < n; ++k) sum += x[k];
  return sum;
}

// The number of targets that are not ignore_index; throws on one out of [0, V).
std::int64_t count_targets(const char* op, const Indices& targets, std::int64_t V, std::int64_t ignore_index) {
  std::int64_t count = 0;
  for (std::int64_t i = 0; i < targets.numel(); ++i) {
    const std::int64_t t = targets.values[i];
    if (t == ignore_index) continue;
    if (t < 0 || t >= V)
      fail("{}: target {} at position {} is out of range for {} classes (expected 0 <= target < {}, "
           "or ignore_index {})",
           op, t, i, V, V, ignore_index);
    ++count;
  }
  return count;
}

// Forward of one row x (V logits) with target t: returns L_i (see below) and
// writes e_k = exp(x_k - m) to e (when e is not null) and their sum to s, so
// that p = softmax(x) = e / s. A NaN logit is skipped by the max but reaches the
// loss through exp(x - m).
template <class T>
double cross_entropy_row(const T* x, std::int64_t V, std::int64_t t, double eps, T* e, double& s) {
  const T m = fast_math::max(x, V);
  s = fast_math::exp_shifted_sum(x, m, e, V);
  const double lse = double(m) + std::log(s);
  double row = lse - double(x[t]);  // -log p_t
  if (eps > 0) row = (1 - eps) * row + eps * (lse - row_sum(x, V) / double(V));
  return row;
}

// Backward of one row: dx_k += (p_k - q_k) * scale, q = (1 - eps) onehot(t) + eps / V.
template <class T>
void cross_entropy_grad_row(const T* p, std::int64_t V, std::int64_t t, double eps, T scale, T* dx) {
  const T off = static_cast<T>(eps / double(V)) * scale;  // q_k * scale, k != t
  const T on = static_cast<T>(1 - eps) * scale;           // the extra q_t mass
  for (std::int64_t k = 0; k < V; ++k) dx[k] += p[k] * scale - off;
  dx[t] -= on;
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
  const std::int64_t count = count_targets("cross_entropy", targets, V, ignore_index);
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
      double sum_e;
      total += cross_entropy_row(x + i * V, V, t, eps, p ? p + i * V : nullptr, sum_e);
      if (p) fast_math::scale_shift(static_cast<T>(1.0 / sum_e), T(0), p + i * V, V);  // p = e / s
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
             for (std::int64_t i = 0; i < N; ++i)
               if (t[i] != ignore_index) cross_entropy_grad_row(p + i * V, V, t[i], eps, scale, dx + i * V);
           });
         })
      .replay({"logits"}, [targets, ignore_index, label_smoothing](const Tensors& in) {
           return Tensors{cross_entropy(in[0], targets, ignore_index, label_smoothing)};
         });
  return loss;
}

namespace {

// linear_cross_entropy's arguments, checked before any work: h (N, H), W (V, H),
// b (V) or undefined, targets (N), label_smoothing in [0, 1].
void check_linear_cross_entropy(const char* op, const Tensor& h, const Tensor& weight, const Tensor& bias,
                                const Indices& targets, double label_smoothing) {
  check_defined(op, h, "h");
  check_defined(op, weight, "weight");
  check_same_dtype(op, h, weight);
  if (h.dim() != 2) fail("{}: h must be (N, H), got {}", op, h.shape());
  if (weight.dim() != 2 || weight.size(1) != h.size(1))
    fail("{}: weight must be (V, {}) to match h {}, got {}", op, h.size(1), h.shape(), weight.shape());
  const std::int64_t N = h.size(0), V = weight.size(0);
  if (bias.defined()) {
    check_same_dtype(op, h, bias);
    if (!(bias.shape() == Shape{V})) fail("{}: bias must be ({}) for weight {}, got {}", op, V, weight.shape(), bias.shape());
  }
  if (targets.shape.rank() != 1 || targets.numel() != N)
    fail("{}: targets must have shape [{}] to match h {}, got {}", op, N, h.shape(), targets.shape);
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0))
    fail("{}: label_smoothing must be in [0, 1], got {}", op, label_smoothing);
}

// One block's rows r0 .. r0 + rows, their logits z (rows, V) = h W^T already
// computed, each in one go while it sits in cache (a block is larger than the L2
// cache; a separate pass per step would fetch it from memory each time):
//   z_i += b;   loss_i = cross_entropy(z_i, t_i);   dz_i = (p_i - q_i) / count;   db_1 += dz_i
// Adds each loss_i to total; dz and db are null when no gradient is wanted.
template <class T>
void block_losses(T* z, T* dz, T* db, const T* pb, const Indices& targets, std::int64_t r0, std::int64_t rows,
                  std::int64_t V, std::int64_t ignore_index, double eps, T scale, double& total) {
  const T off = static_cast<T>(eps / double(V)) * scale;  // q_k * scale for k != t
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::int64_t t = targets.values[r0 + i];
    T* z_i = z + i * V;
    T* dz_i = dz ? dz + i * V : nullptr;
    if (t == ignore_index) {  // dz_i = 0
      if (dz_i) std::fill(dz_i, dz_i + V, T(0));
      continue;
    }
    if (pb) fast_math::axpy(T(1), pb, z_i, V);
    double sum_e;
    total += cross_entropy_row(z_i, V, t, eps, dz_i, sum_e);  // dz_i = e_i = exp(z_i - m)
    if (dz_i) {
      // p = e / s, so dz_k = (p_k - q_k) / count = e_k * (scale / s) - off, one pass
      // (scale = 1 / count, off = eps / V * scale), and the target's q_t mass.
      fast_math::scale_shift(static_cast<T>(double(scale) / sum_e), -off, dz_i, V);
      dz_i[t] -= static_cast<T>(1 - eps) * scale;
      if (db) fast_math::axpy(T(1), dz_i, db, V);  // db_1 = sum over rows of dz
    }
  }
}

// linear's backward for one block's rows, with dy = dz (rows, V): the block's
// rows of dh_1 and its share of dW_1 (each null when not wanted).
//   dh_rows (rows, H) = dz (rows, V) @ W (V, H);   dW (V, H) += dz^T (V, rows) @ h_rows (rows, H)
template <class T>
void block_linear_grads(const T* dz, const T* w, const T* h_rows, std::int64_t rows, std::int64_t H, std::int64_t V,
                        T* dh_rows, T* dW) {
  if (dh_rows) blas::gemm(false, false, rows, H, V, T(1), dz, V, w, H, T(0), dh_rows, H);
  if (dW) blas::gemm(true, false, V, H, rows, T(1), dz, V, h_rows, H, T(1), dW, H);
}

}  // namespace

// loss = cross_entropy(linear(h, W, b), targets): the projection to the
// vocabulary and the loss as one op, the composed pair as its oracle
// (tests/autograd/ops/test_linear_cross_entropy.cpp).
//   h (N, H), W (V, H), b (V) or undefined, targets (N)
//
// Why: the (N, V) logits are the largest tensors of a seq2seq training step
// (N = B*T = 1,920 rows of V = 8,000 at config M: 61 MB each for the logits,
// the probabilities, their gradient and the reshape's gradient). This op never
// stores them: it takes kRows rows at a time, computes their logits, loss and
// logit gradient, and folds that gradient into dh, dW and db right away, each
// row in one pass while it is in cache (bias, softmax, dz, db). Peak memory
// then follows the block size, not N (`attend bench` at config M prints the
// peak RSS beside the step time; bench/compare_seq2seq.sh against the twin).
//
// That works because the loss is a scalar: its gradient with respect to any
// input is dy times the gradient for dy = 1. So the forward (when a backward
// will run) computes the gradients for dy = 1, and the backward scales and adds:
//   dz_i = (p_i - q_i) / count            (cross_entropy's backward, one row)
//   dh_i = dz_i W;  dW = sum_i dz_i^T h_i;  db = sum_i dz_i   (linear's backward)
//   backward: dh += dy * dh_1;  dW += dy * dW_1;  db += dy * db_1
Tensor linear_cross_entropy(const Tensor& h, const Tensor& weight, const Tensor& bias, const Indices& targets,
                            std::int64_t ignore_index, double label_smoothing) {
  const char* op = "linear_cross_entropy";
  check_linear_cross_entropy(op, h, weight, bias, targets, label_smoothing);
  const std::int64_t N = h.size(0), H = h.size(1), V = weight.size(0);
  const bool has_bias = bias.defined();
  const std::int64_t count = count_targets(op, targets, V, ignore_index);
  const double eps = label_smoothing;

  std::vector<Tensor> inputs = {h, weight};
  if (has_bias) inputs.push_back(bias);
  const bool grads = should_record(std::span<const Tensor>(inputs)) && count > 0;
  // The gradients for dy = 1, of the inputs that need one (dh1 is written block
  // by block, ignored rows included; dW1 and db1 are sums, so they start at 0).
  Tensor dh1 = grads && h.requires_grad() ? empty({N, H}, h.dtype()) : Tensor();           // (N, H)
  Tensor dW1 = grads && weight.requires_grad() ? zeros({V, H}, h.dtype()) : Tensor();      // (V, H)
  Tensor db1 = grads && has_bias && bias.requires_grad() ? zeros({V}, h.dtype()) : Tensor();  // (V)
  Tensor loss = empty({}, h.dtype());
  // 1,024 rows of logits and logit gradients: 33 MB each at V = 8,000 in float.
  // Fewer, larger blocks make the GEMMs faster (each block's GEMMs re-pack W and
  // read and write all of dW), at the price of peak memory: `attend bench` at
  // config M shows both, the step time and the peak RSS. Tensors, so that the
  // storage cache hands the same blocks out again at every step.
  constexpr std::int64_t kRows = 1024;
  const std::int64_t R = std::min(kRows, std::max<std::int64_t>(N, 1));
  Tensor z_rows = empty({R, V}, h.dtype());                              // (R, V)
  Tensor dz_rows = grads ? empty({R, V}, h.dtype()) : Tensor();          // (R, V)
  dispatch(h.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T *ph = h.data<T>(), *pw = weight.data<T>(), *pb = has_bias ? bias.data<T>() : nullptr;
    T* z = z_rows.data<T>();
    T* dz = grads ? dz_rows.data<T>() : nullptr;
    const T scale = count > 0 ? static_cast<T>(1.0 / double(count)) : T(0);
    double total = 0;
    for (std::int64_t r0 = 0; r0 < N; r0 += R) {
      const std::int64_t rows = std::min(R, N - r0);
      const T* h_rows = ph + r0 * H;
      // forward: z = h W^T, for these rows (+ b in block_losses, row by row)
      blas::gemm(false, true, rows, V, H, T(1), h_rows, H, pw, H, T(0), z, V);
      block_losses(z, dz, db1.defined() ? db1.data<T>() : nullptr, pb, targets, r0, rows, V, ignore_index, eps,
                   scale, total);
      if (grads)
        block_linear_grads(dz, pw, h_rows, rows, H, V, dh1.defined() ? dh1.data<T>() + r0 * H : nullptr,
                           dW1.defined() ? dW1.data<T>() : nullptr);
    }
    loss.data<T>()[0] = static_cast<T>(count > 0 ? total / double(count) : 0.0);
  });
  record(op, inputs, {&loss}, [dh1, dW1, db1, has_bias](Grads& g) {
    dispatch(g.dy().dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T dy = g.dy().data<T>()[0];
      // backward: dx += dy * dx_1 for each input; the slot is touched even when
      // every target is ignored (a zero gradient, not none).
      auto add_scaled = [&](int input, const Tensor& unit) {
        if (!g.needs(input)) return;
        T* dx = g.dx(input).data<T>();
        if (!unit.defined()) return;
        fast_math::axpy(dy, unit.data<T>(), dx, unit.numel());
      };
      add_scaled(0, dh1);
      add_scaled(1, dW1);
      if (has_bias) add_scaled(2, db1);
    });
  })
      .replay({"h", "weight", "bias"}, [targets, ignore_index, label_smoothing](const Tensors& in) {
        return Tensors{linear_cross_entropy(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), targets, ignore_index,
                                            label_smoothing)};
      });
  return loss;
}

}  // namespace attend
