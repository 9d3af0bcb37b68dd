// attend explain (see explain.hpp). Every analytic number below is what attend's
// backward computed; every numeric one perturbs that same number by ±ε in place
// and runs the rest of the forward again.
#include "tools/explain.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "autograd/dot.hpp"
#include "autograd/grad_mode.hpp"
#include "autograd/ops.hpp"
#include "models/seq2seq.hpp"

namespace attend::tools {

namespace {

constexpr double kEps = 1e-5;                  // central-difference step
constexpr double kAtol = 1e-9, kRtol = 1e-6;   // ✓ when |analytic - numeric| <= atol + rtol |numeric|
constexpr double kSameTol = 1e-12;             // fused against composed: the same math, up to rounding
constexpr std::int64_t kS = 3, kH = 4, kV = 7;  // source length, hidden size, vocabulary (4 special + 3 words)
const char* const kSourceWords[kS] = {"the", "cat", "sleeps"};  // source ids 4, 5, 6
const char* const kTokens[kV] = {"<pad>", "<unk>", "<s>", "</s>", "le", "chat", "dort"};
constexpr std::int64_t kChat = 5;  // the target y

using Values = std::vector<double>;

// The model, and the encoder states and the decoder state the step reads.
struct Setup {
  std::unique_ptr<Seq2Seq> model;
  bool additive = true;
  Tensor H;         // (1, S, H) encoder states h_1..h_S
  Tensor s;         // (1, H) decoder state s
  Tensor mask;      // (1, S) all ones
  Indices target{std::vector<std::int64_t>{kChat}};

