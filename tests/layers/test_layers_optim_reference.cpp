// Linear, Embedding, the optimizers, clip_grad_norm and the schedules against
// torch 1.13 (tests/reference/torch_layers_optim.py wrote
// tests/data/layers_optim.safetensors). Required agreement: float64 within 1e-10
// relative, float32 within 1e-5 relative.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "autograd/optim/lr_schedule.hpp"
#include "autograd/optim/optim.hpp"
#include "core/io/safetensors.hpp"
#include "layers/layers.hpp"

using namespace attend;

namespace {

const std::map<std::string, Tensor>& reference() {
  static const SafetensorsFile file = load_safetensors(std::string(ATTEND_TEST_DATA) + "/layers_optim.safetensors");
  return file.tensors;
}

struct Case {
  DType dtype;
  double rel;  // the agreement required
  std::string prefix;
  Tensor get(const std::string& name) const {
    auto it = reference().find(prefix + name);
    if (it == reference().end()) fail("the reference file has no tensor '{}{}'", prefix, name);
    return it->second.clone();
  }
  bool has(const std::string& name) const { return reference().count(prefix + name) > 0; }
};

const std::vector<Case> kCases = {{Float64, 1e-10, "float64/"}, {Float32, 1e-5, "float32/"}};

// Largest |got - want| / |want| over the elements. Elements of want that are tiny
// next to the tensor's largest (below 1e-3 of it) are measured against 1e-3 of the
// largest instead, since a relative error of a value that cancelled to almost 0
// measures the cancellation, not the code.
double rel_error(const Tensor& got, const Tensor& want) {
  const std::vector<double> g = got.to_vector(), w = want.to_vector();
  double scale = 0;
  for (double v : w) scale = std::max(scale, std::fabs(v));
  double worst = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double denom = std::max(std::fabs(w[i]), 1e-3 * scale);
    if (denom == 0) worst = std::max(worst, g[i] == 0 ? 0.0 : INFINITY);
    else worst = std::max(worst, std::fabs(g[i] - w[i]) / denom);
  }
  return worst;
}

void check_close(const std::string& what, const Tensor& got, const Tensor& want, double rel) {
  CAPTURE(what);
  REQUIRE(got.defined());
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  const double err = rel_error(got, want);
  CHECK_MESSAGE(err <= rel, fmt::format("{}: relative error {:.3g} > {:.0e}", what, err, rel));
}

Indices indices_of(const Tensor& t) {
  std::vector<std::int64_t> values;
  for (double v : t.to_vector()) values.push_back(static_cast<std::int64_t>(v));
  return Indices(values, t.shape());
}

}  // namespace

TEST_CASE("reference: nn.Linear forward and gradients") {
  for (const Case& c : kCases) {
    CAPTURE(c.prefix);
    Generator gen(0);
    nn::Linear lin(4, 3, gen, c.dtype);
    lin.weight.copy_(c.get("linear.weight"));
    lin.bias.copy_(c.get("linear.bias"));
    Tensor x = c.get("linear.x").requires_grad_();
    Tensor y = lin.forward(x);
    y.backward(c.get("linear.r"));
    check_close("y", y, c.get("linear.y"), c.rel);
    check_close("dx", x.grad(), c.get("linear.dx"), c.rel);
    check_close("dweight", lin.weight.grad(), c.get("linear.dweight"), c.rel);
    check_close("dbias", lin.bias.grad(), c.get("linear.dbias"), c.rel);
  }
}

TEST_CASE("reference: nn.Embedding with padding_idx, repeats and padding") {
  for (const Case& c : kCases) {
    CAPTURE(c.prefix);
    Generator gen(0);
    const auto pad = static_cast<std::int64_t>(c.get("embedding.padding_idx").item());
    nn::Embedding emb(6, 3, pad, gen, c.dtype);
    emb.weight.copy_(c.get("embedding.weight"));  // with a non-zero padding row
    Tensor y = emb.forward(indices_of(c.get("embedding.indices")));
    y.backward(c.get("embedding.r"));
    // A lookup is a copy: exact in both dtypes; the gradient sums in the same order.
    CHECK(equal(y, c.get("embedding.y")));
    check_close("dweight", emb.weight.grad(), c.get("embedding.dweight"), c.rel);
    for (std::int64_t j = 0; j < 3; ++j) CHECK(emb.weight.grad().at({pad, j}) == 0.0);
  }
}

