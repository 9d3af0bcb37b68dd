// autograd/optim: SGD, Adam and Adadelta steps worked out by hand, the step()
// contract (skips parameters without a gradient, keeps tensor identity, records
// nothing), and clip_grad_norm. State save/restore: test_optim_state.cpp;
// PyTorch's values: test_layers_optim_reference.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "autograd/autograd.hpp"
#include "autograd/optim/optim.hpp"

using namespace attend;
using Values = std::vector<double>;

namespace {

Tensor param(std::initializer_list<double> values, DType dtype = Float64) {
  return tensor(values, dtype).requires_grad_();
}

// One step of `opt` with the gradient of x set to g.
void step_with(optim::Optimizer& opt, Tensor& x, std::initializer_list<double> g) {
  x.set_grad(tensor(g, x.dtype()));
  opt.step();
}

}  // namespace

TEST_CASE("SGD: plain, weight decay with momentum, Nesterov and dampening, by hand") {
  Tensor x = param({1, -2});
  optim::SGD plain({x}, 0.1);
  step_with(plain, x, {0.5, 1});
  CHECK(x.at({0}) == doctest::Approx(0.95).epsilon(1e-15));  // x - lr * g
  CHECK(x.at({1}) == doctest::Approx(-2.1).epsilon(1e-15));

  // momentum 0.9, weight decay 0.1, lr 0.1, g = 0.5, x = 1:
  //   step 1: d = 0.5 + 0.1 * 1 = 0.6; b = d = 0.6; x = 1 - 0.06 = 0.94
  //   step 2: d = 0.5 + 0.094 = 0.594; b = 0.9 * 0.6 + 0.594 = 1.134; x = 0.94 - 0.1134 = 0.8266
  Tensor y = param({1});
  optim::SGD sgd({y}, 0.1, {.momentum = 0.9, .weight_decay = 0.1});
  step_with(sgd, y, {0.5});
  CHECK(y.item() == doctest::Approx(0.94).epsilon(1e-15));
  CHECK(sgd.state(0).buffers.at("momentum_buffer").item() == doctest::Approx(0.6).epsilon(1e-15));
  step_with(sgd, y, {0.5});
  CHECK(y.item() == doctest::Approx(0.8266).epsilon(1e-15));
  CHECK(sgd.state(0).buffers.at("momentum_buffer").item() == doctest::Approx(1.134).epsilon(1e-15));

  // Nesterov, momentum 0.9, lr 0.1, g = 0.5, x = 1:
  //   step 1: b = 0.5; d = 0.5 + 0.9 * 0.5 = 0.95; x = 0.905
  //   step 2: b = 0.45 + 0.5 = 0.95; d = 0.5 + 0.855 = 1.355; x = 0.905 - 0.1355 = 0.7695
  Tensor z = param({1});
  optim::SGD nesterov({z}, 0.1, {.momentum = 0.9, .nesterov = true});
  step_with(nesterov, z, {0.5});
  CHECK(z.item() == doctest::Approx(0.905).epsilon(1e-15));
  step_with(nesterov, z, {0.5});
  CHECK(z.item() == doctest::Approx(0.7695).epsilon(1e-15));

  // dampening 0.5 (not applied on the first step, as in PyTorch):
  //   step 1: b = 0.5; x = 0.95;  step 2: b = 0.45 + 0.5 * 0.5 = 0.7; x = 0.95 - 0.07 = 0.88
  Tensor w = param({1});
  optim::SGD damped({w}, 0.1, {.momentum = 0.9, .dampening = 0.5});
  step_with(damped, w, {0.5});
  CHECK(w.item() == doctest::Approx(0.95).epsilon(1e-15));
  step_with(damped, w, {0.5});
  CHECK(w.item() == doctest::Approx(0.88).epsilon(1e-15));
}

