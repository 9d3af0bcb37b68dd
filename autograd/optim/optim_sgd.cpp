// SGD with momentum, dampening, Nesterov momentum and L2 weight decay, exactly as
// torch.optim.SGD computes it.
#include "autograd/optim/optim.hpp"

#include <cmath>

namespace attend::optim {

SGD::SGD(std::vector<Tensor> params, double lr, SGDOptions options)
    : Optimizer("SGD", std::move(params), lr), o_(options) {
  check_hyperparameters({{"momentum", o_.momentum},
                         {"dampening", o_.dampening},
                         {"weight_decay", o_.weight_decay},
                         {"nesterov", o_.nesterov ? 1.0 : 0.0}});
}

void SGD::check_hyperparameters(const std::map<std::string, double>& v) const {
  const double momentum = v.at("momentum"), dampening = v.at("dampening"), weight_decay = v.at("weight_decay"),
               nesterov = v.at("nesterov");
  if (!(momentum >= 0.0)) fail("SGD: momentum must be >= 0, got {}", momentum);
  if (!(weight_decay >= 0.0)) fail("SGD: weight_decay must be >= 0, got {}", weight_decay);
  if (!std::isfinite(dampening)) fail("SGD: dampening must be finite, got {}", dampening);
  if (nesterov != 0.0 && nesterov != 1.0) fail("SGD: nesterov must be 0 or 1, got {}", nesterov);
  if (nesterov == 1.0 && (momentum <= 0.0 || dampening != 0.0))
    fail("SGD: Nesterov momentum needs momentum > 0 and dampening 0, got momentum {} and dampening {}", momentum,
         dampening);
}

std::vector<std::pair<std::string, double>> SGD::extra_hyperparameters() const {
  return {{"momentum", o_.momentum},
          {"dampening", o_.dampening},
          {"weight_decay", o_.weight_decay},
          {"nesterov", o_.nesterov ? 1.0 : 0.0}};
}

void SGD::set_extra_hyperparameters(const std::map<std::string, double>& v) {
  o_.momentum = v.at("momentum");
  o_.dampening = v.at("dampening");
  o_.weight_decay = v.at("weight_decay");
  o_.nesterov = v.at("nesterov") == 1.0;
}

std::vector<std::string> SGD::buffer_names(const std::map<std::string, double>& v) const {
  if (v.at("momentum") == 0.0) return {};
  return {"momentum_buffer"};
}

// Per element, with g the gradient, x the parameter and b the momentum buffer:
//   g = g + weight_decay * x                         (when weight_decay != 0)
//   b = g                                            (first step)
//   b = momentum * b + (1 - dampening) * g           (later steps)
//   g = g + momentum * b  (Nesterov)   or   g = b    (when momentum != 0)
//   x = x - lr * g
void SGD::update(Tensor& param, const Tensor& grad, ParamState& state) {
  Tensor momentum_buffer;
  bool first = false;
  if (o_.momentum != 0.0) {
    Tensor& b = state.buffers["momentum_buffer"];
    if (!b.defined()) {
      b = empty_like(param);
      first = true;
    }
    momentum_buffer = b;
  }
  dispatch(param.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* x = param.data<T>();
    const T* pg = grad.data<T>();
    T* b = momentum_buffer.defined() ? momentum_buffer.data<T>() : nullptr;
    const T lr = static_cast<T>(this->lr()), weight_decay = static_cast<T>(o_.weight_decay),
            momentum = static_cast<T>(o_.momentum), keep = static_cast<T>(1.0 - o_.dampening);
    const bool decay = o_.weight_decay != 0.0;
    for (std::int64_t i = 0, n = param.numel(); i < n; ++i) {
      T g = pg[i];
      if (decay) g = g + weight_decay * x[i];
      if (b) {
        b[i] = first ? g : b[i] * momentum + keep * g;
        g = o_.nesterov ? g + momentum * b[i] : b[i];
      }
      x[i] = x[i] - lr * g;
    }
  });
}

}  // namespace attend::optim
