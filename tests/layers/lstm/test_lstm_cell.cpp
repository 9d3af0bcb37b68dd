// layers/lstm/lstm_cell: the fused LSTM step against hand-computed numbers, against
// the same step from primitive ops, against finite differences and against PyTorch.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autograd/autograd.hpp"
#include "core/core.hpp"
#include "core/io/safetensors.hpp"
#include "layers/lstm/lstm_cell.hpp"

using namespace attend;
using namespace attend::nn;

namespace {

// Values of fn's outputs and the gradients of `leaves` for L = sum_k sum(y_k * upstream_k).
struct Run {
  std::vector<Tensor> values, grads;
};

Run run_with_grads(const std::function<std::vector<Tensor>()>& fn, const std::vector<Tensor>& leaves,
                   const std::vector<Tensor>& upstream) {
  for (Tensor t : leaves) t.zero_grad();
  std::vector<Tensor> ys = fn();
  backward(ys, upstream);
  Run r;
  for (const Tensor& y : ys) r.values.push_back(y.detach());
  for (const Tensor& t : leaves) r.grads.push_back(t.grad().defined() ? t.grad().clone() : zeros_like(t));
  return r;
}

void check_close(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double tol, const char* what) {
  REQUIRE(a.size() == b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    INFO(what, " ", k, ": max |diff| = ", max_abs_diff(a[k], b[k]));
    REQUIRE(a[k].shape() == b[k].shape());
    CHECK(max_abs_diff(a[k], b[k]) <= tol);
  }
}

// The tiny cell worked out by hand below: I = H = 1.
LSTMWeights tiny_weights(DType dtype) {
  return {tensor({1, -1, 0.5, 2}, {4, 1}, dtype), tensor({-2, 2, 1, -4}, {4, 1}, dtype),
          tensor({0.5, 0, 0, 0}, {4}, dtype), tensor({-0.5, 0, 0, 0}, {4}, dtype)};
}

}  // namespace

// x = 1, h_prev = 0.5, c_prev = 2, W_ih = [1, -1, 0.5, 2], W_hh = [-2, 2, 1, -4],
// b_ih = [0.5, 0, 0, 0], b_hh = [-0.5, 0, 0, 0]:
//   a = x W_ih + h_prev W_hh + b_ih + b_hh = [1 - 1 + 0.5 - 0.5, -1 + 1, 0.5 + 0.5, 2 - 2] = [0, 0, 1, 0]
//   i = f = o = σ(0) = 0.5,  g = tanh(1) = 0.7615941559557649
//   c = f c_prev + i g = 1 + 0.5 * 0.7615941559557649 = 1.3807970779778824
//   h = o tanh(c) = 0.5 * 0.8811296283442258 = 0.4405648141721129
// With L = h + c (dh = dc = 1):
//   dc_total = dc + dh o (1 - tanh²c) = 1 + 0.5 * (1 - 0.776389...) = 1.1118052890269832
//   da_i = dc_total g i(1-i) = 0.21168610267091512     da_f = dc_total c_prev f(1-f) = 0.5559026445134916
//   da_g = dc_total i (1-g²) = 0.23346484713104965     da_o = dh tanh(c) o(1-o) = 0.22028240708605645
//   dx = da · W_ih = 0.2130806958950613,  dh_prev = da · W_hh = 0.040768302471976714
//   dc_prev = dc_total f = 0.5559026445134916,  dW_ih = da x,  dW_hh = da h_prev,  db_ih = db_hh = da
TEST_CASE("lstm_cell: a tiny cell worked out by hand") {
  for (DType dtype : {Float64, Float32}) {
    const double tol = dtype == Float64 ? 1e-14 : 2e-7;
    LSTMWeights w = tiny_weights(dtype);
    for (Tensor* p : {&w.weight_ih, &w.weight_hh, &w.bias_ih, &w.bias_hh}) p->requires_grad_();
    Tensor x = tensor({1}, {1, 1}, dtype).requires_grad_();
    Tensor h0 = tensor({0.5}, {1, 1}, dtype).requires_grad_();
    Tensor c0 = tensor({2}, {1, 1}, dtype).requires_grad_();
    LSTMState s = lstm_cell(x, {h0, c0}, w);
    CHECK(s.h.item() == doctest::Approx(0.4405648141721129).epsilon(tol));
    CHECK(s.c.item() == doctest::Approx(1.3807970779778824).epsilon(tol));
    backward({s.h, s.c}, {ones({1, 1}, dtype), ones({1, 1}, dtype)});
    CHECK(x.grad().item() == doctest::Approx(0.2130806958950613).epsilon(tol));
    CHECK(h0.grad().item() == doctest::Approx(0.040768302471976714).epsilon(tol));
    CHECK(c0.grad().item() == doctest::Approx(0.5559026445134916).epsilon(tol));
    const std::vector<double> da{0.21168610267091512, 0.5559026445134916, 0.23346484713104965, 0.22028240708605645};
    for (std::int64_t k = 0; k < 4; ++k) {
      CHECK(w.weight_ih.grad().at({k, 0}) == doctest::Approx(da[k]).epsilon(tol));
      CHECK(w.weight_hh.grad().at({k, 0}) == doctest::Approx(0.5 * da[k]).epsilon(tol));
      CHECK(w.bias_ih.grad().at({k}) == doctest::Approx(da[k]).epsilon(tol));
      CHECK(w.bias_hh.grad().at({k}) == doctest::Approx(da[k]).epsilon(tol));
    }
  }
}

