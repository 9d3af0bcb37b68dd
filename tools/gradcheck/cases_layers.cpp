// gradcheck cases for the fused ops with hand-written backwards that layers/
// and autograd/ops/losses.cpp build on: linear_cross_entropy, embedding,
// lstm_cell (and lstm_weight_grads, which gathers its weight gradients),
// lstm_sequence and both attention steps, packed_linear (and
// linear_weight_grads, likewise), plus tap.
//
// Letters: B batch, S source length, A attention size, Hk value size, I input
// size, H hidden size, T steps, N rows, V vocabulary, D embedding size.
#include <memory>
#include <tuple>

#include "autograd/ops.hpp"
#include "layers/attention/attention.hpp"
#include "layers/embedding.hpp"
#include "layers/linear.hpp"
#include "layers/lstm/lstm.hpp"
#include "layers/lstm/lstm_cell.hpp"
#include "tools/gradcheck/op_cases.hpp"

namespace attend::tools {

using nn::LSTMState;
using nn::LSTMWeights;

namespace {

Tensor randn(const Shape& shape, std::uint64_t seed, double stddev = 1.0) {
  Generator gen(seed);
  return normal(shape, 0.0, stddev, gen, Float64).requires_grad_();
}

// (B, S) = (3, 4): a full row, a partly padded row, a one-token row.
Tensor padded_mask() { return tensor({1, 1, 1, 1, /**/ 1, 1, 0, 0, /**/ 1, 0, 0, 0}, {3, 4}, Float64); }
// (B, S) = (3, 4) with an all-padding row.
Tensor mask_with_empty_row() { return tensor({1, 1, 0, 1, /**/ 0, 0, 0, 0, /**/ 0, 1, 1, 0}, {3, 4}, Float64); }

LSTMWeights lstm_weights(std::int64_t I, std::int64_t H, std::uint64_t seed) {
  return {randn({4 * H, I}, seed, 0.5), randn({4 * H, H}, seed + 1, 0.5), randn({4 * H}, seed + 2, 0.5),
          randn({4 * H}, seed + 3, 0.5)};
}

void add_attention_cases(std::vector<OpCase>& cases) {
  const std::int64_t B = 3, S = 4, A = 5, Hk = 3;
  auto additive = [=](const char* name, Tensor mask) {
    return OpCase{"additive_attention_step", name, [=] {
                    return gradcheck(
                        [&](const Tensors& in) {
                          const nn::AttentionOutput out = nn::additive_attention_step(in[0], in[1], in[2], in[3], mask);
                          return Tensors{out.context, out.weights};
                        },
                        {randn({B, A}, 60), randn({B, S, A}, 61), randn({B, S, Hk}, 62), randn({A}, 63)});
                  }};
  };
  cases.push_back(additive("(3, 4) rows: full, padded, one token", padded_mask()));
  cases.push_back(additive("(3, 4) with an all-padding row", mask_with_empty_row()));
  auto dot = [=](const char* name, Tensor mask, double scale) {
    return OpCase{"dot_attention_step", name, [=] {
                    return gradcheck(
                        [&](const Tensors& in) {
                          const nn::AttentionOutput out = nn::dot_attention_step(in[0], in[1], in[2], mask, scale);
                          return Tensors{out.context, out.weights};
                        },
                        {randn({B, A}, 64), randn({B, S, A}, 65), randn({B, S, Hk}, 66)});
                  }};
  };
  cases.push_back(dot("(3, 4) rows: full, padded, one token, scaled", padded_mask(), 1 / std::sqrt(5.0)));
  cases.push_back(dot("(3, 4) with an all-padding row, unscaled", mask_with_empty_row(), 1.0));
}

void add_lstm_cases(std::vector<OpCase>& cases) {
  const std::int64_t B = 3, I = 4, H = 5;
  cases.push_back({"lstm_cell", "(3, 4) -> (3, 5)", [=] {
                     return gradcheck(
                         [](const Tensors& in) {
                           const LSTMState s = nn::lstm_cell(in[0], {in[1], in[2]}, {in[3], in[4], in[5], in[6]});
                           return Tensors{s.h, s.c};
                         },
                         [&] {
                           const LSTMWeights w = lstm_weights(I, H, 70);
                           return Tensors{randn({B, I}, 74), randn({B, H}, 75), randn({B, H}, 76), w.weight_ih,
                                          w.weight_hh, w.bias_ih, w.bias_hh};
                         }());
                   }});
  cases.push_back({"lstm_cell", "one row, transposed weight copies", [=] {
                     return gradcheck(
                         [](const Tensors& in) {
                           LSTMWeights w{in[3], in[4], in[5], in[6]};
                           w.weight_ih_t = transpose(in[3], 0, 1).detach().clone();  // speed copies: no gradient
                           w.weight_hh_t = transpose(in[4], 0, 1).detach().clone();
                           const LSTMState s = nn::lstm_cell(in[0], {in[1], in[2]}, w);
                           return Tensors{s.h, s.c};
                         },
                         [&] {
                           const LSTMWeights w = lstm_weights(I, H, 77);
                           return Tensors{randn({1, I}, 81), randn({1, H}, 82), randn({1, H}, 83), w.weight_ih,
                                          w.weight_hh, w.bias_ih, w.bias_hh};
                         }());
                   }});
  cases.push_back({"lstm_weight_grads", "three lstm_cell steps, their weight gradients gathered", [=] {
                     return gradcheck(
                         [](const Tensors& in) {
                           LSTMWeights w{in[3], in[4], in[5], in[6]};
                           w.deferred = std::make_shared<nn::DeferredWeightGrads>();
                           std::tie(w.weight_ih, w.weight_hh) = nn::defer_weight_grads(in[3], in[4], w.deferred);
                           LSTMState s{in[1], in[2]};
                           Tensors out;
                           for (std::int64_t t = 0; t < 3; ++t) {  // x_t = in[0][t] (B, I)
                             s = nn::lstm_cell(reshape(slice(in[0], 0, t, t + 1), {B, I}), s, w);
                             out.push_back(s.h);
                           }
                           out.push_back(s.c);
                           return out;
                         },
                         [&] {
                           const LSTMWeights w = lstm_weights(I, H, 91);
                           return Tensors{randn({3, B, I}, 95), randn({B, H}, 96), randn({B, H}, 97), w.weight_ih,
                                          w.weight_hh, w.bias_ih, w.bias_hh};
                         }());
                   }});
  auto sequence = [=](const char* name, std::vector<std::int64_t> lengths, bool reverse) {
    return OpCase{"lstm_sequence", name, [=] {
                    const std::int64_t T = 4;
                    const LSTMWeights w = lstm_weights(I, H, 84);
                    return gradcheck(
                        [&](const Tensors& in) {
                          const nn::LSTMSequenceOutput out =
                              nn::lstm_sequence(in[0], {in[1], in[2]}, {in[3], in[4], in[5], in[6]}, lengths, reverse);
                          return Tensors{out.output, out.final.h, out.final.c};
                        },
                        {randn({B, T, I}, 88), randn({B, H}, 89), randn({B, H}, 90), w.weight_ih, w.weight_hh,
                         w.bias_ih, w.bias_hh});
                  }};
  };
  cases.push_back(sequence("(3, 4, 4) full length", {}, false));
  cases.push_back(sequence("(3, 4, 4) lengths 4, 2, 1", {4, 2, 1}, false));
  cases.push_back(sequence("(3, 4, 4) lengths 4, 2, 1, reversed", {4, 2, 1}, true));
}

void add_embedding_and_loss_cases(std::vector<OpCase>& cases) {
  cases.push_back({"embedding", "(6, 3) table, repeated ids", [] {
                     const Indices ids({1, 4, 1, 0, 5, 1}, {2, 3});
                     return gradcheck([&](const Tensors& in) { return nn::embedding(in[0], ids); }, {randn({6, 3}, 91)});
                   }});
  // The padding row gets no gradient by design (as in PyTorch), which is the true
  // gradient only where padded positions are masked out downstream, as models do.
  cases.push_back({"embedding", "(6, 3) table, padding row 0, padded positions masked", [] {
                     const Indices ids({0, 2, 0, 3}, {4});
                     const Tensor keep = tensor({0, 1, 0, 1}, {4, 1}, Float64);
                     return gradcheck([&](const Tensors& in) { return nn::embedding(in[0], ids, 0) * keep; },
                                      {randn({6, 3}, 92)});
                   }});
  auto lce = [](const char* name, Indices targets, bool bias, double smoothing) {
    return OpCase{"linear_cross_entropy", name, [=] {
                    const std::int64_t N = targets.numel(), H = 4, V = 7;
                    Tensors inputs = {randn({N, H}, 93), randn({V, H}, 94, 0.5)};
                    if (bias) inputs.push_back(randn({V}, 95));
                    return gradcheck(
                        [&](const Tensors& in) {
                          return linear_cross_entropy(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), targets, -100,
                                                      smoothing);
                        },
                        inputs);
                  }};
  };
  cases.push_back(lce("(5, 4) rows, vocabulary 7, bias", Indices({0, 6, 3, 3, 1}), true, 0.0));
  cases.push_back(lce("no bias, ignored targets", Indices({2, -100, 5, -100}), false, 0.0));
  cases.push_back(lce("label smoothing 0.1", Indices({4, 1, 0}), true, 0.1));
  cases.push_back({"tap", "(2, 3) under tanh", [] {
                     return gradcheck([](const Tensors& in) { return tanh(tap(in[0], [](const Tensor&) {})); },
                                      {randn({2, 3}, 96)});
                   }});
}

// The decoder's per-step linear layers (nn::PackedLinear::for_steps): one step
// alone, and three steps whose weight gradients one product gathers.
void add_linear_step_cases(std::vector<OpCase>& cases) {
  cases.push_back({"packed_linear", "one step, x (3, 4), W (5, 4), b (5)", [] {
                     return gradcheck(
                         [](const Tensors& in) {
                           return nn::PackedLinear::for_steps(in[1], in[2], false).forward(in[0]);  // dW not deferred
                         },
                         {randn({3, 4}, 97), randn({5, 4}, 98), randn({5}, 99)});
                   }});
  cases.push_back({"linear_weight_grads", "three packed_linear steps of (2, 4) rows, no bias", [] {
                     return gradcheck(
                         [](const Tensors& in) {
                           const nn::PackedLinear steps = nn::PackedLinear::for_steps(in[1], Tensor());
                           Tensors out;
                           for (std::int64_t t = 0; t < 3; ++t)  // x_t = in[0][t] (2, 4)
                             out.push_back(steps.forward(reshape(slice(in[0], 0, t, t + 1), {2, 4})));
                           return out;
                         },
                         {randn({3, 2, 4}, 100), randn({5, 4}, 101)});
                   }});
}

}  // namespace

void add_layer_cases(std::vector<OpCase>& cases) {
  add_attention_cases(cases);
  add_lstm_cases(cases);
  add_linear_step_cases(cases);
  add_embedding_and_loss_cases(cases);
}

}  // namespace attend::tools
