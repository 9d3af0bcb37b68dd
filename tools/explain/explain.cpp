// attend explain (see explain.hpp). Every analytic number below is what attend's
// backward computed; every numeric one perturbs that same number by ±ε in place
// and runs the rest of the forward again.
#include "tools/explain/explain.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "autograd/grad_mode.hpp"
#include "autograd/ops.hpp"
#include "core/error.hpp"
#include "tools/explain/explain_graph.hpp"
#include "tools/explain/explain_model.hpp"
#include "tools/explain/explain_report.hpp"

namespace attend::tools {

namespace explain_detail {

Pass run_pass(const Setup& st, bool composed) {
  Pass p;
  Tensor s = st.s.clone().requires_grad_(), H = st.H.clone().requires_grad_();
  st.model->zero_grad();
  auto into = [](Values& slot) { return [&slot](const Tensor& dy) { slot = dy.to_vector(); }; };
  Tensor c;
  if (composed) {
    Scores sc = st.scores(s, H);
    Tensor e = tap(sc.e, into(p.de));
    Tensor alpha = tap(masked_softmax(e, st.mask, 1), into(p.dalpha));
    c = st.context(alpha, H);
    p.q = sc.q.to_vector();
    p.k = sc.k.to_vector();
    if (sc.t.defined()) p.t = sc.t.to_vector();
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

}  // namespace explain_detail

namespace {

using namespace explain_detail;

Values rows_of(const Values& v, std::int64_t r, std::int64_t cols) {
  return Values(v.begin() + r * cols, v.begin() + (r + 1) * cols);
}

// The per-position rows of an (S, A) intermediate: "k_1  ...".
void per_position(Report& r, const char* name, const std::string& key, const std::string& what, const Values& v,
                  std::int64_t S) {
  const auto A = static_cast<std::int64_t>(v.size()) / S;
  r.value(key, {S, A}, v);
  r.line("  {}", what);
  for (std::int64_t j = 0; j < S; ++j) r.line("     {:<10}{}", fmt::format("{}_{}", name, j + 1), vec(rows_of(v, j, A)));
}

Values values_of(const Tensor& t) { return t.to_vector(); }

void print_forward(Report& r, const Setup& st, const Pass& fused, const Pass& composed, std::uint64_t seed) {
  const std::string& kind = st.kind_name;
  const std::int64_t S = st.S;
  r.line("attend explain: backprop through {} attention, number by number", kind);
  r.line("");
  r.line("The model: attend's Seq2Seq (models/seq2seq.hpp) in float64 with hidden size 4 and {} attention,", kind);
  r.line("untrained, its parameters drawn with seed {}. One decoder step: its attention layer reads the encoder", seed);
  r.line("states h_1..h_{} of the source \"the cat sleeps{}\" and the decoder state s, then the attentional layer", S,
         st.padded ? " <pad>" : "");
  r.line("h~ = tanh(W_c [s; c] + b_c) and the output projection z = W_out h~ + b_out. The step should predict");
  r.line("y = \"chat\" (id {}); its loss is the cross-entropy L = −log p_y. The h_j and s are drawn uniformly", kChat);
  r.line("from (−1, 1) after the parameters, with the same seed (in training they come from the encoder LSTM");
  r.line("and the decoder LSTMCell). Positions j and components i, a, m count from 1; k is a token id.");
  if (st.padded)
    r.line("Position 4 is padding (mask 0), as where a batch pads a shorter source; its state is drawn like the others.");
  r.line("Every number is printed the same way, to 9 significant digits; --json FILE writes them all.");
  r.line("");
  r.line("Forward");
  r.line("  encoder states h_j and decoder state s");
  r.line("     j  source  {:>16}{:>16}{:>16}{:>16}", "[1]", "[2]", "[3]", "[4]");
  const Values h = st.H.to_vector();
  for (std::int64_t j = 0; j < S; ++j)
    r.line("     {}  {:<6}{}", j + 1, kSourceWords[j], vec(rows_of(h, j, kH)));
  r.line("        {:<6}{}", "s", vec(st.s.to_vector()));
  r.value("H", {S, kH}, h);
  r.value("s", {kH}, st.s.to_vector());
  r.value("mask", {S}, st.mask.to_vector());
  r.line("  the attention layer's parameters");
  for (const auto& [name, w] : st.parameters()) {
    if (w.dim() == 2) r.matrix(name, "", w.size(0), w.size(1), values_of(w));
    else r.vector(name, "", values_of(w));
  }
  if (st.kind == Kind::Additive) {
    r.line("  scores e_j = v · t_j,  t_j = tanh(k_j + q),  k_j = W_k h_j,  q = W_q s + b;  weights α = softmax(e)");
    r.vector("q", "q = W_q s + b", composed.q);
    per_position(r, "k", "k", "keys k_j = W_k h_j", composed.k, S);
    per_position(r, "t", "t", "t_j = tanh(k_j + q)", composed.t, S);
  } else {
    const double scale = st.model->dot->scale();
    if (st.kind == Kind::Dot) {
      r.line("  scores e_j = λ k_j · q,  k_j = W_K h_j,  q = W_Q s,  λ = 1/√{} = {};  weights α = softmax(e)",
             st.model->dot->score_size(), scale);
      r.vector("q", "q = W_Q s", composed.q);
      per_position(r, "k", "k", "keys k_j = W_K h_j", composed.k, S);
    } else {
      r.line("  scores e_j = sᵀ W h_j = k_j · s,  k_j = W h_j (unscaled, λ = 1);  weights α = softmax(e)");
      r.value("q", {kH}, composed.q);
      per_position(r, "k", "k", "keys k_j = W h_j", composed.k, S);
    }
    r.json["values"]["scale"] = scale;
  }
  r.value("e", {S}, composed.e);
  r.value("alpha", {S}, fused.alpha);
  r.line("     j  source             e_j             α_j");
  double sum = 0;
  for (std::int64_t j = 0; j < S; ++j) {
    const bool pad = st.mask.to_vector()[j] == 0;
    r.line("     {}  {:<6}{}{}{}", j + 1, kSourceWords[j], num(composed.e[j]), num(fused.alpha[j]),
           pad ? "  masked: α = 0 exactly" : "");
    sum += fused.alpha[j];
  }
  r.line("             Σ_j α_j = {}", num0(sum));
  r.line("  the context c = Σ_j α_j h_j");
  r.vector("c", "", fused.c);
  r.line("  the attentional layer h~ = tanh(W_c [s; c] + b_c)");
  r.matrix("W_c", "columns 1-4 multiply s, 5-8 multiply c", kH, 2 * kH, values_of(st.model->combine.weight));
  r.vector("b_c", "", values_of(st.model->combine.bias));
  r.vector("h~", "", fused.ht);
  r.json["values"]["h_tilde"] = r.json["values"]["h~"];
  r.json["values"].erase("h~");
  r.line("  the logits z = W_out h~ + b_out and the output distribution p = softmax(z)");
  r.matrix("W_out", "", kV, kH, values_of(st.model->project.weight));
  r.vector("b_out", "", values_of(st.model->project.bias));
  r.value("z", {kV}, fused.z);
  r.value("p", {kV}, fused.p);
  r.line("     k  token              z_k             p_k");
  for (std::int64_t k = 0; k < kV; ++k)
    r.line("     {}  {:<6}{}{}{}", k, kTokens[k], num(fused.z[k]), num(fused.p[k]), k == kChat ? "  ← y" : "");
  r.line("  loss L = −log p_{} = {}", kChat, num0(fused.loss));
  r.json["loss"] = fused.loss;
  r.same("α and c of the fused step op equal the composed oracle's",
         std::max(max_diff(fused.alpha, composed.alpha), max_diff(fused.c, composed.c)));
}

std::string param_formula(const std::string& name, std::int64_t a, std::int64_t i) {
  if (name == "W_q") return fmt::format("Σ_j ∂L/∂e_j v_{0} (1 − t_j[{0}]²) s_{1}", a, i);
  if (name == "W_k") return fmt::format("Σ_j ∂L/∂e_j v_{0} (1 − t_j[{0}]²) h_j[{1}]", a, i);
  if (name == "b") return fmt::format("Σ_j ∂L/∂e_j v_{0} (1 − t_j[{0}]²)", a);
  if (name == "v") return fmt::format("Σ_j ∂L/∂e_j t_j[{}]", a);
  if (name == "W_Q") return fmt::format("λ Σ_j ∂L/∂e_j k_j[{}] s_{}", a, i);
  if (name == "W_K") return fmt::format("λ q_{} Σ_j ∂L/∂e_j h_j[{}]", a, i);
  return fmt::format("s_{} Σ_j ∂L/∂e_j h_j[{}]", a, i);  // W (general)
}

void print_backward(Report& r, const Setup& st, const Pass& fused, const Pass& composed) {
  const std::int64_t S = st.S;
  // The composed step to read first (every line one op), and its fast twin, the fused step op.
  const char* composed_fn = st.kind == Kind::Additive
                                ? "layers/attention/attention_composed.cpp: additive_attention_composed"
                                : "layers/attention/attention_composed.cpp: dot_attention_composed";
  const char* op = st.kind == Kind::Additive ? "layers/attention/attention_additive.cpp: additive_attention_step"
                                             : "layers/attention/attention_dot.cpp: dot_attention_step";
  auto label = [](std::string s) { return [s](std::int64_t i) { return fmt::format(fmt::runtime(s), i + 1, i); }; };
  r.line("");
  r.line("Backward. analytic: what attend's backward computed; numeric: (L(x + ε) − L(x − ε)) / 2ε, ε = {:.0e},", kEps);
  r.line("perturbing that one number x and running the rest of the forward again; ✓ when");
  r.line("|analytic − numeric| ≤ {:.0e} + {:.0e}·|numeric|.", kAtol, kRtol);
  r.line("");
  r.line("  {:<15}{:>16}{:>16}{:>10}     {}", "gradient", "analytic", "numeric", "|Δ|", "formula");
  r.line("  -- logits: cross_entropy's backward (autograd/ops/losses.cpp), read by a tap on z");
  Tensor z = tensor(fused.z, {1, kV}, Float64);
  r.rows("z", {kV}, fused.dz, label("∂L/∂z_{1}"), [&](std::int64_t k) { return numeric(z, k, [&] { return st.loss_from_z(z); }); },
         [](std::int64_t k) { return fmt::format("p_{0} − [{0} = y]   ({1})", k, kTokens[k]); });
  r.line("  -- attentional vector: linear's backward (autograd/ops/matmul.cpp: linear), tap on h~");
  Tensor ht = tensor(fused.ht, {1, kH}, Float64);
  r.rows("h_tilde", {kH}, fused.dht, label("∂L/∂h~_{0}"),
         [&](std::int64_t i) { return numeric(ht, i, [&] { return st.loss_from_z(st.logits(ht)); }); },
         [](std::int64_t i) { return fmt::format("Σ_k W_out[k,{}] ∂L/∂z_k", i + 1); });
  r.line("  -- context: tanh's and linear's backward, then concat's (autograd/ops/shape.cpp), tap on c");
  Tensor c = tensor(fused.c, {1, kH}, Float64);
  r.rows("c", {kH}, fused.dc, label("∂L/∂c_{0}"),
         [&](std::int64_t i) { return numeric(c, i, [&] { return st.loss_from_c(st.s, c); }); },
         [](std::int64_t i) { return fmt::format("Σ_m W_c[m,{}] (1 − h~_m²) ∂L/∂h~_m", kH + i + 1); });
  r.line("  -- weights: c = α @ H (autograd/ops/matmul.cpp: matmul), tap on α in the composed step");
  Tensor alpha = tensor(fused.alpha, {1, S}, Float64);
  r.rows("alpha", {S}, composed.dalpha, label("∂L/∂α_{0}"),
         [&](std::int64_t j) { return numeric(alpha, j, [&] { return st.loss_from_alpha(alpha); }); },
         [](std::int64_t j) { return fmt::format("∂L/∂c · h_{}", j + 1); });
  double weighted = 0;
  for (std::int64_t j = 0; j < S; ++j) weighted += composed.alpha[j] * composed.dalpha[j];
  r.line("  -- scores: softmax's backward (autograd/ops/softmax.cpp: masked_softmax), tap on e in the composed step;");
  r.line("     Σ_k α_k ∂L/∂α_k = {}", num0(weighted));
  Tensor e = tensor(composed.e, {1, S}, Float64);
  r.rows("e", {S}, composed.de, label("∂L/∂e_{0}"),
         [&](std::int64_t j) { return numeric(e, j, [&] { return st.loss_from_alpha(masked_softmax(e, st.mask, 1)); }); },
         [](std::int64_t j) { return fmt::format("α_{0} (∂L/∂α_{0} − Σ_k α_k ∂L/∂α_k)", j + 1); });
  r.line("  -- from here on, the attention's own lines: read the composed step first");
  r.line("     ({}), whose backward autograd", composed_fn);
  r.line("     derives op by op; these rows are its fast twin's, the fused step op");
  r.line("     ({}), whose hand-written backward", op);
  if (st.kind == Kind::Additive)
    r.line("     carries the gradient to s, h_j and the parameters; t_j = tanh(W_k h_j + W_q s + b)");
  else if (st.kind == Kind::Dot)
    r.line("     carries the gradient to s, h_j and the parameters; q = W_Q s, k_j = W_K h_j, λ = {}",
           st.model->dot->scale());
  else
    r.line("     carries the gradient to s, h_j and W; k_j = W h_j, the query is s itself");
  r.line("  -- decoder state: through the attention and through W_c [s; c]; s.grad");
  const std::string score_s = st.kind == Kind::Additive ? "Σ_j ∂L/∂e_j Σ_a v_a (1 − t_j[a]²) W_q[a,{0}]"
                              : st.kind == Kind::Dot    ? "λ Σ_j ∂L/∂e_j Σ_a k_j[a] W_Q[a,{0}]"
                                                        : "Σ_j ∂L/∂e_j k_j[{0}]";
  Tensor s = st.s.clone();
  r.rows("s", {kH}, fused.ds, label("∂L/∂s_{0}"),
         [&](std::int64_t i) { return numeric(s, i, [&] { return st.loss_full(s, st.H); }); },
         [&](std::int64_t i) {
           return fmt::format(fmt::runtime("Σ_m W_c[m,{0}] (1 − h~_m²) ∂L/∂h~_m + " + score_s), i + 1);
         });
  r.line("  -- encoder states: as values (c) and as keys (e); H.grad");
  const std::string score_h = st.kind == Kind::Additive ? "∂L/∂e_{0} Σ_a v_a (1 − t_{0}[a]²) W_k[a,{1}]"
                              : st.kind == Kind::Dot    ? "λ ∂L/∂e_{0} Σ_a q_a W_K[a,{1}]"
                                                        : "∂L/∂e_{0} Σ_a s_a W[a,{1}]";
  Tensor H = st.H.clone();
  r.rows("H", {S, kH}, fused.dH,
         [](std::int64_t n) { return fmt::format("∂L/∂h_{}[{}]", n / kH + 1, n % kH + 1); },
         [&](std::int64_t n) { return numeric(H, n, [&] { return st.loss_full(st.s, H); }); },
         [&](std::int64_t n) {
           return fmt::format(fmt::runtime("α_{0} ∂L/∂c_{1} + " + score_h), n / kH + 1, n % kH + 1);
         });
  if (st.padded) {
    bool zero = fused.alpha[3] == 0 && composed.alpha[3] == 0 && composed.de[3] == 0;
    for (std::int64_t i = 0; i < kH; ++i) zero = zero && fused.dH[3 * kH + i] == 0 && composed.dH[3 * kH + i] == 0;
    r.exact("the padded position 4: α_4 = 0, ∂L/∂e_4 = 0 and ∂L/∂h_4 = 0 exactly, fused and composed "
            "(∂L/∂α_4 is not 0: weight there would change c, but the softmax never puts any there)",
            zero);
  }
  r.line("  -- parameters of the attention layer: the fused op's backward, then linear's; .grad");
  const auto params = st.parameters();
  double fused_vs_composed = std::max(max_diff(fused.ds, composed.ds), max_diff(fused.dH, composed.dH));
  for (std::size_t p = 0; p < params.size(); ++p) {
    const auto& [name, w] = params[p];
    const std::int64_t cols = w.dim() == 2 ? w.size(1) : 1;
    std::vector<std::int64_t> shape{w.size(0)};
    if (w.dim() == 2) shape.push_back(cols);
    r.rows(name, shape, fused.dparams[p],
           [&](std::int64_t n) {
             return w.dim() == 2 ? fmt::format("∂L/∂{}[{},{}]", name, n / cols + 1, n % cols + 1)
                                 : fmt::format("∂L/∂{}_{}", name, n + 1);
           },
           [&](std::int64_t n) { return numeric(w, n, [&] { return st.loss_full(st.s, st.H); }); },
           [&](std::int64_t n) { return param_formula(name, n / cols + 1, n % cols + 1); });
    fused_vs_composed = std::max(fused_vs_composed, max_diff(fused.dparams[p], composed.dparams[p]));
  }
  r.line("");
  r.same(fmt::format("the fused step's backward ({}) gives the composed oracle's ∂L/∂s, ∂L/∂h_j and "
                     "parameter gradients",
                     op),
         fused_vs_composed);
  r.line("");
  r.line("{} of {} rows agree{}", r.checked - r.failed, r.checked, r.failed == 0 ? "." : "; the rows marked ✗ do not.");
}

}  // namespace

ExplainResult explain_attention(const ExplainOptions& options) {
  if (options.attention != "additive" && options.attention != "dot" && options.attention != "general")
    fail("explain: the attention must be additive, dot or general, got '{}'", options.attention);
  const Setup st = make_setup(options);
  const Pass composed = run_pass(st, true);
  const Pass fused = run_pass(st, false);
  Report r;
  r.json["kind"] = "attention";
  r.json["attention"] = options.attention;
  r.json["seed"] = options.seed;
  r.json["padded"] = options.padded;
  r.json["target"] = kChat;
  print_forward(r, st, fused, composed, options.seed);
  print_backward(r, st, fused, composed);
  ExplainResult out;
  out.text = r.text;
  out.dot = step_dot(st);
  out.graph = step_graph_svg(st);
  out.json = r.json.dump(1) + "\n";
  out.checked = r.checked;
  out.failed = r.failed;
  return out;
}

}  // namespace attend::tools
