// The Optimizer base (parameter bookkeeping, step, state save/restore) and
// clip_grad_norm. The update rules are in optim_sgd.cpp, optim_adam.cpp and
// optim_adadelta.cpp.
#include "autograd/optim/optim.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "autograd/grad_mode.hpp"
#include "autograd/node.hpp"
#include "autograd/optim/detail/optim_state.hpp"
#include "core/kernels/detail/fast_math.hpp"

namespace attend::optim {

namespace {

[[noreturn]] void mismatch(const std::string& who, const char* what, const std::vector<std::string>& missing,
                           const std::vector<std::string>& unexpected, const std::vector<std::string>& wrong) {
  std::string msg = fmt::format("{}: the state does not match the {}:", who, what);
  if (!missing.empty()) msg += fmt::format("\n  missing: {}", fmt::join(missing, ", "));
  if (!unexpected.empty()) msg += fmt::format("\n  unexpected: {}", fmt::join(unexpected, ", "));
  if (!wrong.empty()) msg += fmt::format("\n  wrong shape or value: {}", fmt::join(wrong, ", "));
  throw Error(msg);
}

// "param.12.exp_avg" -> (12, "exp_avg"); false for any other form.
bool parse_param_key(const std::string& key, std::size_t& index, std::string& rest) {
  const std::string prefix = "param.";
  if (key.compare(0, prefix.size(), prefix) != 0) return false;
  const char* begin = key.data() + prefix.size();
  const char* end = key.data() + key.size();
  auto [ptr, ec] = std::from_chars(begin, end, index);
  if (ec != std::errc() || ptr == begin || ptr == end || *ptr != '.') return false;
  rest.assign(ptr + 1, end);
  return !rest.empty();
}

}  // namespace

namespace detail {

Tensor scalar_state(double value) { return scalar(value, Float64); }

std::map<std::string, double> read_scalars(const std::string& who, const std::map<std::string, Tensor>& state,
                                           const std::vector<std::string>& names) {
  std::vector<std::string> missing, unexpected, wrong;
  std::map<std::string, double> values;
  for (const std::string& name : names) {
    auto it = state.find(name);
    if (it == state.end()) missing.push_back(name);
    else if (it->second.numel() != 1)
      wrong.push_back(fmt::format("{} (expected a single value, got shape {})", name, it->second.shape()));
    else values[name] = it->second.item();
  }
  const std::set<std::string> known(names.begin(), names.end());
  for (const auto& [key, t] : state)
    if (!known.count(key)) unexpected.push_back(key);
  if (!missing.empty() || !unexpected.empty() || !wrong.empty()) mismatch(who, "schedule", missing, unexpected, wrong);
  return values;
}

}  // namespace detail

Optimizer::Optimizer(const char* name, std::vector<Tensor> params, double lr)
    : name_(name), params_(std::move(params)), state_(params_.size()), lr_(0) {
  if (params_.empty()) fail("{}: the parameter list is empty", name_);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!p.defined()) fail("{}: parameter {} is undefined", name_, i);
    if (!p.is_leaf())
      fail("{}: parameter {} (shape {}) was computed by '{}'; an optimizer updates leaf tensors only", name_, i,
           p.shape(), p.impl()->grad_fn->name());
    for (std::size_t j = 0; j < i; ++j)
      if (params_[j].same(p)) fail("{}: parameter {} is the same tensor as parameter {}", name_, i, j);
  }
  set_lr(lr);
}

void Optimizer::set_lr(double lr) {
  if (!(lr >= 0.0)) fail("{}: lr must be >= 0, got {}", name_, lr);
  lr_ = lr;
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

void Optimizer::step() {
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor grad = params_[i].grad();
    if (!grad.defined()) continue;
    ParamState& s = state_[i];
    ++s.step;
    update(params_[i], grad, s);
  }
}

std::vector<std::pair<std::string, double>> Optimizer::hyperparameters() const {
  std::vector<std::pair<std::string, double>> out{{"lr", lr_}};
  for (auto& kv : extra_hyperparameters()) out.push_back(std::move(kv));
  return out;
}