// A second step from the state above, x = -1:
//   a = [-1 + 0.5 h1 (-2) + 0, 1 + 2 h1, -0.5 + h1, -2 - 4 h1] with h1 = 0.4405648141721129
//     = [-1.8811296283442258, 1.8811296283442258, -0.059435185827887094, -3.7622592566884516]
//   c2 = σ(a_f) c1 + σ(a_i) tanh(a_g) = 1.1903223887495353,  h2 = σ(a_o) tanh(c2) = 0.018859532979467162
TEST_CASE("LSTMCell: two steps carry the state") {
  Generator gen(1);
  LSTMCell cell(1, 1, gen, {.dtype = Float64});
  cell.load_state_dict({{"weight_ih", tiny_weights(Float64).weight_ih}, {"weight_hh", tiny_weights(Float64).weight_hh},
                        {"bias_ih", tiny_weights(Float64).bias_ih}, {"bias_hh", tiny_weights(Float64).bias_hh}});
  LSTMState s1 = cell.forward(tensor({1}, {1, 1}, Float64), {tensor({0.5}, {1, 1}, Float64), tensor({2}, {1, 1}, Float64)});
  LSTMState s2 = cell.forward(tensor({-1}, {1, 1}, Float64), s1);
  CHECK(s2.c.item() == doctest::Approx(1.1903223887495353).epsilon(1e-14));
  CHECK(s2.h.item() == doctest::Approx(0.018859532979467162).epsilon(1e-14));
}

TEST_CASE("lstm_cell: fused equals composed, values and every gradient") {
  Generator gen(3);
  const std::int64_t B = 3, I = 4, H = 5;
  for (DType dtype : {Float64, Float32}) {
    const double tol = dtype == Float64 ? 1e-13 : 1e-5;
    LSTMCell cell(I, H, gen, {.dtype = dtype});
    Tensor x = normal({B, I}, 0, 1, gen, dtype).requires_grad_();
    Tensor h0 = normal({B, H}, 0, 1, gen, dtype).requires_grad_();
    Tensor c0 = normal({B, H}, 0, 1, gen, dtype).requires_grad_();
    std::vector<Tensor> leaves{x, h0, c0};
    for (const Tensor& p : cell.parameters()) leaves.push_back(p);
    std::vector<Tensor> upstream{normal({B, H}, 0, 1, gen, dtype), normal({B, H}, 0, 1, gen, dtype)};
    Run fused = run_with_grads([&] { auto s = cell.forward(x, {h0, c0}); return std::vector<Tensor>{s.h, s.c}; },
                               leaves, upstream);
    Run composed = run_with_grads(
        [&] { auto s = cell.forward_composed(x, {h0, c0}); return std::vector<Tensor>{s.h, s.c}; }, leaves, upstream);
    check_close(fused.values, composed.values, tol, "output");
    check_close(fused.grads, composed.grads, tol, "gradient of leaf");
  }
}

