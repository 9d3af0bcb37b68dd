// autograd/ops/losses.cpp: cross_entropy (fused log_softmax + negative log-likelihood).
#include <cmath>
#include <vector>

#include <doctest/doctest.h>

#include "autograd/autograd.hpp"
#include "core/core.hpp"

using namespace attend;

namespace {
Tensor randn(const Shape& shape, std::uint64_t seed, double stddev = 1.0) {
  Generator gen(seed);
  return normal(shape, 0.0, stddev, gen, Float64).requires_grad_();
}

void check_close(const Tensor& got, std::initializer_list<double> want, double tol) {
  const std::vector<double> g = got.to_vector();
  REQUIRE(g.size() == want.size());
  std::size_t i = 0;
  for (double w : want) {
    CHECK_MESSAGE(std::abs(g[i] - w) <= tol, "element ", i, ": got ", g[i], ", want ", w);
    ++i;
  }
}

bool all_finite(const Tensor& t) {
  for (double v : t.to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

// The composed oracle: loss = -sum_ik W_ik log_softmax(x)_ik with W_ik = q_ik / count
// (q the smoothed one-hot target, 0 on ignored rows). Its gradient comes from the
// separate log_softmax op's backward with upstream gradient -W * dy.
struct Composed {
  double loss;
  Tensor grad;
};
Composed composed_cross_entropy(const Tensor& logits, const std::vector<std::int64_t>& targets, std::int64_t ignore,
                                double eps, double dy) {
  const std::int64_t N = logits.size(0), V = logits.size(1);
  std::int64_t count = 0;
  for (std::int64_t t : targets) count += t != ignore;
  Tensor w = zeros({N, V}, Float64);
  for (std::int64_t i = 0; i < N; ++i) {
    if (targets[i] == ignore) continue;
    for (std::int64_t k = 0; k < V; ++k)
      w.set({i, k}, ((k == targets[i] ? 1 - eps : 0.0) + eps / double(V)) / double(count));
  }
  Tensor x = logits.detach().to(Float64).clone().requires_grad_();
  Tensor lsm = log_softmax(x, 1);
  double loss = 0;
  for (std::int64_t i = 0; i < N; ++i)
    for (std::int64_t k = 0; k < V; ++k) loss -= w.at({i, k}) * lsm.at({i, k});
  lsm.backward(w.mul_(-dy));
  return {loss, x.grad()};
}
}  // namespace

TEST_CASE("cross_entropy by hand") {
  // logits [[1, 2, 3], [1, 1, 1]], targets [2, 0]
  //   row 0: lse = 3 + log(e^-2 + e^-1 + 1) = 3 + log(1.503214724408) = 3.407605964444; nll = lse - 3 = 0.407605964444
  //   row 1: lse = 1 + log 3; nll = log 3 = 1.098612288668
  //   mean = (0.407605964444 + 1.098612288668) / 2 = 0.753109126556
  // (the same as torch.nn.functional.cross_entropy gives: 0.7531091265562451)
  Tensor logits = tensor({1, 2, 3, 1, 1, 1}, {2, 3}, Float64).requires_grad_();
  Tensor loss = cross_entropy(logits, Indices{2, 0});
  CHECK(loss.dim() == 0);
  CHECK(loss.item() == doctest::Approx(0.753109126556).epsilon(1e-11));
  // dlogits = (softmax - onehot) / 2:
  //   row 0: ([0.090030573170, 0.244728471055, 0.665240955775] - [0, 0, 1]) / 2
  //   row 1: ([1/3, 1/3, 1/3] - [1, 0, 0]) / 2 = [-1/3, 1/6, 1/6]
  loss.backward();
  check_close(logits.grad(), {0.045015286585, 0.122364235528, -0.167379522113, -1.0 / 3, 1.0 / 6, 1.0 / 6}, 1e-11);
}

TEST_CASE("cross_entropy with label smoothing by hand") {
  // eps = 0.1, V = 3: loss_i = 0.9 * nll_i + 0.1 * (lse_i - mean_k x_ik)
  //   row 0: 0.9 * 0.407605964444 + 0.1 * (3.407605964444 - 2) = 0.366845367999 + 0.140760596444 = 0.507605964444
  //   row 1: every class equal, so both terms are log 3 = 1.098612288668
  //   mean = (0.507605964444 + 1.098612288668) / 2 = 0.803109126556   (torch: 0.8031091265562451)
  Tensor logits = tensor({1, 2, 3, 1, 1, 1}, {2, 3}, Float64).requires_grad_();
  Tensor loss = cross_entropy(logits, Indices{2, 0}, -100, 0.1);
  CHECK(loss.item() == doctest::Approx(0.803109126556).epsilon(1e-11));
  // q = 0.9 * onehot + 0.1 / 3:  row 0 q = [1/30, 1/30, 0.9 + 1/30], row 1 q = [0.9 + 1/30, 1/30, 1/30]
  //   row 0: ([0.090030573170, 0.244728471055, 0.665240955775] - q) / 2 = [0.028348619918, 0.105697568861, -0.134046188779]
  //   row 1: ([1/3, 1/3, 1/3] - q) / 2 = [-0.3, 0.15, 0.15]
  loss.backward();
  check_close(logits.grad(), {0.028348619918, 0.105697568861, -0.134046188779, -0.3, 0.15, 0.15}, 1e-11);
}

TEST_CASE("cross_entropy ignores targets equal to ignore_index") {
  Tensor logits = tensor({1, 2, 3, 1, 1, 1}, {2, 3}, Float64).requires_grad_();
  // Only row 0 counts: loss = 0.407605964444, row 1's gradient is exactly 0.
  Tensor loss = cross_entropy(logits, Indices{2, -100});
  CHECK(loss.item() == doctest::Approx(0.407605964444).epsilon(1e-11));
  loss.backward();
  check_close(logits.grad(), {0.090030573170, 0.244728471055, -0.334759044225, 0, 0, 0}, 1e-11);
  for (std::int64_t k = 0; k < 3; ++k) CHECK(logits.grad().at({1, k}) == 0.0);
  // A padding id as ignore_index; with smoothing the ignored row still adds nothing:
  //   0.9 * 0.407605964444 + 0.1 * 1.407605964444 = 0.507605964444
  CHECK(cross_entropy(logits, Indices{2, 0}, 0).item() == doctest::Approx(0.407605964444).epsilon(1e-11));
  CHECK(cross_entropy(logits, Indices{2, 0}, 0, 0.1).item() == doctest::Approx(0.507605964444).epsilon(1e-11));
}

TEST_CASE("cross_entropy with every target ignored is 0 with a zero gradient, not NaN") {
  for (double eps : {0.0, 0.2}) {
    Tensor logits = randn({3, 4}, 1);
    Tensor loss = cross_entropy(logits, Indices{-100, -100, -100}, -100, eps);
    CHECK(loss.item() == 0.0);
    loss.backward();
    REQUIRE(logits.grad().defined());
    CHECK(all_finite(logits.grad()));
    CHECK(equal(logits.grad(), zeros({3, 4}, Float64)));
  }
  Tensor none = zeros({0, 5}, Float64).requires_grad_();  // no rows at all
  Tensor loss = cross_entropy(none, Indices(std::vector<std::int64_t>{}));
  CHECK(loss.item() == 0.0);
  loss.backward();
}

TEST_CASE("cross_entropy is stable for large logits") {
  // log p = x - lse: with x = [1000, 0, -1000], lse = 1000 + log(1 + e^-1000 + e^-2000) = 1000 in any precision.
  for (DType dtype : {Float32, Float64}) {
    Tensor logits = tensor({1000, 0, -1000, 1000, 0, -1000}, {2, 3}, dtype).requires_grad_();
    Tensor loss = cross_entropy(logits, Indices{0, 2});  // (0 + 2000) / 2
    CHECK(loss.item() == doctest::Approx(1000.0).epsilon(1e-6));
    loss.backward();
    CHECK(all_finite(logits.grad()));
    // softmax = [1, 0, 0]: row 0 (target 0) has gradient 0, row 1 (target 2) [1, 0, -1] / 2
    check_close(logits.grad(), {0, 0, 0, 0.5, 0, -0.5}, 1e-6);
  }
}

TEST_CASE("cross_entropy fused agrees with the composed log_softmax version") {
  struct Case {
    Shape shape;
    std::vector<std::int64_t> targets;
    std::int64_t ignore;
    double eps, dy;
  };
  Generator gen(2);
  std::vector<std::int64_t> many;  // 64 rows over 1000 classes, every 5th row padding (id 0)
  for (int i = 0; i < 64; ++i) many.push_back(i % 5 == 0 ? 0 : 1 + gen.randint(999));
  for (const Case& c : {Case{{4, 6}, {0, 5, 3, 3}, -100, 0.0, 1.0}, Case{{4, 6}, {0, -100, 3, -100}, -100, 0.0, 0.7},
                        Case{{4, 6}, {1, 5, 2, 1}, 1, 0.25, -1.3}, Case{{64, 1000}, many, 0, 0.1, 2.0}}) {
    CAPTURE(c.shape);
    Tensor logits = randn(c.shape, 3, 3.0);
    Tensor loss = cross_entropy(logits, Indices(c.targets), c.ignore, c.eps);
    loss.backward(scalar(c.dy, Float64));
    Composed want = composed_cross_entropy(logits, c.targets, c.ignore, c.eps, c.dy);
    CHECK(loss.item() == doctest::Approx(want.loss).epsilon(1e-12));
    CHECK(max_abs_diff(logits.grad(), want.grad) < 1e-14);
  }
}

TEST_CASE("cross_entropy gradcheck in float64") {
  struct Case {
    const char* name;
    Shape shape;
    std::vector<std::int64_t> targets;
    std::int64_t ignore;
    double eps;
  };
  for (const Case& c : {Case{"plain", {4, 5}, {0, 4, 2, 2}, -100, 0.0},
                        Case{"some ignored", {4, 5}, {1, -100, 3, -100}, -100, 0.0},
                        Case{"all ignored", {4, 5}, {2, 2, 2, 2}, 2, 0.0},
                        Case{"all ignored, smoothing", {4, 5}, {-1, -1, -1, -1}, -1, 0.3},
                        Case{"label smoothing 0.1", {4, 5}, {0, 4, 2, 2}, -100, 0.1},
                        Case{"smoothing and ignore_index 0", {5, 3}, {0, 2, 0, 1, 1}, 0, 0.2},
                        Case{"one class", {3, 1}, {0, 0, 0}, -100, 0.1},
                        Case{"smoothing 1", {2, 4}, {1, 3}, -100, 1.0}}) {
    CAPTURE(c.name);
    Indices targets(c.targets);
    auto r = gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], targets, c.ignore, c.eps); },
                       {randn(c.shape, 4, 2.0)});
    CHECK_MESSAGE(r.passed, r.str());
  }
}

