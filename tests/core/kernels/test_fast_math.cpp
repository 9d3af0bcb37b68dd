// core/kernels/fast_math: the vectorisable float exp, tanh and sigmoid against the
// library functions, and the whole-array loops against plain loops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/kernels/detail/fast_math.hpp"
#include "core/random.hpp"

using namespace attend;

namespace {

// Distance in units in the last place between two finite floats of the same sign
// (or between a float and 0 across the sign): how many floats lie between them.
double ulps(float a, float b) {
  if (a == b) return 0;
  const double spacing = std::nextafter(std::fabs(b), std::numeric_limits<float>::infinity()) - std::fabs(b);
  return std::fabs(double(a) - double(b)) / spacing;
}

// The worst ulp error of f against the exact (double) reference over a dense grid.
template <class F, class R>
double worst_ulps(double lo, double hi, int steps, F f, R reference) {
  double worst = 0;
  for (int k = 0; k <= steps; ++k) {
    const float x = static_cast<float>(lo + (hi - lo) * k / steps);
    const float exact = static_cast<float>(reference(double(x)));
    worst = std::max(worst, ulps(f(x), exact));
  }
  return worst;
}

}  // namespace

TEST_CASE("float exp is within 1 ulp of the exact value on [-87, 88]") {
  CHECK(worst_ulps(-87, 88, 200000, [](float x) { return fast_math::exp(x); }, [](double x) { return std::exp(x); }) <=
        1.0);
  CHECK(fast_math::exp(0.0f) == 1.0f);
  // Clamped, never 0 or inf: e^-1000 is e^-87, e^1000 is e^88.
  CHECK(fast_math::exp(-1000.0f) == fast_math::exp(-87.0f));
  CHECK(fast_math::exp(-1000.0f) > 0.0f);
  CHECK(std::isfinite(fast_math::exp(1000.0f)));
}

