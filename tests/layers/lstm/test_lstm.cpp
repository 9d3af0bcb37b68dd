// layers/lstm: the fused sequence op and the LSTM module against hand-computed
// numbers, against the same network from composed cells (one sequence at a
// time), against finite differences, and their padding rules.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autograd/autograd.hpp"
#include "core/core.hpp"
#include "core/io/safetensors.hpp"
#include "layers/lstm/lstm.hpp"

using namespace attend;
using namespace attend::nn;

namespace {

struct Run {
  std::vector<Tensor> values, grads;
};

// Values of fn's outputs and the gradients of `leaves` for L = sum_k sum(y_k * upstream_k).
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

std::vector<Tensor> upstream_for(const LSTMOutput& out, Generator& gen) {
  return {normal(out.output.shape(), 0, 1, gen, out.output.dtype()), normal(out.h_n.shape(), 0, 1, gen, out.h_n.dtype()),
          normal(out.c_n.shape(), 0, 1, gen, out.c_n.dtype())};
}

// Fused and composed LSTM on the same x, lengths and initial state: equal values and gradients.
void check_fused_equals_composed(LSTM& lstm, const Tensor& x, const std::vector<std::int64_t>& lengths,
                                 const LSTMState& initial, double tol, Generator& gen) {
  std::vector<Tensor> leaves{x};
  if (initial.h.defined()) {
    leaves.push_back(initial.h);
    leaves.push_back(initial.c);
  }
  for (const Tensor& p : lstm.parameters()) leaves.push_back(p);
  const std::vector<Tensor> upstream = upstream_for(lstm.forward(x, lengths, initial), gen);
  Run fused = run_with_grads(
      [&] {
        LSTMOutput o = lstm.forward(x, lengths, initial);
        return std::vector<Tensor>{o.output, o.h_n, o.c_n};
      },
      leaves, upstream);
  Run composed = run_with_grads(
      [&] {
        LSTMOutput o = lstm.forward_composed(x, lengths, initial);
        return std::vector<Tensor>{o.output, o.h_n, o.c_n};
      },
      leaves, upstream);
  check_close(fused.values, composed.values, tol, "output (output, h_n, c_n)");
  check_close(fused.grads, composed.grads, tol, "gradient of leaf (x, [h0, c0,] parameters...)");
}

std::map<std::string, Tensor> tiny_state(const std::string& suffix) {
  // The tiny cell of test_lstm_cell.cpp: I = H = 1.
  return {{"weight_ih" + suffix, tensor({1, -1, 0.5, 2}, {4, 1}, Float64)},
          {"weight_hh" + suffix, tensor({-2, 2, 1, -4}, {4, 1}, Float64)},
          {"bias_ih" + suffix, tensor({0.5, 0, 0, 0}, {4}, Float64)},
          {"bias_hh" + suffix, tensor({-0.5, 0, 0, 0}, {4}, Float64)}};
}

}  // namespace

// The tiny cell of test_lstm_cell.cpp, run over x = [1, -1] from h0 = 0.5, c0 = 2:
//   step 1: c1 = 1.3807970779778824, h1 = 0.4405648141721129
//   step 2: c2 = 1.1903223887495353, h2 = 0.018859532979467162
// With length 1 the second step is padding: output [h1, 0], final state (h1, c1).
TEST_CASE("LSTM: a tiny sequence worked out by hand, with and without padding") {
  Generator gen(1);
  LSTM lstm(1, 1, gen, {.dtype = Float64});
  lstm.load_state_dict(tiny_state("_l0"));
  Tensor x = tensor({1, -1}, {1, 2, 1}, Float64);
  LSTMState initial{tensor({0.5}, {1, 1, 1}, Float64), tensor({2}, {1, 1, 1}, Float64)};
  LSTMOutput full = lstm.forward(x, {}, initial);
  CHECK(full.output.at({0, 0, 0}) == doctest::Approx(0.4405648141721129).epsilon(1e-14));
  CHECK(full.output.at({0, 1, 0}) == doctest::Approx(0.018859532979467162).epsilon(1e-14));
  CHECK(full.h_n.at({0, 0, 0}) == doctest::Approx(0.018859532979467162).epsilon(1e-14));
  CHECK(full.c_n.at({0, 0, 0}) == doctest::Approx(1.1903223887495353).epsilon(1e-14));
  LSTMOutput one = lstm.forward(x, {1}, initial);
  CHECK(one.output.at({0, 0, 0}) == doctest::Approx(0.4405648141721129).epsilon(1e-14));
  CHECK(one.output.at({0, 1, 0}) == 0.0);
  CHECK(one.h_n.at({0, 0, 0}) == doctest::Approx(0.4405648141721129).epsilon(1e-14));
  CHECK(one.c_n.at({0, 0, 0}) == doctest::Approx(1.3807970779778824).epsilon(1e-14));
}

