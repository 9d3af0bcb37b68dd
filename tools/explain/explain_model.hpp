#pragma once
// The tiny model `attend explain` differentiates (see explain.hpp), shared by
// the text (explain.cpp) and the graph picture (explain_graph.cpp); a Setup can
// also borrow a trained model's step (explain_step.cpp, for `attend serve`). Internal.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/dot.hpp"
#include "autograd/ops.hpp"
#include "models/seq2seq.hpp"
#include "tools/explain/explain.hpp"

namespace attend::tools::explain_detail {

constexpr std::int64_t kH = 4, kV = 7;  // hidden size, vocabulary (4 special + 3 words)
const char* const kSourceWords[4] = {"the", "cat", "sleeps", "<pad>"};  // ids 4, 5, 6; <pad> only with --padded
const char* const kTokens[kV] = {"<pad>", "<unk>", "<s>", "</s>", "le", "chat", "dort"};
constexpr std::int64_t kChat = 5;  // the target y

enum class Kind { Additive, Dot, General };

// The score side of the step from primitive ops, line by line as the composed
// oracle (layers/attention/attention_composed.cpp) builds them: each intermediate kept.
struct Scores {
  Tensor q;  // (1, A): W_q s + b; W_Q s; or s itself (general)
  Tensor k;  // (1, S, A): W_k h_j; W_K h_j; W h_j
  Tensor t;  // (1, S, A): tanh(k_j + q), additive only
  Tensor e;  // (1, S)
};

// The model, and the encoder states and the decoder state the step reads.
struct Setup {
  std::shared_ptr<Seq2Seq> model;  // the tiny model it owns, or a trained one it borrows
  Kind kind = Kind::Additive;
  std::string kind_name;
  std::uint64_t seed = 1;
  std::int64_t S = 3;  // source positions, the last one padding when padded
  bool padded = false;
  Tensor H;     // (1, S, H) encoder states h_1..h_S
  Tensor s;     // (1, H) decoder state s
  Tensor mask;  // (1, S) ones, the padded position 0
  Indices target{std::vector<std::int64_t>{kChat}};  // y

  // The fused layer (precompute, then one step op), as Seq2Seq uses it.
  nn::AttentionOutput attend(const Tensor& s_, const Tensor& H_) const {
    return kind == Kind::Additive ? model->additive->forward(s_, H_, mask) : model->dot->forward(s_, H_, mask);
  }
  Scores scores(const Tensor& s_, const Tensor& H_) const {
    Scores out;
    if (kind == Kind::Additive) {
      const nn::AdditiveAttention& a = *model->additive;
      const std::int64_t A = a.attention_size();
      out.q = linear(s_, a.W_q, a.b);
      out.k = linear(H_, a.W_k);
      out.t = tanh(out.k + reshape(out.q, {1, 1, A}));                 // (1, S, A)
      out.e = reshape(matmul(out.t, reshape(a.v, {A, 1})), {1, S});    // v . t_j
      return out;
    }
    const nn::DotProductAttention& d = *model->dot;
    const std::int64_t A = d.score_size();
    out.q = kind == Kind::Dot ? linear(s_, d.W_Q) : s_;
    out.k = linear(H_, kind == Kind::Dot ? d.W_K : d.W);
    Tensor e = matmul(out.k, reshape(out.q, {1, A, 1}));  // k_j . q
    out.e = mul(reshape(e, {1, S}), d.scale());
    return out;
  }
  // The attention layer's parameters, by the names the text uses.
  std::vector<std::pair<std::string, Tensor>> parameters() const {
    if (kind == Kind::Additive)
      return {{"W_q", model->additive->W_q}, {"W_k", model->additive->W_k}, {"b", model->additive->b},
              {"v", model->additive->v}};
    if (kind == Kind::Dot) return {{"W_Q", model->dot->W_Q}, {"W_K", model->dot->W_K}};
    return {{"W", model->dot->W}};
  }
  // Every tensor of the step with its name, for the graphs.
  TensorNames names(const Tensor& s_, const Tensor& H_) const {
    TensorNames out{{s_, "s"}, {H_, "H"}, {mask, "mask"}, {model->combine.weight, "W_c"}, {model->combine.bias, "b_c"},
                    {model->project.weight, "W_out"}, {model->project.bias, "b_out"}};
    for (const auto& [name, w] : parameters()) out.emplace_back(w, name);
    return out;
  }
  Tensor context(const Tensor& alpha, const Tensor& H_) const {  // c = sum_j alpha_j h_j
    return reshape(matmul(reshape(alpha, {1, 1, S}), H_), {1, H_.size(2)});
  }
  Tensor attentional(const Tensor& s_, const Tensor& c) const {  // h~ = tanh(W_c [s; c] + b_c)
    return tanh(model->combine.forward(concat({s_, c}, 1)));
  }
  Tensor logits(const Tensor& ht) const { return model->project.forward(ht); }  // z = W_out h~ + b_out

  // L from each point of the forward on; for the finite differences.
  double loss_from_z(const Tensor& z) const { return cross_entropy(z, target).item(); }
  double loss_from_c(const Tensor& s_, const Tensor& c) const { return loss_from_z(logits(attentional(s_, c))); }
  double loss_from_alpha(const Tensor& alpha) const { return loss_from_c(s, context(alpha, H)); }
  double loss_full(const Tensor& s_, const Tensor& H_) const { return loss_from_c(s_, attend(s_, H_).context); }
};

// One forward and backward of the step from leaves s and H, with taps reading
// the gradient at c, h~ and z. Fused: the attention is the layer's step op, as in
// training (α's gradient stays inside its hand-written backward). Composed: the
// scores from primitive ops, then masked_softmax, with taps at e and α too.
using Values = std::vector<double>;
struct Pass {
  Values q, k, t, e, alpha, c, ht, z, p;
  double loss = 0;
  Values de, dalpha, dc, dht, dz, ds, dH;
  std::vector<Values> dparams;
};
Pass run_pass(const Setup& st, bool composed);  // explain.cpp

inline Setup make_setup(const ExplainOptions& options) {
  Setup st;
  st.kind_name = options.attention;
  st.seed = options.seed;
  st.kind = options.attention == "additive" ? Kind::Additive : options.attention == "dot" ? Kind::Dot : Kind::General;
  st.padded = options.padded;
  st.S = options.padded ? 4 : 3;
  Seq2SeqConfig config;
  config.source_vocab = config.target_vocab = kV;
  config.embed = 3;
  config.hidden = kH;
  config.layers = 1;
  config.bidirectional = false;
  config.attention = st.kind == Kind::Additive ? AttentionKind::Additive
                     : st.kind == Kind::Dot    ? AttentionKind::Dot
                                               : AttentionKind::General;
  Generator gen(options.seed);
  st.model = std::make_unique<Seq2Seq>(config, gen, Float64);
  // The states an LSTM would hand over, in its range: h = o * tanh(c) lies in (-1, 1).
  // The padded position's state is drawn last, so that the first three and s
  // are the same with and without --padded.
  Tensor H3 = uniform({1, 3, kH}, -1, 1, gen, Float64);
  st.s = uniform({1, kH}, -1, 1, gen, Float64);
  st.H = options.padded ? concat({H3, uniform({1, 1, kH}, -1, 1, gen, Float64)}, 1) : H3;
  st.mask = ones({1, st.S}, Float64);
  if (options.padded) st.mask.data<double>()[3] = 0;
  return st;
}

}  // namespace attend::tools::explain_detail
