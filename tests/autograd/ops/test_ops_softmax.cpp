// autograd/ops/softmax.cpp: softmax, log_softmax, masked_softmax, masked_fill.
#include <cmath>
#include <functional>
#include <limits>

#include <doctest/doctest.h>

#include "autograd/autograd.hpp"
#include "core/core.hpp"

using namespace attend;

namespace {
const double kInf = std::numeric_limits<double>::infinity();

Tensor randn(const Shape& shape, std::uint64_t seed, double stddev = 1.0) {
  Generator gen(seed);
  return normal(shape, 0.0, stddev, gen, Float64).requires_grad_();
}

void check_close(const Tensor& got, std::initializer_list<double> want, double tol = 1e-10) {
  const std::vector<double> g = got.to_vector();
  REQUIRE(g.size() == want.size());
  std::size_t i = 0;
  for (double w : want) {
    CHECK_MESSAGE(std::abs(g[i] - w) <= tol, "element ", i, ": got ", g[i], ", want ", w);
    ++i;
  }
}

std::vector<double> row_of(const Tensor& t, std::int64_t r) {  // row r of a (R, C) tensor
  std::vector<double> out;
  for (std::int64_t c = 0; c < t.size(1); ++c) out.push_back(t.at({r, c}));
  return out;
}

bool all_finite(const Tensor& t) {
  for (double v : t.to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

using UnaryOp = std::function<Tensor(const Tensor&)>;

// Runs f on x in float64 and float32 with the same upstream gradient; values and
// gradients must agree to float32 precision.
void check_float32_agrees(const UnaryOp& f, const Tensor& x64) {
  Generator gen(99);
  Tensor x = x64.detach().clone().requires_grad_();
  Tensor x32 = x64.detach().to(Float32).requires_grad_();
  Tensor y = f(x), y32 = f(x32);
  Tensor dy = normal(y.shape(), 0, 1, gen, Float64);
  y.backward(dy);
  y32.backward(dy.to(Float32));
  CHECK(y32.dtype() == Float32);
  CHECK(max_abs_diff(y32.to(Float64), y) < 1e-5);
  CHECK(max_abs_diff(x32.grad().to(Float64), x.grad()) < 1e-5);
}
}  // namespace

// ---- softmax and log_softmax --------------------------------------------------

TEST_CASE("softmax and log_softmax of [1, 2, 3] by hand") {
  // exp(x - 3) = [e^-2, e^-1, 1] = [0.135335283237, 0.367879441171, 1], sum 1.503214724408
  // softmax = [0.135335283237, 0.367879441171, 1] / 1.503214724408 = [0.090030573170, 0.244728471055, 0.665240955775]
  // log_softmax = x - (3 + log 1.503214724408) = x - 3.407605964444
  Tensor x = tensor({1, 2, 3}, Float64);
  check_close(softmax(x, 0), {0.090030573170, 0.244728471055, 0.665240955775}, 1e-11);
  check_close(log_softmax(x, -1), {-2.407605964444, -1.407605964444, -0.407605964444}, 1e-11);
}

TEST_CASE("softmax and log_softmax backward by hand, dy = [1, 0, 0]") {
  // softmax: dx = y * (dy - dot(y, dy)) = y * (dy - y0), y0 = 0.090030573170
  //   dx0 = 0.090030573170 * (1 - 0.090030573170) = 0.081925069065
  //   dx1 = 0.244728471055 * -0.090030573170 = -0.022033044520
  //   dx2 = 0.665240955775 * -0.090030573170 = -0.059892024545
  Tensor x = tensor({1, 2, 3}, Float64).requires_grad_();
  softmax(x, 0).backward(tensor({1, 0, 0}, Float64));
  check_close(x.grad(), {0.081925069065, -0.022033044520, -0.059892024545}, 1e-11);
  // log_softmax: dx = dy - softmax(x) * sum(dy) = [1, 0, 0] - y
  x.zero_grad();
  log_softmax(x, 0).backward(tensor({1, 0, 0}, Float64));
  check_close(x.grad(), {0.909969426830, -0.244728471055, -0.665240955775}, 1e-11);
}

TEST_CASE("softmax is stable for large and very negative inputs") {
  // Shifting a row does not change its softmax; exp(1002) would overflow.
  Tensor big = tensor({1001, 1002, 1003}, Float32);
  check_close(softmax(big, 0), {0.090030573170, 0.244728471055, 0.665240955775}, 1e-6);
  check_close(log_softmax(big, 0), {-2.407605964444, -1.407605964444, -0.407605964444}, 1e-5);
  Tensor spread = tensor({-1000, 0}, Float32);  // exp(-1000) underflows to 0; log_softmax must not be -inf
  check_close(log_softmax(spread, 0), {-1000, 0}, 1e-4);
  CHECK(softmax(spread, 0).to_vector() == std::vector<double>{0, 1});
}

TEST_CASE("softmax along each axis, negative axes") {
  // x (2, 3): along axis 0 each column is a 2-way softmax; along axis 1 each row a 3-way one.
  Tensor x = tensor({1, 2, 3, 2, 2, 5}, {2, 3}, Float64);
  // column 0: softmax([1, 2]) = [1/(1+e), e/(1+e)] = [0.268941421370, 0.731058578630]; column 1 equal: [0.5, 0.5]
  // column 2: softmax([3, 5]) = [0.119202922022, 0.880797077978]
  check_close(softmax(x, 0), {0.268941421370, 0.5, 0.119202922022, 0.731058578630, 0.5, 0.880797077978}, 1e-11);
  CHECK(equal(softmax(x, -2), softmax(x, 0)));
  CHECK(equal(softmax(x, -1), softmax(x, 1)));
  // row 1: softmax([2, 2, 5]) = [1, 1, e^3] / (2 + e^3) = [1, 1, 20.085536923188] / 22.085536923188
  //   = [0.045278500744, 0.045278500744, 0.909442998513]
  const std::vector<double> r1 = row_of(softmax(x, 1), 1), want = {0.045278500744, 0.045278500744, 0.909442998513};
  for (int k = 0; k < 3; ++k) CHECK(std::abs(r1[k] - want[k]) < 1e-11);
  // A middle axis of a (2, 3, 2) tensor equals the last axis of its transpose, element for element.
  Tensor t = randn({2, 3, 2}, 1);
  Tensor y = softmax(t, 1);
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t j = 0; j < 2; ++j) {
      double s = 0, z = 0;
      for (std::int64_t k = 0; k < 3; ++k) z += std::exp(t.at({b, k, j}));
      for (std::int64_t k = 0; k < 3; ++k) {
        CHECK(y.at({b, k, j}) == doctest::Approx(std::exp(t.at({b, k, j})) / z).epsilon(1e-12));
        s += y.at({b, k, j});
      }
      CHECK(s == doctest::Approx(1.0).epsilon(1e-14));
    }
  const std::vector<double> a = log_softmax(t, -2).to_vector(), b = log(softmax(t, 1)).to_vector();
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-12));
}