TEST_CASE("Adam: two steps by hand, with and without weight decay") {
  // lr 0.1, betas (0.9, 0.999), eps 1e-8, x = 1, g = 1 then -1:
  //   step 1: m = 0.1, v = 0.001; m/(1-0.9) = 1, v/(1-0.999) = 1; x = 1 - 0.1 * 1/(1 + 1e-8)
  //   step 2: m = 0.09 - 0.1 = -0.01, v = 0.000999 + 0.001 = 0.001999;
  //           m/(1-0.81) = -1/19, v/(1-0.998001) = 1; x = 0.9... + 0.1/19/(1 + 1e-8)
  Tensor x = param({1});
  optim::Adam adam({x}, {.lr = 0.1});
  step_with(adam, x, {1});
  CHECK(x.item() == doctest::Approx(1 - 0.1 / (1 + 1e-8)).epsilon(1e-14));
  CHECK(adam.state(0).step == 1);
  CHECK(adam.state(0).buffers.at("exp_avg").item() == doctest::Approx(0.1).epsilon(1e-15));
  CHECK(adam.state(0).buffers.at("exp_avg_sq").item() == doctest::Approx(0.001).epsilon(1e-15));
  step_with(adam, x, {-1});
  CHECK(x.item() == doctest::Approx(1 - 0.1 / (1 + 1e-8) + 0.1 / 19 / (1 + 1e-8)).epsilon(1e-13));
  CHECK(x.item() == doctest::Approx(0.9052631588421051).epsilon(1e-14));  // Python, same formula
  CHECK(adam.state(0).buffers.at("exp_avg_sq").item() == doctest::Approx(0.001999).epsilon(1e-14));

  // weight decay 0.1 is added to the gradient: step 1 sees g = 1 + 0.1 * 1 = 1.1 (same
  // first step, the normalised size is 1 whatever g); step 2 sees g = -1 + 0.1 * x1.
  Tensor y = param({1});
  optim::Adam decayed({y}, {.lr = 0.1, .weight_decay = 0.1});
  step_with(decayed, y, {1});
  CHECK(y.item() == doctest::Approx(1 - 0.1 * 1.1 / (1.1 + 1e-8)).epsilon(1e-14));
  step_with(decayed, y, {-1});
  CHECK(y.item() == doctest::Approx(0.8958288203345846).epsilon(1e-14));  // Python, same formula
}

TEST_CASE("Adadelta: two steps by hand") {
  // lr 1, rho 0.9, eps 1e-6, x = 1, g = 0.5:
  //   step 1: s = 0.1 * 0.25 = 0.025; delta = sqrt(0 + 1e-6) / sqrt(0.025 + 1e-6) * 0.5;
  //           a = 0.1 * delta^2; x = 1 - delta
  Tensor x = param({1});
  optim::Adadelta adadelta({x});
  CHECK(adadelta.lr() == 1.0);
  step_with(adadelta, x, {0.5});
  const double delta1 = std::sqrt(1e-6) / std::sqrt(0.025 + 1e-6) * 0.5;
  CHECK(x.item() == doctest::Approx(1 - delta1).epsilon(1e-15));
  CHECK(adadelta.state(0).buffers.at("square_avg").item() == doctest::Approx(0.025).epsilon(1e-15));
  CHECK(adadelta.state(0).buffers.at("acc_delta").item() == doctest::Approx(0.1 * delta1 * delta1).epsilon(1e-14));
  //   step 2: s = 0.0225 + 0.025 = 0.0475; delta = sqrt(a + 1e-6) / sqrt(0.0475 + 1e-6) * 0.5
  step_with(adadelta, x, {0.5});
  const double delta2 = std::sqrt(0.1 * delta1 * delta1 + 1e-6) / std::sqrt(0.0475 + 1e-6) * 0.5;
  CHECK(x.item() == doctest::Approx(1 - delta1 - delta2).epsilon(1e-14));
  CHECK(x.item() == doctest::Approx(0.9935934237550185).epsilon(1e-14));  // Python, same formula

  // lr 0.5 and weight decay 0.1 (Python, same formula)
  Tensor y = param({1});
  optim::Adadelta decayed({y}, {.lr = 0.5, .weight_decay = 0.1});
  step_with(decayed, y, {0.5});
  CHECK(y.item() == doctest::Approx(0.9984188831297198).epsilon(1e-14));
  step_with(decayed, y, {0.5});
  CHECK(y.item() == doctest::Approx(0.9967968945770439).epsilon(1e-14));
}

