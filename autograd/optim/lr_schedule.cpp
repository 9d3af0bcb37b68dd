#include "autograd/optim/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/optim/detail/optim_state.hpp"

namespace attend::optim {

namespace {

// A whole number stored as a float64 state entry.
std::int64_t whole(const char* who, const char* name, double value) {
  if (!(value == std::floor(value) && std::fabs(value) < 9.0e15))
    fail("{}::load_state_dict: {} must be a whole number, got {}", who, name, value);
  return static_cast<std::int64_t>(value);
}

}  // namespace

// ---- StepLR ----------------------------------------------------------------------

StepLR::StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma)
    : opt_(optimizer), step_size_(step_size), gamma_(gamma), base_lr_(optimizer.lr()), last_lr_(optimizer.lr()) {
  if (step_size <= 0) fail("StepLR: step_size must be positive, got {}", step_size);
  if (!(gamma >= 0.0)) fail("StepLR: gamma must be >= 0, got {}", gamma);
}

void StepLR::step() {
  ++last_epoch_;
  if (last_epoch_ % step_size_ == 0) opt_.set_lr(opt_.lr() * gamma_);
  last_lr_ = opt_.lr();
}

std::map<std::string, Tensor> StepLR::state_dict() const {
  return {{"step_size", detail::scalar_state(static_cast<double>(step_size_))},
          {"gamma", detail::scalar_state(gamma_)},
          {"base_lr", detail::scalar_state(base_lr_)},
          {"last_lr", detail::scalar_state(last_lr_)},
          {"last_epoch", detail::scalar_state(static_cast<double>(last_epoch_))}};
}

void StepLR::load_state_dict(const std::map<std::string, Tensor>& state) {
  auto v = detail::read_scalars("StepLR::load_state_dict", state,
                                {"step_size", "gamma", "base_lr", "last_lr", "last_epoch"});
  const std::int64_t step_size = whole("StepLR", "step_size", v["step_size"]);
  const std::int64_t last_epoch = whole("StepLR", "last_epoch", v["last_epoch"]);
  if (step_size <= 0) fail("StepLR::load_state_dict: step_size must be positive, got {}", step_size);
  if (!(v["gamma"] >= 0.0)) fail("StepLR::load_state_dict: gamma must be >= 0, got {}", v["gamma"]);
  step_size_ = step_size;
  last_epoch_ = last_epoch;
  gamma_ = v["gamma"];
  base_lr_ = v["base_lr"];
  last_lr_ = v["last_lr"];
}

// ---- ReduceLROnPlateau ------------------------------------------------------------

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, PlateauOptions options)
    : opt_(optimizer), o_(options), best_(std::numeric_limits<double>::infinity()), last_lr_(optimizer.lr()) {
  check(o_);
}

void ReduceLROnPlateau::check(const PlateauOptions& o) {
  if (!(o.factor < 1.0 && o.factor >= 0.0)) fail("ReduceLROnPlateau: factor must be in [0, 1), got {}", o.factor);
  if (o.patience < 0) fail("ReduceLROnPlateau: patience must be >= 0, got {}", o.patience);
  if (o.cooldown < 0) fail("ReduceLROnPlateau: cooldown must be >= 0, got {}", o.cooldown);
  if (!(o.threshold >= 0.0)) fail("ReduceLROnPlateau: threshold must be >= 0, got {}", o.threshold);
  if (!(o.min_lr >= 0.0)) fail("ReduceLROnPlateau: min_lr must be >= 0, got {}", o.min_lr);
  if (!(o.eps >= 0.0)) fail("ReduceLROnPlateau: eps must be >= 0, got {}", o.eps);
}

bool ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (metric < best_ * (1.0 - o_.threshold)) {  // NaN is never better
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs during cooldown do not count
  }
  bool reduced = false;
  if (num_bad_epochs_ > o_.patience) {
    const double old_lr = opt_.lr();
    const double new_lr = std::max(old_lr * o_.factor, o_.min_lr);
    if (old_lr - new_lr > o_.eps) {
      opt_.set_lr(new_lr);
      reduced = true;
    }
    cooldown_counter_ = o_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_ = opt_.lr();
  return reduced;
}

std::map<std::string, Tensor> ReduceLROnPlateau::state_dict() const {
  auto s = [](double v) { return detail::scalar_state(v); };
  return {{"factor", s(o_.factor)},
          {"patience", s(static_cast<double>(o_.patience))},
          {"threshold", s(o_.threshold)},
          {"cooldown", s(static_cast<double>(o_.cooldown))},
          {"min_lr", s(o_.min_lr)},
          {"eps", s(o_.eps)},
          {"best", s(best_)},
          {"num_bad_epochs", s(static_cast<double>(num_bad_epochs_))},
          {"cooldown_counter", s(static_cast<double>(cooldown_counter_))},
          {"last_epoch", s(static_cast<double>(last_epoch_))},
          {"last_lr", s(last_lr_)}};
}

void ReduceLROnPlateau::load_state_dict(const std::map<std::string, Tensor>& state) {
  const char* who = "ReduceLROnPlateau";
  auto v = detail::read_scalars("ReduceLROnPlateau::load_state_dict", state,
                                {"factor", "patience", "threshold", "cooldown", "min_lr", "eps", "best",
                                 "num_bad_epochs", "cooldown_counter", "last_epoch", "last_lr"});
  PlateauOptions o{v["factor"], whole(who, "patience", v["patience"]), v["threshold"],
                   whole(who, "cooldown", v["cooldown"]), v["min_lr"], v["eps"]};
  const std::int64_t bad = whole(who, "num_bad_epochs", v["num_bad_epochs"]);
  const std::int64_t cooldown_counter = whole(who, "cooldown_counter", v["cooldown_counter"]);
  const std::int64_t last_epoch = whole(who, "last_epoch", v["last_epoch"]);
  check(o);
  o_ = o;
  best_ = v["best"];
  num_bad_epochs_ = bad;
  cooldown_counter_ = cooldown_counter;
  last_epoch_ = last_epoch;
  last_lr_ = v["last_lr"];
}

}  // namespace attend::optim
