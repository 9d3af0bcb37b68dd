// layers/linear: PyTorch's layout and initialisation, hand-computed values and
// gradients, inputs of any rank, float64 gradchecks w.r.t. input and parameters.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/autograd.hpp"
#include "layers/linear.hpp"

using namespace attend;
using Values = std::vector<double>;

TEST_CASE("Linear: PyTorch's layout, names and initialisation bounds") {
  Generator gen(3);
  nn::Linear lin(16, 5, gen);
  CHECK(lin.weight.shape() == Shape{5, 16});
  CHECK(lin.bias.shape() == Shape{5});
  CHECK(lin.weight.dtype() == Float32);
  CHECK(lin.in_features() == 16);
  CHECK(lin.out_features() == 5);
  CHECK(lin.num_parameters() == 5 * 16 + 5);
  auto named = lin.named_parameters();
  REQUIRE(named.size() == 2);
  CHECK(named[0].first == "weight");
  CHECK(named[1].first == "bias");
  CHECK(named[0].second.same(lin.weight));
  CHECK(lin.weight.requires_grad());
  CHECK(lin.bias.requires_grad());
  // uniform(-1/sqrt(16), 1/sqrt(16)) = uniform(-0.25, 0.25), for weight and bias alike
  double lo = 1, hi = -1;
  for (const Tensor& p : {lin.weight, lin.bias})
    for (double v : p.to_vector()) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  CHECK(lo >= -0.25);
  CHECK(hi < 0.25);
  CHECK(lo < -0.2);  // 85 draws spread over the whole interval
  CHECK(hi > 0.2);

  Generator same(3);
  nn::Linear again(16, 5, same);
  CHECK(equal(again.weight, lin.weight));  // the generator decides everything

  nn::Linear no_bias(4, 3, false, gen, Float64);
  CHECK(!no_bias.bias.defined());
  CHECK(no_bias.weight.dtype() == Float64);
  CHECK(no_bias.named_parameters().size() == 1);
  CHECK(no_bias.num_parameters() == 12);
}

TEST_CASE("Linear: hand-computed forward and backward") {
  Generator gen(0);
  nn::Linear lin(3, 2, gen, Float64);
  lin.weight.copy_(tensor({1, 2, 3, -1, 0, 0.5}, {2, 3}, Float64));
  lin.bias.copy_(tensor({0.5, -1}, Float64));
  Tensor x = tensor({1, 0, -1, 2, 1, 0}, {2, 3}, Float64).requires_grad_();
  Tensor y = lin.forward(x);
  // y = x @ W^T + b: row 0: [1 - 3 + 0.5, -1 - 0.5 - 1]; row 1: [2 + 2 + 0.5, -2 - 1]
  CHECK(y.shape() == Shape{2, 2});
  CHECK(y.to_vector() == Values{-1.5, -2.5, 4.5, -3});
  // dy = R: dx = R @ W, dW = R^T @ x, db = column sums of R
  y.backward(tensor({1, 2, 3, -1}, {2, 2}, Float64));
  CHECK(x.grad().to_vector() == Values{-1, 2, 4, 4, 6, 8.5});
  CHECK(lin.weight.grad().to_vector() == Values{7, 3, -1, 0, -1, -2});
  CHECK(lin.bias.grad().to_vector() == Values{4, 1});
}

TEST_CASE("Linear: without bias") {
  Generator gen(0);
  nn::Linear lin(2, 2, false, gen, Float64);
  lin.weight.copy_(tensor({1, 2, 3, 4}, {2, 2}, Float64));
  CHECK(lin.forward(tensor({1, -1}, {1, 2}, Float64)).to_vector() == Values{-1, -1});
}

TEST_CASE("Linear: inputs of rank 1, 3 and 4 act on the last axis") {
  Generator gen(5);
  nn::Linear lin(4, 3, gen, Float64);
  Tensor x = normal({2, 3, 2, 4}, 0, 1, gen, Float64);
  Tensor y = lin.forward(x);
  CHECK(y.shape() == Shape{2, 3, 2, 3});
  // every row against a rank-1 forward, written out: y = W x + b
  const Values xv = x.to_vector(), yv = y.to_vector(), w = lin.weight.to_vector(), b = lin.bias.to_vector();
  double worst = 0;
  for (int r = 0; r < 12; ++r) {
    Tensor row = tensor({xv[r * 4], xv[r * 4 + 1], xv[r * 4 + 2], xv[r * 4 + 3]}, Float64);
    Tensor y1 = lin.forward(row);
    REQUIRE(y1.shape() == Shape{3});
    for (int o = 0; o < 3; ++o) {
      double expect = b[o];
      for (int i = 0; i < 4; ++i) expect += w[o * 4 + i] * xv[r * 4 + i];
      worst = std::max(worst, std::fabs(yv[r * 3 + o] - expect));
      worst = std::max(worst, std::fabs(y1.at({o}) - expect));
    }
  }
  CHECK(worst < 1e-14);
  CHECK(lin.forward(normal({2, 5, 4}, 0, 1, gen, Float64)).shape() == Shape{2, 5, 3});
}