TEST_CASE("reference: three steps of Adam, Adadelta, SGD with momentum and Nesterov") {
  using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
  const std::vector<std::pair<std::string, Make>> optimizers = {
      {"adam",
       [](std::vector<Tensor> p) {
         return std::make_unique<optim::Adam>(
             p, optim::AdamOptions{.lr = 0.05, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1});
       }},
      {"adadelta",
       [](std::vector<Tensor> p) {
         return std::make_unique<optim::Adadelta>(
             p, optim::AdadeltaOptions{.lr = 0.5, .rho = 0.8, .eps = 1e-5, .weight_decay = 0.05});
       }},
      {"sgd",
       [](std::vector<Tensor> p) {
         return std::make_unique<optim::SGD>(p, 0.1, optim::SGDOptions{.momentum = 0.9, .weight_decay = 0.01});
       }},
      {"nesterov",
       [](std::vector<Tensor> p) {
         return std::make_unique<optim::SGD>(p, 0.1, optim::SGDOptions{.momentum = 0.5, .nesterov = true});
       }},
  };
  for (const Case& c : kCases) {
    for (const auto& [name, make] : optimizers) {
      CAPTURE(c.prefix);
      CAPTURE(name);
      std::vector<Tensor> params;
      for (int i = 0; i < 3; ++i) params.push_back(c.get(fmt::format("optim.param.{}", i)).requires_grad_());
      auto opt = make(params);
      for (int step = 1; step <= 3; ++step) {
        opt->zero_grad();
        for (int i = 0; i < 3; ++i) {
          const std::string key = fmt::format("optim.grad.{}.{}", step, i);
          if (c.has(key)) params[i].set_grad(c.get(key));  // parameter 2 has none at step 1
        }
        opt->step();
        for (int i = 0; i < 3; ++i)
          check_close(fmt::format("step {} param {}", step, i), params[i],
                      c.get(fmt::format("{}.step{}.param.{}", name, step, i)), c.rel);
      }
      for (int i = 0; i < 3; ++i) {
        const optim::ParamState& s = opt->state(i);
        const std::string step_key = fmt::format("{}.state.{}.step", name, i);
        if (c.has(step_key)) CHECK(s.step == c.get(step_key).item());
        for (const auto& [buffer, value] : s.buffers)
          check_close(fmt::format("param {} {}", i, buffer), value,
                      c.get(fmt::format("{}.state.{}.{}", name, i, buffer)), c.rel);
        CHECK(s.buffers.size() == (name == "adam" || name == "adadelta" ? 2u : 1u));
      }
      CHECK(opt->state(2).step == 2);
    }
  }
}

TEST_CASE("reference: clip_grad_norm") {
  for (const Case& c : kCases) {
    CAPTURE(c.prefix);
    std::vector<Tensor> params;
    for (int i = 0; i < 3; ++i) {
      Tensor g = c.get(fmt::format("clip.grad.{}", i));
      params.push_back(zeros(g.shape(), c.dtype).requires_grad_());
      params.back().set_grad(g);
    }
    const double norm = optim::clip_grad_norm(params, c.get("clip.max_norm").item());
    const double want = c.get("clip.norm").item();
    CHECK(std::fabs(norm - want) <= c.rel * want);
    CHECK(norm > c.get("clip.max_norm").item());  // the case does clip
    for (int i = 0; i < 3; ++i)
      check_close(fmt::format("clipped {}", i), params[i].grad(), c.get(fmt::format("clip.clipped.{}", i)), c.rel);
  }
}

TEST_CASE("reference: StepLR and ReduceLROnPlateau learning rates") {
  const Case s{Float64, 0, "schedule/"};
  Tensor x = zeros({1}, Float64).requires_grad_();
  optim::SGD sgd({x}, 0.2);
  optim::StepLR step_lr(sgd, 2, 0.3);
  std::vector<double> lrs;
  for (int e = 0; e < 7; ++e) {
    step_lr.step();
    lrs.push_back(sgd.lr());
  }
  CHECK(lrs == s.get("step_lr.lr").to_vector());  // the same products, so the same bits

  optim::SGD sgd2({x}, 1.0);
  optim::ReduceLROnPlateau plateau(sgd2, {.factor = 0.5, .patience = 1, .cooldown = 1, .min_lr = 0.05});
  lrs.clear();
  for (double m : s.get("plateau.metric").to_vector()) {
    plateau.step(m);
    lrs.push_back(sgd2.lr());
  }
  CHECK(lrs == s.get("plateau.lr").to_vector());
  CHECK(lrs.back() == 0.125);  // the case reduces three times
}
