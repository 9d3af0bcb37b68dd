// layers/attention/*: additive and dot-product attention, fused steps against the
// composed oracles, gradient checks with masks, accumulation across decoder steps,
// padding, hand-computed values and error messages. The PyTorch reference values
// are in test_attention_reference.cpp.
#include <cmath>
#include <functional>
#include <memory>
#include <string>

#include <doctest/doctest.h>

#include "autograd/autograd.hpp"
#include "core/core.hpp"
#include "layers/attention/attention.hpp"

using namespace attend;
using nn::AttentionKeys;
using nn::AttentionOutput;

namespace {

Tensor randn(const Shape& shape, std::uint64_t seed, DType dtype = Float64) {
  Generator gen(seed);
  return normal(shape, 0.0, 1.0, gen, dtype);
}

bool all_finite(const Tensor& t) {
  for (double x : t.to_vector())
    if (!std::isfinite(x)) return false;
  return true;
}

// One attention layer of any kind, behind one interface, so every test runs on all kinds.
struct Kind {
  std::string name;
  std::unique_ptr<nn::AdditiveAttention> additive;
  std::unique_ptr<nn::DotProductAttention> dot;

  nn::Module& module() const { return additive ? static_cast<nn::Module&>(*additive) : *dot; }
  AttentionKeys precompute(const Tensor& h, const Tensor& mask) const {
    return additive ? additive->precompute(h, mask) : dot->precompute(h, mask);
  }
  AttentionOutput step(const Tensor& q, const AttentionKeys& keys) const {
    return additive ? additive->step(q, keys) : dot->step(q, keys);
  }
  AttentionOutput forward(const Tensor& q, const Tensor& h, const Tensor& mask) const {
    return additive ? additive->forward(q, h, mask) : dot->forward(q, h, mask);
  }
  AttentionOutput composed(const Tensor& q, const Tensor& h, const Tensor& mask) const {
    return additive ? nn::additive_attention_composed(*additive, q, h, mask)
                    : nn::dot_attention_composed(*dot, q, h, mask);
  }
  std::int64_t query_size() const { return additive ? additive->query_size() : dot->query_size(); }
};

constexpr std::int64_t kKeySize = 4;

// Every kind, keys of size kKeySize, parameters converted to `dtype` (as gradcheck needs).
std::vector<Kind> all_kinds(DType dtype = Float64, std::uint64_t seed = 7) {
  Generator gen(seed);
  auto dot = [&](std::int64_t hq, nn::DotScore score, bool scaled, std::int64_t a) {
    return std::make_unique<nn::DotProductAttention>(hq, kKeySize, gen, nn::DotAttentionOptions{score, scaled, a});
  };
  std::vector<Kind> kinds;
  kinds.push_back({"additive", std::make_unique<nn::AdditiveAttention>(3, kKeySize, gen, 5), nullptr});
  kinds.push_back({"dot plain", nullptr, dot(kKeySize, nn::DotScore::Plain, false, 0)});
  kinds.push_back({"dot plain scaled", nullptr, dot(kKeySize, nn::DotScore::Plain, true, 0)});
  kinds.push_back({"dot general", nullptr, dot(3, nn::DotScore::General, false, 0)});
  kinds.push_back({"dot projected scaled", nullptr, dot(3, nn::DotScore::Projected, true, 5)});
  kinds.push_back({"dot projected", nullptr, dot(3, nn::DotScore::Projected, false, 0)});
  for (Kind& k : kinds) k.module().to(dtype);
  return kinds;
}

// gradcheck of {context, weights} w.r.t. the query, the encoder states and every parameter.
void check_gradients(const Kind& k, const Tensor& mask, std::uint64_t seed) {
  const std::int64_t B = mask.size(0), S = mask.size(1);
  std::vector<Tensor> inputs = {randn({B, k.query_size()}, seed).requires_grad_(),
                                randn({B, S, kKeySize}, seed + 1).requires_grad_()};
  for (const Tensor& p : k.module().parameters()) inputs.push_back(p);  // perturbed in place by gradcheck
  GradcheckReport report = gradcheck(
      MultiOutputFn([&](const std::vector<Tensor>& in) {
        auto [context, weights] = k.forward(in[0], in[1], mask);
        return std::vector<Tensor>{context, weights};
      }),
      inputs);
  CHECK_MESSAGE(report.passed, k.name, ", mask ", mask.str(), "\n", report.str());
  CHECK(report.inputs.size() == inputs.size());
}

}  // namespace