TEST_CASE("Linear: float64 gradcheck w.r.t. input, weight and bias") {
  Generator gen(11);
  nn::Linear lin(5, 3, gen);
  lin.to(Float64);
  CHECK(lin.weight.dtype() == Float64);
  auto fn = [&](const std::vector<Tensor>& in) { return lin.forward(in[0]); };
  for (Shape shape : {Shape{4, 5}, Shape{2, 3, 5}, Shape{5}}) {
    Tensor x = normal(shape, 0, 1, gen, Float64).requires_grad_();
    GradcheckReport report = gradcheck(fn, {x, lin.weight, lin.bias});
    CHECK_MESSAGE(report.passed, report.str());
    CHECK(report.inputs.size() == 3);
  }
  nn::Linear no_bias(3, 4, false, gen, Float64);
  Tensor x = normal({2, 3}, 0, 1, gen, Float64).requires_grad_();
  GradcheckReport report =
      gradcheck([&](const std::vector<Tensor>& in) { return no_bias.forward(in[0]); }, {x, no_bias.weight});
  CHECK_MESSAGE(report.passed, report.str());
}

TEST_CASE("Linear: float32 agrees with float64") {
  Generator gen(2);
  nn::Linear lin32(6, 4, gen);
  Generator same(2);
  nn::Linear lin64(6, 4, same);
  lin64.to(Float64);
  Tensor x = normal({3, 6}, 0, 1, gen, Float64);
  Tensor x64 = x.clone().requires_grad_(), x32 = x.to(Float32).requires_grad_();
  Tensor y64 = lin64.forward(x64), y32 = lin32.forward(x32);
  CHECK(allclose(y32.to(Float64), y64, 1e-5, 1e-6));
  Tensor r = normal({3, 4}, 0, 1, gen, Float64);
  y64.backward(r);
  y32.backward(r.to(Float32));
  CHECK(allclose(x32.grad().to(Float64), x64.grad(), 1e-5, 1e-6));
  CHECK(allclose(lin32.weight.grad().to(Float64), lin64.weight.grad(), 1e-5, 1e-6));
  CHECK(allclose(lin32.bias.grad().to(Float64), lin64.bias.grad(), 1e-5, 1e-6));
}

TEST_CASE("Linear: errors") {
  Generator gen(0);
  CHECK_THROWS_WITH_AS(nn::Linear(0, 3, gen), "Linear: in_features and out_features must be positive, got 0 and 3",
                       Error);
  CHECK_THROWS_WITH_AS(nn::Linear(2, -1, gen), "Linear: in_features and out_features must be positive, got 2 and -1",
                       Error);
  nn::Linear lin(3, 2, gen);
  CHECK_THROWS_WITH_AS(
      lin.forward(zeros({2, 4})),
      "linear: input features differ from the weight's: x [2, 4] and weight [2, 3] (expected x (..., 3))", Error);
  CHECK_THROWS_WITH_AS(lin.forward(zeros({2, 3}, Float64)),
                       "linear: dtypes differ: float64 and float32 (convert one with .to(dtype))", Error);
  CHECK_THROWS_WITH_AS(lin.forward(Tensor()), "Linear: input is an undefined tensor", Error);
}

TEST_CASE("PackedLinear: the same y as linear(), with and without a bias, at any row count") {
  Generator gen(11);
  nn::Linear lin(37, 21, gen);
  NoGradGuard no_grad;
  const nn::PackedLinear with_bias = nn::PackedLinear::for_steps(lin.weight, lin.bias);
  const nn::PackedLinear no_bias = nn::PackedLinear::pack(lin.weight, Tensor());
  REQUIRE(!with_bias.empty());
  for (const std::int64_t rows : {1, 6, 7, 64}) {
    CAPTURE(rows);
    const Tensor x = uniform({rows, 37}, -1, 1, gen);
    const Values want = linear(x, lin.weight, lin.bias).to_vector(), got = with_bias.forward(x).to_vector();
    const Values want_nb = linear(x, lin.weight).to_vector(), got_nb = no_bias.forward(x).to_vector();
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
      CHECK(got_nb[i] == doctest::Approx(want_nb[i]).epsilon(1e-5));
    }
  }
  // Hand-computed: W = [[1, 2], [3, 4]], b = [10, 20], x = [1, 1] -> [13, 27].
  const Tensor W = tensor({1, 2, 3, 4}, {2, 2});
  Tensor b = tensor({10, 20});
  const nn::PackedLinear hand = nn::PackedLinear::pack(W, b);
  CHECK(hand.forward(tensor({1, 1}, {1, 2})).to_vector() == Values{13, 27});
  // The bias is a copy: a later change to the model's bias is not half seen.
  b.fill_(0);
  CHECK(hand.forward(tensor({1, 1}, {1, 2})).to_vector() == Values{13, 27});
}

