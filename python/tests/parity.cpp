// python_parity: computations that python/tests/test_parity.py repeats through the
// Python module. It prints every number of every result with 17 significant
// digits (which gives a double, and a float widened to one, back exactly), one
// "name value value ..." line per tensor; the test compares them bit for bit.
#include <cstdio>
#include <string>

#include "autograd/custom_op.hpp"
#include "autograd/ops.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"

namespace {

using namespace attend;

void print(const std::string& name, const Tensor& t) {
  std::printf("%s", name.c_str());
  for (double v : t.to_vector()) std::printf(" %.17g", v);
  std::printf("\n");
}

// y = x * tanh(x)   dx += dy * (tanh(x) + x * (1 - tanh(x)^2))
const CustomOp x_tanh_x{
    .name = "x_tanh_x",
    .input_names = {"x"},
    .forward = [](OpContext& ctx, const Tensors& in) {
      Tensor t = tanh(in[0]);
      ctx.save({in[0], t});
      return Tensors{in[0] * t};
    },
    .backward = [](const OpContext& ctx, Grads& g) {
      const Tensor &x = ctx.saved(0), &t = ctx.saved(1);
      if (g.needs(0)) g.dx(0).add_(g.dy() * (t + x * (1.0 - t * t)));
    }};

// A small network step in one dtype: every op family the Python test uses.
void network(DType dtype, const char* tag) {
  Generator gen(7);
  Tensor x = normal({4, 3}, 0.0, 1.0, gen, dtype).requires_grad_();
  Tensor w = normal({5, 3}, 0.0, 0.5, gen, dtype).requires_grad_();
  Tensor b = uniform({5}, -0.1, 0.1, gen, dtype).requires_grad_();
  Tensor h = tanh(linear(x, w, b)) * 2.0 + 0.5;                 // (4, 5)
  Tensor a = softmax(matmul(h, transpose(h, 0, 1)), 1);          // (4, 4)
  Tensor z = x_tanh_x({sigmoid(matmul(a, h) - 1.0)})[0] / 3.0;   // (4, 5)
  Tensor loss = cross_entropy(z, Indices{0, 4, 2, 1}) + mean(exp(log_softmax(z, 0)));
  loss.backward();
  const std::string p = tag;
  print(p + ".loss", loss);
  print(p + ".dx", x.grad());
  print(p + ".dw", w.grad());
  print(p + ".db", b.grad());
}

}  // namespace

int main() {
  network(Float32, "f32");
  network(Float64, "f64");
  return 0;
}
