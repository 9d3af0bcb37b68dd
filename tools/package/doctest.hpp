#pragma once
// Gradient checks in a doctest test file. Installed as <attend/doctest.hpp>:
//
//   #define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN  // in one file of the test program
//   #include <attend/doctest.hpp>
//
//   TEST_CASE("my op has the right gradient") {
//     attend::Generator gen(1);
//     attend::Tensor x = attend::normal({3, 4}, 0, 1, gen, attend::Float64).requires_grad_();
//     CHECK_GRADIENTS([](const attend::Tensors& in) { return my_op(in[0]); }, {x});
//   }
//
// CHECK_GRADIENTS(fn, inputs[, options]) runs attend::gradcheck with these
// arguments as they are and, when it fails, prints its whole report: each
// wrong element with its analytic and numeric value, the hint when a backward
// assigns where it must add, and the per-node check naming the first wrong op.
// REQUIRE_GRADIENTS stops the test case there. Link doctest::doctest and
// attend::attend (the README shows the CMake lines).
//
// These are macros because doctest's checks must be: they record the file and
// line of the test that called them.
#include <doctest/doctest.h>

#include "autograd/gradcheck/gradcheck.hpp"

#define CHECK_GRADIENTS(...) ATTEND_CHECK_GRADIENTS_WITH(CHECK_MESSAGE, __VA_ARGS__)
#define REQUIRE_GRADIENTS(...) ATTEND_CHECK_GRADIENTS_WITH(REQUIRE_MESSAGE, __VA_ARGS__)

// The arguments are passed on whole (__VA_ARGS__), so commas inside a lambda
// or a braced list of inputs need no extra parentheses.
#define ATTEND_CHECK_GRADIENTS_WITH(check, ...)                                       \
  do {                                                                                \
    const ::attend::GradcheckReport attend_gradcheck_report = ::attend::gradcheck(__VA_ARGS__); \
    check(attend_gradcheck_report.passed, attend_gradcheck_report.str());             \
  } while (false)