TEST_CASE("softmax and log_softmax gradcheck in float64") {
  struct Case {
    Shape shape;
    int axis;
  };
  for (const Case& c : {Case{{5}, 0}, Case{{3, 5}, -1}, Case{{3, 5}, 0}, Case{{2, 3, 4}, 1}, Case{{2, 3, 4}, -3},
                        Case{{1, 1}, 1}}) {
    CAPTURE(c.shape);
    CAPTURE(c.axis);
    auto r1 = gradcheck([&](const std::vector<Tensor>& in) { return softmax(in[0], c.axis); }, {randn(c.shape, 2, 3)});
    CHECK_MESSAGE(r1.passed, r1.str());
    auto r2 =
        gradcheck([&](const std::vector<Tensor>& in) { return log_softmax(in[0], c.axis); }, {randn(c.shape, 3, 3)});
    CHECK_MESSAGE(r2.passed, r2.str());
  }
}

TEST_CASE("softmax and log_softmax: float32 agrees with float64") {
  check_float32_agrees([](const Tensor& x) { return softmax(x, -1); }, randn({4, 7}, 4, 2));
  check_float32_agrees([](const Tensor& x) { return softmax(x, 0); }, randn({4, 7}, 5, 2));
  check_float32_agrees([](const Tensor& x) { return log_softmax(x, 1); }, randn({3, 4, 5}, 6, 2));
}

