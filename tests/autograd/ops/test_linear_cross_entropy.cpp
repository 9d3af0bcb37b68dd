// autograd/ops/losses.cpp: linear_cross_entropy, the projection and the loss fused,
// against its composed twin cross_entropy(linear(h, W, b)), against finite
// differences, and on its edge cases (ignored rows, all rows ignored, row
// counts that are not a multiple of the op's 1,024-row blocks).
#include <cmath>
#include <vector>

#include <doctest/doctest.h>

#include "autograd/autograd.hpp"
#include "core/core.hpp"

using namespace attend;

namespace {

struct Case {
  std::int64_t N, H, V;
  bool bias;
  double eps;
  std::vector<std::int64_t> targets;  // N values, -100 = ignored
};

Case make_case(std::int64_t N, std::int64_t H, std::int64_t V, bool bias, double eps, std::uint64_t seed,
               int ignore_every) {
  Case c{N, H, V, bias, eps, {}};
  Generator gen(seed);
  for (std::int64_t i = 0; i < N; ++i)
    c.targets.push_back(ignore_every > 0 && i % ignore_every == 1 ? -100 : gen.randint(V));
  return c;
}

struct Leaves {
  Tensor h, W, b;
  std::vector<Tensor> all() const { return b.defined() ? std::vector<Tensor>{h, W, b} : std::vector<Tensor>{h, W}; }
};

Leaves leaves(const Case& c, DType dtype, std::uint64_t seed) {
  Generator gen(seed);
  Leaves l;
  l.h = normal({c.N, c.H}, 0, 1, gen, dtype).requires_grad_();
  l.W = normal({c.V, c.H}, 0, 0.5, gen, dtype).requires_grad_();
  if (c.bias) l.b = normal({c.V}, 0, 0.5, gen, dtype).requires_grad_();
  return l;
}

Tensor fused(const Case& c, const Leaves& l) {
  return linear_cross_entropy(l.h, l.W, l.b, Indices(c.targets), -100, c.eps);
}
Tensor composed(const Case& c, const Leaves& l) {
  return cross_entropy(linear(l.h, l.W, l.b), Indices(c.targets), -100, c.eps);
}

// The loss and every gradient for an upstream gradient dy (not 1, so that a
// backward that ignores dy is caught).
struct Result {
  double loss;
  std::vector<Tensor> grads;
};
template <class F>
Result run(F f, const Leaves& l, double dy) {
  for (Tensor t : l.all()) t.zero_grad();
  Tensor loss = f();
  backward({loss}, {full({}, dy, loss.dtype())});
  Result r{loss.item(), {}};
  for (const Tensor& t : l.all()) r.grads.push_back(t.grad().clone());
  return r;
}

void check_fused_equals_composed(const Case& c, DType dtype, double tol) {
  const Leaves l = leaves(c, dtype, 11);
  const Result a = run([&] { return fused(c, l); }, l, -1.7);
  const Result b = run([&] { return composed(c, l); }, l, -1.7);
  CHECK(a.loss == doctest::Approx(b.loss).epsilon(tol));
  REQUIRE(a.grads.size() == b.grads.size());
  for (std::size_t k = 0; k < a.grads.size(); ++k) {
    INFO("gradient of input ", k, ": max |diff| = ", max_abs_diff(a.grads[k], b.grads[k]));
    CHECK(max_abs_diff(a.grads[k], b.grads[k]) <= tol);
  }
}

}  // namespace

TEST_CASE("linear_cross_entropy equals cross_entropy(linear(...)) in value and every gradient") {
  SUBCASE("float64, bias, ignored rows, 2,500 rows (three blocks, the last partial)") {
    check_fused_equals_composed(make_case(2500, 7, 23, true, 0.0, 1, 5), Float64, 1e-12);
  }
  SUBCASE("float64, bias, label smoothing, 1,030 rows (a block and 6 rows)") {
    check_fused_equals_composed(make_case(1030, 4, 9, true, 0.1, 5, 3), Float64, 1e-12);
  }
  SUBCASE("float64, label smoothing, no bias") {
    check_fused_equals_composed(make_case(70, 5, 31, false, 0.1, 2, 4), Float64, 1e-12);
  }
  SUBCASE("float64, one row") { check_fused_equals_composed(make_case(1, 3, 6, true, 0.2, 3, 0), Float64, 1e-12); }
  SUBCASE("float32, a vocabulary the size of a real one") {
    check_fused_equals_composed(make_case(130, 16, 3000, true, 0.1, 4, 7), Float32, 2e-5);
  }
}

