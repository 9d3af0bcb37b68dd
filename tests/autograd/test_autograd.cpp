// autograd/: the engine (accumulation, release, grad mode, anomalies), gradcheck
// itself, to_dot, and the element-wise and matmul ops.
#include <doctest/doctest.h>

#include "autograd/autograd.hpp"
#include "core/core.hpp"

using namespace attend;

namespace {
Tensor randn(const Shape& shape, std::uint64_t seed, DType dtype = Float64) {
  Generator gen(seed);
  return normal(shape, 0.0, 1.0, gen, dtype);
}
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
}  // namespace

TEST_CASE("element-wise ops: hand-computed values") {
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = tensor({10, 20, 30}, {3});
  CHECK(add(a, b).to_vector() == std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK(sub(a, b).to_vector() == std::vector<double>{-9, -18, -27, -6, -15, -24});
  CHECK(mul(a, b).to_vector() == std::vector<double>{10, 40, 90, 40, 100, 180});
  CHECK(div(b, tensor({2}, {1})).to_vector() == std::vector<double>{5, 10, 15});
  CHECK(neg(b).to_vector() == std::vector<double>{-10, -20, -30});
  CHECK((a * 2.0 + 1.0).to_vector() == std::vector<double>{3, 5, 7, 9, 11, 13});
  // (3, 1) with (1, 2) -> (3, 2): the outer sum
  CHECK(add(tensor({1, 2, 3}, {3, 1}), tensor({10, 20}, {1, 2})).to_vector() ==
        std::vector<double>{11, 21, 12, 22, 13, 23});
  Tensor x = tensor({-1, 0, 2}, Float64);
  CHECK(relu(x).to_vector() == std::vector<double>{0, 0, 2});
  CHECK(tanh(x).at({0}) == doctest::Approx(-0.7615941559557649));
  CHECK(sigmoid(x).at({1}) == 0.5);
  CHECK(sigmoid(tensor({-800.0}, Float64)).at({0}) == 0.0);  // no overflow for large |x|
  CHECK(exp(x).at({2}) == doctest::Approx(7.38905609893065));
  CHECK(log(tensor({1, 2.718281828459045}, Float64)).to_vector()[1] == doctest::Approx(1.0));
}

TEST_CASE("element-wise backward: hand-computed gradients") {
  // y = a * b + a, with a = [2, 3], b = [5, 7]: dy/da = b + 1 = [6, 8], dy/db = a = [2, 3]
  Tensor a = tensor({2, 3}).requires_grad_();
  Tensor b = tensor({5, 7}).requires_grad_();
  Tensor y = add(mul(a, b), a);
  y.backward(tensor({1, 1}));
  CHECK(a.grad().to_vector() == std::vector<double>{6, 8});
  CHECK(b.grad().to_vector() == std::vector<double>{2, 3});
  // Broadcasting: c (3) added to d (2, 3): dc is the column sum of the upstream gradient.
  Tensor c = tensor({1, 1, 1}).requires_grad_();
  Tensor d = zeros({2, 3});
  add(d, c).backward(tensor({1, 2, 3, 4, 5, 6}, {2, 3}));
  CHECK(c.grad().to_vector() == std::vector<double>{5, 7, 9});
  CHECK_FALSE(d.grad().defined());  // d does not require grad
}

TEST_CASE("gradients accumulate across backward calls and through reuse") {
  Tensor x = tensor({3.0}, Float64).requires_grad_();
  Tensor y = add(mul(x, x), x);  // x used three times: dy/dx = 2x + 1 = 7
  y.backward();
  CHECK(x.grad().item() == 7.0);
  add(mul(x, x), x).backward();  // a second backward adds
  CHECK(x.grad().item() == 14.0);
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
  mul(x, 2.0).backward();
  CHECK(x.grad().item() == 2.0);
}

TEST_CASE("backward releases the graph, retain_graph keeps it") {
  Tensor x = tensor({1.0, 2.0}, Float64).requires_grad_();
  Tensor y = mul(tanh(x), x);
  Tensor loss = mul(y, y);
  loss.backward(ones({2}, Float64));
  CHECK_THROWS_WITH_AS(loss.backward(ones({2}, Float64)),
                       "backward: the graph through 'mul' was already released by an earlier backward; pass "
                       "retain_graph=true to the first backward to go through it twice",
                       Error);
  x.zero_grad();
  Tensor z = tanh(x);
  z.backward(ones({2}, Float64), /*retain_graph=*/true);
  Tensor first = x.grad().clone();
  z.backward(ones({2}, Float64));
  CHECK(allclose(x.grad(), mul(first, 2.0)));
}

TEST_CASE("memory does not grow over 1000 training-like iterations") {
  Generator gen(1);
  Tensor w = normal({16, 16}, 0, 0.1, gen).requires_grad_();
  Tensor x = normal({8, 16}, 0, 1, gen);
  auto step = [&] {
    Tensor h = tanh(matmul(x, w));
    Tensor loss = mul(h, h);
    loss.backward(ones(loss.shape()));
    w.zero_grad();
  };
  for (int i = 0; i < 10; ++i) step();
  const std::size_t after_warmup = memory::live_bytes();
  for (int i = 0; i < 1000; ++i) step();
  CHECK(memory::live_bytes() == after_warmup);
}

TEST_CASE("a deep graph is walked and freed without recursion") {
  Tensor x = tensor({1.0}).requires_grad_();
  {  // dropped without backward: destroyed iteratively
    Tensor y = x;
    for (int i = 0; i < 200000; ++i) y = add(y, 1.0);
  }
  Tensor y = x;
  for (int i = 0; i < 200000; ++i) y = mul(y, 1.0);
  y.backward();
  CHECK(x.grad().item() == 1.0);
}

TEST_CASE("NoGradGuard stops recording, detach cuts the graph") {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  {
    NoGradGuard no_grad;
    CHECK_FALSE(GradMode::enabled());
    Tensor y = mul(x, 3.0);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.is_leaf());
  }
  CHECK(GradMode::enabled());
  Tensor y = mul(x, 3.0);
  CHECK(y.requires_grad());
  CHECK_FALSE(y.is_leaf());
  Tensor d = y.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.raw_data() == y.raw_data());
  Tensor z = mul(d, x);  // gradient reaches x only through the second factor
  z.backward(ones({2}));
  CHECK(x.grad().to_vector() == std::vector<double>{3, 6});
}