TEST_CASE("PackedLinear: for_steps packs float32 always, records only when made recording, errors say what is wrong") {
  Generator gen(12);
  nn::Linear lin(4, 3, gen);
  nn::Linear lin64(4, 3, gen, Float64);
  {
    NoGradGuard no_grad;
    CHECK(!nn::PackedLinear::for_steps(lin64.weight, lin64.bias).recorded());  // float64: by W as it is
    const nn::PackedLinear decoding = nn::PackedLinear::for_steps(lin.weight, lin.bias);
    CHECK(!decoding.empty());
    CHECK(!decoding.recorded());
    CHECK(decoding.usable());
    GradMode::set_enabled(true);  // a pack made without recording, used by a step that records: linear() it is
    CHECK(!decoding.usable());
    GradMode::set_enabled(false);
  }
  const nn::PackedLinear training = nn::PackedLinear::for_steps(lin.weight, lin.bias);
  CHECK(training.recorded());
  CHECK(training.usable());
  CHECK(nn::PackedLinear::for_steps(lin64.weight, lin64.bias).recorded());  // the gradient checks' dtype too
  CHECK(nn::PackedLinear::for_steps(Tensor(), Tensor()).empty());
  CHECK_THROWS_WITH_AS(nn::PackedLinear::pack(lin64.weight, Tensor()),
                       "PackedLinear: the weight must be a float32 matrix (out, in), got float64 [3, 4]", Error);
  CHECK_THROWS_WITH_AS(nn::PackedLinear::pack(lin.weight, zeros(Shape{4})),
                       "PackedLinear: the bias must be float32 (3) for weight [3, 4], got float32 [4]", Error);
  CHECK_THROWS_WITH_AS(nn::PackedLinear::for_steps(lin64.weight, zeros(Shape{4}, Float64)),
                       "PackedLinear: the bias must be float64 (3) for weight [3, 4], got float64 [4]", Error);
  CHECK_THROWS_WITH_AS(nn::PackedLinear::for_steps(zeros(Shape{12}, Float64), Tensor()),
                       "PackedLinear: the weight must be a matrix (out, in), got [12]", Error);
  const nn::PackedLinear packed = nn::PackedLinear::pack(lin.weight, lin.bias);
  CHECK_THROWS_WITH_AS(packed.forward(zeros(Shape{2, 5})),
                       "PackedLinear.forward: x must be float32 (rows, 4), got float32 [2, 5]", Error);
  CHECK_THROWS_WITH_AS(packed.forward(zeros(Shape{4})),
                       "PackedLinear.forward: x must be float32 (rows, 4), got float32 [4]", Error);
  CHECK_THROWS_WITH_AS(
      packed.forward(zeros(Shape{2, 4}).requires_grad_()),
      "PackedLinear.forward: x requires grad, and no gradient flows through a packed weight (use linear())", Error);
  CHECK_THROWS_WITH_AS(training.forward(zeros(Shape{2, 4}, Float64)),
                       "PackedLinear.forward: x must be float32 (rows, 4), got float64 [2, 4]", Error);
  CHECK_THROWS_WITH_AS(nn::PackedLinear().forward(zeros(Shape{2, 4})), "PackedLinear.forward: nothing packed", Error);
}

namespace {
// T steps of y_t = x_t @ W^T + b through one for_steps pack (or linear(), the
// oracle), loss = sum_t sum(y_t * R_t): the gradients of x, W and b.
struct StepGrads {
  Values y, dx, dW, db;
};
StepGrads run_steps(const nn::Linear& lin, const Tensor& x, const Tensor& R, bool packed) {
  for (Tensor p : {lin.weight, lin.bias}) p.zero_grad();
  Tensor xs = x.detach().requires_grad_();  // (T, B, in)
  const std::int64_t T = x.size(0), B = x.size(1), in = x.size(2);
  const nn::PackedLinear steps = packed ? nn::PackedLinear::for_steps(lin.weight, lin.bias) : nn::PackedLinear();
  std::vector<Tensor> ys;
  for (std::int64_t t = 0; t < T; ++t) {
    const Tensor x_t = reshape(slice(xs, 0, t, t + 1), Shape{B, in});
    ys.push_back(packed ? steps.forward(x_t) : linear(x_t, lin.weight, lin.bias));
  }
  const Tensor y = stack(ys, 0);  // (T, B, out)
  sum(y * R).backward();
  return {y.to_vector(), xs.grad().to_vector(), lin.weight.grad().to_vector(), lin.bias.grad().to_vector()};
}
}  // namespace