TEST_CASE("LSTMCell: steps with the transposed copies (float64) or packed weights (float32) equal plain steps") {
  Generator gen(8);
  const std::int64_t B = 3, I = 4, H = 5;  // 4H = 20: one full panel of 16 columns and part of another
  for (DType dtype : {Float64, Float32}) {
    CAPTURE(dtype);
    const double tol = dtype == Float64 ? 1e-13 : 1e-5;
    LSTMCell cell(I, H, gen, {.dtype = dtype});
    const LSTMWeights w = cell.step_weights(B);
    if (dtype == Float64) {
      REQUIRE(w.weight_ih_t.defined());
      CHECK(!w.packed_ih);
      CHECK(max_abs_diff(w.weight_ih_t, transpose(cell.weights().weight_ih, 0, 1)) == 0);
      CHECK(max_abs_diff(w.weight_hh_t, transpose(cell.weights().weight_hh, 0, 1)) == 0);
      CHECK(!w.weight_ih_t.requires_grad());
    } else {
      REQUIRE(w.packed_ih);
      REQUIRE(w.packed_hh);
      REQUIRE(w.packed_ih_t);
      REQUIRE(w.packed_hh_t);
      CHECK(!w.weight_ih_t.defined());
      CHECK((w.packed_ih->n() == 4 * H && w.packed_ih->k() == I && w.packed_hh->n() == 4 * H && w.packed_hh->k() == H));
      CHECK((w.packed_ih_t->n() == I && w.packed_ih_t->k() == 4 * H && w.packed_hh_t->n() == H &&
             w.packed_hh_t->k() == 4 * H));
    }
    // Large batches: float32 is packed at every size, float64 gets no copies.
    const LSTMWeights large = cell.step_weights(kTransposedWeightsBelow);
    CHECK(!large.weight_ih_t.defined());
    CHECK(static_cast<bool>(large.packed_ih) == (dtype == Float32));
    Tensor x = normal({B, I}, 0, 1, gen, dtype).requires_grad_();
    Tensor h0 = normal({B, H}, 0, 1, gen, dtype).requires_grad_();
    Tensor c0 = normal({B, H}, 0, 1, gen, dtype).requires_grad_();
    std::vector<Tensor> leaves{x, h0, c0};
    for (const Tensor& p : cell.parameters()) leaves.push_back(p);
    std::vector<Tensor> upstream{normal({B, H}, 0, 1, gen, dtype), normal({B, H}, 0, 1, gen, dtype),
                                 normal({B, H}, 0, 1, gen, dtype), normal({B, H}, 0, 1, gen, dtype)};
    // Two steps, so that the second's h_prev and c_prev carry gradient too.
    auto two_steps = [&](bool with_copies) {
      return run_with_grads(
          [&] {
            LSTMState s1 = with_copies ? cell.forward(x, {h0, c0}, w) : cell.forward(x, {h0, c0});
            LSTMState s2 = with_copies ? cell.forward(x, s1, w) : cell.forward(x, s1);
            return std::vector<Tensor>{s1.h, s1.c, s2.h, s2.c};
          },
          leaves, upstream);
    };
    Run copies = two_steps(true), plain = two_steps(false);
    check_close(copies.values, plain.values, tol, "output");
    check_close(copies.grads, plain.grads, tol, "gradient of leaf");
  }
}

