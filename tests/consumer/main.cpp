// A program built on attend: tensors, an op chain, backward, gradcheck.
#include <attend/attend.hpp>
#include <fmt/core.h>

int main() {
  using namespace attend;
  Generator gen(42);
  Tensor x = normal({2, 3}, 0, 1, gen, Float64);                   // (B, I) inputs
  Tensor t = uniform({2, 4}, -1, 1, gen, Float64);                 // (B, O) targets
  Tensor W = normal({4, 3}, 0, 1, gen, Float64).requires_grad_();  // (O, I)
  Tensor b = zeros({4}, Float64).requires_grad_();                 // (O)
  auto errors = [&](const std::vector<Tensor>& p) {  // squared errors of tanh(x W^T + b), (B, O)
    Tensor e = tanh(linear(x, p[0], p[1])) - t;
    return e * e;
  };
  Tensor loss = mean(errors({W, b}));  // a scalar
  loss.backward();
  fmt::print("loss {:.6f}\ndL/dW\n{}\n", loss.item(), W.grad());
  GradcheckReport report = gradcheck(errors, {W, b});  // backward vs finite differences
  fmt::print("{}", report.str());
  return report.passed ? 0 : 1;
}