TEST_CASE("softmax errors") {
  Tensor x = zeros({3, 4});
  CHECK_THROWS_WITH_AS(softmax(x, 2), "softmax: axis 2 is out of range for a tensor of shape [3, 4]", Error);
  CHECK_THROWS_WITH_AS(log_softmax(x, -3), "log_softmax: axis -3 is out of range for a tensor of shape [3, 4]",
                       Error);
  CHECK_THROWS_WITH_AS(softmax(Tensor(), 0), "softmax: input is an undefined tensor", Error);
}

// ---- masked_softmax -------------------------------------------------------------

TEST_CASE("masked_softmax by hand: masked weights are exactly 0") {
  // x = [1, 2, 3], mask [1, 0, 1]: softmax of [1, 3] at positions 0 and 2
  //   = [1, e^2] / (1 + e^2) = [0.119202922022, 0.880797077978]
  Tensor x = tensor({1, 2, 3}, Float64).requires_grad_();
  Tensor y = masked_softmax(x, tensor({1, 0, 1}, Float64), 0);
  check_close(y, {0.119202922022, 0, 0.880797077978}, 1e-11);
  CHECK(y.at({1}) == 0.0);
  // dy = [1, 5, 0]: dot(y, dy) = y0 = 0.119202922022 (y1 = 0 hides dy1 = 5);
  // dx0 = y0 (1 - y0) = 0.119202922022 * 0.880797077978 = 0.104993585404,
  // dx2 = y2 (0 - y0) = -0.104993585404, dx1 exactly 0.
  y.backward(tensor({1, 5, 0}, Float64));
  check_close(x.grad(), {0.104993585404, 0, -0.104993585404}, 1e-11);
  CHECK(x.grad().at({1}) == 0.0);
}

TEST_CASE("masked_softmax: fully masked rows are zeros, not NaN, with zero gradient") {
  // (2, 3, 4) with row (0, 1) fully masked, row (1, 0) keeping one position.
  Tensor mask = tensor({1, 0, 1, 1, /**/ 0, 0, 0, 0, /**/ 1, 1, 1, 1,  //
                        0, 0, 1, 0, /**/ 1, 1, 0, 1, /**/ 0, 1, 1, 0},
                       {2, 3, 4}, Float32);
  Generator gen(7);
  for (DType dtype : {Float32, Float64}) {
    Tensor x = normal({2, 3, 4}, 0, 3, gen, dtype).requires_grad_();
    Tensor y = masked_softmax(x, mask, -1);
    CHECK(all_finite(y));
    Tensor dy = normal({2, 3, 4}, 0, 1, gen, dtype);
    y.backward(dy);
    CHECK(all_finite(x.grad()));
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t t = 0; t < 3; ++t) {
        double row = 0;
        bool any = false;
        for (std::int64_t s = 0; s < 4; ++s) {
          if (mask.at({b, t, s}) == 0) {
            CHECK(y.at({b, t, s}) == 0.0);          // exactly
            CHECK(x.grad().at({b, t, s}) == 0.0);   // exactly
          } else {
            any = true;
          }
          row += y.at({b, t, s});
        }
        CHECK(row == doctest::Approx(any ? 1.0 : 0.0).epsilon(1e-6));
      }
    // The single kept position gets weight exactly 1, and a constant has gradient exactly 0.
    CHECK(y.at({1, 0, 2}) == 1.0);
    for (std::int64_t s = 0; s < 4; ++s) CHECK(x.grad().at({1, 0, s}) == 0.0);
  }
}

