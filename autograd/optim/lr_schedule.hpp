#pragma once
// Learning-rate schedules, with PyTorch's semantics. A schedule changes the lr of
// the optimizer it was given; call its step() once per epoch.
//
//   attend::optim::StepLR sched(opt, /*step_size=*/10, /*gamma=*/0.5);  // lr halves every 10 epochs
//   attend::optim::ReduceLROnPlateau plateau(opt, {.factor = 0.5, .patience = 2});
//   ... end of each epoch: plateau.step(validation_loss);
//
// State (state_dict / load_state_dict): rank-0 float64 tensors named after the
// fields below. Loading restores the schedule only; the optimizer's lr is part of
// the optimizer's own state.
#include <cstdint>
#include <map>
#include <string>

#include "autograd/optim/optim.hpp"

namespace attend::optim {

// torch.optim.lr_scheduler.StepLR: lr = lr * gamma at every epoch that is a
// multiple of step_size. After construction last_epoch() is 0; step() counts
// epochs 1, 2, ... (the multiplication applies to the optimizer's current lr, so
// it composes with other changes to it, as PyTorch's does).
class StepLR {
 public:
  StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma = 0.1);
  void step();
  std::int64_t last_epoch() const { return last_epoch_; }
  double last_lr() const { return last_lr_; }  // the lr set by the latest step
  double base_lr() const { return base_lr_; }  // the lr when the schedule was created

  std::map<std::string, Tensor> state_dict() const;  // step_size, gamma, base_lr, last_lr, last_epoch
  void load_state_dict(const std::map<std::string, Tensor>& state);

 private:
  Optimizer& opt_;
  std::int64_t step_size_;
  double gamma_, base_lr_, last_lr_;
  std::int64_t last_epoch_ = 0;
};

// torch.optim.lr_scheduler.ReduceLROnPlateau in mode 'min' with a relative
// threshold: a metric (a validation loss) improves when it is below
// best * (1 - threshold). After more than `patience` epochs without improvement
// lr becomes max(lr * factor, min_lr) (unless that changes it by eps or less),
// then `cooldown` epochs pass in which bad epochs are not counted.
struct PlateauOptions {
  double factor = 0.1;  // must be < 1
  std::int64_t patience = 10;
  double threshold = 1e-4;
  std::int64_t cooldown = 0;
  double min_lr = 0;
  double eps = 1e-8;
};

class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, PlateauOptions options = {});
  // One epoch's metric; returns true when this call lowered the learning rate.
  bool step(double metric);

  double best() const { return best_; }  // +inf before the first step
  std::int64_t num_bad_epochs() const { return num_bad_epochs_; }
  std::int64_t cooldown_counter() const { return cooldown_counter_; }
  std::int64_t last_epoch() const { return last_epoch_; }
  double last_lr() const { return last_lr_; }

  // factor, patience, threshold, cooldown, min_lr, eps, best, num_bad_epochs,
  // cooldown_counter, last_epoch, last_lr
  std::map<std::string, Tensor> state_dict() const;
  void load_state_dict(const std::map<std::string, Tensor>& state);

 private:
  static void check(const PlateauOptions& o);
  Optimizer& opt_;
  PlateauOptions o_;
  double best_;
  std::int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
  double last_lr_;
};

}  // namespace attend::optim