TEST_CASE("backward errors say what is wrong") {
  Tensor x = tensor({1, 2}).requires_grad_();
  Tensor y = mul(x, 2.0);
  CHECK_THROWS_WITH_AS(y.backward(),
                       "backward: the tensor has shape [2]; a gradient can be created implicitly only for a "
                       "one-element (scalar) output: pass one, as t.backward(grad)",
                       Error);
  CHECK_THROWS_WITH_AS(y.backward(ones({3})), "backward: the gradient's shape [3] differs from the tensor's shape [2]",
                       Error);
  CHECK_THROWS_WITH_AS(tensor({1.0}).backward(),
                       "backward: the tensor (shape [1]) does not require grad and has no grad_fn: nothing that "
                       "requires grad was used to compute it",
                       Error);
  CHECK_THROWS_WITH_AS(y.requires_grad_(false),
                       "requires_grad_: this tensor was computed by an op; use detach() to cut it off the graph", Error);
}

TEST_CASE("op errors name the op and the shapes") {
  CHECK_THROWS_WITH_AS(matmul(zeros({3, 4}), zeros({5, 2})), "matmul: inner dimensions differ: [3, 4] @ [5, 2]", Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 3, 4}), zeros({3, 4, 5})), "matmul: batch sizes differ: [2, 3, 4] @ [3, 4, 5]",
                       Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({4}), zeros({4, 2})),
                       "matmul: expected (M, K) @ (K, N), (B, M, K) @ (B, K, N) or (B, M, K) @ (K, N); got [4] @ [4, 2]",
                       Error);
  CHECK_THROWS_WITH_AS(add(zeros({2, 3}), zeros({4})),
                       "add: shapes [2, 3] and [4] cannot be broadcast together (axis 1 has sizes 3 and 4)", Error);
  CHECK_THROWS_WITH_AS(mul(zeros({2}), zeros({2}, Float64)),
                       "mul: dtypes differ: float32 and float64 (convert one with .to(dtype))", Error);
  CHECK_THROWS_WITH_AS(linear(zeros({2, 3}), zeros({4, 5})),
                       "linear: input features differ from the weight's: x [2, 3] and weight [4, 5] (expected x (..., 5))",
                       Error);
  CHECK_THROWS_WITH_AS(tanh(Tensor()), "tanh: input is an undefined tensor", Error);
}

TEST_CASE("matmul and linear: hand-computed values") {
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = tensor({1, 0, 0, 1, 1, 1}, {3, 2});
  CHECK(matmul(a, b).to_vector() == std::vector<double>{4, 5, 10, 11});
  // batched: the second batch entry is the first times 2
  Tensor a3 = tensor({1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12}, {2, 2, 3});
  Tensor b3 = tensor({1, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1}, {2, 3, 2});
  CHECK(matmul(a3, b3).to_vector() == std::vector<double>{4, 5, 10, 11, 8, 10, 20, 22});
  CHECK(matmul(a3, b).shape() == Shape{2, 2, 2});
  // linear: y = x W^T + b with W = [[1, 1, 1], [0, 0, 2]], bias = [1, -1]
  Tensor w = tensor({1, 1, 1, 0, 0, 2}, {2, 3});
  CHECK(linear(a, w, tensor({1, -1})).to_vector() == std::vector<double>{7, 5, 16, 11});
  // dW = dy^T x with dy = ones: column sums of x repeated
  Tensor wg = w.clone().requires_grad_();
  linear(a, wg).backward(ones({2, 2}));
  CHECK(wg.grad().to_vector() == std::vector<double>{5, 7, 9, 5, 7, 9});
}

