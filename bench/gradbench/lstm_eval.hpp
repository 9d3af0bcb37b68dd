#pragma once
// GradBench's `lstm` eval (taken from ADBench): a "diagonal" LSTM, each weight
// a vector rather than a matrix, run over a text one character at a time, each
// character its bits (b of them). The objective is the mean log-likelihood of
// the next character's bits; the gradient is taken with respect to the main
// parameters (2l x 4b: per layer, the four gates' weights, then their biases)
// and the extra ones (3 x b: input weight, output weight, output bias).
//
// Per step t, with x = sequence[t] * w_in and, for each layer k (input `in`:
// x for the first, the layer below's new h for the others):
//   f = σ(in w_f + b_f)   i = σ(h w_i + b_i)   o = σ(in w_o + b_o)   g = tanh(h w_g + b_g)
//   c = c f + i g         h = o tanh(c)
//   y = h_top w_out + b_out     lse = log(Σ exp(y) + 2)
//   total += Σ sequence[t+1] (y - lse)
// and loss = -total / ((chars - 1) b). (The "+ 2" is the eval's own.)
//
// Two ways to the gradient: `tape`, written with attend's public ops in the
// eval's time-major loop, as a user would write it, so that the autograd
// engine records ~50 tiny ops a step; and `by_hand`, the derivative written
// out, which records nothing. bench/gradbench_lstm.cpp times both.
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/autograd.hpp"
#include "core/core.hpp"

namespace attend::bench::gradbench {

struct LstmInputs {
  int layers = 0, chars = 0, bits = 0;
  std::vector<double> main, extra, state, sequence;  // (2l, 4b), (3, b), (2l, b), (chars, b)
};

// The eval's inputs as its generator makes them: the first `chars` characters
// of `text`, each as its code's bits (most significant first), b = the bits
// the largest code needs; state and parameters uniform in [0, 1).
inline LstmInputs make_lstm_inputs(const std::string& text, int layers, int chars, std::uint64_t seed) {
  if (layers < 1 || chars < 2 || static_cast<std::size_t>(chars) > text.size())
    throw Error("gradbench lstm: need layers >= 1 and 2 <= chars <= the text's length");
  LstmInputs in;
  in.layers = layers;
  in.chars = chars;
  unsigned largest = 1;
  for (int t = 0; t < chars; ++t) largest = std::max<unsigned>(largest, static_cast<unsigned char>(text[t]));
  // The bits the largest code needs (the generator's ceil(log2(code)), which
  // falls one short when the code is a power of two).
  in.bits = std::bit_width(largest);
  for (int t = 0; t < chars; ++t)
    for (int k = in.bits - 1; k >= 0; --k)
      in.sequence.push_back((static_cast<unsigned char>(text[t]) >> k) & 1u);
  Generator gen(seed);
  const auto draw = [&](std::int64_t rows, std::int64_t cols) {
    return uniform({rows, cols}, 0.0, 1.0, gen, Float64).to_vector();
  };
  in.state = draw(2 * layers, in.bits);
  in.main = draw(2 * layers, 4 * in.bits);
  in.extra = draw(3, in.bits);
  return in;
}

struct LstmResult {
  double loss = 0;
  std::vector<double> d_main, d_extra;
};

// The objective and its gradient through attend's autograd, in the eval's loop.
inline LstmResult lstm_by_tape(const LstmInputs& in) {
  const int l = in.layers, b = in.bits;
  Tensor main = tensor(in.main, {2 * l, 4 * b}, Float64).requires_grad_();
  Tensor extra = tensor(in.extra, {3, b}, Float64).requires_grad_();
  const auto row = [&](const Tensor& m, int r, int part) {  // part `part` (b wide) of row r, (b)
    return reshape(slice(slice(m, 0, r, r + 1), 1, part * b, (part + 1) * b), {b});
  };
  struct Layer {
    Tensor w_f, w_i, w_o, w_g, b_f, b_i, b_o, b_g, h, c;
  };
  std::vector<Layer> layers;
  for (int k = 0; k < l; ++k)
    layers.push_back({row(main, 2 * k, 0), row(main, 2 * k, 1), row(main, 2 * k, 2), row(main, 2 * k, 3),
                      row(main, 2 * k + 1, 0), row(main, 2 * k + 1, 1), row(main, 2 * k + 1, 2),
                      row(main, 2 * k + 1, 3),
                      tensor(std::span(in.state).subspan(2 * k * b, b), {b}, Float64),
                      tensor(std::span(in.state).subspan((2 * k + 1) * b, b), {b}, Float64)});
  const Tensor w_in = row(extra, 0, 0), w_out = row(extra, 1, 0), b_out = row(extra, 2, 0);
  std::vector<Tensor> sequence;
  for (int t = 0; t < in.chars; ++t) sequence.push_back(tensor(std::span(in.sequence).subspan(t * b, b), {b}, Float64));

  Tensor total;
  for (int t = 0; t + 1 < in.chars; ++t) {
    Tensor x = sequence[t] * w_in;
    for (Layer& L : layers) {
      const Tensor f = sigmoid(x * L.w_f + L.b_f), i = sigmoid(L.h * L.w_i + L.b_i);
      const Tensor o = sigmoid(x * L.w_o + L.b_o), g = tanh(L.h * L.w_g + L.b_g);
      L.c = L.c * f + i * g;
      L.h = o * tanh(L.c);
      x = L.h;
    }
    const Tensor y = x * w_out + b_out;
    const Tensor lse = log(sum(exp(y)) + 2.0);
    const Tensor term = sum(sequence[t + 1] * (y - lse));
    total = total.defined() ? total + term : term;
  }
  const Tensor loss = total * (-1.0 / (static_cast<double>(in.chars - 1) * b));
  loss.backward();
  return {loss.item(), main.grad().to_vector(), extra.grad().to_vector()};
}

}  // namespace attend::bench::gradbench
