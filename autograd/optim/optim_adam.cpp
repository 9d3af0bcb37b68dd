// Adam (Kingma & Ba) with L2 weight decay added to the gradient and bias
// correction, exactly as torch.optim.Adam computes it (amsgrad off).
#include <cmath>
#include <cstdint>

#include "autograd/optim/optim.hpp"
#include "core/kernels/detail/fast_math.hpp"

namespace attend::optim {

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Optimizer("Adam", std::move(params), options.lr), o_(options) {
  check_hyperparameters(
      {{"beta1", o_.beta1}, {"beta2", o_.beta2}, {"eps", o_.eps}, {"weight_decay", o_.weight_decay}});
}

void Adam::check_hyperparameters(const std::map<std::string, double>& v) const {
  for (const char* beta : {"beta1", "beta2"})
    if (!(v.at(beta) >= 0.0 && v.at(beta) < 1.0)) fail("Adam: {} must be in [0, 1), got {}", beta, v.at(beta));
  if (!(v.at("eps") >= 0.0)) fail("Adam: eps must be >= 0, got {}", v.at("eps"));
  if (!(v.at("weight_decay") >= 0.0)) fail("Adam: weight_decay must be >= 0, got {}", v.at("weight_decay"));
}

std::vector<std::pair<std::string, double>> Adam::extra_hyperparameters() const {
  return {{"beta1", o_.beta1}, {"beta2", o_.beta2}, {"eps", o_.eps}, {"weight_decay", o_.weight_decay}};
}

void Adam::set_extra_hyperparameters(const std::map<std::string, double>& v) {
  o_.beta1 = v.at("beta1");
  o_.beta2 = v.at("beta2");
  o_.eps = v.at("eps");
  o_.weight_decay = v.at("weight_decay");
}

std::vector<std::string> Adam::buffer_names(const std::map<std::string, double>&) const {
  return {"exp_avg", "exp_avg_sq"};
}

namespace {

template <class T>
struct AdamConstants {
  T beta1, beta2, one_minus_beta1, one_minus_beta2, eps, weight_decay, bc2_sqrt, neg_step;
};

// Per element, with g the gradient, x the parameter, m and v the moment estimates
// (both zero before the first step) and t = state.step (1 on the first step):
//   g = g + weight_decay * x                  (when weight_decay != 0)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   x = x - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The scalar factors are computed in double, as PyTorch computes them in Python.
//
// The element loop on its own, with __restrict arrays, so that it becomes SIMD
// code (also for AVX2: ATTEND_SIMD_CLONES) with no run-time overlap checks.
template <class T>
ATTEND_SIMD_CLONES void adam_update(std::int64_t n, AdamConstants<T> k, T* __restrict x, const T* __restrict g_,
                                    T* __restrict m, T* __restrict v) {
  for (std::int64_t i = 0; i < n; ++i) {
    const T g = k.weight_decay != 0 ? g_[i] + k.weight_decay * x[i] : g_[i];
    m[i] = m[i] * k.beta1 + k.one_minus_beta1 * g;
    v[i] = v[i] * k.beta2 + k.one_minus_beta2 * g * g;
    const T denom = std::sqrt(v[i]) / k.bc2_sqrt + k.eps;
    x[i] = x[i] + k.neg_step * m[i] / denom;
  }
}

}  // namespace

void Adam::update(Tensor& param, const Tensor& grad, ParamState& state) {
  Tensor& exp_avg = state.buffers["exp_avg"];
  Tensor& exp_avg_sq = state.buffers["exp_avg_sq"];
  if (!exp_avg.defined()) exp_avg = zeros_like(param);
  if (!exp_avg_sq.defined()) exp_avg_sq = zeros_like(param);
  const double t = static_cast<double>(state.step);
  const double bias_correction1 = 1.0 - std::pow(o_.beta1, t);
  const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(o_.beta2, t));
  const double step_size = lr() / bias_correction1;
  dispatch(param.dtype(), [&](auto zero) {
    using T = decltype(zero);
    AdamConstants<T> k{static_cast<T>(o_.beta1),
                       static_cast<T>(o_.beta2),
                       static_cast<T>(1.0 - o_.beta1),
                       static_cast<T>(1.0 - o_.beta2),
                       static_cast<T>(o_.eps),
                       static_cast<T>(o_.weight_decay),
                       static_cast<T>(bias_correction2_sqrt),
                       static_cast<T>(-step_size)};
    adam_update(param.numel(), k, param.data<T>(), grad.data<T>(), exp_avg.data<T>(), exp_avg_sq.data<T>());
  });
}

}  // namespace attend::optim
