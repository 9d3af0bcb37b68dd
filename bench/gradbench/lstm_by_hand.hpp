#pragma once
// GradBench's `lstm` objective and its gradient written out by hand (see
// lstm_eval.hpp for the model): the forward keeps what the backward reads,
// the backward walks the steps in reverse. No tape: the yardstick for what
// recording the same computation costs.
#include <cmath>
#include <vector>

#include "bench/gradbench/lstm_eval.hpp"

namespace attend::bench::gradbench {

namespace detail {

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// What one layer's step keeps for the backward, each (b).
struct Kept {
  std::vector<double> in, h_prev, c_prev, f, i, o, g, tanh_c;
};

}  // namespace detail

inline LstmResult lstm_by_hand(const LstmInputs& in) {
  const int l = in.layers, b = in.bits, steps = in.chars - 1;
  const double* main = in.main.data();
  const double* w_in = in.extra.data();
  const double* w_out = w_in + b;
  const double* b_out = w_in + 2 * b;
  const auto w = [&](int k, int gate) { return main + (2 * k) * 4 * b + gate * b; };      // gate: f i o g
  const auto bias = [&](int k, int gate) { return main + (2 * k + 1) * 4 * b + gate * b; };
  std::vector<std::vector<double>> h(l), c(l);
  for (int k = 0; k < l; ++k) {
    h[k].assign(in.state.begin() + 2 * k * b, in.state.begin() + (2 * k + 1) * b);
    c[k].assign(in.state.begin() + (2 * k + 1) * b, in.state.begin() + (2 * k + 2) * b);
  }
  std::vector<detail::Kept> kept(static_cast<std::size_t>(steps) * l);
  std::vector<double> top(static_cast<std::size_t>(steps) * b), softmax(static_cast<std::size_t>(steps) * b);
  double total = 0;

  // Forward, keeping each step's gates, inputs and states.
  for (int t = 0; t < steps; ++t) {
    const double* x_t = &in.sequence[static_cast<std::size_t>(t) * b];
    std::vector<double> x(b);
    for (int j = 0; j < b; ++j) x[j] = x_t[j] * w_in[j];
    for (int k = 0; k < l; ++k) {
      detail::Kept& s = kept[static_cast<std::size_t>(t) * l + k];
      s.in = x, s.h_prev = h[k], s.c_prev = c[k];
      s.f.resize(b), s.i.resize(b), s.o.resize(b), s.g.resize(b), s.tanh_c.resize(b);
      for (int j = 0; j < b; ++j) {
        s.f[j] = detail::sigmoid(x[j] * w(k, 0)[j] + bias(k, 0)[j]);
        s.i[j] = detail::sigmoid(h[k][j] * w(k, 1)[j] + bias(k, 1)[j]);
        s.o[j] = detail::sigmoid(x[j] * w(k, 2)[j] + bias(k, 2)[j]);
        s.g[j] = std::tanh(h[k][j] * w(k, 3)[j] + bias(k, 3)[j]);
        c[k][j] = c[k][j] * s.f[j] + s.i[j] * s.g[j];
        s.tanh_c[j] = std::tanh(c[k][j]);
        h[k][j] = s.o[j] * s.tanh_c[j];
      }
      x = h[k];
    }
    double exp_sum = 2.0;  // the eval's "+ 2"
    std::vector<double> y(b);
    for (int j = 0; j < b; ++j) {
      top[static_cast<std::size_t>(t) * b + j] = x[j];
      y[j] = x[j] * w_out[j] + b_out[j];
      exp_sum += std::exp(y[j]);
    }
    const double lse = std::log(exp_sum);
    const double* gold = x_t + b;
    for (int j = 0; j < b; ++j) {
      total += gold[j] * (y[j] - lse);
      softmax[static_cast<std::size_t>(t) * b + j] = std::exp(y[j]) / exp_sum;
    }
  }
  const double scale = -1.0 / (static_cast<double>(steps) * b);

  // Backward: loss = scale * total.
  LstmResult r{scale * total, std::vector<double>(in.main.size()), std::vector<double>(in.extra.size())};
  const auto dw = [&](int k, int gate) { return &r.d_main[(2 * k) * 4 * b + gate * b]; };
  const auto db = [&](int k, int gate) { return &r.d_main[(2 * k + 1) * 4 * b + gate * b]; };
  double* dw_in = r.d_extra.data();
  double* dw_out = dw_in + b;
  double* db_out = dw_in + 2 * b;
  std::vector<std::vector<double>> dh_next(l, std::vector<double>(b)), dc_next(l, std::vector<double>(b));
  for (int t = steps - 1; t >= 0; --t) {
    const double* x_t = &in.sequence[static_cast<std::size_t>(t) * b];
    const double* gold = x_t + b;
    double gold_sum = 0;
    for (int j = 0; j < b; ++j) gold_sum += gold[j];
    // y = top w_out + b_out   dy = scale (gold - Σgold softmax(y))
    std::vector<double> d_above(b);  // dL/d(the layer's new h) from above: the output, then the layer above
    for (int j = 0; j < b; ++j) {
      const double dy = scale * (gold[j] - gold_sum * softmax[static_cast<std::size_t>(t) * b + j]);
      dw_out[j] += dy * top[static_cast<std::size_t>(t) * b + j];
      db_out[j] += dy;
      d_above[j] = dy * w_out[j];
    }
    for (int k = l - 1; k >= 0; --k) {
      const detail::Kept& s = kept[static_cast<std::size_t>(t) * l + k];
      std::vector<double> d_in(b);
      for (int j = 0; j < b; ++j) {
        const double dh = d_above[j] + dh_next[k][j];
        // h = o tanh(c)   c = c_prev f + i g
        const double dc = dc_next[k][j] + dh * s.o[j] * (1 - s.tanh_c[j] * s.tanh_c[j]);
        const double d_o = dh * s.tanh_c[j] * s.o[j] * (1 - s.o[j]);
        const double d_f = dc * s.c_prev[j] * s.f[j] * (1 - s.f[j]);
        const double d_i = dc * s.g[j] * s.i[j] * (1 - s.i[j]);
        const double d_g = dc * s.i[j] * (1 - s.g[j] * s.g[j]);
        dw(k, 0)[j] += d_f * s.in[j], db(k, 0)[j] += d_f;
        dw(k, 1)[j] += d_i * s.h_prev[j], db(k, 1)[j] += d_i;
        dw(k, 2)[j] += d_o * s.in[j], db(k, 2)[j] += d_o;
        dw(k, 3)[j] += d_g * s.h_prev[j], db(k, 3)[j] += d_g;
        d_in[j] = d_f * w(k, 0)[j] + d_o * w(k, 2)[j];
        dh_next[k][j] = d_i * w(k, 1)[j] + d_g * w(k, 3)[j];
        dc_next[k][j] = dc * s.f[j];
      }
      d_above = d_in;
    }
    for (int j = 0; j < b; ++j) dw_in[j] += d_above[j] * x_t[j];
  }
  return r;
}

}  // namespace attend::bench::gradbench