// float64: B = 4 runs the recurrent GEMM on a transposed copy of W_hh (small
// batches), B = 37 on W_hh itself (see kTransposedWeightsBelow); float32 on W_hh
// packed (core/kernels/packed_gemm.hpp), whose row blocks B = 37 does not fill.
// I and H of 16 and more fill whole panels of the packed weights and of x and
// h_prev packed for the weight gradients.
// x_grad false: x needs no gradient (float32's backward step then multiplies by W_hh alone).
void check_sequence_fused_equals_composed(Generator& gen, std::int64_t B, std::int64_t I = 3, std::int64_t H = 4,
                                          bool x_grad = true) {
  const std::int64_t T = 5;
  std::vector<std::int64_t> lengths{5, 1, 3, 4};  // unsorted, with a single-token row
  for (std::int64_t b = 4; b < B; ++b) lengths.push_back(1 + (b * 7) % T);
  for (DType dtype : {Float64, Float32}) {
    const double tol = dtype == Float64 ? 1e-13 : 2e-5;
    for (bool reverse : {false, true}) {
      LSTMWeights w{normal({4 * H, I}, 0, 0.5, gen, dtype).requires_grad_(),
                    normal({4 * H, H}, 0, 0.5, gen, dtype).requires_grad_(),
                    normal({4 * H}, 0, 0.5, gen, dtype).requires_grad_(),
                    normal({4 * H}, 0, 0.5, gen, dtype).requires_grad_()};
      Tensor x = normal({B, T, I}, 0, 1, gen, dtype);
      if (x_grad) x.requires_grad_();
      Tensor h0 = normal({B, H}, 0, 1, gen, dtype).requires_grad_();
      Tensor c0 = normal({B, H}, 0, 1, gen, dtype).requires_grad_();
      std::vector<Tensor> leaves{h0, c0, w.weight_ih, w.weight_hh, w.bias_ih, w.bias_hh};
      if (x_grad) leaves.insert(leaves.begin(), x);
      std::vector<Tensor> upstream{normal({B, T, H}, 0, 1, gen, dtype), normal({B, H}, 0, 1, gen, dtype),
                                   normal({B, H}, 0, 1, gen, dtype)};
      auto run = [&](bool fused) {
        return run_with_grads(
            [&] {
              LSTMSequenceOutput o = fused ? lstm_sequence(x, {h0, c0}, w, lengths, reverse)
                                           : lstm_sequence_composed(x, {h0, c0}, w, lengths, reverse);
              return std::vector<Tensor>{o.output, o.final.h, o.final.c};
            },
            leaves, upstream);
      };
      INFO("B ", B, ", reverse ", reverse, ", ", dtype);
      Run fused = run(true), composed = run(false);
      check_close(fused.values, composed.values, tol, "output (y, h_n, c_n)");
      check_close(fused.grads, composed.grads, tol, "gradient of (x, h0, c0, W_ih, W_hh, b_ih, b_hh)");
    }
  }
}

TEST_CASE("lstm_sequence: fused equals composed, both directions, with padding") {
  static_assert(4 < kTransposedWeightsBelow && 37 >= kTransposedWeightsBelow);
  Generator gen(2);
  SUBCASE("a small batch") { check_sequence_fused_equals_composed(gen, 4); }
  SUBCASE("a large batch") { check_sequence_fused_equals_composed(gen, 37); }
  SUBCASE("whole panels: I = 16, H = 36") { check_sequence_fused_equals_composed(gen, 9, 16, 36); }
  SUBCASE("x without a gradient") { check_sequence_fused_equals_composed(gen, 9, 16, 36, false); }
}

