// The step's graph, composed and fused, with values and gradients (see
// explain_graph.hpp). Every op output is tapped, so that its gradient is known;
// recorded_graph folds the taps away again.
#include "tools/explain/explain_graph.hpp"

#include <fmt/format.h>

#include "autograd/dot.hpp"
#include "autograd/ops.hpp"
#include "tools/explain/explain_report.hpp"
#include "tools/report/graph_svg.hpp"

namespace attend::tools::explain_detail {

namespace {

// The step from primitive ops (as layers/attention/attention_composed.cpp builds it), every op tapped.
Tensor composed_step(const Setup& st, const Tensor& s, const Tensor& H, GraphTaps& T) {
  const std::int64_t S = st.S;
  Tensor e;
  if (st.kind == Kind::Additive) {
    const nn::AdditiveAttention& a = *st.model->additive;
    const std::int64_t A = a.attention_size();
    Tensor q = T(linear(s, a.W_q, a.b));
    Tensor k = T(linear(H, a.W_k));
    Tensor t = T(tanh(T(k + T(reshape(q, {1, 1, A})))));
    e = T(reshape(T(matmul(t, T(reshape(a.v, {A, 1})))), {1, S}));
  } else {
    const nn::DotProductAttention& d = *st.model->dot;
    const std::int64_t A = d.score_size();
    Tensor q = st.kind == Kind::Dot ? T(linear(s, d.W_Q)) : s;
    Tensor k = T(linear(H, st.kind == Kind::Dot ? d.W_K : d.W));
    e = T(reshape(T(matmul(k, T(reshape(q, {1, A, 1})))), {1, S}));
    if (d.scale() != 1) e = T(mul(e, d.scale()));
  }
  Tensor alpha = T(masked_softmax(e, st.mask, 1));
  Tensor c = T(reshape(T(matmul(T(reshape(alpha, {1, 1, S})), H)), {1, kH}));
  Tensor ht = T(tanh(T(st.model->combine.forward(T(concat({s, c}, 1))))));
  return cross_entropy(T(st.logits(ht)), st.target);
}

// The step as Seq2Seq records it: the projections, then ONE fused attention op.
Tensor fused_step(const Setup& st, const Tensor& s, const Tensor& H, GraphTaps& T) {
  nn::AttentionOutput a;
  if (st.kind == Kind::Additive) {
    const nn::AdditiveAttention& m = *st.model->additive;
    a = nn::additive_attention_step(T(linear(s, m.W_q, m.b)), T(linear(H, m.W_k)), H, m.v, st.mask);
  } else {
    const nn::DotProductAttention& d = *st.model->dot;
    Tensor q = st.kind == Kind::Dot ? T(linear(s, d.W_Q)) : s;
    a = nn::dot_attention_step(q, T(linear(H, st.kind == Kind::Dot ? d.W_K : d.W)), H, st.mask, d.scale());
  }
  Tensor ht = T(tanh(T(st.model->combine.forward(T(concat({s, T(a.context)}, 1))))));
  return cross_entropy(T(st.logits(ht)), st.target);
}

GraphPanel draw(const Setup& st, bool composed) {
  Tensor s = st.s.clone().requires_grad_(), H = st.H.clone().requires_grad_();
  st.model->zero_grad();
  GraphTaps T;
  Tensor L = composed ? composed_step(st, s, H, T) : fused_step(st, s, H, T);
  std::vector<GraphNode> nodes = recorded_graph(L, st.names(s, H));
  L.backward();
  const char* fused_op = st.kind == Kind::Additive ? "additive_attention_step" : "dot_attention_step";
  return T.panel(composed ? "composed: primitive ops, autograd derives the backward (layers/attention/attention_composed.cpp)"
                          : fmt::format("fused: as training records it, one {} op with a hand-written backward", fused_op),
                 std::move(nodes));
}

}  // namespace

std::string step_dot(const Setup& st) {
  Tensor s = st.s.clone().requires_grad_(), H = st.H.clone().requires_grad_();
  Tensor L = cross_entropy(st.logits(st.attentional(s, st.attend(s, H).context)), st.target);
  return to_dot(L, st.names(s, H));
}

std::string step_graph_svg(const Setup& st) {
  const GraphPanel composed = draw(st, true), fused = draw(st, false);
  st.model->zero_grad();
  return graph_svg({composed, fused},
                   fmt::format("One decoder step with {} attention{} (attend explain --seed {}): value and grad of "
                               "every small tensor; arrows point from an input to the op that uses it, up to the loss L",
                               st.kind_name, st.padded ? ", the 4th source position padding" : "", st.seed));
}

}  // namespace attend::tools::explain_detail