TEST_CASE("attention: hand-computed plain dot product, values and gradients (S = 2, d = 2)") {
  // h_1 = [1, 0], h_2 = [0, 1], s = [ln 3, 0]:  e = [ln 3, 0], alpha = [3/4, 1/4],
  // c = 3/4 h_1 + 1/4 h_2 = [3/4, 1/4].
  // Loss = c_0 (dc = [1, 0], no gradient on the weights):
  //   dalpha_j = dc . h_j = [1, 0];  sum_k alpha_k dalpha_k = 3/4
  //   de = alpha (dalpha - 3/4) = [3/16, -3/16]
  //   ds = sum_j de_j h_j = [3/16, -3/16]
  //   dh_j = alpha_j dc (values) + de_j s (keys, the same tensor):
  //   dh_1 = [3/4 + 3/16 ln 3, 0],  dh_2 = [1/4 - 3/16 ln 3, 0]
  Generator gen(0);
  nn::DotProductAttention attn(2, 2, gen, {nn::DotScore::Plain, false, 0}, Float64);
  const double ln3 = std::log(3.0);
  Tensor s = tensor({ln3, 0}, {1, 2}, Float64).requires_grad_();
  Tensor h = tensor({1, 0, 0, 1}, {1, 2, 2}, Float64).requires_grad_();
  auto [c, alpha] = attn.forward(s, h, ones({1, 2}, Float64));
  CHECK(alpha.at({0, 0}) == doctest::Approx(0.75).epsilon(1e-14));
  CHECK(alpha.at({0, 1}) == doctest::Approx(0.25).epsilon(1e-14));
  CHECK(c.at({0, 0}) == doctest::Approx(0.75).epsilon(1e-14));
  CHECK(c.at({0, 1}) == doctest::Approx(0.25).epsilon(1e-14));
  c.backward(tensor({1, 0}, {1, 2}, Float64));
  CHECK(s.grad().at({0, 0}) == doctest::Approx(3.0 / 16).epsilon(1e-14));
  CHECK(s.grad().at({0, 1}) == doctest::Approx(-3.0 / 16).epsilon(1e-14));
  CHECK(h.grad().at({0, 0, 0}) == doctest::Approx(0.75 + 3.0 / 16 * ln3).epsilon(1e-14));
  CHECK(h.grad().at({0, 0, 1}) == 0.0);
  CHECK(h.grad().at({0, 1, 0}) == doctest::Approx(0.25 - 3.0 / 16 * ln3).epsilon(1e-14));
  CHECK(h.grad().at({0, 1, 1}) == 0.0);
}

