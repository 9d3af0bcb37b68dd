// gradcheck's accumulation check inside a graph (issue 40, item 6): a backward
// that assigns dx = v where it must add dx += v is caught for every op fn
// records, not only for the ops that read fn's inputs. The engine hands an op
// whose input is an intermediate with one consumer a zeroed slot, so such a
// backward gives the right numbers there; gradcheck re-runs each op on its own
// with its inputs' slots seeded, and names the op that loses the seed.
#include <doctest/doctest.h>

#include "autograd/custom_op.hpp"
#include "autograd/gradcheck/gradcheck.hpp"
#include "autograd/ops.hpp"

using namespace attend;

namespace {

Tensor randn(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  return normal(shape, 0.0, 1.0, gen, Float64).requires_grad_();
}

// y = 2 x   dx += 2 dy   (correct: the op in front of the one under test)
const CustomOp twice{.name = "twice",
                     .input_names = {"x"},
                     .forward = [](OpContext&, const Tensors& in) { return Tensors{in[0] * 2.0}; },
                     .backward =
                         [](const OpContext&, Grads& g) {
                           if (g.needs(0)) g.dx(0).add_(g.dy(), 2.0);
                         }};

// y = softmax(x) along the last axis   dx += y * (dy - sum(y * dy))   (per row)
// written as a user would, element by element; `assigns` writes dx[i] = v.
CustomOp row_softmax(const char* name, bool assigns) {
  return {.name = name,
          .input_names = {"x"},
          .forward =
              [](OpContext& ctx, const Tensors& in) {
                Tensor y = softmax(in[0], -1);
                ctx.save({y});
                return Tensors{y};
              },
          .backward =
              [assigns](const OpContext& ctx, Grads& g) {
                if (!g.needs(0)) return;
                const Tensor& y = ctx.saved(0);
                const Tensor v = y * (g.dy() - sum(y * g.dy(), -1, /*keepdim=*/true));
                double* dx = g.dx(0).data<double>();
                const double* pv = v.data<double>();
                for (std::int64_t i = 0; i < v.numel(); ++i) {
                  if (assigns) dx[i] = pv[i];
                  else dx[i] += pv[i];
                }
              }};
}

}  // namespace

TEST_CASE("a softmax that assigns dx, fed by another custom op, fails gradcheck with default options and is named") {
  const CustomOp wrong = row_softmax("softmax_assigns", true);
  Tensor x = randn({3, 4}, 1);
  GradcheckReport r = gradcheck([&](const Tensors& in) { return wrong(twice(in)); }, {x});
  CHECK_FALSE(r.passed);
  const std::string s = r.str();
  INFO(s);
  CHECK(s.find("softmax_assigns") != std::string::npos);
  CHECK(s.find("assigns (dx = ...) where it must add (dx += ...)") != std::string::npos);
  CHECK(r.first_wrong_node_summary().rfind("softmax_assigns: dL/dx is assigned, not added", 0) == 0);
}

TEST_CASE("the same softmax adding into dx passes") {
  const CustomOp right = row_softmax("softmax_adds", false);
  Tensor x = randn({3, 4}, 1);
  GradcheckReport r = gradcheck([&](const Tensors& in) { return right(twice(in)); }, {x});
  INFO(r.str());
  CHECK(r.passed);
}

TEST_CASE("the fault is in the report's fields: op, input, element and values, the whole gradient alone is right") {
  const CustomOp wrong = row_softmax("softmax_assigns", true);
  Tensor x = randn({3, 4}, 1);
  GradcheckReport r = gradcheck([&](const Tensors& in) { return wrong(twice(in)); }, {x});
  INFO(r.str());
  REQUIRE(r.inputs.size() == 1);
  CHECK(r.inputs[0].passed);  // what the engine computes is right: the slot it handed over was zero
  CHECK(r.accumulation_checked == 2);
  CHECK(r.accumulation_unchecked == 0);
  REQUIRE(r.accumulation_faults.size() == 1);
  const AccumulationFault& f = r.accumulation_faults[0];
  CHECK(f.op == "softmax_assigns");
  CHECK(f.input == "x");
  CHECK(f.position == 2);  // after twice
  CHECK(f.index.size() == 2);
  CHECK(f.assigns());
  CHECK(f.result == doctest::Approx(f.added));
  CHECK(std::abs(f.result - (f.seed + f.added)) > 1e-3);
}

TEST_CASE("the accumulation check runs whether or not the whole check fails, with or without per-node mode") {
  // twice with a sign error in front: the whole gradient is wrong too.
  const CustomOp minus_twice{.name = "minus_twice",
                             .input_names = {"x"},
                             .forward = [](OpContext&, const Tensors& in) { return Tensors{in[0] * 2.0}; },
                             .backward = [](const OpContext&, Grads& g) { g.dx(0).add_(g.dy(), -2.0); }};
  const CustomOp wrong = row_softmax("softmax_assigns", true);
  Tensor x = randn({2, 5}, 2);
  GradcheckOptions o;
  o.per_node = false;
  GradcheckReport r = gradcheck([&](const Tensors& in) { return wrong(minus_twice(in)); }, {x}, o);
  INFO(r.str());
  CHECK_FALSE(r.passed);
  CHECK_FALSE(r.inputs[0].passed);
  REQUIRE(r.accumulation_faults.size() == 1);
  CHECK(r.accumulation_faults[0].op == "softmax_assigns");
  CHECK(r.nodes.empty());
  CHECK(r.str().find("first wrong op: softmax_assigns: dL/dx is assigned, not added") != std::string::npos);
}

TEST_CASE("a backward that rescales the slot before adding is caught, and told apart from an assignment") {
  const CustomOp halves{.name = "halves_the_slot",
                        .input_names = {"x"},
                        .forward = [](OpContext&, const Tensors& in) { return Tensors{in[0] * 3.0}; },
                        .backward =
                            [](const OpContext&, Grads& g) {
                              g.dx(0).mul_(0.5);  // the slot is zero when the engine hands it over
                              g.dx(0).add_(g.dy(), 3.0);
                            }};
  Tensor x = randn({4}, 3);
  GradcheckReport r = gradcheck([&](const Tensors& in) { return tanh(halves({tanh(in[0])})[0]); }, {x});
  INFO(r.str());
  CHECK_FALSE(r.passed);
  REQUIRE(r.accumulation_faults.size() == 1);
  CHECK(r.accumulation_faults[0].op == "halves_the_slot");
  CHECK_FALSE(r.accumulation_faults[0].assigns());
  CHECK(r.str().find("changes what the slot held") != std::string::npos);
}

TEST_CASE("every library op of a graph is checked, and the check can be turned off") {
  Tensor x = randn({2, 3}, 4);
  Tensor w = randn({3, 3}, 5);
  auto fn = [](const Tensors& in) { return sum(tanh(matmul(in[0], in[1])) * in[0]); };  // matmul, tanh, mul, sum
  GradcheckReport r = gradcheck(fn, {x, w});
  INFO(r.str());
  CHECK(r.passed);
  CHECK(r.accumulation_checked == 4);
  CHECK(r.accumulation_unchecked == 0);
  GradcheckOptions off;
  off.check_accumulation = false;
  const CustomOp wrong = row_softmax("softmax_assigns", true);
  GradcheckReport quiet = gradcheck([&](const Tensors& in) { return wrong(twice(in)); }, {x}, off);
  CHECK(quiet.passed);
  CHECK(quiet.accumulation_checked == 0);
}