TEST_CASE("linear_cross_entropy passes the float64 gradient check") {
  for (bool bias : {true, false}) {
    CAPTURE(bias);
    const Case c = make_case(259, 2, 5, bias, bias ? 0.15 : 0.0, 5, 3);  // 259 rows: a full block and a partial one
    const Leaves l = leaves(c, Float64, 12);
    GradcheckReport report = gradcheck(
        [&](const std::vector<Tensor>& in) {
          return linear_cross_entropy(in[0], in[1], bias ? in[2] : Tensor(), Indices(c.targets), -100, c.eps);
        },
        l.all());
    CHECK_MESSAGE(report.passed, report.str());
  }
}

// N = 2, H = 1, V = 2, W = [[1], [-1]], b = [0, 0], h = [[ln 3 / 2], [5]], targets [0, ignored]:
//   z_0 = [ln3/2, -ln3/2], p_0 = softmax = [3/4, 1/4], loss = -log(3/4) (one counted row)
//   dz_0 = p_0 - onehot(0) = [-1/4, 1/4];  dh_0 = dz_0 W = -1/4 - 1/4 = -1/2;  dh_1 = 0
//   dW = dz_0^T h_0 = [[-ln3/8], [ln3/8]];   db = dz_0 = [-1/4, 1/4]
TEST_CASE("linear_cross_entropy on numbers worked out by hand") {
  const double half_ln3 = std::log(3.0) / 2;
  Tensor h = tensor({half_ln3, 5.0}, {2, 1}, Float64).requires_grad_();
  Tensor W = tensor({1.0, -1.0}, {2, 1}, Float64).requires_grad_();
  Tensor b = zeros({2}, Float64).requires_grad_();
  Tensor loss = linear_cross_entropy(h, W, b, Indices(std::vector<std::int64_t>{0, -100}));
  CHECK(loss.item() == doctest::Approx(-std::log(0.75)).epsilon(1e-14));
  loss.backward();
  const std::vector<double> dh = h.grad().to_vector(), dW = W.grad().to_vector(), db = b.grad().to_vector();
  CHECK(dh[0] == doctest::Approx(-0.5).epsilon(1e-14));
  CHECK(dh[1] == 0.0);
  CHECK(dW[0] == doctest::Approx(-half_ln3 / 4).epsilon(1e-14));
  CHECK(dW[1] == doctest::Approx(half_ln3 / 4).epsilon(1e-14));
  CHECK(db[0] == doctest::Approx(-0.25).epsilon(1e-14));
  CHECK(db[1] == doctest::Approx(0.25).epsilon(1e-14));
}

TEST_CASE("linear_cross_entropy with every target ignored: loss 0 and zero gradients, not none") {
  const Case c = make_case(5, 3, 4, true, 0.0, 6, 0);
  Case ignored = c;
  for (auto& t : ignored.targets) t = -100;
  const Leaves l = leaves(ignored, Float64, 13);
  const Result r = run([&] { return fused(ignored, l); }, l, 1.0);
  CHECK(r.loss == 0.0);
  for (const Tensor& g : r.grads) {
    REQUIRE(g.defined());
    CHECK(max_abs_diff(g, zeros_like(g)) == 0.0);
  }
}

TEST_CASE("linear_cross_entropy records nothing without grad mode and computes the same loss") {
  const Case c = make_case(40, 4, 12, true, 0.0, 7, 3);
  const Leaves l = leaves(c, Float64, 14);
  const double with_grad = fused(c, l).item();
  NoGradGuard no_grad;
  Tensor loss = fused(c, l);
  CHECK_FALSE(loss.requires_grad());
  CHECK(loss.item() == with_grad);
}

TEST_CASE("linear_cross_entropy says what is wrong with its inputs") {
  Tensor h = zeros({3, 4}), W = zeros({5, 4}), b = zeros({5});
  const Indices t(std::vector<std::int64_t>{0, 1, 2});
  CHECK_THROWS_WITH_AS(linear_cross_entropy(zeros({3, 2, 4}), W, b, t), "linear_cross_entropy: h must be (N, H), got [3, 2, 4]",
                       Error);
  CHECK_THROWS_WITH_AS(linear_cross_entropy(h, zeros({5, 3}), b, t),
                       "linear_cross_entropy: weight must be (V, 4) to match h [3, 4], got [5, 3]", Error);
  CHECK_THROWS_WITH_AS(linear_cross_entropy(h, W, zeros({4}), t),
                       "linear_cross_entropy: bias must be (5) for weight [5, 4], got [4]", Error);
  CHECK_THROWS_WITH_AS(linear_cross_entropy(h, W, b, Indices(std::vector<std::int64_t>{0, 1})),
                       "linear_cross_entropy: targets must have shape [3] to match h [3, 4], got [2]", Error);
  CHECK_THROWS_WITH_AS(linear_cross_entropy(h, W, b, Indices(std::vector<std::int64_t>{0, 5, 1})),
                       "linear_cross_entropy: target 5 at position 1 is out of range for 5 classes (expected 0 <= "
                       "target < 5, or ignore_index -100)",
                       Error);
}