TEST_CASE("lstm_cell: gradcheck w.r.t. x, h, c and the four parameters") {
  Generator gen(4);
  LSTMCell cell(3, 4, gen, {.forget_bias_one = true});
  cell.to(Float64);
  std::vector<Tensor> inputs{normal({2, 3}, 0, 1, gen, Float64).requires_grad_(),
                             normal({2, 4}, 0, 1, gen, Float64).requires_grad_(),
                             normal({2, 4}, 0, 1, gen, Float64).requires_grad_()};
  for (const Tensor& p : cell.parameters()) inputs.push_back(p);
  for (bool fused : {true, false}) {
    auto report = gradcheck(
        MultiOutputFn([&](const std::vector<Tensor>& in) {
          LSTMState s = fused ? cell.forward(in[0], {in[1], in[2]}) : cell.forward_composed(in[0], {in[1], in[2]});
          return std::vector<Tensor>{s.h, s.c};
        }),
        inputs);
    INFO(report.str());
    CHECK(report.passed);
    CHECK(report.inputs.size() == 7);
  }
}

TEST_CASE("LSTMCell: PyTorch's names, shapes and initialisation, zero state by default") {
  Generator gen(5);
  const std::int64_t I = 3, H = 4;
  LSTMCell cell(I, H, gen);
  auto named = cell.named_parameters();
  REQUIRE(named.size() == 4);
  CHECK(named[0].first == "weight_ih");
  CHECK(named[0].second.shape() == Shape{4 * H, I});
  CHECK(named[1].first == "weight_hh");
  CHECK(named[1].second.shape() == Shape{4 * H, H});
  CHECK(named[2].first == "bias_ih");
  CHECK(named[2].second.shape() == Shape{4 * H});
  CHECK(named[3].first == "bias_hh");
  CHECK(named[3].second.shape() == Shape{4 * H});
  for (const auto& [name, p] : named) {
    for (double v : p.to_vector()) {
      CHECK(v >= -0.5);  // 1 / sqrt(H) = 0.5
      CHECK(v < 0.5);
    }
  }
  Tensor x = normal({2, I}, 0, 1, gen);
  LSTMState s_default = cell.forward(x);
  LSTMState s_zeros = cell.forward(x, {zeros({2, H}), zeros({2, H})});
  CHECK(equal(s_default.h, s_zeros.h));
  CHECK(equal(s_default.c, s_zeros.c));

  LSTMCell open(I, H, gen, {.forget_bias_one = true});
  const Tensor& b_ih = open.weights().bias_ih;
  const Tensor& b_hh = open.weights().bias_hh;
  for (std::int64_t j = 0; j < 4 * H; ++j) {
    if (j >= H && j < 2 * H) {
      CHECK(b_ih.at({j}) == 1.0);
      CHECK(b_hh.at({j}) == 0.0);
    } else {
      CHECK(b_ih.at({j}) != 1.0);  // the other slices keep their uniform draw
    }
  }
}