TEST_CASE("float exp2 is within 1 ulp of the exact value on [-125, 64], clamps below, and keeps NaN") {
  const auto f = [](float t) { return fast_math::exp2(t); };
  const auto exact = [](double t) { return std::exp2(t); };
  CHECK(worst_ulps(-125, 64, 200000, f, exact) <= 1.0);
  CHECK(worst_ulps(-1, 1, 200000, f, exact) <= 1.0);  // every rounding of n: f from -1/2 to 1/2
  CHECK(fast_math::exp2(0.0f) == 1.0f);
  CHECK(fast_math::exp2(10.0f) == 1024.0f);
  CHECK(fast_math::exp2(-200.0f) == std::exp2(-125.0f));  // the clamp: 2^-125, a normal float
  CHECK(fast_math::exp2(-std::numeric_limits<float>::infinity()) == std::exp2(-125.0f));
  CHECK(std::isnan(fast_math::exp2(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("exp and sigmoid with the opaque bounds of exp_range() are exp and sigmoid") {
  const fast_math::ExpRange range = fast_math::exp_range();
  CHECK(range.lo == -87.0f);
  CHECK(range.hi == 88.0f);
  for (float x : {-1000.0f, -87.5f, -3.0f, 0.0f, 0.5f, 87.9f, 88.5f, 1000.0f}) {
    CHECK(fast_math::exp(x, range) == fast_math::exp(x));
    CHECK(fast_math::sigmoid(x, range) == fast_math::sigmoid(x));
  }
}

TEST_CASE("float tanh is within 1.5 ulp of the exact value, near 0 too, and odd") {
  auto f = [](float x) { return fast_math::tanh(x); };
  auto exact = [](double x) { return std::tanh(x); };
  CHECK(worst_ulps(-12, 12, 200000, f, exact) <= 1.5);
  CHECK(worst_ulps(-1e-3, 1e-3, 20000, f, exact) <= 1.5);  // where 1 - 2/(e^2x + 1) would cancel
  CHECK(worst_ulps(0.95, 1.05, 20000, f, exact) <= 1.5);   // both sides of the switch at 1
  CHECK(worst_ulps(8.9, 9.2, 20000, f, exact) <= 1.5);     // around the clamp at 9.03125
  for (float tiny : {1e-30f, 1e-40f, 1e-7f}) CHECK(fast_math::tanh(tiny) == tiny);
  CHECK(std::signbit(fast_math::tanh(-0.0f)));
  CHECK(std::isnan(fast_math::tanh(std::numeric_limits<float>::quiet_NaN())));
  CHECK(fast_math::tanh(std::numeric_limits<float>::infinity()) == 1.0f);
  CHECK(fast_math::tanh(-std::numeric_limits<float>::infinity()) == -1.0f);
  for (float x : {0.1f, 0.7f, 3.0f, 20.0f}) CHECK(fast_math::tanh(-x) == -fast_math::tanh(x));
  CHECK(fast_math::tanh(0.0f) == 0.0f);
  CHECK(fast_math::tanh(30.0f) == 1.0f);
  CHECK(fast_math::tanh(-30.0f) == -1.0f);
}

TEST_CASE("float sigmoid is within 3 ulp of the exact value and saturates without inf or nan") {
  auto exact = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  CHECK(worst_ulps(-80, 80, 200000, [](float x) { return fast_math::sigmoid(x); }, exact) <= 3.0);
  CHECK(fast_math::sigmoid(0.0f) == 0.5f);
  CHECK(fast_math::sigmoid(1000.0f) == 1.0f);
  CHECK(fast_math::sigmoid(-1000.0f) >= 0.0f);
  CHECK(fast_math::sigmoid(-1000.0f) < 1e-37f);
  // double: exact, and stable at both ends.
  CHECK(fast_math::sigmoid(800.0) == 1.0);
  CHECK(fast_math::sigmoid(-800.0) == 0.0);
  CHECK(fast_math::sigmoid(-30.0) == doctest::Approx(exact(-30.0)).epsilon(1e-14));
}

// The array loops run vectorised with a scalar tail: lengths around the vector
// width (8, 16) and odd lengths exercise both; 128 and more, exp_shifted_sum's
// blocks of 128 with a partial block of whole vectors and a tail (1,000: the S
// vocabulary, 7 blocks, then 6 vectors and 8 floats). The AVX2 build of a loop fuses
// multiply-adds (FMA) where this file's scalar calls do not, so a float element
// may differ from the scalar function by an ulp or two; double loops call the
// library and agree exactly.
TEST_CASE("the array loops agree with the scalar functions element by element, for every length") {
  Generator gen(3);
  for (std::int64_t n : {0, 1, 7, 8, 9, 16, 17, 100, 128, 143, 1000, 1003}) {
    CAPTURE(n);
    std::vector<float> x(n), b(n), y(n);
    std::vector<double> xd(n), bd(n), yd(n);
    for (std::int64_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(gen.normal() * 4), b[i] = static_cast<float>(gen.normal());
      xd[i] = x[i], bd[i] = b[i];
    }
    fast_math::tanh(x.data(), y.data(), n);
    for (std::int64_t i = 0; i < n; ++i) CHECK(ulps(y[i], fast_math::tanh(x[i])) <= 2);
    fast_math::sigmoid(x.data(), y.data(), n);
    for (std::int64_t i = 0; i < n; ++i) CHECK(ulps(y[i], fast_math::sigmoid(x[i])) <= 2);
    fast_math::tanh(xd.data(), yd.data(), n);
    for (std::int64_t i = 0; i < n; ++i) CHECK(yd[i] == std::tanh(xd[i]));

    // Sums: the lanes add in another order than a plain loop, so they agree to rounding.
    double plain_sq = 0, plain_dot = 0, plain_exp = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      plain_sq += double(x[i]) * x[i];
      plain_dot += double(x[i]) * b[i];
      plain_exp += std::exp(double(x[i]) - 2.0);
    }
    CHECK(fast_math::sum_of_squares(x.data(), n) == doctest::Approx(plain_sq).epsilon(1e-12));
    CHECK(fast_math::sum_of_squares(xd.data(), n) == doctest::Approx(plain_sq).epsilon(1e-12));
    CHECK(fast_math::dot_inline(x.data(), b.data(), n) == doctest::Approx(plain_dot).epsilon(1e-5).scale(1));
    CHECK(fast_math::dot_inline(xd.data(), bd.data(), n) == doctest::Approx(plain_dot).epsilon(1e-12).scale(1));

    std::vector<float> e(n);
    const double s = fast_math::exp_shifted_sum(x.data(), 2.0f, e.data(), n);
    CHECK(s == doctest::Approx(plain_exp).epsilon(1e-6));
    CHECK(fast_math::exp_shifted_sum(x.data(), 2.0f, nullptr, n) == s);  // with or without y, the same sum
    for (std::int64_t i = 0; i < n; ++i) CHECK(ulps(e[i], fast_math::exp(x[i] - 2.0f)) <= 2);
    std::vector<double> ed(n);
    CHECK(fast_math::exp_shifted_sum(xd.data(), 2.0, ed.data(), n) == doctest::Approx(plain_exp).epsilon(1e-12));
    for (std::int64_t i = 0; i < n; ++i) CHECK(ed[i] == std::exp(xd[i] - 2.0));
  }
}

TEST_CASE("the array loops work in place") {
  std::vector<float> x = {-3, -0.5f, 0, 0.25f, 2, 9, 10, 11, -20};
  std::vector<float> expected(x.size());
  fast_math::tanh(x.data(), expected.data(), static_cast<std::int64_t>(x.size()));
  fast_math::tanh(x.data(), x.data(), static_cast<std::int64_t>(x.size()));
  CHECK(x == expected);
}

TEST_CASE("max, scale_shift and axpy agree with plain loops, for every length") {
  Generator gen(5);
  for (std::int64_t n : {1, 7, 8, 9, 15, 16, 17, 31, 100, 1000, 1003}) {
    CAPTURE(n);
    std::vector<float> x(n), y(n);
    std::vector<double> xd(n), yd(n);
    for (std::int64_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(gen.normal() * 3), y[i] = static_cast<float>(gen.normal());
      xd[i] = x[i], yd[i] = y[i];
    }
    // The largest element put in each position in turn: every lane and the tail must be looked at.
    for (std::int64_t where = 0; where < n; ++where) {
      std::vector<float> z = x;
      z[where] = 50;
      CHECK(fast_math::max(z.data(), n) == 50);
      std::vector<double> zd(z.begin(), z.end());
      CHECK(fast_math::max(zd.data(), n) == 50);
    }
    float plain_max = x[0];
    for (float v : x) plain_max = std::max(plain_max, v);
    CHECK(fast_math::max(x.data(), n) == plain_max);

    std::vector<float> s = y;
    fast_math::scale_shift(0.5f, -2.0f, s.data(), n);
    std::vector<double> sd = yd;
    fast_math::scale_shift(0.5, -2.0, sd.data(), n);
    std::vector<float> a = y;
    fast_math::axpy(-1.5f, x.data(), a.data(), n);
    std::vector<double> ad = yd;
    fast_math::axpy(-1.5, xd.data(), ad.data(), n);
    for (std::int64_t i = 0; i < n; ++i) {
      // Exact in double; float may fuse the multiply and add (one rounding fewer).
      CHECK(sd[i] == 0.5 * yd[i] - 2.0);
      CHECK(s[i] == doctest::Approx(0.5 * yd[i] - 2.0).epsilon(1e-6).scale(1));
      CHECK(ad[i] == yd[i] + -1.5 * xd[i]);
      CHECK(a[i] == doctest::Approx(yd[i] - 1.5 * xd[i]).epsilon(1e-6).scale(1));
    }
  }
}

TEST_CASE("max skips NaNs and gives -inf for an empty or all-NaN array") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(20, -1.0f);
  x[0] = nan, x[9] = 3.0f, x[19] = nan;
  CHECK(fast_math::max(x.data(), 20) == 3.0f);
  std::vector<float> all_nan(11, nan);
  CHECK(fast_math::max(all_nan.data(), 11) == -inf);
  CHECK(fast_math::max(x.data(), 0) == -inf);
  std::vector<double> xd(x.begin(), x.end());
  CHECK(fast_math::max(xd.data(), 20) == 3.0);
}
