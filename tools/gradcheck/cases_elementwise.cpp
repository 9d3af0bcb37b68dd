// gradcheck cases for autograd/ops/elementwise.cpp.
#include "autograd/ops.hpp"
#include "tools/gradcheck/op_cases.hpp"

namespace attend::tools {

namespace {
Tensor randn(const Shape& shape, std::uint64_t seed, double mean = 0.0) {
  Generator gen(seed);
  return normal(shape, mean, 1.0, gen, Float64).requires_grad_();
}
Tensor positive(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  return uniform(shape, 0.5, 2.0, gen, Float64).requires_grad_();
}
using Binary = Tensor (*)(const Tensor&, const Tensor&);
using Unary = Tensor (*)(const Tensor&);

void binary(std::vector<OpCase>& cases, const char* op, Binary f, bool positive_b) {
  struct Pair {
    const char* name;
    Shape a, b;
  };
  for (const Pair& p : {Pair{"same shape (3, 4)", {3, 4}, {3, 4}}, Pair{"broadcast (2, 3, 4) with (4)", {2, 3, 4}, {4}},
                        Pair{"broadcast (3, 1) with (1, 4)", {3, 1}, {1, 4}}, Pair{"scalar () with (2, 3)", {}, {2, 3}}}) {
    cases.push_back({op, p.name, [=] {
                       Tensor a = randn(p.a, 1), b = positive_b ? positive(p.b, 2) : randn(p.b, 2);
                       return gradcheck([f](const std::vector<Tensor>& in) { return f(in[0], in[1]); }, {a, b});
                     }});
  }
}

void unary(std::vector<OpCase>& cases, const char* op, Unary f, bool positive_x) {
  cases.push_back({op, "(3, 5)", [=] {
                     Tensor x = positive_x ? positive({3, 5}, 3) : randn({3, 5}, 3);
                     return gradcheck([f](const std::vector<Tensor>& in) { return f(in[0]); }, {x});
                   }});
  cases.push_back({op, "rank 0", [=] {
                     Tensor x = positive_x ? positive({}, 4) : randn({}, 4);
                     return gradcheck([f](const std::vector<Tensor>& in) { return f(in[0]); }, {x});
                   }});
}
}  // namespace

void add_elementwise_cases(std::vector<OpCase>& cases) {
  binary(cases, "add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, false);
  binary(cases, "sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, false);
  binary(cases, "mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, false);
  binary(cases, "div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, true);
  cases.push_back({"mul", "same tensor twice (x * x)", [] {
                     return gradcheck([](const std::vector<Tensor>& in) { return mul(in[0], in[0]); }, {randn({4}, 5)});
                   }});
  unary(cases, "neg", [](const Tensor& x) { return neg(x); }, false);
  unary(cases, "add_scalar", [](const Tensor& x) { return add(x, 2.5); }, false);
  unary(cases, "mul_scalar", [](const Tensor& x) { return mul(x, -1.5); }, false);
  unary(cases, "tanh", [](const Tensor& x) { return tanh(x); }, false);
  unary(cases, "sigmoid", [](const Tensor& x) { return sigmoid(x); }, false);
  unary(cases, "relu", [](const Tensor& x) { return relu(x); }, false);
  unary(cases, "exp", [](const Tensor& x) { return exp(x); }, false);
  unary(cases, "log", [](const Tensor& x) { return log(x); }, true);
}

void add_matmul_cases(std::vector<OpCase>& cases) {
  auto mm = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  cases.push_back({"matmul", "(3, 4) @ (4, 5)", [=] { return gradcheck(mm, {randn({3, 4}, 6), randn({4, 5}, 7)}); }});
  cases.push_back({"matmul", "batched (2, 3, 4) @ (2, 4, 5)",
                   [=] { return gradcheck(mm, {randn({2, 3, 4}, 8), randn({2, 4, 5}, 9)}); }});
  cases.push_back({"matmul", "shared weight (2, 3, 4) @ (4, 5)",
                   [=] { return gradcheck(mm, {randn({2, 3, 4}, 10), randn({4, 5}, 11)}); }});
  cases.push_back({"linear", "x (2, 3, 4), W (5, 4), b (5)", [] {
                     return gradcheck([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
                                      {randn({2, 3, 4}, 12), randn({5, 4}, 13), randn({5}, 14)});
                   }});
  cases.push_back({"linear", "no bias, x (3, 4), W (2, 4)", [] {
                     return gradcheck([](const std::vector<Tensor>& in) { return linear(in[0], in[1]); },
                                      {randn({3, 4}, 15), randn({2, 4}, 16)});
                   }});
}

}  // namespace attend::tools