TEST_CASE("attention: hand-computed additive attention (S = 2, A = 2), one row with a single real token") {
  // W_k = W_q = I, b = [0, ln 2], v = [1, 1], s = [0, 0], h_1 = [ln 3, 0], h_2 = [0, ln 2].
  //   t_1 = tanh([ln 3, ln 2]) = [4/5, 3/5]     e_1 = 7/5      (tanh(ln x) = (x^2-1)/(x^2+1))
  //   t_2 = tanh([0, 2 ln 2])  = [0, 15/17]     e_2 = 15/17
  //   alpha_1 = 1 / (1 + exp(15/17 - 7/5)) = sigmoid(44/85) = 0.6265974055726156, alpha_2 = 0.37340259442738444
  //   c = [alpha_1 ln 3, alpha_2 ln 2] = [0.688387609809631, 0.25882295554111023]
  // Row 2 has the same states but mask [1, 0]: alpha = [1, 0], c = h_1 = [ln 3, 0].
  Generator gen(0);
  nn::AdditiveAttention attn(2, 2, gen, 2, Float64);
  attn.W_k.copy_(tensor({1, 0, 0, 1}, {2, 2}, Float64));
  attn.W_q.copy_(tensor({1, 0, 0, 1}, {2, 2}, Float64));
  attn.b.copy_(tensor({0, std::log(2.0)}, Float64));
  attn.v.copy_(tensor({1, 1}, Float64));
  const double ln2 = std::log(2.0), ln3 = std::log(3.0);
  Tensor h = tensor({ln3, 0, 0, ln2, ln3, 0, 0, ln2}, {2, 2, 2}, Float64);
  auto [c, alpha] = attn.forward(zeros({2, 2}, Float64), h, tensor({1, 1, 1, 0}, {2, 2}, Float64));
  CHECK(alpha.at({0, 0}) == doctest::Approx(0.6265974055726156).epsilon(1e-14));
  CHECK(alpha.at({0, 1}) == doctest::Approx(0.37340259442738444).epsilon(1e-14));
  CHECK(c.at({0, 0}) == doctest::Approx(0.688387609809631).epsilon(1e-14));
  CHECK(c.at({0, 1}) == doctest::Approx(0.25882295554111023).epsilon(1e-14));
  CHECK(alpha.at({1, 0}) == 1.0);
  CHECK(alpha.at({1, 1}) == 0.0);
  CHECK(c.at({1, 0}) == ln3);
  CHECK(c.at({1, 1}) == 0.0);
}

TEST_CASE("attention: gradcheck of every kind with partly padded rows and a one-token row") {
  Tensor mask = tensor({1, 1, 1, 0,    // partly padded
                        1, 0, 0, 0,    // one real token
                        1, 1, 1, 1},   // no padding
                       {3, 4}, Float64);
  for (const Kind& k : all_kinds()) check_gradients(k, mask, 11);
}

TEST_CASE("attention: gradcheck of every kind with S = 1") {
  for (const Kind& k : all_kinds()) check_gradients(k, ones({2, 1}, Float64), 21);
}

TEST_CASE("attention: gradcheck when the loss uses only the weights") {
  Tensor mask = tensor({1, 1, 0, 1, 1, 1}, {2, 3}, Float64);
  for (const Kind& k : all_kinds()) {
    std::vector<Tensor> inputs = {randn({2, k.query_size()}, 31).requires_grad_(),
                                  randn({2, 3, kKeySize}, 32).requires_grad_()};
    for (const Tensor& p : k.module().parameters()) inputs.push_back(p);
    GradcheckReport report = gradcheck(
        SingleOutputFn([&](const std::vector<Tensor>& in) { return k.forward(in[0], in[1], mask).weights; }), inputs);
    CHECK_MESSAGE(report.passed, k.name, "\n", report.str());
  }
}