  // The fused layer (precompute, then one step op), as Seq2Seq uses it.
  nn::AttentionOutput attend(const Tensor& s_, const Tensor& H_) const {
    return additive ? model->additive->forward(s_, H_, mask) : model->dot->forward(s_, H_, mask);
  }
  // The scores e (1, S) from primitive ops, line by line as the composed oracle
  // (layers/attention_composed.cpp) builds them, so that a tap can sit on e.
  Tensor scores(const Tensor& s_, const Tensor& H_) const {
    if (additive) {
      const nn::AdditiveAttention& a = *model->additive;
      const std::int64_t A = a.attention_size();
      Tensor t = tanh(linear(H_, a.W_k) + reshape(linear(s_, a.W_q, a.b), {1, 1, A}));  // (1, S, A)
      return reshape(matmul(t, reshape(a.v, {A, 1})), {1, kS});                        // v . t_j
    }
    const nn::DotProductAttention& d = *model->dot;
    const std::int64_t A = d.score_size();
    Tensor e = matmul(linear(H_, d.W_K), reshape(linear(s_, d.W_Q), {1, A, 1}));  // (W_K h_j) . (W_Q s)
    return mul(reshape(e, {1, kS}), d.scale());
  }
  std::vector<std::pair<const char*, Tensor>> parameters() const {
    if (additive) return {{"W_q", model->additive->W_q}, {"W_k", model->additive->W_k},
                          {"b", model->additive->b}, {"v", model->additive->v}};
    return {{"W_Q", model->dot->W_Q}, {"W_K", model->dot->W_K}};
  }
  Tensor context(const Tensor& alpha, const Tensor& H_) const {  // c = sum_j alpha_j h_j
    return reshape(matmul(reshape(alpha, {1, 1, kS}), H_), {1, kH});
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

Setup make_setup(const ExplainOptions& options) {
  Setup st;
  st.additive = options.attention == "additive";
  Seq2SeqConfig config;
  config.source_vocab = config.target_vocab = kV;
  config.embed = 3;
  config.hidden = kH;
  config.layers = 1;
  config.bidirectional = false;
  config.attention = st.additive ? AttentionKind::Additive : AttentionKind::Dot;
  Generator gen(options.seed);
  st.model = std::make_unique<Seq2Seq>(config, gen, Float64);
  // The states an LSTM would hand over, in its range: h = o * tanh(c) lies in (-1, 1).
  st.H = uniform({1, kS, kH}, -1, 1, gen, Float64);
  st.s = uniform({1, kH}, -1, 1, gen, Float64);
  st.mask = ones({1, kS}, Float64);
  return st;
}

// One forward and backward of the step from leaves s and H, with taps reading
// the gradient at c, h~ and z. Fused: the attention is the layer's step op, as in
// training (α's gradient stays inside its hand-written backward). Composed: the
// scores from primitive ops, then masked_softmax, with taps at e and α too.
struct Pass {
  Values e, alpha, c, ht, z, p;
  double loss = 0;
  Values de, dalpha, dc, dht, dz, ds, dH;
  std::vector<Values> dparams;
};

Pass run_pass(const Setup& st, bool composed) {
  Pass p;
  Tensor s = st.s.clone().requires_grad_(), H = st.H.clone().requires_grad_();
  st.model->zero_grad();
  auto into = [](Values& slot) { return [&slot](const Tensor& dy) { slot = dy.to_vector(); }; };
  Tensor c;
  if (composed) {
    Tensor e = tap(st.scores(s, H), into(p.de));
    Tensor alpha = tap(masked_softmax(e, st.mask, 1), into(p.dalpha));
    c = st.context(alpha, H);
    p.e = e.to_vector();
    p.alpha = alpha.to_vector();
  } else {
    nn::AttentionOutput a = st.attend(s, H);
    c = a.context;
    p.alpha = a.weights.to_vector();
  }
  c = tap(c, into(p.dc));
  Tensor ht = tap(st.attentional(s, c), into(p.dht));
  Tensor z = tap(st.logits(ht), into(p.dz));
  Tensor L = cross_entropy(z, st.target);
  p.c = c.to_vector();
  p.ht = ht.to_vector();
  p.z = z.to_vector();
  p.p = softmax(z.detach(), 1).to_vector();
  p.loss = L.item();
  L.backward();
  p.ds = s.grad().to_vector();
  p.dH = H.grad().to_vector();
  for (const auto& [name, w] : st.parameters()) p.dparams.push_back(w.grad().to_vector());
  return p;
}

// The graph of the step as training records it (Seq2Seq::step, then the loss),
// without the taps: to_dot must see it before a backward releases it.
std::string step_graph(const Setup& st) {
  Tensor s = st.s.clone().requires_grad_(), H = st.H.clone().requires_grad_();
  Tensor L = cross_entropy(st.logits(st.attentional(s, st.attend(s, H).context)), st.target);
  return to_dot(L);
}

// ∂L/∂x[i] by central differences. x is perturbed in place through its handle,
// so a parameter inside the model is perturbed too; it is restored afterwards.
double numeric(Tensor x, std::int64_t i, const std::function<double()>& loss) {
  NoGradGuard no_grad;
  double* px = x.data<double>();
  const double x0 = px[i];
  px[i] = x0 + kEps;
  const double up = loss();
  px[i] = x0 - kEps;
  const double down = loss();
  px[i] = x0;
  return (up - down) / (2 * kEps);
}

double max_diff(const Values& a, const Values& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

std::string vec(const Values& v) {
  std::string out;
  for (double x : v) out += fmt::format("{:>+13.8f}", x);
  return out;
}

// The text, and the count of rows checked and failed.
struct Report {
  std::string text;
  int checked = 0, failed = 0;

  template <class... Args>
  void line(fmt::format_string<Args...> f, Args&&... args) {
    text += fmt::format(f, std::forward<Args>(args)...);
    text += '\n';
  }
  void row(const std::string& name, double analytic, double numeric, const std::string& formula) {
    const double diff = std::abs(analytic - numeric);
    const bool ok = diff <= kAtol + kRtol * std::abs(numeric);
    ++checked;
    failed += ok ? 0 : 1;
    line("  {:<15}{:>+16.7e}{:>+16.7e}{:>10.1e}  {}  {}", name, analytic, numeric, diff, ok ? "✓" : "✗", formula);
  }
  void same(const std::string& what, double diff) {  // two computations of the same numbers
    const bool ok = diff <= kSameTol;
    ++checked;
    failed += ok ? 0 : 1;
    line("  {} {}: max |Δ| = {:.1e}", ok ? "✓" : "✗", what, diff);
  }
};

void print_forward(Report& r, const Setup& st, const Pass& fused, const Pass& composed, std::uint64_t seed) {
  const char* kind = st.additive ? "additive" : "dot";
  r.line("attend explain: backprop through {} attention, number by number", kind);
  r.line("");
  r.line("The model: attend's Seq2Seq (models/seq2seq.hpp) in float64 with hidden size 4 and {} attention,", kind);
  r.line("untrained, its parameters drawn with seed {}. One decoder step: its attention layer reads the encoder", seed);
  r.line("states h_1..h_3 of the source \"the cat sleeps\" and the decoder state s, then the attentional layer");
  r.line("h~ = tanh(W_c [s; c] + b_c) and the output projection z = W_out h~ + b_out. The step should predict");
  r.line("y = \"chat\" (id {}); its loss is the cross-entropy L = −log p_y. The h_j and s are drawn uniformly", kChat);
  r.line("from (−1, 1) with the same seed (in training they come from the encoder LSTM and the decoder");
  r.line("LSTMCell). Positions j and components i, a, m count from 1; k is a token id.");
  r.line("");
  r.line("Forward");
  r.line("  encoder states h_j and decoder state s");
  r.line("     j  source  {:>13}{:>13}{:>13}{:>13}", "[1]", "[2]", "[3]", "[4]");
  const Values h = st.H.to_vector();
  for (std::int64_t j = 0; j < kS; ++j)
    r.line("     {}  {:<6}  {}", j + 1, kSourceWords[j], vec(Values(h.begin() + j * kH, h.begin() + (j + 1) * kH)));
  r.line("        {:<6}  {}", "s", vec(st.s.to_vector()));
  if (st.additive)
    r.line("  scores e_j = v · tanh(W_k h_j + W_q s + b);  weights α = softmax(e)");
  else
    r.line("  scores e_j = λ (W_K h_j) · (W_Q s), λ = 1/√{} = {};  weights α = softmax(e)", st.model->dot->score_size(),
           st.model->dot->scale());
  r.line("     j  source            e_j          α_j");
  double sum = 0;
  for (std::int64_t j = 0; j < kS; ++j) {
    r.line("     {}  {:<6}  {:>+13.8f}{:>13.8f}", j + 1, kSourceWords[j], composed.e[j], fused.alpha[j]);
    sum += fused.alpha[j];
  }
  r.line("             Σ_j α_j = {:>13.8f}", sum);
  r.line("  context c = Σ_j α_j h_j                 {}", vec(fused.c));
  r.line("  attentional h~ = tanh(W_c [s; c] + b_c) {}", vec(fused.ht));
  r.line("  logits z = W_out h~ + b_out, output distribution p = softmax(z)");
  r.line("     k  token             z_k          p_k");
  for (std::int64_t k = 0; k < kV; ++k)
    r.line("     {}  {:<6}  {:>+13.8f}{:>13.8f}{}", k, kTokens[k], fused.z[k], fused.p[k], k == kChat ? "  ← y" : "");
  r.line("  loss L = −log p_{} = {:.8f}", kChat, fused.loss);
  r.same("α and c of the fused step op equal the composed oracle's",
         std::max(max_diff(fused.alpha, composed.alpha), max_diff(fused.c, composed.c)));
}

std::string param_formula(const std::string& name, std::int64_t a, std::int64_t i) {
  if (name == "W_q") return fmt::format("Σ_j ∂L/∂e_j v_{0} (1 − t_j[{0}]²) s_{1}", a, i);
  if (name == "W_k") return fmt::format("Σ_j ∂L/∂e_j v_{0} (1 − t_j[{0}]²) h_j[{1}]", a, i);
  if (name == "b") return fmt::format("Σ_j ∂L/∂e_j v_{0} (1 − t_j[{0}]²)", a);
  if (name == "v") return fmt::format("Σ_j ∂L/∂e_j t_j[{}]", a);
  if (name == "W_Q") return fmt::format("λ Σ_j ∂L/∂e_j k_j[{}] s_{}", a, i);
  return fmt::format("λ q_{} Σ_j ∂L/∂e_j h_j[{}]", a, i);  // W_K
}

void print_backward(Report& r, const Setup& st, const Pass& fused, const Pass& composed) {
  const char* op = st.additive ? "layers/attention_additive.cpp: additive_attention_step"
                               : "layers/attention_dot.cpp: dot_attention_step";
  r.line("");
  r.line("Backward. analytic: what attend's backward computed; numeric: (L(x + ε) − L(x − ε)) / 2ε, ε = {:.0e},", kEps);
  r.line("perturbing that one number x and running the rest of the forward again; ✓ when");
  r.line("|analytic − numeric| ≤ {:.0e} + {:.0e}·|numeric|.", kAtol, kRtol);
  r.line("");
  r.line("  {:<15}{:>16}{:>16}{:>10}     {}", "gradient", "analytic", "numeric", "|Δ|", "formula");
  r.line("  -- logits: cross_entropy's backward (autograd/losses.cpp), read by a tap on z");
  Tensor z = tensor(fused.z, {1, kV}, Float64);
  for (std::int64_t k = 0; k < kV; ++k)
    r.row(fmt::format("∂L/∂z_{}", k), fused.dz[k], numeric(z, k, [&] { return st.loss_from_z(z); }),
          fmt::format("p_{0} − [{0} = y]   ({1})", k, kTokens[k]));
  r.line("  -- attentional vector: linear's backward (autograd/matmul.cpp: linear), tap on h~");
  Tensor ht = tensor(fused.ht, {1, kH}, Float64);
  for (std::int64_t i = 0; i < kH; ++i)
    r.row(fmt::format("∂L/∂h~_{}", i + 1), fused.dht[i],
          numeric(ht, i, [&] { return st.loss_from_z(st.logits(ht)); }),
          fmt::format("Σ_k W_out[k,{}] ∂L/∂z_k", i + 1));
  r.line("  -- context: tanh's and linear's backward, then concat's (autograd/shape.cpp), tap on c");
  Tensor c = tensor(fused.c, {1, kH}, Float64);
  for (std::int64_t i = 0; i < kH; ++i)
    r.row(fmt::format("∂L/∂c_{}", i + 1), fused.dc[i], numeric(c, i, [&] { return st.loss_from_c(st.s, c); }),
          fmt::format("Σ_m W_c[m,{}] (1 − h~_m²) ∂L/∂h~_m", kH + i + 1));
  r.line("  -- weights: c = α @ H (autograd/matmul.cpp: matmul), tap on α in the composed step");
  Tensor alpha = tensor(fused.alpha, {1, kS}, Float64);
  for (std::int64_t j = 0; j < kS; ++j)
    r.row(fmt::format("∂L/∂α_{}", j + 1), composed.dalpha[j],
          numeric(alpha, j, [&] { return st.loss_from_alpha(alpha); }), fmt::format("∂L/∂c · h_{}", j + 1));
  double weighted = 0;
  for (std::int64_t j = 0; j < kS; ++j) weighted += composed.alpha[j] * composed.dalpha[j];
  r.line("  -- scores: softmax's backward (autograd/softmax.cpp: masked_softmax), tap on e in the composed step;");
  r.line("     Σ_k α_k ∂L/∂α_k = {:+.7e}", weighted);
  Tensor e = tensor(composed.e, {1, kS}, Float64);
  for (std::int64_t j = 0; j < kS; ++j)
    r.row(fmt::format("∂L/∂e_{}", j + 1), composed.de[j],
          numeric(e, j, [&] { return st.loss_from_alpha(masked_softmax(e, st.mask, 1)); }),
          fmt::format("α_{0} (∂L/∂α_{0} − Σ_k α_k ∂L/∂α_k)", j + 1));
  r.line("  -- from here on, the fused step op's hand-written backward ({})", op);
  if (st.additive)
    r.line("     carries the gradient to s, h_j and the parameters; t_j = tanh(W_k h_j + W_q s + b)");
  else
    r.line("     carries the gradient to s, h_j and the parameters; q = W_Q s, k_j = W_K h_j, λ = {}",
           st.model->dot->scale());
  r.line("  -- decoder state: through the attention and through W_c [s; c]; s.grad");
  const std::string score_s = st.additive ? "Σ_j ∂L/∂e_j Σ_a v_a (1 − t_j[a]²) W_q[a,{0}]"
                                          : "λ Σ_j ∂L/∂e_j Σ_a k_j[a] W_Q[a,{0}]";
  Tensor s = st.s.clone();
  for (std::int64_t i = 0; i < kH; ++i)
    r.row(fmt::format("∂L/∂s_{}", i + 1), fused.ds[i], numeric(s, i, [&] { return st.loss_full(s, st.H); }),
          fmt::format(fmt::runtime("Σ_m W_c[m,{0}] (1 − h~_m²) ∂L/∂h~_m + " + score_s), i + 1));
  r.line("  -- encoder states: as values (c) and as keys (e); H.grad");
  const std::string score_h = st.additive ? "∂L/∂e_{0} Σ_a v_a (1 − t_{0}[a]²) W_k[a,{1}]"
                                          : "λ ∂L/∂e_{0} Σ_a q_a W_K[a,{1}]";
  Tensor H = st.H.clone();
  for (std::int64_t j = 0; j < kS; ++j)
    for (std::int64_t i = 0; i < kH; ++i) {
      const std::int64_t n = j * kH + i;
      r.row(fmt::format("∂L/∂h_{}[{}]", j + 1, i + 1), fused.dH[n], numeric(H, n, [&] { return st.loss_full(st.s, H); }),
            fmt::format(fmt::runtime("α_{0} ∂L/∂c_{1} + " + score_h), j + 1, i + 1));
    }
  r.line("  -- parameters of the attention layer: the fused op's backward, then linear's; .grad");
  const auto params = st.parameters();
  double fused_vs_composed = std::max(max_diff(fused.ds, composed.ds), max_diff(fused.dH, composed.dH));
  for (std::size_t p = 0; p < params.size(); ++p) {
    const auto& [name, w] = params[p];
    const std::int64_t cols = w.dim() == 2 ? w.size(1) : 1;
    for (std::int64_t n = 0; n < w.numel(); ++n) {
      const std::int64_t a = n / cols + 1, i = n % cols + 1;
      const std::string label = w.dim() == 2 ? fmt::format("∂L/∂{}[{},{}]", name, a, i) : fmt::format("∂L/∂{}_{}", name, a);
      r.row(label, fused.dparams[p][n], numeric(w, n, [&] { return st.loss_full(st.s, st.H); }),
            param_formula(name, a, i));
    }
    fused_vs_composed = std::max(fused_vs_composed, max_diff(fused.dparams[p], composed.dparams[p]));
  }
  r.line("");
  r.same(fmt::format("the fused step's backward ({}) gives the composed oracle's ∂L/∂s, ∂L/∂h_j and "
                     "parameter gradients", op),
         fused_vs_composed);
  r.line("");
  r.line("{} of {} rows agree{}", r.checked - r.failed, r.checked, r.failed == 0 ? "." : "; the rows marked ✗ do not.");
}

}  // namespace

ExplainResult explain_attention(const ExplainOptions& options) {
  if (options.attention != "additive" && options.attention != "dot")
    fail("explain: the attention must be additive or dot, got '{}'", options.attention);
  const Setup st = make_setup(options);
  const Pass composed = run_pass(st, true);
  const Pass fused = run_pass(st, false);
  Report r;
  print_forward(r, st, fused, composed, options.seed);
  print_backward(r, st, fused, composed);
  return {r.text, step_graph(st), r.checked, r.failed};
}

}  // namespace attend::tools
