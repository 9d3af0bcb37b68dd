// A gradient-check test in a user's own doctest file (also shown in README.md).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN  // in one file of the test program
#include <doctest/doctest.h>

#include <attend/attend.hpp>

using namespace attend;

TEST_CASE("x * tanh(x) has the right gradient") {
  Generator gen(1);
  Tensor x = normal({3, 4}, 0, 1, gen, Float64).requires_grad_();
  GradcheckReport report = gradcheck([](const std::vector<Tensor>& in) { return in[0] * tanh(in[0]); }, {x});
  CHECK_MESSAGE(report.passed, report.str());
}