TEST_CASE("lstm_cell: shape and dtype errors") {
  Generator gen(6);
  LSTMCell cell(3, 4, gen);
  const LSTMWeights& w = cell.weights();
  Tensor h = zeros({2, 4}), c = zeros({2, 4});
  CHECK_THROWS_WITH_AS(cell.forward(zeros({2, 5})), "LSTMCell: x must be (B, I) = (B, 3), got [2, 5]", Error);
  CHECK_THROWS_WITH_AS(cell.forward(zeros({2, 2, 3})), "LSTMCell: x must be (B, I) = (B, 3), got [2, 2, 3]", Error);
  CHECK_THROWS_WITH_AS(cell.forward(zeros({2, 3}), {h, Tensor()}),
                       "LSTMCell: give both h and c of the state, or neither (for zeros)", Error);
  CHECK_THROWS_WITH_AS(cell.forward(zeros({2, 3}), {zeros({3, 4}), c}),
                       "lstm_cell: state.h must be (B, H) = (2, 4), got [3, 4]", Error);
  CHECK_THROWS_WITH_AS(cell.forward(zeros({2, 3}), {h, zeros({2, 5})}),
                       "lstm_cell: state.c must be (B, H) = (2, 4), got [2, 5]", Error);
  CHECK_THROWS_WITH_AS(cell.forward(zeros({2, 3}, Float64)),
                       "lstm_cell: x is float64 but the weights are float32 (convert with .to(dtype))", Error);
  CHECK_THROWS_WITH_AS(lstm_cell(zeros({2, 3}), {h, c}, {w.weight_ih, zeros({15, 4}), w.bias_ih, w.bias_hh}),
                       "lstm_cell: weight_hh must be (4H, H), got [15, 4]", Error);
  CHECK_THROWS_WITH_AS(lstm_cell(zeros({2, 3}), {h, c}, {zeros({12, 3}), w.weight_hh, w.bias_ih, w.bias_hh}),
                       "lstm_cell: weight_ih must be (4H, I) = (16, I), got [12, 3]", Error);
  CHECK_THROWS_WITH_AS(lstm_cell(zeros({2, 3}), {h, c}, {w.weight_ih, w.weight_hh, zeros({12}), w.bias_hh}),
                       "lstm_cell: bias_ih must be (4H) = (16), got [12]", Error);
  CHECK_THROWS_WITH_AS(lstm_cell(zeros({2, 3}), {h, c}, {w.weight_ih, w.weight_hh, w.bias_ih, zeros({4, 4})}),
                       "lstm_cell: bias_hh must be (4H) = (16), got [4, 4]", Error);
  CHECK_THROWS_WITH_AS(lstm_cell(zeros({2, 3}), {h, c}, {w.weight_ih, w.weight_hh, w.bias_ih, Tensor()}),
                       "lstm_cell: bias_hh is an undefined tensor", Error);
  CHECK_THROWS_WITH_AS(
      lstm_cell(zeros({2, 3}), {h, c}, {w.weight_ih, w.weight_hh.to(Float64), w.bias_ih, w.bias_hh}),
      "lstm_cell: the weights must share one dtype, got weight_ih float32, weight_hh float64, bias_ih float32, "
      "bias_hh float32",
      Error);
  CHECK_THROWS_WITH_AS(LSTMCell(0, 4, gen), "LSTMCell: input_size and hidden_size must be positive, got 0 and 4",
                       Error);
  // The transposed copies: both or neither, of the right shapes, and a cell takes only its own.
  LSTMWeights only_one = w;
  only_one.weight_ih_t = transpose(w.weight_ih, 0, 1);
  CHECK_THROWS_WITH_AS(lstm_cell(zeros({2, 3}), {h, c}, only_one),
                       "lstm_cell: weight_ih_t and weight_hh_t come together; only one is set", Error);
  LSTMWeights wrong = only_one;
  wrong.weight_hh_t = w.weight_hh;  // (16, 4) instead of (4, 16)
  CHECK_THROWS_WITH_AS(lstm_cell(zeros({2, 3}), {h, c}, wrong),
                       "lstm_cell: weight_ih_t must be (I, 4H) = (3, 16) and weight_hh_t (H, 4H) = (4, 16), got [3, 16] "
                       "and [16, 4]",
                       Error);
  // The packed weights likewise, and float32 only.
  const LSTMWeights packed = cell.step_weights(2);
  REQUIRE(packed.packed_ih);
  LSTMWeights one_packed = w;
  one_packed.packed_ih = packed.packed_ih;
  CHECK_THROWS_WITH_AS(lstm_cell(zeros({2, 3}), {h, c}, one_packed),
                       "lstm_cell: packed_ih and packed_hh come together; only some are set", Error);
  LSTMWeights backward_only = w;  // the backward's pair without the forward's
  backward_only.packed_ih_t = packed.packed_ih_t;
  backward_only.packed_hh_t = packed.packed_hh_t;
  CHECK_THROWS_WITH_AS(lstm_cell(zeros({2, 3}), {h, c}, backward_only),
                       "lstm_cell: packed_ih and packed_hh come together; only some are set", Error);
  LSTMWeights half_backward = packed;
  half_backward.packed_hh_t = nullptr;
  CHECK_THROWS_WITH_AS(lstm_cell(zeros({2, 3}), {h, c}, half_backward),
                       "lstm_cell: packed_ih_t and packed_hh_t come together; only one is set", Error);
  LSTMWeights forward_only = packed;  // what step_weights gives for decoding: the same step
  forward_only.packed_ih_t = nullptr;
  forward_only.packed_hh_t = nullptr;
  CHECK(max_abs_diff(lstm_cell(ones({2, 3}), {h, c}, forward_only).h, lstm_cell(ones({2, 3}), {h, c}, w).h) <= 1e-6);
  LSTMWeights swapped_t = packed;
  std::swap(swapped_t.packed_ih_t, swapped_t.packed_hh_t);
  CHECK_THROWS_WITH_AS(lstm_cell(zeros({2, 3}), {h, c}, swapped_t),
                       "lstm_cell: packed_ih_t must hold (I, 4H) = (3, 16) and packed_hh_t (H, 4H) = (4, 16), got (4, "
                       "16) and (3, 16)",
                       Error);
  LSTMWeights swapped = packed;
  std::swap(swapped.packed_ih, swapped.packed_hh);
  CHECK_THROWS_WITH_AS(lstm_cell(zeros({2, 3}), {h, c}, swapped),
                       "lstm_cell: packed_ih must hold (4H, I) = (16, 3) and packed_hh (4H, H) = (16, 4), got (16, 4) "
                       "and (16, 3)",
                       Error);
  LSTMWeights doubles{w.weight_ih.to(Float64), w.weight_hh.to(Float64), w.bias_ih.to(Float64), w.bias_hh.to(Float64)};
  doubles.packed_ih = packed.packed_ih;
  doubles.packed_hh = packed.packed_hh;
  doubles.packed_ih_t = packed.packed_ih_t;
  doubles.packed_hh_t = packed.packed_hh_t;
  CHECK_THROWS_WITH_AS(lstm_cell(zeros({2, 3}, Float64), {h.to(Float64), c.to(Float64)}, doubles),
                       "lstm_cell: packed weights are float32 only, and the weights are float64", Error);
  LSTMCell other(3, 4, gen);
  CHECK_THROWS_WITH_AS(cell.forward(zeros({2, 3}), {h, c}, other.step_weights(2)),
                       "LSTMCell.forward: the step weights are not this cell's (get them from step_weights())", Error);
}