TEST_CASE("LSTM: fused equals composed, 1 and 2 layers, both directions, with and without h0/c0") {
  Generator gen(3);
  const std::int64_t B = 3, T = 4, I = 3, H = 3;
  for (std::int64_t layers : {1, 2}) {
    for (bool bidirectional : {false, true}) {
      for (bool with_initial : {false, true}) {
        INFO("layers ", layers, ", bidirectional ", bidirectional, ", h0/c0 ", with_initial);
        LSTM lstm(I, H, gen, {.num_layers = layers, .bidirectional = bidirectional, .dtype = Float64});
        const std::int64_t LD = layers * (bidirectional ? 2 : 1);
        Tensor x = normal({B, T, I}, 0, 1, gen, Float64).requires_grad_();
        LSTMState initial;
        if (with_initial)
          initial = {normal({LD, B, H}, 0, 1, gen, Float64).requires_grad_(),
                     normal({LD, B, H}, 0, 1, gen, Float64).requires_grad_()};
        check_fused_equals_composed(lstm, x, {2, 4, 1}, initial, 1e-13, gen);
        check_fused_equals_composed(lstm, x, {}, initial, 1e-13, gen);
      }
    }
  }
}

TEST_CASE("LSTM: gradcheck w.r.t. x, h0, c0 and every parameter") {
  Generator gen(4);
  const std::int64_t B = 3, T = 4, I = 2, H = 2;
  const std::vector<std::int64_t> lengths{4, 1, 3};  // row 1 is all padding but one token
  struct Config {
    std::int64_t layers;
    bool bidirectional, with_initial;
  };
  for (Config c : {Config{1, false, false}, Config{1, false, true}, Config{1, true, true}, Config{2, true, false},
                   Config{2, true, true}}) {
    INFO("layers ", c.layers, ", bidirectional ", c.bidirectional, ", h0/c0 ", c.with_initial);
    LSTM lstm(I, H, gen, {.num_layers = c.layers, .bidirectional = c.bidirectional, .forget_bias_one = true});
    lstm.to(Float64);
    const std::int64_t LD = c.layers * (c.bidirectional ? 2 : 1);
    std::vector<Tensor> inputs{normal({B, T, I}, 0, 1, gen, Float64).requires_grad_()};
    if (c.with_initial) {
      inputs.push_back(normal({LD, B, H}, 0, 1, gen, Float64).requires_grad_());
      inputs.push_back(normal({LD, B, H}, 0, 1, gen, Float64).requires_grad_());
    }
    for (const Tensor& p : lstm.parameters()) inputs.push_back(p);
    auto report = gradcheck(MultiOutputFn([&](const std::vector<Tensor>& in) {
                              LSTMState initial = c.with_initial ? LSTMState{in[1], in[2]} : LSTMState{};
                              LSTMOutput o = lstm.forward(in[0], lengths, initial);
                              return std::vector<Tensor>{o.output, o.h_n, o.c_n};
                            }),
                            inputs);
    INFO(report.str());
    CHECK(report.passed);
    CHECK(report.inputs.size() == inputs.size());
  }
}

TEST_CASE("LSTM: gradcheck of the composed oracle") {
  Generator gen(5);
  LSTM lstm(2, 2, gen, {.bidirectional = true});
  lstm.to(Float64);
  std::vector<Tensor> inputs{normal({2, 3, 2}, 0, 1, gen, Float64).requires_grad_()};
  for (const Tensor& p : lstm.parameters()) inputs.push_back(p);
  auto report = gradcheck(MultiOutputFn([&](const std::vector<Tensor>& in) {
                            LSTMOutput o = lstm.forward_composed(in[0], {3, 1});
                            return std::vector<Tensor>{o.output, o.h_n, o.c_n};
                          }),
                          inputs);
  INFO(report.str());
  CHECK(report.passed);
}