TEST_CASE("gradcheck passes the elementwise and matmul ops") {
  auto check = [](const Fn& f, std::vector<Tensor> in) {
    for (auto& t : in) t.requires_grad_();
    GradcheckReport r = gradcheck(f, in);
    INFO(r.str());
    CHECK(r.passed);
  };
  check([](const std::vector<Tensor>& in) { return div(mul(in[0], in[1]), add(exp(in[1]), 1.0)); },
        {randn({3, 4}, 1), randn({4}, 2)});
  check([](const std::vector<Tensor>& in) { return sigmoid(matmul(tanh(in[0]), in[1])); },
        {randn({2, 3, 4}, 3), randn({2, 4, 2}, 4)});
  check([](const std::vector<Tensor>& in) { return linear(relu(in[0]), in[1], in[2]); },
        {randn({5, 3}, 5), randn({2, 3}, 6), randn({2}, 7)});
}

TEST_CASE("gradcheck catches a wrong backward") {
  // y = x^3 with a backward that forgets the factor 3.
  auto wrong_cube = [](const Tensor& x) {
    Tensor y = empty_like(x);
    for (std::int64_t i = 0; i < x.numel(); ++i) y.data<double>()[i] = std::pow(x.data<double>()[i], 3);
    record("wrong_cube", {x}, {&y}, [x = x.detach()](Grads& g) {
      double* dx = g.dx(0).data<double>();
      for (std::int64_t i = 0; i < x.numel(); ++i) dx[i] += g.dy().data<double>()[i] * x.data<double>()[i] * x.data<double>()[i];
    });
    return y;
  };
  Tensor x = randn({4}, 8).requires_grad_();
  GradcheckReport r = gradcheck([&](const std::vector<Tensor>& in) { return wrong_cube(in[0]); }, {x});
  CHECK_FALSE(r.passed);
  CHECK(r.inputs.at(0).max_rel_error > 0.5);
  CHECK(r.str().find("wrong") != std::string::npos);
  // The input's own gradient is left as it was.
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("gradcheck checks its own arguments") {
  CHECK_THROWS_WITH_AS(gradcheck([](const std::vector<Tensor>& in) { return in[0]; }, {randn({2}, 1)}),
                       "gradcheck: no input requires grad; call requires_grad_() on the inputs to check", Error);
  CHECK_THROWS_WITH_AS(gradcheck([](const std::vector<Tensor>& in) { return in[0]; }, {randn({2}, 1, Float32).requires_grad_()}),
                       "gradcheck: input 0 is float32; finite differences need float64 (convert with .to(attend::Float64))",
                       Error);
}

TEST_CASE("float32 agrees with float64") {
  Tensor a = randn({4, 5}, 9), b = randn({5, 3}, 10), c = randn({3}, 11);
  Tensor y64 = sigmoid(add(matmul(tanh(a), b), c));
  Tensor y32 = sigmoid(add(matmul(tanh(a.to(Float32)), b.to(Float32)), c.to(Float32)));
  CHECK(y32.dtype() == Float32);
  CHECK(allclose(y32.to(Float64), y64, 1e-5, 1e-6));
}

TEST_CASE("anomaly mode names the op that made a non-finite value") {
  AnomalyGuard anomaly;
  Tensor x = tensor({1.0, 0.0}).requires_grad_();
  CHECK_THROWS_WITH_AS(log(x), "anomaly: the forward of 'log' produced a non-finite value in output 0 (shape [2])", Error);
  Tensor fine = tensor({2.0}).requires_grad_();
  CHECK_NOTHROW(log(fine).backward());
  // log(1e-320) = -736.8 is finite, but its derivative 1/1e-320 overflows float64.
  Tensor t = tensor({1e-300}, Float64).requires_grad_();
  Tensor u = log(mul(t, 1e-20));
  CHECK_THROWS_WITH_AS(u.backward(), "anomaly: the backward of 'log' produced a non-finite gradient for input 0 (shape [1])",
                       Error);
}

TEST_CASE("to_dot draws ops, shapes and leaves") {
  Tensor w = zeros({3, 2}).requires_grad_();
  Tensor x = zeros({4, 3});
  Tensor y = tanh(matmul(x, w));
  std::string dot = to_dot(y);
  CHECK(dot.rfind("digraph attend {", 0) == 0);
  CHECK(dot.find("tanh\\n[4, 2]") != std::string::npos);
  CHECK(dot.find("matmul\\n[4, 2]") != std::string::npos);
  CHECK(dot.find("leaf\\n[3, 2]") != std::string::npos);
  CHECK(dot.find("constant\\n[4, 3]") != std::string::npos);
  CHECK(dot.find("->") != std::string::npos);
}

TEST_CASE("tap passes values and gradients through and shows the gradient") {
  Tensor x = randn({2, 3}, 12).requires_grad_();
  Tensor seen;
  Tensor y = tap(x, [&](const Tensor& dy) { seen = dy.clone(); });
  CHECK(equal(y, x));
  Tensor r = randn({2, 3}, 13);
  mul(y, r).backward(ones({2, 3}, Float64));
  CHECK(equal(seen, r));
  CHECK(equal(x.grad(), r));
  GradcheckReport report = gradcheck(
      [](const std::vector<Tensor>& in) { return tanh(tap(in[0], [](const Tensor&) {})); }, {randn({3}, 14).requires_grad_()});
  CHECK(report.passed);
}
