// autograd/optim: optimizer state save/restore: bit-exact continuation after a
// reload, the state layout, and every load_state_dict error.
#include <doctest/doctest.h>

#include <functional>
#include <memory>

#include "autograd/autograd.hpp"
#include "autograd/optim/optim.hpp"

using namespace attend;
using Values = std::vector<double>;

namespace {

Tensor param(std::initializer_list<double> values, DType dtype = Float64) {
  return tensor(values, dtype).requires_grad_();
}

void step_with(optim::Optimizer& opt, Tensor& x, std::initializer_list<double> g) {
  x.set_grad(tensor(g, x.dtype()));
  opt.step();
}

using MakeOpt = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

// Gradients that depend on the parameters and the step, so that a wrong state shows.
void set_grads(std::vector<Tensor>& params, int step) {
  for (std::size_t k = 0; k < params.size(); ++k) {
    Tensor& p = params[k];
    if (k == 1 && step == 0) continue;  // parameter 1 starts without a gradient: it has no state yet
    Tensor g = p.clone();
    dispatch(g.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* pg = g.data<T>();
      for (std::int64_t i = 0; i < g.numel(); ++i) pg[i] = pg[i] * pg[i] - T(0.3) * pg[i] + T(0.1 * (step + 1 + i));
    });
    p.set_grad(g);
  }
}

std::vector<Tensor> make_params(DType dtype) {
  Generator gen(17);
  return {normal({3, 2}, 0, 1, gen, dtype).requires_grad_(), normal({4}, 0, 1, gen, dtype).requires_grad_(),
          normal({1}, 0, 1, gen, dtype).requires_grad_()};
}

void run_steps(optim::Optimizer& opt, std::vector<Tensor>& params, int first, int count) {
  for (int s = first; s < first + count; ++s) {
    opt.zero_grad();
    set_grads(params, s);
    opt.step();
  }
}

}  // namespace

TEST_CASE("state_dict: 3 steps, save, load into a new optimizer, 2 steps == 5 steps, bit for bit") {
  std::vector<std::pair<const char*, MakeOpt>> makers = {
      {"SGD",
       [](std::vector<Tensor> p) {
         return std::make_unique<optim::SGD>(p, 0.05, optim::SGDOptions{.momentum = 0.9, .weight_decay = 0.01});
       }},
      {"SGD nesterov",
       [](std::vector<Tensor> p) {
         return std::make_unique<optim::SGD>(p, 0.05, optim::SGDOptions{.momentum = 0.8, .nesterov = true});
       }},
      {"Adam",
       [](std::vector<Tensor> p) {
         return std::make_unique<optim::Adam>(p, optim::AdamOptions{.lr = 0.01, .weight_decay = 0.1});
       }},
      {"Adadelta",
       [](std::vector<Tensor> p) {
         return std::make_unique<optim::Adadelta>(p, optim::AdadeltaOptions{.lr = 0.7, .weight_decay = 0.05});
       }},
  };
  for (auto& [name, make] : makers) {
    for (DType dtype : {Float32, Float64}) {
      CAPTURE(name);
      CAPTURE(dtype_name(dtype));
      std::vector<Tensor> straight = make_params(dtype);
      auto opt = make(straight);
      run_steps(*opt, straight, 0, 5);

      std::vector<Tensor> first = make_params(dtype);
      auto opt1 = make(first);
      run_steps(*opt1, first, 0, 3);
      std::map<std::string, Tensor> saved = opt1->state_dict();
      std::vector<Tensor> resumed;
      for (const Tensor& p : first) resumed.push_back(p.clone().requires_grad_());
      run_steps(*opt1, first, 3, 1);  // later steps do not change what was saved

      auto opt2 = make(resumed);
      opt2->set_lr(123.0);  // restored from the state
      opt2->load_state_dict(saved);
      CHECK(opt2->lr() == opt->lr());
      CHECK(opt2->state(1).step == 2);
      run_steps(*opt2, resumed, 3, 2);
      for (std::size_t k = 0; k < resumed.size(); ++k) CHECK(equal(resumed[k], straight[k]));
      CHECK(saved.at("param.0.step").item() == 3.0);
      CHECK(saved.at("param.1.step").item() == 2.0);
    }
  }
}