TEST_CASE("LSTM: padded steps output exactly 0, pass no gradient to x, and ignore what x holds there") {
  Generator gen(6);
  const std::int64_t B = 3, T = 5, I = 3, H = 4;
  const std::vector<std::int64_t> lengths{5, 1, 3};
  for (DType dtype : {Float32, Float64}) {
    LSTM lstm(I, H, gen, {.num_layers = 2, .bidirectional = true, .dtype = dtype});
    Tensor x = normal({B, T, I}, 0, 1, gen, dtype).requires_grad_();
    LSTMOutput out = lstm.forward(x, lengths);
    backward({out.output, out.h_n, out.c_n}, upstream_for(out, gen));
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t t = 0; t < T; ++t) {
        const bool padded = t >= lengths[b];
        for (std::int64_t j = 0; j < 2 * H; ++j) {
          if (padded) CHECK(out.output.at({b, t, j}) == 0.0);
          else CHECK(out.output.at({b, t, j}) != 0.0);
        }
        for (std::int64_t i = 0; i < I; ++i) {
          if (padded) CHECK(x.grad().at({b, t, i}) == 0.0);
          else CHECK(x.grad().at({b, t, i}) != 0.0);
        }
      }
    }
    // Garbage in the padding changes nothing, not even in the last bit.
    Tensor x2 = x.detach().clone();
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t t = lengths[b]; t < T; ++t)
        for (std::int64_t i = 0; i < I; ++i) x2.set({b, t, i}, 1e3 * (i + 1));
    LSTMOutput out2 = lstm.forward(x2, lengths);
    CHECK(equal(out.output, out2.output));
    CHECK(equal(out.h_n, out2.h_n));
    CHECK(equal(out.c_n, out2.c_n));
  }
}

TEST_CASE("LSTM: each sequence's final state is the one at its last real token") {
  Generator gen(7);
  const std::int64_t B = 3, T = 5, I = 3, H = 4;
  const std::vector<std::int64_t> lengths{2, 5, 1};
  LSTM lstm(I, H, gen, {.num_layers = 2, .bidirectional = true, .dtype = Float64});
  Tensor x = normal({B, T, I}, 0, 1, gen, Float64);
  LSTMOutput batch = lstm.forward(x, lengths);
  for (std::int64_t b = 0; b < B; ++b) {
    // the sequence alone, cut to its length: no padding at all
    Tensor alone = slice(slice(x, 0, b, b + 1), 1, 0, lengths[b]);
    LSTMOutput single = lstm.forward(alone);
    INFO("sequence ", b);
    CHECK(max_abs_diff(slice(batch.h_n, 1, b, b + 1), single.h_n) < 1e-14);
    CHECK(max_abs_diff(slice(batch.c_n, 1, b, b + 1), single.c_n) < 1e-14);
    CHECK(max_abs_diff(slice(slice(batch.output, 0, b, b + 1), 1, 0, lengths[b]), single.output) < 1e-14);
  }
}

TEST_CASE("LSTM: dropout between layers in training only") {
  Generator gen(8);
  const std::int64_t B = 2, T = 3, I = 3, H = 4;
  LSTM lstm(I, H, gen, {.num_layers = 2, .dropout = 0.5, .dtype = Float64});
  LSTM plain(I, H, gen, {.num_layers = 2, .dtype = Float64});
  plain.load_state_dict(lstm.state_dict());
  Tensor x = normal({B, T, I}, 0, 1, gen, Float64);
  lstm.eval();
  CHECK(equal(lstm.forward(x).output, plain.forward(x).output));
  lstm.train();
  lstm.dropout_generator().manual_seed(11);
  Tensor a = lstm.forward(x).output;
  lstm.dropout_generator().manual_seed(11);
  Tensor b = lstm.forward(x).output;
  CHECK(equal(a, b));                                  // the same seed drops the same units
  CHECK(max_abs_diff(a, plain.forward(x).output) > 1e-3);  // and dropping changes the result
  LSTM one_layer(I, H, gen, {.dropout = 0.5, .dtype = Float64});  // nothing to drop between
  LSTM one_plain(I, H, gen, {.dtype = Float64});
  one_plain.load_state_dict(one_layer.state_dict());
  CHECK(equal(one_layer.forward(x).output, one_plain.forward(x).output));

  // The gradient through a fixed mask.
  std::vector<Tensor> inputs{normal({B, T, I}, 0, 1, gen, Float64).requires_grad_()};
  for (const Tensor& p : lstm.parameters()) inputs.push_back(p);
  auto report = gradcheck(MultiOutputFn([&](const std::vector<Tensor>& in) {
                            lstm.dropout_generator().manual_seed(12);
                            LSTMOutput o = lstm.forward(in[0], {3, 2});
                            return std::vector<Tensor>{o.output, o.h_n, o.c_n};
                          }),
                          inputs);
  INFO(report.str());
  CHECK(report.passed);
}