TEST_CASE("step: skips parameters without a gradient, keeps identity, records nothing") {
  Tensor a = param({1, 2}), b = param({3}), c = param({4, 5, 6}, Float64);
  const void* a_data = a.raw_data();
  optim::Adam opt({a, b, c}, {.lr = 0.5});
  a.set_grad(tensor({1, 1}, Float64));
  c.set_grad(tensor({-1, 0, 1}, Float64));
  opt.step();
  CHECK(a.raw_data() == a_data);  // updated in place
  CHECK(a.at({0}) == doctest::Approx(0.5));
  CHECK(b.item() == 3.0);  // no gradient: untouched
  CHECK(opt.state(0).step == 1);
  CHECK(opt.state(1).step == 0);
  CHECK(opt.state(1).buffers.empty());
  CHECK(opt.state(2).step == 1);
  CHECK(c.at({1}) == 5.0);  // zero gradient, zero moments: a step of 0 / (0 + eps) = 0
  CHECK(a.is_leaf());
  CHECK(a.requires_grad());
  CHECK(GradMode::enabled());  // the guard is gone after step()

  opt.zero_grad();
  CHECK(!a.grad().defined());
  CHECK(!c.grad().defined());
  opt.step();  // nothing has a gradient: nothing changes
  CHECK(a.at({0}) == doctest::Approx(0.5));
  CHECK(opt.state(0).step == 1);

  // A real backward feeds the same gradients.
  Tensor w = param({2, -1});
  optim::SGD sgd({w}, 0.25);
  mul(w, w).backward(ones({2}, Float64));  // d(w^2) = 2w
  sgd.step();
  CHECK(w.to_vector() == Values{1, -0.5});
}

TEST_CASE("learning rate: get and set") {
  Tensor x = param({1});
  optim::SGD sgd({x}, 0.1);
  CHECK(sgd.lr() == 0.1);
  sgd.set_lr(0.5);
  CHECK(sgd.lr() == 0.5);
  step_with(sgd, x, {1});
  CHECK(x.item() == 0.5);
  CHECK_THROWS_WITH_AS(sgd.set_lr(-1), "SGD: lr must be >= 0, got -1", Error);
  CHECK(sgd.hyperparameters() ==
        std::vector<std::pair<std::string, double>>{
            {"lr", 0.5}, {"momentum", 0}, {"dampening", 0}, {"weight_decay", 0}, {"nesterov", 0}});
  CHECK(optim::Adam({x}).lr() == 1e-3);
}

TEST_CASE("constructors: errors") {
  Tensor x = param({1});
  CHECK_THROWS_WITH_AS(optim::SGD({}, 0.1), "SGD: the parameter list is empty", Error);
  CHECK_THROWS_WITH_AS(optim::SGD({x, Tensor()}, 0.1), "SGD: parameter 1 is undefined", Error);
  CHECK_THROWS_WITH_AS(optim::Adam({x, param({2}), x}), "Adam: parameter 2 is the same tensor as parameter 0", Error);
  Tensor computed = mul(x, x);
  CHECK_THROWS_WITH_AS(optim::Adam({computed}),
                       "Adam: parameter 0 (shape [1]) was computed by 'mul'; an optimizer updates leaf tensors only",
                       Error);
  CHECK_THROWS_WITH_AS(optim::SGD({x}, -0.1), "SGD: lr must be >= 0, got -0.1", Error);
  CHECK_THROWS_WITH_AS(optim::SGD({x}, 0.1, {.momentum = -1}), "SGD: momentum must be >= 0, got -1", Error);
  CHECK_THROWS_WITH_AS(optim::SGD({x}, 0.1, {.nesterov = true}),
                       "SGD: Nesterov momentum needs momentum > 0 and dampening 0, got momentum 0 and dampening 0",
                       Error);
  CHECK_THROWS_WITH_AS(optim::SGD({x}, 0.1, {.weight_decay = -0.5}), "SGD: weight_decay must be >= 0, got -0.5",
                       Error);
  CHECK_THROWS_WITH_AS(optim::Adam({x}, {.beta1 = 1.0}), "Adam: beta1 must be in [0, 1), got 1", Error);
  CHECK_THROWS_WITH_AS(optim::Adam({x}, {.beta2 = -0.1}), "Adam: beta2 must be in [0, 1), got -0.1", Error);
  CHECK_THROWS_WITH_AS(optim::Adam({x}, {.eps = -1}), "Adam: eps must be >= 0, got -1", Error);
  CHECK_THROWS_WITH_AS(optim::Adadelta({x}, {.rho = 1.5}), "Adadelta: rho must be in [0, 1], got 1.5", Error);
  CHECK_THROWS_WITH_AS(optim::Adadelta({x}, {.lr = std::nan("")}), "Adadelta: lr must be >= 0, got nan", Error);
}

