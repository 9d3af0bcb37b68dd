// autograd/ops/reductions.cpp: sum and mean, over everything or along one axis.
// Hand-computed values and gradients, float64 gradchecks, float32 against
// float64, empty tensors (mean of nothing is NaN, as in PyTorch), and errors.
#include <cmath>

#include <doctest/doctest.h>

#include "autograd/autograd.hpp"
#include "core/core.hpp"

using namespace attend;

namespace {
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
using Values = std::vector<double>;

Tensor randn(const Shape& shape, std::uint64_t seed, DType dtype = Float64) {
  Generator gen(seed);
  return normal(shape, 0.0, 1.0, gen, dtype);
}

// 0, 1, ..., n-1 in the given shape.
Tensor iota(const Shape& shape, DType dtype = Float32) { return reshape(arange(shape.numel(), dtype), shape); }

void check_gradcheck(const Fn& fn, const Shape& shape, std::uint64_t seed = 1) {
  GradcheckReport report = gradcheck(fn, {randn(shape, seed).requires_grad_()});
  CHECK_MESSAGE(report.passed, report.str());
}

void check_float32_matches_float64(const Fn& fn, const Shape& shape) {
  Tensor x = randn(shape, 100);
  Tensor x64 = x.clone().requires_grad_(), x32 = x.to(Float32).requires_grad_();
  Tensor y64 = fn({x64}), y32 = fn({x32});
  REQUIRE(y32.dtype() == Float32);
  CHECK(allclose(y32.to(Float64), y64, 1e-6, 1e-6));
  Tensor r = randn(y64.shape(), 7);
  y64.backward(r);
  y32.backward(r.to(Float32));
  CHECK(allclose(x32.grad().to(Float64), x64.grad(), 1e-6, 1e-6));
}

bool all_nan(const Tensor& t) {
  for (double v : t.to_vector())
    if (!std::isnan(v)) return false;
  return true;
}
}  // namespace

TEST_CASE("sum: hand-computed values") {
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(sum(x).shape() == Shape{});
  CHECK(sum(x).item() == 21);
  CHECK(sum(x, 0).to_vector() == Values{5, 7, 9});
  CHECK(sum(x, 0).shape() == Shape{3});
  CHECK(sum(x, 1).to_vector() == Values{6, 15});
  CHECK(sum(x, -1, true).shape() == Shape{2, 1});
  CHECK(sum(x, -1, true).to_vector() == Values{6, 15});
  CHECK(sum(x, -2, true).shape() == Shape{1, 3});
  // x[a, j, i] = 12a + 4j + i, (2, 3, 4): summing j gives 3(12a + i) + 12
  Tensor z = iota({2, 3, 4});
  CHECK(sum(z, 1).to_vector() == Values{12, 15, 18, 21, 48, 51, 54, 57});
  CHECK(sum(z, 2).to_vector() == Values{6, 22, 38, 54, 70, 86});  // 4(12a + 4j) + 6
  CHECK(sum(z).item() == 276);                                     // 23 * 24 / 2
  CHECK(sum(scalar(3.5)).item() == 3.5);
  CHECK(sum(tensor({2.5}), 0).shape() == Shape{});
}

TEST_CASE("mean: hand-computed values") {
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(mean(x).item() == 3.5);
  CHECK(mean(x, 0).to_vector() == Values{2.5, 3.5, 4.5});
  CHECK(mean(x, 1, true).shape() == Shape{2, 1});
  CHECK(mean(x, 1, true).to_vector() == Values{2, 5});
  CHECK(mean(iota({2, 3, 4}), 1).to_vector() == Values{4, 5, 6, 7, 16, 17, 18, 19});
  CHECK(mean(scalar(-2)).item() == -2);
}

TEST_CASE("sum and mean: float32 sums accumulate in double") {
  // Float32 steps near 1e8 are 8 apart: a float accumulator would round every
  // + 1 away and stay at 1e8; 1e8 + 8 itself is a float32.
  Tensor x = tensor({1e8, 1, 1, 1, 1, 1, 1, 1, 1}, Float32);
  CHECK(sum(x).item() == 100000008.0);
  CHECK(sum(reshape(x, {1, 9}), 1).item() == 100000008.0);
  CHECK(sum(reshape(x, {9, 1}), 0).item() == 100000008.0);
  CHECK(mean(reshape(x, {9, 1}), 0).item() == doctest::Approx(100000008.0 / 9));
}