TEST_CASE("LSTM: PyTorch's parameter names and shapes") {
  Generator gen(9);
  LSTM lstm(3, 4, gen, {.num_layers = 2, .bidirectional = true});
  const std::vector<std::pair<std::string, Shape>> expected{
      {"weight_ih_l0", {16, 3}},         {"weight_hh_l0", {16, 4}},         {"bias_ih_l0", {16}},
      {"bias_hh_l0", {16}},              {"weight_ih_l0_reverse", {16, 3}}, {"weight_hh_l0_reverse", {16, 4}},
      {"bias_ih_l0_reverse", {16}},      {"bias_hh_l0_reverse", {16}},      {"weight_ih_l1", {16, 8}},
      {"weight_hh_l1", {16, 4}},         {"bias_ih_l1", {16}},              {"bias_hh_l1", {16}},
      {"weight_ih_l1_reverse", {16, 8}}, {"weight_hh_l1_reverse", {16, 4}}, {"bias_ih_l1_reverse", {16}},
      {"bias_hh_l1_reverse", {16}}};
  auto named = lstm.named_parameters();
  REQUIRE(named.size() == expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    CHECK(named[k].first == expected[k].first);
    CHECK(named[k].second.shape() == expected[k].second);
    for (double v : named[k].second.to_vector()) CHECK((v >= -0.5 && v < 0.5));  // 1 / sqrt(H)
  }
  CHECK(lstm.weights(1, 1).weight_ih.same(named[12].second));
  LSTMOutput out = lstm.forward(normal({2, 3, 3}, 0, 1, gen));
  CHECK(out.output.shape() == Shape{2, 3, 8});
  CHECK(out.h_n.shape() == Shape{4, 2, 4});
  CHECK(out.c_n.shape() == Shape{4, 2, 4});
}

TEST_CASE("LSTM: argument errors") {
  Generator gen(10);
  LSTM lstm(3, 4, gen, {.num_layers = 2, .bidirectional = true});
  Tensor x = zeros({2, 5, 3});
  CHECK_THROWS_WITH_AS(lstm.forward(zeros({2, 5})), "LSTM: x must be (B, T, I) = (B, T, 3), got [2, 5]", Error);
  CHECK_THROWS_WITH_AS(lstm.forward(zeros({2, 5, 4})), "LSTM: x must be (B, T, I) = (B, T, 3), got [2, 5, 4]", Error);
  CHECK_THROWS_WITH_AS(lstm.forward(zeros({2, 0, 3})),
                       "LSTM: x must hold at least one sequence of at least one step, got [2, 0, 3]", Error);
  CHECK_THROWS_WITH_AS(lstm.forward(zeros({2, 5, 3}, Float64)),
                       "LSTM: x is float64 but the parameters are float32 (convert with .to(dtype))", Error);
  CHECK_THROWS_WITH_AS(lstm.forward(x, {5}), "LSTM: 1 lengths given for a batch of 2", Error);
  CHECK_THROWS_WITH_AS(lstm.forward(x, {5, 0}), "LSTM: lengths[1] = 0 is outside [1, T] = [1, 5]", Error);
  CHECK_THROWS_WITH_AS(lstm.forward(x, {6, 1}), "LSTM: lengths[0] = 6 is outside [1, T] = [1, 5]", Error);
  CHECK_THROWS_WITH_AS(lstm.forward(x, {}, {zeros({4, 2, 4}), Tensor()}),
                       "LSTM: give both h0 and c0, or neither (for zeros)", Error);
  CHECK_THROWS_WITH_AS(lstm.forward(x, {}, {zeros({2, 2, 4}), zeros({4, 2, 4})}),
                       "LSTM: h0 must be (num_layers * num_directions, B, H) = (4, 2, 4), got [2, 2, 4]", Error);
  CHECK_THROWS_WITH_AS(lstm.forward(x, {}, {zeros({4, 2, 4}), zeros({4, 3, 4})}),
                       "LSTM: c0 must be (num_layers * num_directions, B, H) = (4, 2, 4), got [4, 3, 4]", Error);
  CHECK_THROWS_WITH_AS(lstm.forward(x, {}, {zeros({4, 2, 4}), zeros({4, 2, 4}, Float64)}),
                       "LSTM: c0 is float64 but x is float32", Error);
  CHECK_THROWS_WITH_AS(lstm.weights(2, 0), "LSTM::weights: no layer 2 direction 0 in an LSTM of 2 layers and 2 directions",
                       Error);
  CHECK_THROWS_WITH_AS(LSTM(3, 4, gen, {.num_layers = 0}), "LSTM: num_layers must be at least 1, got 0", Error);
  CHECK_THROWS_WITH_AS(LSTM(3, 4, gen, {.dropout = 1.0}), "LSTM: dropout must be in [0, 1), got 1", Error);
  CHECK_THROWS_WITH_AS(LSTM(3, -1, gen), "LSTM: input_size and hidden_size must be positive, got 3 and -1", Error);

  const LSTMWeights& w = lstm.weights(0, 0);
  LSTMState s{zeros({2, 4}), zeros({2, 4})};
  CHECK_THROWS_WITH_AS(lstm_sequence(zeros({2, 5, 2}), s, w), "lstm_sequence: x must be (B, T, I) = (B, T, 3), got [2, 5, 2]",
                       Error);
  CHECK_THROWS_WITH_AS(lstm_sequence(x, {zeros({2, 3}), s.c}, w),
                       "lstm_sequence: initial.h must be (B, H) = (2, 4), got [2, 3]", Error);
  CHECK_THROWS_WITH_AS(lstm_sequence(x, {s.h, zeros({1, 4})}, w),
                       "lstm_sequence: initial.c must be (B, H) = (2, 4), got [1, 4]", Error);
  CHECK_THROWS_WITH_AS(lstm_sequence(x, s, w, {3, 7}), "lstm_sequence: lengths[1] = 7 is outside [1, T] = [1, 5]",
                       Error);
  CHECK_THROWS_WITH_AS(lstm_sequence(x, {s.h, Tensor()}, w), "lstm_sequence: initial.c is an undefined tensor", Error);
  CHECK_THROWS_WITH_AS(lstm_sequence(x.to(Float64), s, w),
                       "lstm_sequence: the inputs are float64 but the weights are float32 (convert with .to(dtype))",
                       Error);
}