TEST_CASE("attention: three decoder steps share one precompute, gradients accumulate into the keys") {
  Tensor mask = tensor({1, 1, 1, 1, 1, 0, 0, 0}, {2, 4}, Float64);
  for (const Kind& k : all_kinds()) {
    const std::int64_t Hq = k.query_size();
    std::vector<Tensor> inputs = {randn({2, 4, kKeySize}, 40).requires_grad_(), randn({2, Hq}, 41).requires_grad_(),
                                  randn({2, Hq}, 42).requires_grad_(), randn({2, Hq}, 43).requires_grad_()};
    for (const Tensor& p : k.module().parameters()) inputs.push_back(p);
    auto three_steps = [&](const std::vector<Tensor>& in) {
      AttentionKeys keys = k.precompute(in[0], mask);  // once for the three steps
      std::vector<Tensor> out;
      for (int t = 1; t <= 3; ++t) {
        auto [context, weights] = k.step(in[t], keys);
        out.push_back(context);
        out.push_back(weights);
      }
      return out;
    };
    GradcheckReport report = gradcheck(MultiOutputFn(three_steps), inputs);
    CHECK_MESSAGE(report.passed, k.name, "\n", report.str());

    // One backward through the three steps == the sum of three separate forward() passes.
    std::vector<Tensor> rs;
    for (int i = 0; i < 6; ++i) rs.push_back(randn(i % 2 ? Shape{2, 4} : Shape{2, kKeySize}, 50 + i));
    std::vector<Tensor> outs = three_steps(inputs);
    backward(outs, rs);
    std::vector<Tensor> together;
    for (const Tensor& x : inputs) together.push_back(x.grad().clone());
    for (Tensor x : inputs) x.zero_grad();
    for (int t = 1; t <= 3; ++t) {
      auto [context, weights] = k.forward(inputs[t], inputs[0], mask);
      backward({context, weights}, {rs[2 * (t - 1)], rs[2 * (t - 1) + 1]});
    }
    for (std::size_t i = 0; i < inputs.size(); ++i)
      CHECK_MESSAGE(max_abs_diff(inputs[i].grad(), together[i]) < 1e-12, k.name, ", input ", i);
    for (Tensor x : inputs) x.zero_grad();
  }
}

TEST_CASE("attention: fused steps equal the composed oracles, values and every gradient") {
  // Rows: partly padded, all padding, one real token, no padding.
  Tensor mask = tensor({1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1}, {4, 5}, Float64);
  for (DType dtype : {Float64, Float32}) {
    const double tol = dtype == Float64 ? 1e-12 : 1e-5;
    for (const Kind& k : all_kinds(dtype)) {
      Tensor q = randn({4, k.query_size()}, 60, dtype).requires_grad_();
      Tensor h = randn({4, 5, kKeySize}, 61, dtype).requires_grad_();
      std::vector<Tensor> leaves = {q, h};
      for (const Tensor& p : k.module().parameters()) leaves.push_back(p);
      Tensor r_context = randn({4, kKeySize}, 62, dtype), r_weights = randn({4, 5}, 63, dtype);
      auto run = [&](bool fused) {
        for (Tensor x : leaves) x.zero_grad();
        AttentionOutput out = fused ? k.forward(q, h, mask.to(dtype)) : k.composed(q, h, mask.to(dtype));
        backward({out.context, out.weights}, {r_context, r_weights});
        std::vector<Tensor> all = {out.context.detach(), out.weights.detach()};
        for (const Tensor& x : leaves) all.push_back(x.grad().clone());
        return all;
      };
      std::vector<Tensor> fused = run(true), composed = run(false);
      for (std::size_t i = 0; i < fused.size(); ++i) {
        CHECK_MESSAGE(fused[i].dtype() == dtype, k.name);
        CHECK_MESSAGE(max_abs_diff(fused[i], composed[i]) <= tol, k.name, " ", dtype_name(dtype), ", tensor ", i,
                      " (0 context, 1 weights, 2 dquery, 3 dstates, then parameters)");
      }
      for (Tensor x : leaves) x.zero_grad();
    }
  }
}