// ---- clip_grad_norm --------------------------------------------------------------

TEST_CASE("clip_grad_norm: the norm over all gradients, scaled when above max_norm") {
  Tensor a = param({0, 0}), b = param({0}), none = param({5});
  a.set_grad(tensor({3, 4}, Float64));
  b.set_grad(tensor({12}, Float64));
  // |(3, 4, 12)| = 13 < 20: nothing changes, bit for bit
  CHECK(optim::clip_grad_norm({a, b, none}, 20.0) == 13.0);
  CHECK(a.grad().to_vector() == Values{3, 4});
  CHECK(b.grad().to_vector() == Values{12});
  // max_norm 6.5: every gradient times 6.5 / (13 + 1e-6)
  CHECK(optim::clip_grad_norm({a, b, none}, 6.5) == 13.0);
  const double coef = 6.5 / (13.0 + 1e-6);
  CHECK(a.grad().at({0}) == doctest::Approx(3 * coef).epsilon(1e-15));
  CHECK(a.grad().at({1}) == doctest::Approx(4 * coef).epsilon(1e-15));
  CHECK(b.grad().at({0}) == doctest::Approx(12 * coef).epsilon(1e-15));
  CHECK(b.grad().at({0}) < 6.0);
  CHECK(!none.grad().defined());
  CHECK(optim::clip_grad_norm({a, b}, 100.0) == doctest::Approx(13 * coef).epsilon(1e-15));
  // no gradient at all: the norm is 0
  CHECK(optim::clip_grad_norm({none}, 1.0) == 0.0);

  Tensor f = param({0, 0, 0, 0}, Float32);
  f.set_grad(tensor({1, 1, 1, 1}, Float32));
  CHECK(optim::clip_grad_norm({f}, 1.0) == 2.0);
  CHECK(f.grad().at({0}) == doctest::Approx(0.5).epsilon(1e-6));
}

TEST_CASE("clip_grad_norm: a non-finite norm is returned and the gradients left alone") {
  Tensor a = param({0, 0}), b = param({0});
  a.set_grad(tensor({3, std::numeric_limits<double>::infinity()}, Float64));
  b.set_grad(tensor({1}, Float64));
  CHECK(std::isinf(optim::clip_grad_norm({a, b}, 1.0)));
  CHECK(a.grad().at({0}) == 3.0);
  CHECK(b.grad().at({0}) == 1.0);
  a.set_grad(tensor({std::nan(""), 1}, Float64));
  CHECK(std::isnan(optim::clip_grad_norm({a, b}, 1.0)));
  CHECK(a.grad().at({1}) == 1.0);
  CHECK(b.grad().at({0}) == 1.0);
  CHECK_THROWS_WITH_AS(optim::clip_grad_norm({a}, -1.0), "clip_grad_norm: max_norm must be >= 0, got -1", Error);
}