// tests/reference/torch_lstm.py: a 2-layer bidirectional nn.LSTM(batch_first=True)
// on pack_padded_sequence input (lengths 3, 5, 1, 4; enforce_sorted=False), with
// loss = sum(out * R_out) + sum(h_n * R_h) + sum(c_n * R_c).
TEST_CASE("LSTM: agrees with PyTorch's nn.LSTM on packed sequences, values and gradients") {
  struct Case {
    const char* file;
    DType dtype;
    double rtol, atol;
  };
  for (Case k : {Case{"lstm_f64.safetensors", Float64, 1e-10, 1e-12}, Case{"lstm_f32.safetensors", Float32, 1e-5, 1e-6}}) {
    INFO(k.file);
    const std::map<std::string, Tensor> t = load_safetensors(std::string(ATTEND_TEST_DATA) + "/" + k.file).tensors;
    Generator gen(0);
    LSTM lstm(3, 4, gen, {.num_layers = 2, .bidirectional = true, .dtype = k.dtype});
    std::map<std::string, Tensor> params;
    for (const auto& [name, p] : lstm.named_parameters()) params[name] = t.at(name);
    lstm.load_state_dict(params);
    std::vector<std::int64_t> lengths;
    for (double v : t.at("lengths").to_vector()) lengths.push_back(static_cast<std::int64_t>(v));
    REQUIRE(lengths == std::vector<std::int64_t>{3, 5, 1, 4});
    Tensor x = t.at("x").clone().requires_grad_();
    Tensor h0 = t.at("h0").clone().requires_grad_();
    Tensor c0 = t.at("c0").clone().requires_grad_();
    LSTMOutput out = lstm.forward(x, lengths, {h0, c0});
    backward({out.output, out.h_n, out.c_n}, {t.at("R_out"), t.at("R_h"), t.at("R_c")});
    std::vector<std::pair<std::string, Tensor>> got{{"out", out.output},     {"h_n", out.h_n},
                                                    {"c_n", out.c_n},        {"grad.x", x.grad()},
                                                    {"grad.h0", h0.grad()},  {"grad.c0", c0.grad()}};
    for (const auto& [name, p] : lstm.named_parameters()) got.emplace_back("grad." + name, p.grad());
    CHECK(got.size() == 22);
    for (const auto& [name, value] : got) {
      INFO(name, ": max |diff| = ", max_abs_diff(value, t.at(name)));
      CHECK(value.dtype() == k.dtype);
      CHECK(allclose(value, t.at(name), k.rtol, k.atol));
    }
  }
}