TEST_CASE("sum and mean: hand-computed gradients") {
  Tensor x = zeros({2, 3}).requires_grad_();
  sum(x, 1).backward(tensor({1, 2}));
  CHECK(x.grad().to_vector() == Values{1, 1, 1, 2, 2, 2});
  x.zero_grad();
  mean(x, 0, true).backward(tensor({3, 6, 9}, {1, 3}));
  CHECK(x.grad().to_vector() == Values{1.5, 3, 4.5, 1.5, 3, 4.5});
  x.zero_grad();
  sum(x).backward(scalar(2));
  CHECK(x.grad().to_vector() == Values{2, 2, 2, 2, 2, 2});
  x.zero_grad();
  mean(x).backward(scalar(6));
  CHECK(x.grad().to_vector() == Values{1, 1, 1, 1, 1, 1});
  // Middle axis of (2, 3, 2): every j of an (a, i) gets dy[a, i] / 3.
  Tensor z = zeros({2, 3, 2}).requires_grad_();
  mean(z, 1).backward(tensor({3, 6, 9, 12}, {2, 2}));
  CHECK(z.grad().to_vector() == Values{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
}

TEST_CASE("sum and mean: gradcheck") {
  check_gradcheck([](const auto& in) { return sum(in[0]); }, {3, 4});
  check_gradcheck([](const auto& in) { return mean(in[0]); }, {2, 3, 2});
  check_gradcheck([](const auto& in) { return sum(in[0]); }, Shape{});
  check_gradcheck([](const auto& in) { return mean(in[0]); }, Shape{1});
  for (bool keepdim : {false, true}) {
    CAPTURE(keepdim);
    check_gradcheck([=](const auto& in) { return sum(in[0], 0, keepdim); }, {3, 4});
    check_gradcheck([=](const auto& in) { return sum(in[0], 1, keepdim); }, {2, 3, 4});
    check_gradcheck([=](const auto& in) { return sum(in[0], -1, keepdim); }, {2, 3, 4});
    check_gradcheck([=](const auto& in) { return mean(in[0], 0, keepdim); }, {2, 3, 4});
    check_gradcheck([=](const auto& in) { return mean(in[0], -2, keepdim); }, {2, 3, 4});
    check_gradcheck([=](const auto& in) { return mean(in[0], 2, keepdim); }, {2, 3, 4});
    check_gradcheck([=](const auto& in) { return mean(in[0], 0, keepdim); }, {1});
  }
  // One input used twice: the reduction's contribution adds to the other one's.
  check_gradcheck([](const auto& in) { return mul(sum(in[0], 0), mean(in[0], 0)); }, {3, 2});
  check_gradcheck([](const auto& in) { return add(in[0], sum(in[0])); }, {2, 3});
  check_gradcheck([](const auto& in) { return mul(in[0], mean(in[0])); }, {2, 3});
  check_gradcheck([](const auto& in) { return add(in[0], sum(in[0], 1, true)); }, {2, 3});
}

TEST_CASE("sum and mean: float32 agrees with float64") {
  check_float32_matches_float64([](const auto& in) { return sum(in[0]); }, {5, 7});
  check_float32_matches_float64([](const auto& in) { return mean(in[0]); }, {5, 7});
  check_float32_matches_float64([](const auto& in) { return sum(in[0], 1); }, {3, 4, 5});
  check_float32_matches_float64([](const auto& in) { return mean(in[0], -1, true); }, {3, 4, 5});
}

TEST_CASE("sum and mean: empty tensors (the mean of nothing is NaN, as in PyTorch)") {
  CHECK(sum(zeros({0})).item() == 0);
  CHECK(std::isnan(mean(zeros({0})).item()));
  CHECK(std::isnan(mean(zeros({2, 0}, Float64)).item()));
  CHECK(sum(zeros({2, 0}), 1).to_vector() == Values{0, 0});
  Tensor m = mean(zeros({2, 0}), 1);
  CHECK(m.shape() == Shape{2});
  CHECK(all_nan(m));
  CHECK(all_nan(mean(zeros({0, 3}), 0, true)));
  CHECK(mean(zeros({0, 3}), 0, true).shape() == Shape{1, 3});
  CHECK(mean(zeros({0, 3}), 1).shape() == Shape{0});
  // The backward of an empty input has nothing to do, and does not fail.
  Tensor e = zeros({0, 3}).requires_grad_();
  mean(e).backward();
  CHECK(e.grad().shape() == Shape{0, 3});
  mean(e, 0).backward(ones({3}));
  sum(e, 1).backward(ones({0}));
  CHECK(e.grad().shape() == Shape{0, 3});
}

TEST_CASE("sum and mean: errors") {
  CHECK_THROWS_WITH_AS(sum(zeros({2, 3}), 2), "sum: axis 2 is out of range for a tensor of shape [2, 3]", Error);
  CHECK_THROWS_WITH_AS(mean(zeros({2, 3}), -3), "mean: axis -3 is out of range for a tensor of shape [2, 3]", Error);
  CHECK_THROWS_WITH_AS(sum(scalar(1), 0), "sum: axis 0 is out of range for a tensor of shape []", Error);
  CHECK_THROWS_WITH_AS(sum(Tensor()), "sum: input is an undefined tensor", Error);
  CHECK_THROWS_WITH_AS(mean(Tensor()), "mean: input is an undefined tensor", Error);
  CHECK_THROWS_WITH_AS(sum(Tensor(), 0), "sum: input is an undefined tensor", Error);
  CHECK_THROWS_WITH_AS(mean(Tensor(), 0, true), "mean: input is an undefined tensor", Error);
}