TEST_CASE("LSTMCell: recorded steps gather their weight gradients into one product, with the same result") {
  Generator gen(12);
  const std::int64_t B = 3, I = 4, H = 5, T = 4;
  for (DType dtype : {Float64, Float32}) {
    CAPTURE(dtype);
    const double tol = dtype == Float64 ? 1e-12 : 1e-5;
    LSTMCell cell(I, H, gen, {.dtype = dtype});
    {
      NoGradGuard no_grad;  // nothing recorded: nothing to gather, and no backward to pack for
      const LSTMWeights decoding = cell.step_weights(B);
      CHECK(!decoding.deferred);
      CHECK(static_cast<bool>(decoding.packed_ih) == (dtype == Float32));
      CHECK(!decoding.packed_ih_t);
      CHECK(!decoding.packed_hh_t);
    }
    const Tensor xs = normal({T, B, I}, 0, 1, gen, dtype);
    const Tensor r = normal({B, H}, 0, 1, gen, dtype);
    // loss = sum over steps of sum(h_t * r): every step's weight gradient counts
    auto loss_of = [&](const LSTMWeights* w) {
      LSTMState s{zeros({B, H}, dtype), zeros({B, H}, dtype)};
      Tensor loss = zeros({}, dtype);
      for (std::int64_t t = 0; t < T; ++t) {
        const Tensor x = reshape(slice(xs, 0, t, t + 1), {B, I});
        s = w ? cell.forward(x, s, *w) : cell.forward(x, s);
        loss = loss + sum(s.h * r);
      }
      return loss;
    };
    cell.zero_grad();
    loss_of(nullptr).backward();  // plain steps: T products per weight
    const Tensor plain_ih = cell.weights().weight_ih.grad().clone(), plain_hh = cell.weights().weight_hh.grad().clone();
    const Tensor plain_b = cell.weights().bias_ih.grad().clone();
    cell.zero_grad();
    const LSTMWeights w = cell.step_weights(B);
    REQUIRE(w.deferred);
    CHECK(!w.weight_ih.same(cell.weights().weight_ih));  // lstm_weight_grads' output, on the same data
    const Tensor& param = cell.weights().weight_ih;
    CHECK((dtype == Float32 ? w.weight_ih.data<float>() == param.data<float>()
                            : w.weight_ih.data<double>() == param.data<double>()));
    const Tensor loss = loss_of(&w);
    loss.backward({}, /*retain_graph=*/true);
    CHECK(w.deferred->da.empty());  // multiplied out, and cleared
    CHECK(max_abs_diff(cell.weights().weight_ih.grad(), plain_ih) <= tol);
    CHECK(max_abs_diff(cell.weights().weight_hh.grad(), plain_hh) <= tol);
    CHECK(max_abs_diff(cell.weights().bias_ih.grad(), plain_b) <= tol);
    // A second backward through the kept graph gathers its own rows: twice the gradient.
    loss.backward({}, /*retain_graph=*/false);
    CHECK(max_abs_diff(cell.weights().weight_ih.grad(), plain_ih * 2.0) <= 2 * tol);
    CHECK(max_abs_diff(cell.weights().weight_hh.grad(), plain_hh * 2.0) <= 2 * tol);
    // Used again after its graph is released: a clear error, not a lost gradient.
    CHECK_THROWS_WITH_AS(loss_of(&w).backward(), doctest::Contains("was already released by an earlier backward"),
                         Error);
  }
}