std::map<std::string, Tensor> Optimizer::state_dict() const {
  std::map<std::string, Tensor> out;
  for (const auto& [name, value] : hyperparameters()) out.emplace(name, detail::scalar_state(value));
  out.emplace("num_params", detail::scalar_state(static_cast<double>(params_.size())));
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ParamState& s = state_[i];
    if (s.step == 0) continue;
    out.emplace(fmt::format("param.{}.step", i), detail::scalar_state(static_cast<double>(s.step)));
    for (const auto& [name, buffer] : s.buffers) out.emplace(fmt::format("param.{}.{}", i, name), buffer.clone());
  }
  return out;
}

void Optimizer::load_state_dict(const std::map<std::string, Tensor>& state) {
  const std::string who = fmt::format("{}::load_state_dict", name_);
  const std::size_t n = params_.size();
  auto count = state.find("num_params");
  if (count != state.end() && count->second.numel() == 1 && count->second.item() != static_cast<double>(n))
    fail("{}: the state is for {} parameters but the optimizer has {}", who, count->second.item(), n);

  // The rank-0 entries: num_params and the hyperparameters.
  std::vector<std::string> missing, unexpected, wrong;
  std::map<std::string, double> values;
  std::set<std::string> scalar_names{"num_params"};
  for (const auto& [name, current] : hyperparameters()) {
    scalar_names.insert(name);
    values[name] = current;  // stands in for a missing entry while the rest is checked
  }
  for (const std::string& name : scalar_names) {
    auto it = state.find(name);
    if (it == state.end()) missing.push_back(name);
    else if (it->second.numel() != 1)
      wrong.push_back(fmt::format("{} (expected a single value, got shape {})", name, it->second.shape()));
    else values[name] = it->second.item();
  }

  // The per-parameter entries, under the loaded hyperparameters.
  const std::vector<std::string> buffers = buffer_names(values);
  std::vector<ParamState> loaded(n);
  std::vector<bool> seen(n, false);
  for (const auto& [key, t] : state) {
    if (scalar_names.count(key)) continue;
    std::size_t i = 0;
    std::string field;
    const bool known = parse_param_key(key, i, field) && i < n &&
                       (field == "step" || std::find(buffers.begin(), buffers.end(), field) != buffers.end());
    if (!known) {
      unexpected.push_back(key);
      continue;
    }
    seen[i] = true;
    if (field == "step") {
      const double step = t.numel() == 1 ? t.item() : 0;
      if (t.numel() != 1)
        wrong.push_back(fmt::format("{} (expected a single value, got shape {})", key, t.shape()));
      else if (!(step >= 1 && step == std::floor(step) && step < 9.0e15))
        wrong.push_back(fmt::format("{} (expected a whole number of steps >= 1, got {})", key, step));
      else loaded[i].step = static_cast<std::int64_t>(step);
    } else if (!(t.shape() == params_[i].shape())) {
      wrong.push_back(fmt::format("{} (expected {}, got {})", key, params_[i].shape(), t.shape()));
    } else {
      loaded[i].buffers[field] = t.to(params_[i].dtype()).clone();
    }
  }
  for (std::size_t i = 0; i < n; ++i) {  // a parameter's state is all there or absent
    if (!seen[i]) continue;
    if (!state.count(fmt::format("param.{}.step", i))) missing.push_back(fmt::format("param.{}.step", i));
    for (const std::string& b : buffers)
      if (!state.count(fmt::format("param.{}.{}", i, b))) missing.push_back(fmt::format("param.{}.{}", i, b));
  }
  if (!missing.empty() || !unexpected.empty() || !wrong.empty()) mismatch(who, "optimizer", missing, unexpected, wrong);

  // Values: the same checks as the constructor, before anything changes.
  if (!(values["lr"] >= 0.0)) fail("{}: lr must be >= 0, got {}", who, values["lr"]);
  check_hyperparameters(values);
  lr_ = values["lr"];
  set_extra_hyperparameters(values);
  state_ = std::move(loaded);
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  if (!(max_norm >= 0.0)) fail("clip_grad_norm: max_norm must be >= 0, got {}", max_norm);
  double sum_sq = 0;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    dispatch(g.dtype(), [&](auto zero) {
      using T = decltype(zero);
      sum_sq += fast_math::sum_of_squares(g.data<T>(), g.numel());
    });
  }
  const double total = std::sqrt(sum_sq);
  if (!std::isfinite(total)) return total;
  const double clip_coef = max_norm / (total + 1e-6);
  if (clip_coef < 1.0) {
    for (const Tensor& p : params) {
      Tensor g = p.grad();
      if (g.defined()) g.mul_(clip_coef);
    }
  }
  return total;
}

}  // namespace attend::optim
