#pragma once
// Optimizers: SGD (momentum, Nesterov), Adam and Adadelta with PyTorch's exact
// update rules, plus clip_grad_norm. Learning-rate schedules are in
// autograd/optim/lr_schedule.hpp.
//
//   attend::optim::Adam opt(model.parameters(), {.lr = 1e-3});
//   for (...) {
//     opt.zero_grad();
//     Tensor loss = ...;
//     loss.backward();
//     attend::optim::clip_grad_norm(model.parameters(), 5.0);
//     opt.step();
//   }
//
// An optimizer holds the parameter tensors themselves (shared handles) and
// updates their data in place, so the model sees every step. Create it after
// model.to(dtype), which replaces the parameter tensors.
//
// State (state_dict / load_state_dict) is a map of tensors:
//   "lr", "weight_decay", ... one rank-0 float64 tensor per hyperparameter
//   "num_params"              rank-0 float64: how many parameters the optimizer has
//   "param.<i>.step"          rank-0 float64: updates applied to parameter i so far
//   "param.<i>.<buffer>"      parameter i's buffers ("exp_avg", "momentum_buffer", ...),
//                             with the parameter's shape and dtype
// A parameter that has never had a gradient has no "param.<i>.*" entries (as in
// PyTorch, state is created at its first update). Loading also restores the
// hyperparameters, the learning rate included, as PyTorch does.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.hpp"

namespace attend::optim {

// What an optimizer remembers about one parameter.
struct ParamState {
  std::int64_t step = 0;                  // updates applied so far
  std::map<std::string, Tensor> buffers;  // created at the first update
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  const char* name() const { return name_; }  // "SGD", "Adam", "Adadelta"
  const std::vector<Tensor>& params() const { return params_; }

  // Drops every parameter's gradient (as PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();
  // One update of every parameter that has a gradient; parameters whose grad is
  // undefined are skipped and keep their state. Runs without recording a graph.
  void step();

  double lr() const { return lr_; }
  void set_lr(double lr);

  // Every hyperparameter by name, lr first (for state_dict and logs).
  std::vector<std::pair<std::string, double>> hyperparameters() const;
  const ParamState& state(std::size_t param) const { return state_.at(param); }

  // Copies of the state (later steps do not change a saved map); layout above.
  std::map<std::string, Tensor> state_dict() const;
  // All or nothing: a state that does not fit throws attend::Error listing every
  // missing, unexpected and misshaped entry, and leaves the optimizer unchanged.
  void load_state_dict(const std::map<std::string, Tensor>& state);

 protected:
  Optimizer(const char* name, std::vector<Tensor> params, double lr);

  // Updates one parameter in place; state.step already counts this update.
  virtual void update(Tensor& param, const Tensor& grad, ParamState& state) = 0;
  // The hyperparameters besides lr, and their setter (names as returned; values
  // already checked with check_hyperparameters).
  virtual std::vector<std::pair<std::string, double>> extra_hyperparameters() const = 0;
  virtual void set_extra_hyperparameters(const std::map<std::string, double>& values) = 0;
  // Throws attend::Error for an invalid value (also used by load_state_dict).
  virtual void check_hyperparameters(const std::map<std::string, double>& values) const = 0;
  // The buffers a parameter has after its first update under these hyperparameters.
  virtual std::vector<std::string> buffer_names(const std::map<std::string, double>& values) const = 0;

 private:
  const char* name_;
  std::vector<Tensor> params_;
  std::vector<ParamState> state_;
  double lr_;
};

// ---- SGD (optim_sgd.cpp) ------------------------------------------------------
struct SGDOptions {
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;  // L2: added to the gradient as weight_decay * param
  bool nesterov = false;    // needs momentum > 0 and dampening == 0
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, double lr, SGDOptions options = {});

 protected:
  void update(Tensor& param, const Tensor& grad, ParamState& state) override;
  std::vector<std::pair<std::string, double>> extra_hyperparameters() const override;
  void set_extra_hyperparameters(const std::map<std::string, double>& values) override;
  void check_hyperparameters(const std::map<std::string, double>& values) const override;
  std::vector<std::string> buffer_names(const std::map<std::string, double>& values) const override;

 private:
  SGDOptions o_;
};

// ---- Adam (optim_adam.cpp) ------------------------------------------------------
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;  // L2 added to the gradient (Adam, not AdamW)
};

class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params, AdamOptions options = {});

 protected:
  void update(Tensor& param, const Tensor& grad, ParamState& state) override;
  std::vector<std::pair<std::string, double>> extra_hyperparameters() const override;
  void set_extra_hyperparameters(const std::map<std::string, double>& values) override;
  void check_hyperparameters(const std::map<std::string, double>& values) const override;
  std::vector<std::string> buffer_names(const std::map<std::string, double>& values) const override;

 private:
  AdamOptions o_;  // o_.lr is unused: the base owns the learning rate
};

// ---- Adadelta (optim_adadelta.cpp) ------------------------------------------------
struct AdadeltaOptions {
  double lr = 1.0;
  double rho = 0.9;
  double eps = 1e-6;
  double weight_decay = 0;
};

class Adadelta : public Optimizer {
 public:
  explicit Adadelta(std::vector<Tensor> params, AdadeltaOptions options = {});

 protected:
  void update(Tensor& param, const Tensor& grad, ParamState& state) override;
  std::vector<std::pair<std::string, double>> extra_hyperparameters() const override;
  void set_extra_hyperparameters(const std::map<std::string, double>& values) override;
  void check_hyperparameters(const std::map<std::string, double>& values) const override;
  std::vector<std::string> buffer_names(const std::map<std::string, double>& values) const override;

 private:
  AdadeltaOptions o_;  // o_.lr is unused: the base owns the learning rate
};

// ---- gradient clipping (optim.cpp) --------------------------------------------------
// The L2 norm of all gradients together, total = sqrt(sum over params of |grad|^2),
// accumulated in double. When max_norm / (total + 1e-6) < 1, every gradient is
// multiplied by that factor in place (torch.nn.utils.clip_grad_norm_). Parameters
// without a gradient are skipped. Returns the norm before clipping.
// A non-finite norm (a NaN or inf gradient) is returned as it is and the gradients
// are left untouched, so the caller can notice and skip the step (PyTorch 1.13
// would instead multiply every gradient by NaN).
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);

}  // namespace attend::optim