TEST_CASE("masked_softmax ignores the values at masked positions, even -inf and NaN") {
  Tensor x = tensor({2, kInf, -kInf, 1, std::nan("")}, Float64).requires_grad_();
  Tensor mask = tensor({1, 0, 0, 1, 0}, Float64);
  Tensor y = masked_softmax(x, mask, 0);
  // softmax([2, 1]) = [e, 1] / (e + 1) = [0.731058578630, 0.268941421370]
  check_close(y, {0.731058578630, 0, 0, 0.268941421370, 0}, 1e-11);
  y.backward(tensor({1, 1, 1, 1, 1}, Float64));
  CHECK(all_finite(x.grad()));
}

TEST_CASE("masked_softmax agrees with softmax(masked_fill(x, mask, -inf)) when every row keeps something") {
  // The composed version is the oracle (it gives NaN on fully masked rows, which the fused op avoids).
  Tensor mask = tensor({1, 1, 0, 0, 1, /**/ 0, 1, 0, 1, 1, /**/ 0, 0, 0, 0, 1}, {3, 5}, Float64);
  Tensor x1 = randn({3, 5}, 8), x2 = x1.detach().clone().requires_grad_();
  Tensor fused = masked_softmax(x1, mask, 1);
  Tensor composed = softmax(masked_fill(x2, mask, -kInf), 1);
  CHECK(max_abs_diff(fused, composed) < 1e-15);
  Generator gen(9);
  Tensor dy = normal({3, 5}, 0, 1, gen, Float64);
  fused.backward(dy);
  composed.backward(dy);
  CHECK(max_abs_diff(x1.grad(), x2.grad()) < 1e-15);
}

TEST_CASE("masked_softmax broadcasts the mask") {
  // x (B, T, S) = (2, 3, 4) with mask (B, 1, S): the same source positions masked for every target step.
  Tensor x = randn({2, 3, 4}, 10);
  Tensor small = tensor({1, 1, 0, 1, /**/ 0, 1, 0, 0}, {2, 1, 4}, Float64);
  Tensor full_mask = zeros({2, 3, 4}, Float64);
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t t = 0; t < 3; ++t)
      for (std::int64_t s = 0; s < 4; ++s) full_mask.set({b, t, s}, small.at({b, 0, s}));
  CHECK(equal(masked_softmax(x, small, -1), masked_softmax(x, full_mask, -1)));
  // (S) for x (B, S): missing leading axes broadcast.
  Tensor x2 = randn({3, 4}, 11);
  Tensor row = tensor({0, 1, 1, 0}, Float64);
  CHECK(equal(masked_softmax(x2, row, 1), masked_softmax(x2, tensor({0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0}, {3, 4},
                                                                    Float64), 1)));
  // The mask's dtype need not match x's.
  CHECK(equal(masked_softmax(x2, row.to(Float32), 1), masked_softmax(x2, row, 1)));
}

TEST_CASE("masked_softmax gradcheck in float64") {
  struct Case {
    const char* name;
    Tensor mask;
    int axis;
  };
  const Tensor partly = tensor({1, 1, 0, 0, /**/ 1, 0, 1, 1, /**/ 0, 0, 0, 1,  //
                                1, 1, 1, 1, /**/ 0, 1, 0, 0, /**/ 1, 0, 1, 0},
                               {2, 3, 4}, Float64);
  const Tensor empty_rows = tensor({1, 0, 1, 0, /**/ 0, 0, 0, 0, /**/ 1, 1, 1, 0,  //
                                    0, 1, 1, 1, /**/ 1, 0, 0, 0, /**/ 0, 0, 0, 0},
                                   {2, 3, 4}, Float64);
  for (const Case& c : {Case{"partly masked, one-position rows", partly, -1},
                        Case{"fully masked rows", empty_rows, 2},
                        Case{"masked along axis 1", partly, 1},
                        Case{"mask (2, 1, 4)", tensor({1, 1, 1, 0, 0, 1, 0, 1}, {2, 1, 4}, Float64), -1},
                        Case{"nothing masked", ones({2, 3, 4}, Float64), 0}}) {
    CAPTURE(c.name);
    auto r = gradcheck([&](const std::vector<Tensor>& in) { return masked_softmax(in[0], c.mask, c.axis); },
                       {randn({2, 3, 4}, 12, 2)});
    CHECK_MESSAGE(r.passed, r.str());
  }
}