TEST_CASE("state_dict: keys, and a parameter without state has none") {
  Tensor a = param({1, 2}), b = param({3});
  optim::Adam adam({a, b}, {.lr = 0.1});
  step_with(adam, a, {1, 1});
  std::vector<std::string> keys;
  for (const auto& [k, t] : adam.state_dict()) {
    keys.push_back(k);
    CHECK(t.dtype() == Float64);
  }
  CHECK(keys == std::vector<std::string>{"beta1", "beta2", "eps", "lr", "num_params", "param.0.exp_avg",
                                         "param.0.exp_avg_sq", "param.0.step", "weight_decay"});
  CHECK(adam.state_dict().at("param.0.exp_avg").shape() == Shape{2});
  CHECK(adam.state_dict().at("lr").dim() == 0);
  CHECK(adam.state_dict().at("num_params").item() == 2.0);

  optim::SGD plain({a}, 0.1);  // no momentum: no buffer, only the step
  step_with(plain, a, {1, 1});
  CHECK(plain.state_dict().count("param.0.step") == 1);
  CHECK(plain.state_dict().count("param.0.momentum_buffer") == 0);
  optim::SGD fresh({param({0, 0})}, 0.2);
  fresh.load_state_dict(plain.state_dict());
  CHECK(fresh.lr() == 0.1);
}

TEST_CASE("load_state_dict: errors list every problem and change nothing") {
  Tensor a = param({1, 2}), b = param({3});
  optim::Adam adam({a, b}, {.lr = 0.1});
  step_with(adam, a, {1, 1});
  const auto state = adam.state_dict();

  optim::SGD sgd({param({1, 2}), param({3})}, 0.5, {.momentum = 0.9});
  CHECK_THROWS_WITH_AS(sgd.load_state_dict(state),
                       "SGD::load_state_dict: the state does not match the optimizer:\n"
                       "  missing: dampening, momentum, nesterov, param.0.momentum_buffer\n"
                       "  unexpected: beta1, beta2, eps, param.0.exp_avg, param.0.exp_avg_sq",
                       Error);
  CHECK(sgd.lr() == 0.5);

  optim::Adam three({param({1, 2}), param({3}), param({4})});
  CHECK_THROWS_WITH_AS(three.load_state_dict(state),
                       "Adam::load_state_dict: the state is for 2 parameters but the optimizer has 3", Error);

  optim::Adam other({param({1, 2, 3}), param({3})}, {.lr = 0.25});
  auto broken = state;
  broken.erase("param.0.exp_avg_sq");
  broken.erase("eps");
  broken["param.1.exp_avg"] = zeros({1}, Float64);  // state for parameter 1 without its step
  broken["param.7.step"] = scalar(1.0, Float64);    // no such parameter
  broken["momentum"] = scalar(0.9, Float64);
  broken["beta1"] = zeros({2}, Float64);
  CHECK_THROWS_WITH_AS(other.load_state_dict(broken),
                       "Adam::load_state_dict: the state does not match the optimizer:\n"
                       "  missing: eps, param.0.exp_avg_sq, param.1.step, param.1.exp_avg_sq\n"
                       "  unexpected: momentum, param.7.step\n"
                       "  wrong shape or value: beta1 (expected a single value, got shape [2]), "
                       "param.0.exp_avg (expected [3], got [2])",
                       Error);
  CHECK(other.lr() == 0.25);
  CHECK(other.state(0).step == 0);

  auto bad_value = state;
  bad_value["beta2"] = scalar(1.5, Float64);
  optim::Adam fitting({param({1, 2}), param({3})}, {.lr = 0.25});
  CHECK_THROWS_WITH_AS(fitting.load_state_dict(bad_value), "Adam: beta2 must be in [0, 1), got 1.5", Error);
  CHECK(fitting.lr() == 0.25);
  CHECK(fitting.state(0).step == 0);
  auto bad_step = state;
  bad_step["param.0.step"] = scalar(2.5, Float64);
  CHECK_THROWS_WITH_AS(optim::Adam({param({1, 2}), param({3})}).load_state_dict(bad_step),
                       "Adam::load_state_dict: the state does not match the optimizer:\n"
                       "  wrong shape or value: param.0.step (expected a whole number of steps >= 1, got 2.5)",
                       Error);
  CHECK(other.lr() == 0.25);
  CHECK(other.state(0).step == 0);
}

TEST_CASE("load_state_dict: buffers are converted to the parameters' dtype and copied") {
  Tensor a = param({1, 2});
  optim::Adam adam({a}, {.lr = 0.1});
  step_with(adam, a, {1, -1});
  auto state = adam.state_dict();
  Tensor a32 = param({1, 2}, Float32);
  optim::Adam adam32({a32});
  adam32.load_state_dict(state);
  CHECK(adam32.state(0).buffers.at("exp_avg").dtype() == Float32);
  CHECK(adam32.state(0).buffers.at("exp_avg").to_vector() == Values{0.1f, -0.1f});
  state.at("param.0.exp_avg").fill_(7);  // the optimizer holds its own copy
  CHECK(adam32.state(0).buffers.at("exp_avg").at({0}) == doctest::Approx(0.1));
}
