#pragma once
// attend explain: backprop through one attention step, number by number.
//
// One decoder step of a tiny Seq2Seq in float64 (attend's real model, hidden 4,
// additive or dot attention): its attention layer reads 3 encoder states h_j and
// the decoder state s (drawn from the seed), then h~ = tanh(W_c [s; c]) and the
// output projection give p, and L = −log p_y. The text shows the forward (h_j, s,
// e_j, α_j, c, h~, z, p, L) and then every gradient of the backward: ∂L/∂z, ∂L/∂h~,
// ∂L/∂c, ∂L/∂α_j, ∂L/∂e_j, ∂L/∂s, ∂L/∂h_j and the attention layer's parameter
// gradients, each row with its formula, the value attend's backward computed (read
// with tap() or from .grad) and the central finite difference of L with respect to
// that very number, marked ✓ when they agree and ✗ when not.
//
//   ExplainResult r = explain_attention({.attention = "dot", .seed = 1});
//   fmt::print("{}", r.text);   // r.failed == 0 when every row agrees
#include <cstdint>
#include <string>

namespace attend::tools {

struct ExplainOptions {
  std::string attention = "additive";  // additive | dot (projected and scaled, as in Seq2Seq)
  std::uint64_t seed = 1;              // initialises the model's parameters
};

struct ExplainResult {
  std::string text;  // what `attend explain` prints
  std::string dot;   // the step's graph as training records it (Graphviz DOT, attend::to_dot of L)
  int checked = 0;   // rows compared (every gradient row, plus the fused-against-composed checks)
  int failed = 0;    // rows marked ✗
};

// Throws attend::Error for an attention other than additive or dot.
ExplainResult explain_attention(const ExplainOptions& options);

}  // namespace attend::tools