TEST_CASE("masked_softmax: float32 agrees with float64") {
  Tensor mask = tensor({1, 0, 1, 1, 0, /**/ 0, 0, 0, 0, 0, /**/ 0, 0, 1, 0, 0}, {3, 5}, Float64);
  check_float32_agrees([&](const Tensor& x) { return masked_softmax(x, mask, -1); }, randn({3, 5}, 13, 2));
}

TEST_CASE("masked_softmax and masked_fill errors") {
  Tensor x = zeros({2, 3, 4});
  CHECK_THROWS_WITH_AS(masked_softmax(x, ones({2, 4}), -1),
                       "masked_softmax: mask of shape [2, 4] does not broadcast to x of shape [2, 3, 4] (mask axes "
                       "line up with x's last axes; each must be 1 or equal to x's)",
                       Error);
  CHECK_THROWS_WITH_AS(masked_softmax(x, ones({1, 2, 3, 4}), -1),
                       "masked_softmax: mask of shape [1, 2, 3, 4] does not broadcast to x of shape [2, 3, 4] (mask "
                       "axes line up with x's last axes; each must be 1 or equal to x's)",
                       Error);
  CHECK_THROWS_WITH_AS(masked_softmax(x, tensor({1, 0, 0.5, 1}), -1),
                       "masked_softmax: mask values must be 0 (masked) or 1 (kept), found 0.5 at flat index 2", Error);
  CHECK_THROWS_WITH_AS(masked_softmax(x, tensor({0, -kInf, 0, 0}), -1),
                       "masked_softmax: mask values must be 0 (masked) or 1 (kept), found -inf at flat index 1", Error);
  CHECK_THROWS_WITH_AS(masked_softmax(x, Tensor(), -1), "masked_softmax: mask is an undefined tensor", Error);
  CHECK_THROWS_WITH_AS(masked_softmax(x, ones({4}), 3),
                       "masked_softmax: axis 3 is out of range for a tensor of shape [2, 3, 4]", Error);
  CHECK_THROWS_WITH_AS(masked_fill(x, ones({3, 3}), 0.0),
                       "masked_fill: mask of shape [3, 3] does not broadcast to x of shape [2, 3, 4] (mask axes line "
                       "up with x's last axes; each must be 1 or equal to x's)",
                       Error);
}

// ---- masked_fill ------------------------------------------------------------------

TEST_CASE("masked_fill values and gradient") {
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, Float64).requires_grad_();
  Tensor mask = tensor({1, 0, 1}, Float64);  // broadcast over the rows
  Tensor y = masked_fill(x, mask, -7.5);
  CHECK(y.to_vector() == std::vector<double>{1, -7.5, 3, 4, -7.5, 6});
  y.backward(tensor({10, 20, 30, 40, 50, 60}, {2, 3}, Float64));
  CHECK(x.grad().to_vector() == std::vector<double>{10, 0, 30, 40, 0, 60});
  // -inf fills, the usual input to a softmax
  CHECK(masked_fill(x.detach(), mask, -kInf).at({1, 1}) == -kInf);
  for (const Tensor& m : {tensor({1, 1, 0, 0, 1, 0}, {2, 3}, Float64), tensor({0, 1}, {2, 1}, Float64)}) {
    auto r = gradcheck([&](const std::vector<Tensor>& in) { return masked_fill(in[0], m, 2.0); }, {randn({2, 3}, 14)});
    CHECK_MESSAGE(r.passed, r.str());
  }
}