TEST_CASE("cross_entropy: float32 agrees with float64") {
  Generator gen(5);
  std::vector<std::int64_t> targets;
  for (int i = 0; i < 16; ++i) targets.push_back(i % 4 == 0 ? -100 : gen.randint(300));
  Tensor x64 = randn({16, 300}, 6, 3.0);
  Tensor x32 = x64.detach().to(Float32).requires_grad_();
  Tensor l64 = cross_entropy(x64, Indices(targets), -100, 0.1);
  Tensor l32 = cross_entropy(x32, Indices(targets), -100, 0.1);
  CHECK(l32.dtype() == Float32);
  CHECK(l32.item() == doctest::Approx(l64.item()).epsilon(1e-6));
  l64.backward();
  l32.backward();
  CHECK(max_abs_diff(x32.grad().to(Float64), x64.grad()) < 1e-7);
}

TEST_CASE("cross_entropy records nothing when no gradient is wanted") {
  Tensor logits = randn({2, 3}, 7).detach();
  CHECK_FALSE(cross_entropy(logits, Indices{0, 1}).requires_grad());
  Tensor leaf = randn({2, 3}, 7);
  NoGradGuard no_grad;
  Tensor loss = cross_entropy(leaf, Indices{0, 1});
  CHECK_FALSE(loss.requires_grad());
  CHECK(loss.item() == doctest::Approx(cross_entropy(logits, Indices{0, 1}).item()).epsilon(1e-15));
}