TEST_CASE("PackedLinear: recorded steps give linear()'s y and gradients, dW gathered once over every step") {
  Generator gen(21);
  for (const DType dt : {Float32, Float64}) {
    CAPTURE(dt);
    nn::Linear lin(37, 21, gen, dt);
    for (const std::int64_t B : {1, 16}) {
      CAPTURE(B);
      const std::int64_t T = 5;
      const Tensor x = uniform({T, B, 37}, -1, 1, gen, dt), R = uniform({T, B, 21}, -1, 1, gen, dt);
      const StepGrads want = run_steps(lin, x, R, false), got = run_steps(lin, x, R, true);
      const double tol = dt == Float32 ? 1e-5 : 1e-12;
      for (const auto& [w, g] : {std::pair{&want.y, &got.y}, std::pair{&want.dx, &got.dx},
                                 std::pair{&want.dW, &got.dW}, std::pair{&want.db, &got.db}}) {
        REQUIRE(w->size() == g->size());
        for (std::size_t i = 0; i < w->size(); ++i) CHECK((*g)[i] == doctest::Approx((*w)[i]).epsilon(tol));
      }
    }
  }
  // Hand-computed, float64: W = [[1, 2], [3, 4]], b = [10, 20]; two steps
  // x_1 = [1, 0], x_2 = [0, 1] with dy_1 = [1, 0], dy_2 = [0, 1]:
  // y_1 = [11, 23], y_2 = [12, 24]; dW = dy_1^T x_1 + dy_2^T x_2 = I; db = [1, 1];
  // dx_1 = dy_1 W = [1, 2], dx_2 = dy_2 W = [3, 4].
  nn::Linear hand(2, 2, gen, Float64);
  hand.weight.copy_(tensor({1, 2, 3, 4}, {2, 2}, Float64));
  hand.bias.copy_(tensor({10, 20}, Float64));
  const StepGrads h = run_steps(hand, tensor({1, 0, 0, 1}, {2, 1, 2}, Float64),
                                tensor({1, 0, 0, 1}, {2, 1, 2}, Float64), true);
  CHECK(h.y == Values{11, 23, 12, 24});
  CHECK(h.dW == Values{1, 0, 0, 1});
  CHECK(h.db == Values{1, 1});
  CHECK(h.dx == Values{1, 2, 3, 4});
  // A second backward of the same graph (retain_graph) gathers its own rows: dW twice over.
  hand.weight.zero_grad();
  const nn::PackedLinear steps = nn::PackedLinear::for_steps(hand.weight, hand.bias);
  const Tensor y = steps.forward(tensor({1, 0}, {1, 2}, Float64)) + steps.forward(tensor({0, 1}, {1, 2}, Float64));
  y.backward(tensor({1, 0}, {1, 2}, Float64), true);
  CHECK(hand.weight.grad().to_vector() == Values{1, 1, 0, 0});
  y.backward(tensor({1, 0}, {1, 2}, Float64));
  CHECK(hand.weight.grad().to_vector() == Values{2, 2, 0, 0});
}

TEST_CASE("PackedLinear: float64 gradcheck of recorded steps w.r.t. the inputs, the weight and the bias") {
  Generator gen(22);
  nn::Linear lin(5, 3, gen, Float64);
  const auto fn = [](const std::vector<Tensor>& in) {
    // in: x (3, 2, 5), W (3, 5), b (3): three steps of two rows through one pack
    const nn::PackedLinear steps = nn::PackedLinear::for_steps(in[1], in[2]);
    std::vector<Tensor> ys;
    for (std::int64_t t = 0; t < 3; ++t)
      ys.push_back(steps.forward(reshape(slice(in[0], 0, t, t + 1), Shape{2, 5})));
    return stack(ys, 0);
  };
  const Tensor x = normal({3, 2, 5}, 0, 1, gen, Float64).requires_grad_();
  const GradcheckReport report = gradcheck(fn, {x, lin.weight, lin.bias});
  INFO(report.str());
  CHECK(report.passed);
}
