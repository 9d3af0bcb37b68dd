// autograd/optim/lr_schedule: StepLR and ReduceLROnPlateau epoch by epoch, worked out
// by hand from PyTorch's rules; state save/restore continues identically.
// PyTorch's own sequences are checked in test_layers_optim_reference.cpp.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/optim/lr_schedule.hpp"

using namespace attend;
using Values = std::vector<double>;

namespace {
Tensor param() { return tensor({1.0}, Float64).requires_grad_(); }
}  // namespace

TEST_CASE("StepLR: lr times gamma every step_size epochs") {
  Tensor x = param();
  optim::SGD sgd({x}, 1.0);
  optim::StepLR sched(sgd, 2, 0.5);
  CHECK(sched.last_epoch() == 0);
  CHECK(sched.last_lr() == 1.0);
  Values lrs;
  for (int epoch = 1; epoch <= 6; ++epoch) {
    sched.step();
    lrs.push_back(sgd.lr());
    CHECK(sched.last_lr() == sgd.lr());
    CHECK(sched.last_epoch() == epoch);
  }
  CHECK(lrs == Values{1, 0.5, 0.5, 0.25, 0.25, 0.125});
  CHECK(sched.base_lr() == 1.0);

  // It multiplies the current lr, so a change in between carries on (as in PyTorch).
  sgd.set_lr(10);
  sched.step();  // epoch 7
  sched.step();  // epoch 8
  CHECK(sgd.lr() == 5.0);

  CHECK_THROWS_WITH_AS(optim::StepLR(sgd, 0), "StepLR: step_size must be positive, got 0", Error);
  CHECK_THROWS_WITH_AS(optim::StepLR(sgd, 1, -0.5), "StepLR: gamma must be >= 0, got -0.5", Error);
}

TEST_CASE("StepLR: state save/restore") {
  Tensor x = param();
  optim::SGD sgd({x}, 0.3);
  optim::StepLR sched(sgd, 3, 0.1);
  for (int i = 0; i < 4; ++i) sched.step();
  auto state = sched.state_dict();
  CHECK(state.at("last_epoch").item() == 4);
  CHECK(state.at("step_size").item() == 3);

  Tensor y = param();
  optim::SGD sgd2({y}, 0.3);
  sgd2.load_state_dict(sgd.state_dict());  // the lr lives in the optimizer's state
  optim::StepLR sched2(sgd2, 1, 0.9);
  sched2.load_state_dict(state);
  CHECK(sched2.last_epoch() == 4);
  CHECK(sched2.base_lr() == 0.3);
  for (int i = 0; i < 5; ++i) {
    sched.step();
    sched2.step();
    CHECK(sgd2.lr() == sgd.lr());
  }
  CHECK(sgd.lr() == doctest::Approx(0.3 * 0.1 * 0.1 * 0.1).epsilon(1e-14));  // epochs 3, 6, 9

  auto broken = state;
  broken.erase("gamma");
  broken["momentum"] = scalar(1, Float64);
  broken["step_size"] = zeros({2}, Float64);
  CHECK_THROWS_WITH_AS(sched2.load_state_dict(broken),
                       "StepLR::load_state_dict: the state does not match the schedule:\n"
                       "  missing: gamma\n"
                       "  unexpected: momentum\n"
                       "  wrong shape or value: step_size (expected a single value, got shape [2])",
                       Error);
  auto fractional = state;
  fractional["last_epoch"] = scalar(1.5, Float64);
  CHECK_THROWS_WITH_AS(sched2.load_state_dict(fractional),
                       "StepLR::load_state_dict: last_epoch must be a whole number, got 1.5", Error);
  CHECK(sched2.last_epoch() == 9);
}

