#pragma once
// attend explain: backprop by hand, number by number.
//
// explain_attention: one decoder step of a tiny Seq2Seq in float64 (attend's
// real model, hidden 4, additive, dot or general attention): its attention
// layer reads 3 encoder states h_j (4 with `padded`: the 4th is padding) and
// the decoder state s, all drawn from the seed, then h~ = tanh(W_c [s; c] + b_c)
// and the output projection z = W_out h~ + b_out give p, and L = −log p_y. The
// text prints every parameter and intermediate (W_q, W_k, q, k_j, t_j, e_j, α_j,
// c, W_c, b_c, h~, W_out, b_out, z, p, L) and then every gradient of the
// backward: ∂L/∂z, ∂L/∂h~, ∂L/∂c, ∂L/∂α_j, ∂L/∂e_j, ∂L/∂s, ∂L/∂h_j and the
// attention layer's parameter gradients, each row with its formula, the value
// attend's backward computed (read with tap() or from .grad) and the central
// finite difference of L with respect to that very number, marked ✓ when they
// agree and ✗ when not. One number format throughout.
//
// explain_lstm: the same for an LSTM cell run over three time steps
// (tools/explain/explain_lstm.cpp).
//
//   ExplainResult r = explain_attention({.attention = "dot", .seed = 1});
//   fmt::print("{}", r.text);   // r.failed == 0 when every row agrees
#include <cstdint>
#include <string>

namespace attend::tools {

struct ExplainOptions {
  std::string attention = "additive";  // additive | dot (projected and scaled) | general (Luong's s^T W h_j)
  std::uint64_t seed = 1;              // draws the model's parameters, then h_j and s (or the LSTM's x_t, r_t)
  bool padded = false;                 // a 4th source position that is padding (mask 0)
};

struct ExplainResult {
  std::string text;   // what `attend explain` prints
  std::string dot;    // the step's graph as training records it (Graphviz DOT, parameters named)
  std::string json;   // every number: values (parameters, inputs, intermediates) and gradients
  std::string graph;  // SVG: the composed and the fused graph side by side, values and gradients in the boxes
  int checked = 0;    // rows compared (every gradient row, plus the fused-against-composed checks)
  int failed = 0;     // rows marked ✗
};

// Throws attend::Error for an attention other than additive, dot or general.
ExplainResult explain_attention(const ExplainOptions& options);

// An LSTMCell (input 2, hidden 3) over 3 time steps, L = Σ_t r_t · h_t. Its
// graph shows the composed and the fused cell over the three steps; it has no dot.
ExplainResult explain_lstm(const ExplainOptions& options);

}  // namespace attend::tools