TEST_CASE("attention: padding gets weight exactly 0 and gradient exactly 0, its values never matter") {
  Tensor mask = tensor({1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, {3, 4}, Float64);
  for (const Kind& k : all_kinds()) {
    Tensor q = randn({3, k.query_size()}, 70);
    Tensor h_zero = randn({3, 4, kKeySize}, 71);
    Tensor h_huge = h_zero.clone();
    for (std::int64_t b = 0; b < 3; ++b)
      for (std::int64_t j = 0; j < 4; ++j)
        for (std::int64_t i = 0; i < kKeySize; ++i)
          if (mask.at({b, j}) == 0) {
            h_zero.set({b, j, i}, 0.0);
            h_huge.set({b, j, i}, 1e6 * (i + 1));
          }
    std::vector<std::vector<Tensor>> results;
    for (Tensor h : {h_zero, h_huge}) {
      k.module().zero_grad();
      Tensor qq = q.clone().requires_grad_(), hh = h.clone().requires_grad_();
      auto [context, weights] = k.forward(qq, hh, mask);
      backward({context, weights}, {randn({3, kKeySize}, 72), randn({3, 4}, 73)});
      for (std::int64_t b = 0; b < 3; ++b)
        for (std::int64_t j = 0; j < 4; ++j)
          if (mask.at({b, j}) == 0) {
            CHECK(weights.at({b, j}) == 0.0);
            for (std::int64_t i = 0; i < kKeySize; ++i) CHECK(hh.grad().at({b, j, i}) == 0.0);
          }
      std::vector<Tensor> r = {context.detach(), weights.detach(), qq.grad()};
      for (const Tensor& p : k.module().parameters()) r.push_back(p.grad().clone());
      results.push_back(r);
    }
    for (std::size_t i = 0; i < results[0].size(); ++i)
      CHECK_MESSAGE(max_abs_diff(results[0][i], results[1][i]) == 0.0, k.name, ", tensor ", i);
    k.module().zero_grad();
  }
}

TEST_CASE("attention: a row of only padding gives zero weights, zero context and zero gradients, no NaN") {
  Tensor mask = tensor({1, 1, 0, 0, 0, 0}, {2, 3}, Float64);
  AnomalyGuard anomaly;  // any NaN or inf in a forward or backward throws
  for (const Kind& k : all_kinds()) {
    Tensor q = randn({2, k.query_size()}, 80).requires_grad_();
    Tensor h = randn({2, 3, kKeySize}, 81).requires_grad_();
    auto [context, weights] = k.forward(q, h, mask);
    for (std::int64_t j = 0; j < 3; ++j) CHECK(weights.at({1, j}) == 0.0);
    for (std::int64_t i = 0; i < kKeySize; ++i) CHECK(context.at({1, i}) == 0.0);
    CHECK(weights.at({0, 0}) + weights.at({0, 1}) == doctest::Approx(1.0).epsilon(1e-15));
    backward({context, weights}, {randn({2, kKeySize}, 82), randn({2, 3}, 83)});
    for (std::int64_t i = 0; i < k.query_size(); ++i) CHECK(q.grad().at({1, i}) == 0.0);
    CHECK(q.grad().at({0, 0}) != 0.0);
    for (std::int64_t j = 0; j < 3; ++j)
      for (std::int64_t i = 0; i < kKeySize; ++i) CHECK(h.grad().at({1, j, i}) == 0.0);
    CHECK(all_finite(h.grad()));
    k.module().zero_grad();
  }
}

TEST_CASE("attention: without grad mode nothing is recorded") {
  Tensor mask = ones({2, 3}, Float64);
  for (const Kind& k : all_kinds()) {
    Tensor q = randn({2, k.query_size()}, 90).requires_grad_();
    Tensor h = randn({2, 3, kKeySize}, 91).requires_grad_();
    AttentionOutput with_grad = k.forward(q, h, mask);
    CHECK(with_grad.context.requires_grad());
    CHECK(with_grad.weights.requires_grad());
    NoGradGuard no_grad;
    AttentionOutput out = k.forward(q, h, mask);
    CHECK_FALSE(out.context.requires_grad());
    CHECK_FALSE(out.weights.requires_grad());
    CHECK(equal(out.context, with_grad.context.detach()));
    CHECK(equal(out.weights, with_grad.weights.detach()));
  }
}

TEST_CASE("attention: additive scores over whole 16-lane blocks and a tail, with and without grad mode") {
  // A = 37: two blocks of the score loop's 16 running sums, then 5 left over
  // (the tests above have A = 5, the tail alone). Without grad mode the loop
  // does not store tanh(k + q); the scores must not change by a bit.
  Tensor mask = tensor({1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, {3, 5}, Float64);
  for (DType dtype : {Float64, Float32}) {
    Generator gen(21);
    nn::AdditiveAttention attention(3, kKeySize, gen, 37);
    attention.to(dtype);
    Tensor q = randn({3, 3}, 22, dtype).requires_grad_();
    Tensor h = randn({3, 5, kKeySize}, 23, dtype).requires_grad_();
    const AttentionOutput recorded = attention.forward(q, h, mask.to(dtype));
    const AttentionOutput oracle = nn::additive_attention_composed(attention, q, h, mask.to(dtype));
    const double tol = dtype == Float64 ? 1e-12 : 1e-5;
    CHECK(max_abs_diff(recorded.context, oracle.context) <= tol);
    CHECK(max_abs_diff(recorded.weights, oracle.weights) <= tol);
    NoGradGuard no_grad;
    const AttentionOutput unrecorded = attention.forward(q, h, mask.to(dtype));
    CHECK(equal(unrecorded.context, recorded.context.detach()));
    CHECK(equal(unrecorded.weights, recorded.weights.detach()));
  }
}

TEST_CASE("attention: parameters, their names, shapes and defaults") {
  Generator gen(1);
  auto names = [](const nn::Module& m) {
    std::vector<std::string> out;
    for (const auto& [name, p] : m.named_parameters()) out.push_back(name + p.shape().str());
    return out;
  };
  nn::AdditiveAttention additive(3, 4, gen);  // A defaults to Hq = 3
  CHECK(names(additive) == std::vector<std::string>{"W_k[3, 4]", "W_q[3, 3]", "b[3]", "v[3]"});
  CHECK(additive.attention_size() == 3);
  CHECK(names(nn::AdditiveAttention(3, 4, gen, 6)) == std::vector<std::string>{"W_k[6, 4]", "W_q[6, 3]", "b[6]", "v[6]"});
  nn::DotProductAttention projected(3, 4, gen);  // projected, scaled, d = Hq = 3
  CHECK(names(projected) == std::vector<std::string>{"W_Q[3, 3]", "W_K[3, 4]"});
  CHECK(projected.scale() == 1.0 / std::sqrt(3.0));
  nn::DotProductAttention general(3, 4, gen, {nn::DotScore::General, false, 0});
  CHECK(names(general) == std::vector<std::string>{"W[3, 4]"});
  CHECK(general.scale() == 1.0);
  nn::DotProductAttention plain(4, 4, gen, {nn::DotScore::Plain, true, 0});
  CHECK(plain.named_parameters().empty());
  CHECK(plain.scale() == 0.5);
  // Initialisation like torch.nn.Linear: uniform in +-1/sqrt(fan_in).
  for (double x : additive.W_k.to_vector()) CHECK(std::abs(x) <= 0.5);
  for (double x : additive.v.to_vector()) CHECK(std::abs(x) <= 1 / std::sqrt(3.0));
  CHECK(additive.W_k.dtype() == Float32);
}

TEST_CASE("attention: argument errors name the problem") {
  Generator gen(2);
  nn::AdditiveAttention attn(3, 4, gen);
  Tensor h = zeros({2, 5, 4}), mask = ones({2, 5});
  CHECK_THROWS_WITH_AS(attn.precompute(zeros({2, 5, 3}), mask),
                       "AdditiveAttention.precompute: encoder states must be (B, S, 4), got [2, 5, 3]", Error);
  CHECK_THROWS_WITH_AS(attn.precompute(zeros({10, 4}), mask),
                       "AdditiveAttention.precompute: encoder states must be (B, S, 4), got [10, 4]", Error);
  CHECK_THROWS_WITH_AS(attn.precompute(h, ones({2, 4})),
                       "AdditiveAttention.precompute: the mask must be (B, S) = [2, 5] like the encoder states "
                       "[2, 5, 4], got [2, 4]",
                       Error);
  Tensor half = ones({2, 5});
  half.set({1, 2}, 0.5);
  CHECK_THROWS_WITH_AS(attn.precompute(h, half),
                       "AdditiveAttention.precompute: mask values must be 0 (padding) or 1 (real token), got 0.5 at "
                       "[1, 2]",
                       Error);
  CHECK_THROWS_WITH_AS(attn.precompute(zeros({2, 0, 4}), zeros({2, 0})),
                       "AdditiveAttention.precompute: the source length is 0 (encoder states [2, 0, 4])", Error);
  CHECK_THROWS_WITH_AS(attn.precompute(zeros({2, 5, 4}, Float64), mask),
                       "AdditiveAttention.precompute: dtypes differ: float64 and float32 (convert one with .to(dtype))",
                       Error);
  AttentionKeys keys = attn.precompute(h, mask);
  CHECK_THROWS_WITH_AS(attn.step(zeros({3, 3}), keys),
                       "AdditiveAttention.step: the query's batch size 3 differs from the keys' 2 (query [3, 3], "
                       "encoder states [2, 5, 4])",
                       Error);
  CHECK_THROWS_WITH_AS(attn.step(zeros({2, 4}), keys), "AdditiveAttention.step: the query must be (B, 3), got [2, 4]",
                       Error);
  CHECK_THROWS_WITH_AS(attn.step(zeros({2, 3}, Float64), keys),
                       "AdditiveAttention.step: dtypes differ: float64 and float32 (convert one with .to(dtype))", Error);
  CHECK_THROWS_WITH_AS(attn.step(zeros({2, 3}), AttentionKeys{}),
                       "AdditiveAttention.step: the keys are empty; get them from precompute()", Error);
  CHECK_THROWS_WITH_AS(nn::AdditiveAttention(0, 4, gen),
                       "AdditiveAttention: sizes must be positive, got query_size 0, key_size 4, attention_size 0",
                       Error);

  nn::DotProductAttention dot(3, 4, gen, {nn::DotScore::General, false, 0});
  CHECK_THROWS_WITH_AS(dot.step(zeros({3, 3}), dot.precompute(h, mask)),
                       "DotProductAttention.step: the query's batch size 3 differs from the keys' 2 (query [3, 3], "
                       "encoder states [2, 5, 4])",
                       Error);
  CHECK_THROWS_WITH_AS(nn::DotProductAttention(3, 4, gen, {nn::DotScore::Plain, false, 0}),
                       "DotProductAttention: plain dot scores need query_size == key_size, got 3 and 4", Error);
  // Keys of one kind handed to a layer whose scores have another size.
  CHECK_THROWS_WITH_AS(nn::dot_attention_step(zeros({2, 3}), zeros({2, 5, 6}), h, mask, 1.0),
                       "dot_attention_step: the query must be (B, d) = [2, 6] to match keys [2, 5, 6], got [2, 3]",
                       Error);
  CHECK_THROWS_WITH_AS(nn::dot_attention_step(zeros({2, 3}), zeros({2, 5, 3}), zeros({2, 4, 4}), mask, 1.0),
                       "dot_attention_step: keys [2, 5, 3] and values [2, 4, 4] differ in batch size or source length",
                       Error);
  CHECK_THROWS_WITH_AS(nn::additive_attention_step(zeros({2, 3}), zeros({2, 5, 3}), h, zeros({4}), mask),
                       "additive_attention_step: v must be (A) = [3] to match keys [2, 5, 3], got [4]", Error);
  CHECK_THROWS_WITH_AS(nn::additive_attention_step(zeros({2, 3}), zeros({2, 5, 3}), h, zeros({3}), ones({5, 2})),
                       "additive_attention_step: the mask must be (B, S) = [2, 5], got [5, 2]", Error);
}