TEST_CASE("ReduceLROnPlateau: patience, relative threshold, cooldown and min_lr") {
  Tensor x = param();
  optim::Adam adam({x}, {.lr = 1.0});
  optim::ReduceLROnPlateau plateau(adam, {.factor = 0.5, .patience = 1, .cooldown = 1, .min_lr = 0.1});
  CHECK(std::isinf(plateau.best()));
  // epoch: metric -> what happens (bad = epochs without improvement)
  //  1: 10 best;  2: 9 best;  3: 9 bad 1;  4: 9 bad 2 > 1: lr 0.5, cooldown 1
  //  5: 9 bad, but in cooldown: bad 0;  6: 9 bad 1;  7: 9 bad 2: lr 0.25, cooldown
  //  8: 8.9995 is not below 9 * (1 - 1e-4) = 8.9991: bad, in cooldown: bad 0
  //  9: 8 best;  10: 8 bad 1;  11: 8 bad 2: lr 0.125;  12: cooldown;  13: bad 1
  // 14: bad 2: max(0.0625, min_lr 0.1) = 0.1;  15: cooldown;  16: bad 1
  // 17: bad 2: max(0.05, 0.1) = 0.1 is no change (not more than eps): stays 0.1
  const Values metrics{10, 9, 9, 9, 9, 9, 9, 8.9995, 8, 8, 8, 8, 8, 8, 8, 8, 8};
  const Values expect{1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.125, 0.125, 0.125, 0.1, 0.1, 0.1, 0.1};
  const std::vector<bool> reduced_at{false, false, false, true,  false, false, true,  false, false,
                                     false, true,  false, false, true,  false, false, false};
  Values lrs;
  for (std::size_t e = 0; e < metrics.size(); ++e) {
    CAPTURE(e + 1);
    CHECK(plateau.step(metrics[e]) == reduced_at[e]);
    lrs.push_back(adam.lr());
    CHECK(plateau.last_lr() == adam.lr());
  }
  CHECK(lrs == expect);
  CHECK(plateau.best() == 8);
  CHECK(plateau.last_epoch() == 17);
  CHECK(plateau.num_bad_epochs() == 0);
  CHECK(plateau.cooldown_counter() == 1);
}

TEST_CASE("ReduceLROnPlateau: NaN never improves, defaults, errors") {
  Tensor x = param();
  optim::SGD sgd({x}, 1.0);
  optim::ReduceLROnPlateau plateau(sgd, {.patience = 0});
  plateau.step(5);
  CHECK(sgd.lr() == 1.0);
  CHECK(plateau.step(std::nan("")));  // a bad epoch, and patience 0: reduce by the default factor 0.1
  CHECK(sgd.lr() == doctest::Approx(0.1).epsilon(1e-15));
  CHECK(plateau.best() == 5);

  optim::ReduceLROnPlateau defaults(sgd);  // patience 10
  defaults.step(1);
  for (int i = 0; i < 10; ++i) CHECK(!defaults.step(1));
  CHECK(defaults.step(1));

  CHECK_THROWS_WITH_AS(optim::ReduceLROnPlateau(sgd, {.factor = 1.0}),
                       "ReduceLROnPlateau: factor must be in [0, 1), got 1", Error);
  CHECK_THROWS_WITH_AS(optim::ReduceLROnPlateau(sgd, {.patience = -1}),
                       "ReduceLROnPlateau: patience must be >= 0, got -1", Error);
  CHECK_THROWS_WITH_AS(optim::ReduceLROnPlateau(sgd, {.min_lr = -1}),
                       "ReduceLROnPlateau: min_lr must be >= 0, got -1", Error);
}

TEST_CASE("ReduceLROnPlateau: state save/restore continues identically") {
  const Values metrics{5, 4, 4.5, 4.2, 4.1, 4.3, 3.9, 4, 4, 4, 4, 3.5, 3.6, 3.7, 3.8};
  optim::PlateauOptions options{.factor = 0.3, .patience = 2, .cooldown = 2, .min_lr = 1e-3};
  Tensor x = param();
  optim::SGD sgd({x}, 0.1);
  optim::ReduceLROnPlateau straight(sgd, options);
  Values expect;
  for (double m : metrics) {
    straight.step(m);
    expect.push_back(sgd.lr());
  }

  Tensor y = param();
  optim::SGD first({y}, 0.1);
  optim::ReduceLROnPlateau part1(first, options);
  for (std::size_t e = 0; e < 8; ++e) part1.step(metrics[e]);
  auto opt_state = first.state_dict();
  auto sched_state = part1.state_dict();
  CHECK(sched_state.size() == 11);

  Tensor z = param();
  optim::SGD second({z}, 5.0);
  optim::ReduceLROnPlateau part2(second, {.factor = 0.9});
  second.load_state_dict(opt_state);
  part2.load_state_dict(sched_state);
  CHECK(part2.best() == part1.best());
  CHECK(part2.num_bad_epochs() == part1.num_bad_epochs());
  CHECK(part2.cooldown_counter() == part1.cooldown_counter());
  Values got(expect.begin(), expect.begin() + 8);
  for (std::size_t e = 8; e < metrics.size(); ++e) {
    part2.step(metrics[e]);
    got.push_back(second.lr());
  }
  CHECK(got == expect);
  CHECK(expect.back() < 0.1 * 0.3);  // the sequence did reduce, more than once

  auto broken = sched_state;
  broken["factor"] = scalar(2.0, Float64);
  CHECK_THROWS_WITH_AS(part2.load_state_dict(broken), "ReduceLROnPlateau: factor must be in [0, 1), got 2", Error);
  broken.erase("best");
  CHECK_THROWS_WITH_AS(part2.load_state_dict(broken),
                       "ReduceLROnPlateau::load_state_dict: the state does not match the schedule:\n  missing: best",
                       Error);
}
