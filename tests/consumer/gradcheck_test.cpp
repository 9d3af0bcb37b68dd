// Your own op with a hand-written backward, checked in your own doctest file
// (README.md shows this file as it is).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN  // in one file of the test program
#include <attend/attend.hpp>
#include <attend/doctest.hpp>

using namespace attend;

// y = softmax(x) along the last axis   dx += y * (dy - sum(y * dy))   (per row)
const CustomOp my_softmax{
    .name = "my_softmax",
    .input_names = {"x"},
    .forward =
        [](OpContext& ctx, const Tensors& in) {
          Tensor y = softmax(in[0], -1);  // plain tensors: nothing inside forward is recorded
          ctx.save({y});
          return Tensors{y};
        },
    .backward =
        [](const OpContext& ctx, Grads& g) {
          const Tensor& y = ctx.saved(0);
          const Tensor& dy = g.dy();
          if (g.needs(0)) g.dx(0).add_(y * (dy - sum(y * dy, -1, /*keepdim=*/true)));  // add, never assign
        }};

TEST_CASE("my_softmax has the right gradient") {
  Generator gen(1);
  Tensor x = normal({3, 4}, 0, 1, gen, Float64).requires_grad_();
  CHECK_GRADIENTS([](const Tensors& in) { return my_softmax(in); }, {x});
}

TEST_CASE("my_softmax inside a bigger function, and the per-node check") {
  Generator gen(2);
  Tensor x = normal({2, 5}, 0, 1, gen, Float64).requires_grad_();
  Tensor w = normal({5, 5}, 0, 1, gen, Float64).requires_grad_();
  auto fn = [](const Tensors& in) { return tanh(matmul(my_softmax({in[0]})[0], in[1])); };
  CHECK_GRADIENTS(fn, {x, w});
  GradcheckReport nodes = gradcheck_nodes(fn, {x, w});  // each op on its own
  CHECK(nodes.passed);
  CHECK(nodes.nodes.size() == 3);  // my_softmax, matmul, tanh
}

TEST_CASE("a backward that assigns instead of adding is caught, and the op named") {
  CustomOp assigning = my_softmax;
  assigning.name = "assigning_softmax";
  assigning.backward = [](const OpContext& ctx, Grads& g) {
    const Tensor& y = ctx.saved(0);
    g.dx(0) = y * (g.dy() - sum(y * g.dy(), -1, true));  // wrong: = where += is needed
  };
  Generator gen(3);
  Tensor x = normal({3, 4}, 0, 1, gen, Float64).requires_grad_();
  GradcheckReport report = gradcheck([&](const Tensors& in) { return assigning(in); }, {x});
  CHECK_FALSE(report.passed);
  CHECK(report.inputs.at(0).assigns_instead_of_adding);
  CHECK(report.first_wrong_node_summary() ==
        "assigning_softmax: dL/dx is assigned, not added (dx = ... where dx += ... is needed)");
}