TEST_CASE("cross_entropy errors") {
  Tensor logits = zeros({2, 3});
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Indices{0, 3}),
                       "cross_entropy: target 3 at position 1 is out of range for 3 classes (expected 0 <= target < 3, "
                       "or ignore_index -100)",
                       Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Indices{-1, 0}),
                       "cross_entropy: target -1 at position 0 is out of range for 3 classes (expected 0 <= target < 3, "
                       "or ignore_index -100)",
                       Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Indices{-100, 0}, 0),
                       "cross_entropy: target -100 at position 0 is out of range for 3 classes (expected 0 <= target "
                       "< 3, or ignore_index 0)",
                       Error);
  CHECK_THROWS_WITH_AS(cross_entropy(zeros({2, 3, 4}), Indices{0, 1}),
                       "cross_entropy: logits must be (N, V), got shape [2, 3, 4]", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Indices{0, 1, 2}),
                       "cross_entropy: targets must have shape [2] to match logits [2, 3], got [3]", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Indices({0, 1}, {2, 1})),
                       "cross_entropy: targets must have shape [2] to match logits [2, 3], got [2, 1]", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Indices{0, 1}, -100, 1.5),
                       "cross_entropy: label_smoothing must be in [0, 1], got 1.5", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Indices{0, 1}, -100, -0.1),
                       "cross_entropy: label_smoothing must be in [0, 1], got -0.1", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(Tensor(), Indices{0}), "cross_entropy: logits is an undefined tensor", Error);
}
