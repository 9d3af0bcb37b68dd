// autograd/ops/dropout.cpp: inverted dropout.
#include <cmath>
#include <limits>
#include <vector>

#include <doctest/doctest.h>

#include "autograd/autograd.hpp"
#include "core/core.hpp"

using namespace attend;

TEST_CASE("dropout keeps or zeroes each element and scales the survivors by 1/(1-p)") {
  // p = 0.75: survivors are x / 0.25 = 4x.
  Tensor x = add(arange(40, Float64), -19.5).detach().requires_grad_();  // -19.5 ... 19.5, no zeros
  Generator gen(3);
  Tensor y = dropout(x, 0.75, true, gen);
  int kept = 0;
  for (std::int64_t i = 0; i < 40; ++i) {
    const double v = y.at({i});
    CHECK((v == 0.0 || v == 4 * x.at({i})));
    kept += v != 0.0;
  }
  CHECK(kept > 0);  // with 40 elements all-kept or all-dropped would be (a seed-fixed) 1 in 10^5 event
  CHECK(kept < 40);
  // dx = dy * mask / (1-p): 4 * dy where kept, exactly 0 where dropped.
  Tensor dy = add(arange(40, Float64), 1.0);
  y.backward(dy);
  for (std::int64_t i = 0; i < 40; ++i) CHECK(x.grad().at({i}) == (y.at({i}) != 0.0 ? 4.0 * dy.at({i}) : 0.0));
}

TEST_CASE("dropout: the same seed gives the same mask, another seed another") {
  Tensor x = ones({1000});
  Generator a(11), b(11), c(12);
  Tensor ya = dropout(x, 0.5, true, a), yb = dropout(x, 0.5, true, b), yc = dropout(x, 0.5, true, c);
  CHECK(equal(ya, yb));
  CHECK_FALSE(equal(ya, yc));
  // The generator advances: a second call draws a new mask.
  CHECK_FALSE(equal(dropout(x, 0.5, true, a), ya));
}

TEST_CASE("dropout in evaluation, or with p = 0, returns x itself") {
  Tensor x = tensor({1, 2, 3}).requires_grad_();
  Generator gen(1);
  const auto before = gen.state();
  Tensor y = dropout(x, 0.5, false, gen);
  CHECK(y.same(x));  // no copy, no node
  CHECK(y.is_leaf());
  CHECK(dropout(x, 0.0, true, gen).same(x));
  CHECK(gen.state() == before);  // no random numbers drawn
}

TEST_CASE("dropout keeps about 1-p of a large tensor and preserves the expected value") {
  // 200000 elements: the kept fraction has standard deviation sqrt(p(1-p)/n) <= 0.0012,
  // so 0.01 is over 8 standard deviations.
  for (double p : {0.1, 0.5, 0.9}) {
    CAPTURE(p);
    Generator gen(static_cast<std::uint64_t>(p * 100));
    Tensor x = full({200000}, 3.0);
    Tensor y = dropout(x, p, true, gen);
    const std::vector<double> v = y.to_vector();
    double kept = 0, sum = 0;
    for (double e : v) {
      kept += e != 0.0;
      sum += e;
    }
    CHECK(std::abs(kept / double(v.size()) - (1 - p)) < 0.01);
    // E[y] = x: the mean stays near 3 (relative error ~ sqrt(p / ((1-p) n)) <= 0.007 for p = 0.9)
    CHECK(std::abs(sum / double(v.size()) - 3.0) < 0.05);
  }
}

TEST_CASE("dropout gradcheck in float64, the mask fixed by re-seeding") {
  for (double p : {0.2, 0.6}) {
    for (const Shape& shape : {Shape{7}, Shape{3, 4}, Shape{2, 3, 2}}) {
      Generator init(21);
      Tensor x = normal(shape, 0, 1, init, Float64).requires_grad_();
      auto r = gradcheck(
          [p](const std::vector<Tensor>& in) {
            Generator gen(5);
            return dropout(in[0], p, true, gen);
          },
          {x});
      CHECK_MESSAGE(r.passed, r.str());
    }
  }
}

TEST_CASE("dropout: float32 uses the same mask as float64 for the same seed") {
  Generator init(8);
  Tensor x64 = normal({50}, 0, 1, init, Float64).requires_grad_();
  Tensor x32 = x64.detach().to(Float32).requires_grad_();
  Generator g64(9), g32(9);
  Tensor y64 = dropout(x64, 0.3, true, g64), y32 = dropout(x32, 0.3, true, g32);
  CHECK(y32.dtype() == Float32);
  CHECK(max_abs_diff(y32.to(Float64), y64) < 1e-6);
  Tensor dy = normal({50}, 0, 1, init, Float64);
  y64.backward(dy);
  y32.backward(dy.to(Float32));
  CHECK(max_abs_diff(x32.grad().to(Float64), x64.grad()) < 1e-6);
}

TEST_CASE("dropout errors") {
  Tensor x = ones({3});
  Generator gen(0);
  CHECK_THROWS_WITH_AS(dropout(x, 1.0, true, gen), "dropout: p must be in [0, 1), got 1", Error);
  CHECK_THROWS_WITH_AS(dropout(x, -0.5, true, gen), "dropout: p must be in [0, 1), got -0.5", Error);
  CHECK_THROWS_WITH_AS(dropout(x, std::nan(""), true, gen), "dropout: p must be in [0, 1), got nan", Error);
  CHECK_THROWS_WITH_AS(dropout(x, 1.5, false, gen), "dropout: p must be in [0, 1), got 1.5", Error);  // even in eval
  CHECK_THROWS_WITH_AS(dropout(Tensor(), 0.5, true, gen), "dropout: input is an undefined tensor", Error);
}