// tests/reference/torch_lstm.py: nn.LSTMCell with loss = sum(h * R_h) + sum(c * R_c).
TEST_CASE("LSTMCell: agrees with PyTorch's nn.LSTMCell, values and gradients") {
  struct Case {
    const char* file;
    DType dtype;
    double rtol, atol;
  };
  for (Case k : {Case{"lstm_cell_f64.safetensors", Float64, 1e-10, 1e-12},
                 Case{"lstm_cell_f32.safetensors", Float32, 1e-5, 1e-6}}) {
    INFO(k.file);
    const std::map<std::string, Tensor> t = load_safetensors(std::string(ATTEND_TEST_DATA) + "/" + k.file).tensors;
    Generator gen(0);
    LSTMCell cell(3, 4, gen, {.dtype = k.dtype});
    std::map<std::string, Tensor> params;
    for (const auto& [name, p] : cell.named_parameters()) params[name] = t.at(name);
    cell.load_state_dict(params);
    Tensor x = t.at("x").clone().requires_grad_();
    Tensor h0 = t.at("h0").clone().requires_grad_();
    Tensor c0 = t.at("c0").clone().requires_grad_();
    LSTMState s = cell.forward(x, {h0, c0});
    backward({s.h, s.c}, {t.at("R_h"), t.at("R_c")});
    std::vector<std::pair<std::string, Tensor>> got{{"h", s.h}, {"c", s.c}, {"grad.x", x.grad()},
                                                    {"grad.h0", h0.grad()}, {"grad.c0", c0.grad()}};
    for (const auto& [name, p] : cell.named_parameters()) got.emplace_back("grad." + name, p.grad());
    for (const auto& [name, value] : got) {
      INFO(name, ": max |diff| = ", max_abs_diff(value, t.at(name)));
      CHECK(value.dtype() == k.dtype);
      CHECK(allclose(value, t.at(name), k.rtol, k.atol));
    }
  }
}
