// Adadelta (Zeiler 2012) with L2 weight decay, exactly as torch.optim.Adadelta
// computes it (the learning rate scales the Adadelta step; 1.0 is the paper's rule).
#include <cmath>

#include "autograd/optim/optim.hpp"

namespace attend::optim {

Adadelta::Adadelta(std::vector<Tensor> params, AdadeltaOptions options)
    : Optimizer("Adadelta", std::move(params), options.lr), o_(options) {
  check_hyperparameters({{"rho", o_.rho}, {"eps", o_.eps}, {"weight_decay", o_.weight_decay}});
}

void Adadelta::check_hyperparameters(const std::map<std::string, double>& v) const {
  if (!(v.at("rho") >= 0.0 && v.at("rho") <= 1.0)) fail("Adadelta: rho must be in [0, 1], got {}", v.at("rho"));
  if (!(v.at("eps") >= 0.0)) fail("Adadelta: eps must be >= 0, got {}", v.at("eps"));
  if (!(v.at("weight_decay") >= 0.0)) fail("Adadelta: weight_decay must be >= 0, got {}", v.at("weight_decay"));
}

std::vector<std::pair<std::string, double>> Adadelta::extra_hyperparameters() const {
  return {{"rho", o_.rho}, {"eps", o_.eps}, {"weight_decay", o_.weight_decay}};
}

void Adadelta::set_extra_hyperparameters(const std::map<std::string, double>& v) {
  o_.rho = v.at("rho");
  o_.eps = v.at("eps");
  o_.weight_decay = v.at("weight_decay");
}

std::vector<std::string> Adadelta::buffer_names(const std::map<std::string, double>&) const {
  return {"square_avg", "acc_delta"};
}

// Per element, with g the gradient, x the parameter, s the running average of
// g^2 and a the running average of squared steps (both zero at the start):
//   g = g + weight_decay * x                       (when weight_decay != 0)
//   s = rho * s + (1 - rho) * g * g
//   delta = sqrt(a + eps) / sqrt(s + eps) * g
//   a = rho * a + (1 - rho) * delta * delta
//   x = x - lr * delta
void Adadelta::update(Tensor& param, const Tensor& grad, ParamState& state) {
  Tensor& square_avg = state.buffers["square_avg"];
  Tensor& acc_delta = state.buffers["acc_delta"];
  if (!square_avg.defined()) square_avg = zeros_like(param);
  if (!acc_delta.defined()) acc_delta = zeros_like(param);
  dispatch(param.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* x = param.data<T>();
    const T* pg = grad.data<T>();
    T* s = square_avg.data<T>();
    T* a = acc_delta.data<T>();
    const T rho = static_cast<T>(o_.rho), one_minus_rho = static_cast<T>(1.0 - o_.rho);
    const T eps = static_cast<T>(o_.eps), weight_decay = static_cast<T>(o_.weight_decay);
    const T lr = static_cast<T>(this->lr());
    const bool decay = o_.weight_decay != 0.0;
    for (std::int64_t i = 0, n = param.numel(); i < n; ++i) {
      T g = pg[i];
      if (decay) g = g + weight_decay * x[i];
      s[i] = s[i] * rho + one_minus_rho * g * g;
      const T std_dev = std::sqrt(s[i] + eps);
      const T delta = std::sqrt(a[i] + eps) / std_dev * g;
      a[i] = a[i] * rho + one_minus_rho * delta * delta;
      x[i] = x[i] - lr * delta;
    }
  });
}

}  // namespace attend::optim
