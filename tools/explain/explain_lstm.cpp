// attend explain --lstm: backprop through time in an LSTM cell, number by number.
//
// An LSTMCell (layers/lstm/lstm_cell.hpp) in float64 with input size I = 2 and hidden
// size H = 3 runs T = 3 steps from a drawn state (h_0, c_0) over drawn inputs
// x_1..x_3. The loss L = Σ_t r_t · h_t, with r_t drawn too, stands in for what
// the layers above would send back: ∂L/∂h_t starts as r_t at every step.
//
// The composed step (primitive ops, as lstm_cell_composed builds it) is tapped at
// a, i, f, g, o, c and h, and c is tapped once more on each of its two ways to L
// (tanh(c) for h, and the next step's f ⊙ c), so the text shows ∂L/∂c_t along
// the h path, along the c path and in total. The fused op (lstm_cell, what
// training runs) gives the parameter gradients, held to the composed ones.
#include <algorithm>
#include <array>
#include <functional>
#include <memory>

#include <fmt/format.h>

#include "autograd/dot.hpp"
#include "autograd/ops.hpp"
#include "layers/lstm/lstm_cell.hpp"
#include "tools/explain/explain.hpp"
#include "tools/explain/explain_report.hpp"
#include "tools/report/graph_svg.hpp"

namespace attend::tools {

namespace {

using namespace explain_detail;

constexpr std::int64_t kI = 2, kHid = 3, kT = 3, kG = 4 * kHid;
const char* const kGate[4] = {"i", "f", "g", "o"};

// The points of step t where a finite difference may perturb a number.
enum Point { A, I, F, G, O, C, C_H, C_NEXT, Hh, kPoints };

struct Lstm {
  std::unique_ptr<nn::LSTMCell> cell;
  Tensor x, h0, c0, r;  // (T, I), (1, H), (1, H), (T, H)
  Tensor x_t(const Tensor& xs, std::int64_t t) const { return slice(xs, 0, t, t + 1); }
  Tensor r_t(std::int64_t t) const { return slice(r, 0, t, t + 1); }
};

// What one pass records, per step t: the values and the gradients at each point.
struct Trace {
  std::array<std::vector<Values>, kPoints> value, grad;  // [point][t]
  Values tanh_c[kT];
  double loss = 0;
  Values dx, dh0, dc0, dW_ih, dW_hh, db_ih, db_hh;
};

// The composed forward, with every point tapped (or, for a finite difference,
// `poke` changing one number in place). Returns L.
Tensor composed(const Lstm& m, const Tensor& x, const Tensor& h0, const Tensor& c0, Trace* trace,
                const std::function<void(Point, std::int64_t, Tensor&)>& poke) {
  const nn::LSTMWeights& w = m.cell->weights();
  Tensor h = h0, c = c0, L = scalar(0, Float64);
  auto at = [&](Point p, std::int64_t t, Tensor v) {
    if (poke) {
      v = v.clone();
      poke(p, t, v);
      return v;
    }
    trace->value[p][t] = v.to_vector();
    return tap(v, [trace, p, t](const Tensor& dy) { trace->grad[p][t] = dy.to_vector(); });
  };
  for (std::int64_t t = 0; t < kT; ++t) {
    Tensor a = at(A, t, linear(m.x_t(x, t), w.weight_ih, w.bias_ih) + linear(h, w.weight_hh, w.bias_hh));
    Tensor i = at(I, t, sigmoid(slice(a, 1, 0, kHid)));
    Tensor f = at(F, t, sigmoid(slice(a, 1, kHid, 2 * kHid)));
    Tensor g = at(G, t, tanh(slice(a, 1, 2 * kHid, 3 * kHid)));
    Tensor o = at(O, t, sigmoid(slice(a, 1, 3 * kHid, 4 * kHid)));
    Tensor c_t = at(C, t, f * c + i * g);
    Tensor tc = tanh(at(C_H, t, c_t));
    if (trace) trace->tanh_c[t] = tc.to_vector();
    h = at(Hh, t, o * tc);
    c = at(C_NEXT, t, c_t);
    L = L + sum(h * m.r_t(t));
  }
  return L;
}

// The gradients a backward left in the inputs and the cell's parameters.
void read_gradients(const Lstm& m, const Tensor& x, const Tensor& h0, const Tensor& c0, Trace& tr) {
  tr.dx = x.grad().to_vector(), tr.dh0 = h0.grad().to_vector(), tr.dc0 = c0.grad().to_vector();
  const nn::LSTMWeights& w = m.cell->weights();
  tr.dW_ih = w.weight_ih.grad().to_vector(), tr.dW_hh = w.weight_hh.grad().to_vector();
  tr.db_ih = w.bias_ih.grad().to_vector(), tr.db_hh = w.bias_hh.grad().to_vector();
}

Trace run_composed(const Lstm& m) {
  Trace tr;
  for (auto& v : tr.value) v.resize(kT);
  for (auto& v : tr.grad) v.assign(kT, Values(kHid, 0.0));
  m.cell->zero_grad();
  Tensor x = m.x.clone().requires_grad_(), h0 = m.h0.clone().requires_grad_(), c0 = m.c0.clone().requires_grad_();
  Tensor L = composed(m, x, h0, c0, &tr, {});
  tr.loss = L.item();
  L.backward();
  read_gradients(m, x, h0, c0, tr);
  return tr;
}

// The fused op over the same steps; taps on its outputs h_t and c_t (which
// receives only the c path: the h path runs inside the op's backward).
Trace run_fused(const Lstm& m) {
  Trace tr;
  tr.grad[C_NEXT].assign(kT, Values(kHid, 0.0));
  tr.grad[Hh].assign(kT, Values(kHid, 0.0));
  m.cell->zero_grad();
  Tensor x = m.x.clone().requires_grad_(), h0 = m.h0.clone().requires_grad_(), c0 = m.c0.clone().requires_grad_();
  nn::LSTMState st{h0, c0};
  Tensor L = scalar(0, Float64);
  for (std::int64_t t = 0; t < kT; ++t) {
    st = nn::lstm_cell(m.x_t(x, t), st, m.cell->weights());
    st.h = tap(st.h, [&tr, t](const Tensor& dy) { tr.grad[Hh][t] = dy.to_vector(); });
    st.c = tap(st.c, [&tr, t](const Tensor& dy) { tr.grad[C_NEXT][t] = dy.to_vector(); });
    L = L + sum(st.h * m.r_t(t));
  }
  tr.loss = L.item();
  L.backward();
  read_gradients(m, x, h0, c0, tr);
  return tr;
}

double loss_of(const Lstm& m, const std::function<void(Point, std::int64_t, Tensor&)>& poke = {}) {
  NoGradGuard no_grad;
  auto nothing = [](Point, std::int64_t, Tensor&) {};
  return composed(m, m.x, m.h0, m.c0, nullptr, poke ? poke : nothing).item();
}

// ∂L/∂(point p of step t)[k] by central differences.
double numeric_at(const Lstm& m, Point p, std::int64_t t, std::int64_t k) {
  auto with = [&](double d) {
    return loss_of(m, [&](Point q, std::int64_t u, Tensor& v) {
      if (q == p && u == t) v.data<double>()[k] += d;
    });
  };
  return (with(kEps) - with(-kEps)) / (2 * kEps);
}

// The graphs of the three steps, every op tapped: composed (primitive ops, as
// lstm_cell_composed builds them) and fused (one lstm_cell op per step).
GraphPanel lstm_graph(const Lstm& m, bool composed_view) {
  const nn::LSTMWeights& w = m.cell->weights();
  m.cell->zero_grad();
  Tensor x = m.x.clone().requires_grad_(), h0 = m.h0.clone().requires_grad_(), c0 = m.c0.clone().requires_grad_();
  TensorNames names{{x, "x"}, {h0, "h_0"}, {c0, "c_0"}, {w.weight_ih, "W_ih"}, {w.weight_hh, "W_hh"},
                    {w.bias_ih, "b_ih"}, {w.bias_hh, "b_hh"}};
  std::vector<Tensor> r(kT);
  for (std::int64_t t = 0; t < kT; ++t) {
    r[t] = m.r_t(t).clone();
    names.emplace_back(r[t], fmt::format("r_{}", t + 1));
  }
  GraphTaps T;
  Tensor h = h0, c = c0, L;
  for (std::int64_t t = 0; t < kT; ++t) {
    Tensor x_t = T(m.x_t(x, t));
    if (composed_view) {
      Tensor a = T(T(linear(x_t, w.weight_ih, w.bias_ih)) + T(linear(h, w.weight_hh, w.bias_hh)));
      Tensor i = T(sigmoid(T(slice(a, 1, 0, kHid))));
      Tensor f = T(sigmoid(T(slice(a, 1, kHid, 2 * kHid))));
      Tensor g = T(tanh(T(slice(a, 1, 2 * kHid, 3 * kHid))));
      Tensor o = T(sigmoid(T(slice(a, 1, 3 * kHid, 4 * kHid))));
      c = T(T(f * c) + T(i * g));
      h = T(o * T(tanh(c)));
    } else {
      nn::LSTMState st = nn::lstm_cell(x_t, {h, c}, w);
      h = T(st.h), c = st.c;
    }
    Tensor term = T(sum(T(h * r[t])));
    L = t == 0 ? term : T(L + term);
  }
  std::vector<GraphNode> nodes = recorded_graph(L, names);
  L.backward();
  return T.panel(composed_view ? "composed: primitive ops, autograd derives the backward (lstm_cell_composed)"
                               : "fused: one lstm_cell op per step, its backward written by hand",
                 std::move(nodes));
}

}  // namespace

ExplainResult explain_lstm(const ExplainOptions& options) {
  Generator gen(options.seed);
  Lstm m;
  nn::LSTMCellOptions co;
  co.dtype = Float64;
  m.cell = std::make_unique<nn::LSTMCell>(kI, kHid, gen, co);
  m.x = uniform({kT, kI}, -1, 1, gen, Float64);
  m.h0 = uniform({1, kHid}, -1, 1, gen, Float64);
  m.c0 = uniform({1, kHid}, -1, 1, gen, Float64);
  m.r = uniform({kT, kHid}, -1, 1, gen, Float64);
  const Trace tr = run_composed(m);
  const Trace fused = run_fused(m);
  const nn::LSTMWeights& w = m.cell->weights();

  Report r;
  r.name_width = 22;
  r.json["kind"] = "lstm";
  r.json["seed"] = options.seed;
  r.line("attend explain --lstm: backprop through time in an LSTM cell, number by number");
  r.line("");
  r.line("The cell: attend's LSTMCell (layers/lstm/lstm_cell.hpp) in float64, input size 2, hidden size 3, untrained,");
  r.line("its parameters drawn with seed {}, then x_1..x_3, h_0, c_0 and r_1..r_3 uniformly from (−1, 1). It runs", options.seed);
  r.line("3 steps; the loss L = Σ_t r_t · h_t stands in for what the layers above would send back. Each step:");
  r.line("  a_t = W_ih x_t + b_ih + W_hh h_(t−1) + b_hh     (12) gates [i | f | g | o], 3 each");
  r.line("  i = σ(a_i)   f = σ(a_f)   g = tanh(a_g)   o = σ(a_o)");
  r.line("  c_t = f ⊙ c_(t−1) + i ⊙ g          h_t = o ⊙ tanh(c_t)");
  r.line("Components k, m count from 1. Every number is printed the same way; --json FILE writes them all.");
  r.line("");
  r.line("Parameters and inputs");
  r.matrix("W_ih", "rows 1-3 i, 4-6 f, 7-9 g, 10-12 o", kG, kI, w.weight_ih.to_vector());
  r.matrix("W_hh", "", kG, kHid, w.weight_hh.to_vector());
  r.vector("b_ih", "", w.bias_ih.to_vector());
  r.vector("b_hh", "", w.bias_hh.to_vector());
  r.matrix("x", "x_t is row t", kT, kI, m.x.to_vector());
  r.vector("h_0", "", m.h0.to_vector());
  r.vector("c_0", "", m.c0.to_vector());
  r.matrix("r", "r_t is row t", kT, kHid, m.r.to_vector());
  r.line("");
  r.line("Forward");
  const char* point_name[kPoints] = {"a", "i", "f", "g", "o", "c", "", "", "h"};
  for (std::int64_t t = 0; t < kT; ++t) {
    r.line("  step {}", t + 1);
    r.line("     {:<8}{}", fmt::format("a_{}", t + 1), vec(Values(tr.value[A][t].begin(), tr.value[A][t].begin() + 6)));
    r.line("     {:<8}{}", "", vec(Values(tr.value[A][t].begin() + 6, tr.value[A][t].end())));
    for (Point p : {I, F, G, O, C}) r.line("     {:<8}{}", fmt::format("{}_{}", point_name[p], t + 1), vec(tr.value[p][t]));
    r.line("     {:<8}{}", fmt::format("tanh c_{}", t + 1), vec(tr.tanh_c[t]));
    r.line("     {:<8}{}", fmt::format("h_{}", t + 1), vec(tr.value[Hh][t]));
  }
  for (Point p : {A, I, F, G, O, C, Hh}) {
    Values all;
    for (std::int64_t t = 0; t < kT; ++t) all.insert(all.end(), tr.value[p][t].begin(), tr.value[p][t].end());
    r.value(point_name[p], {kT, p == A ? kG : kHid}, all);
  }
  r.line("  loss L = Σ_t r_t · h_t = {}", num0(tr.loss));
  r.json["loss"] = tr.loss;

  r.line("");
  r.line("Backward through time, from the last step to the first. analytic: what attend's backward computed, read");
  r.line("by taps on the composed step (layers/lstm/lstm_cell.cpp: lstm_cell_composed, read it first; its fast twin");
  r.line("is the fused op lstm_cell); numeric: (L(x + ε) − L(x − ε)) / 2ε, ε = {:.0e}, perturbing that one number", kEps);
  r.line("and running the rest of the forward again; ✓ when |analytic − numeric| ≤ {:.0e} + {:.0e}·|numeric|.", kAtol, kRtol);
  r.line("");
  r.line("  {:<22}{:>16}{:>16}{:>10}     {}", "gradient", "analytic", "numeric", "|Δ|", "formula");
  auto step_rows = [&](Point p, std::int64_t t, const std::string& key, const std::string& label,
                       const std::function<std::string(std::int64_t)>& formula) {
    r.rows(fmt::format("{}_{}", key, t + 1), {static_cast<std::int64_t>(tr.grad[p][t].size())}, tr.grad[p][t],
           [&](std::int64_t k) { return fmt::format("{}[{}]", label, k + 1); },
           [&](std::int64_t k) { return numeric_at(m, p, t, k); }, formula);
  };
  for (std::int64_t t = kT - 1; t >= 0; --t) {
    const int s = static_cast<int>(t + 1);
    const bool last = t == kT - 1;
    r.line("  -- step {}: h_{} reaches L through r_{}{}", s, s, s, last ? "" : fmt::format(" and through a_{}", s + 1));
    step_rows(Hh, t, "h", fmt::format("∂L/∂h_{}", s), [&](std::int64_t k) {
      return last ? fmt::format("r_{}[{}]", s, k + 1)
                  : fmt::format("r_{}[{}] + Σ_m W_hh[m,{}] ∂L/∂a_{}[m]", s, k + 1, k + 1, s + 1);
    });
    if (last)
      r.line("  -- c_{0} reaches L through h_{0} = o ⊙ tanh(c_{0}) only (the h path): no later step reads it", s);
    else
      r.line("  -- c_{0} reaches L two ways: through h_{0} = o ⊙ tanh(c_{0}) (the h path) and through c_{1} = f ⊙ c_{0} + "
             "i ⊙ g (the c path)",
             s, s + 1);
    step_rows(C_H, t, "c_h_path", fmt::format("∂L/∂c_{} h path", s),
              [&](std::int64_t k) { return fmt::format("∂L/∂h_{0}[{1}] o_{0}[{1}] (1 − tanh²c_{0}[{1}])", s, k + 1); });
    step_rows(C_NEXT, t, "c_c_path", fmt::format("∂L/∂c_{} c path", s), [&](std::int64_t k) {
      return last ? std::string("0: no later step") : fmt::format("∂L/∂c_{0}[{1}] f_{0}[{1}]", s + 1, k + 1);
    });
    step_rows(C, t, "c", fmt::format("∂L/∂c_{}", s),
              [&](std::int64_t k) { return fmt::format("h path + c path   [{}]", k + 1); });
    r.line("  -- the gates: c_{0} = f ⊙ c_{1} + i ⊙ g, h_{0} = o ⊙ tanh(c_{0})", s, s - 1);
    step_rows(I, t, "i", fmt::format("∂L/∂i_{}", s),
              [&](std::int64_t k) { return fmt::format("∂L/∂c_{0}[{1}] g_{0}[{1}]", s, k + 1); });
    step_rows(F, t, "f", fmt::format("∂L/∂f_{}", s),
              [&](std::int64_t k) { return fmt::format("∂L/∂c_{0}[{1}] c_{2}[{1}]", s, k + 1, s - 1); });
    step_rows(G, t, "g", fmt::format("∂L/∂g_{}", s),
              [&](std::int64_t k) { return fmt::format("∂L/∂c_{0}[{1}] i_{0}[{1}]", s, k + 1); });
    step_rows(O, t, "o", fmt::format("∂L/∂o_{}", s),
              [&](std::int64_t k) { return fmt::format("∂L/∂h_{0}[{1}] tanh c_{0}[{1}]", s, k + 1); });
    r.line("  -- the pre-activations: σ' = σ (1 − σ), tanh' = 1 − tanh²");
    step_rows(A, t, "a", fmt::format("∂L/∂a_{}", s), [&](std::int64_t n) {
      const std::int64_t gate = n / kHid, k = n % kHid + 1;
      if (gate == 2) return fmt::format("∂L/∂g_{0}[{1}] (1 − g_{0}[{1}]²)      (g)", s, k);
      return fmt::format("∂L/∂{0}_{1}[{2}] {0}_{1}[{2}] (1 − {0}_{1}[{2}])   ({0})", kGate[gate], s, k);
    });
  }
  r.line("  -- the initial state: h_0.grad, c_0.grad");
  Tensor h0 = m.h0, c0 = m.c0;
  r.rows("h_0", {kHid}, tr.dh0, [](std::int64_t k) { return fmt::format("∂L/∂h_0[{}]", k + 1); },
         [&](std::int64_t k) { return numeric(h0, k, [&] { return loss_of(m); }); },
         [](std::int64_t k) { return fmt::format("Σ_m W_hh[m,{}] ∂L/∂a_1[m]", k + 1); });
  r.rows("c_0", {kHid}, tr.dc0, [](std::int64_t k) { return fmt::format("∂L/∂c_0[{}]", k + 1); },
         [&](std::int64_t k) { return numeric(c0, k, [&] { return loss_of(m); }); },
         [](std::int64_t k) { return fmt::format("∂L/∂c_1[{0}] f_1[{0}]   (the c path only)", k + 1); });
  r.line("  -- the parameters, summed over the steps: the fused op lstm_cell's hand-written backward (it undoes");
  r.line("     lstm_cell_composed's lines, which autograd undoes one op at a time); .grad");
  auto param_rows = [&](const std::string& name, const Tensor& p, const Values& grad, std::int64_t cols,
                        const std::string& input) {
    std::vector<std::int64_t> shape{p.size(0)};
    if (cols > 0) shape.push_back(cols);
    r.rows(name, shape, grad,
           [&](std::int64_t n) {
             return cols > 0 ? fmt::format("∂L/∂{}[{},{}]", name, n / cols + 1, n % cols + 1)
                             : fmt::format("∂L/∂{}[{}]", name, n + 1);
           },
           [&](std::int64_t n) { return numeric(p, n, [&] { return loss_of(m); }); },
           [&](std::int64_t n) {
             return cols > 0 ? fmt::format("Σ_t ∂L/∂a_t[{}] {}[{}]", n / cols + 1, input, n % cols + 1)
                             : fmt::format("Σ_t ∂L/∂a_t[{}]", n + 1);
           });
  };
  param_rows("W_ih", w.weight_ih, fused.dW_ih, kI, "x_t");
  param_rows("W_hh", w.weight_hh, fused.dW_hh, kHid, "h_(t−1)");
  param_rows("b", w.bias_ih, fused.db_ih, 0, "");
  r.line("     (b is b_ih; b_hh gets the same gradient, as both are added to a_t)");
  r.line("");
  double diff = std::max({max_diff(fused.dW_ih, tr.dW_ih), max_diff(fused.dW_hh, tr.dW_hh),
                          max_diff(fused.db_ih, tr.db_ih), max_diff(fused.db_hh, tr.db_ih),
                          max_diff(fused.dx, tr.dx), max_diff(fused.dh0, tr.dh0), max_diff(fused.dc0, tr.dc0),
                          std::abs(fused.loss - tr.loss)});
  for (std::int64_t t = 0; t < kT; ++t)
    diff = std::max({diff, max_diff(fused.grad[Hh][t], tr.grad[Hh][t]), max_diff(fused.grad[C_NEXT][t], tr.grad[C_NEXT][t])});
  r.same("the fused op (layers/lstm/lstm_cell.cpp: lstm_cell) gives the composed L, ∂L/∂h_t, the c path of ∂L/∂c_t, "
         "∂L/∂x_t, ∂L/∂h_0, ∂L/∂c_0 and the parameter gradients",
         diff);
  r.line("");
  r.line("{} of {} rows agree{}", r.checked - r.failed, r.checked, r.failed == 0 ? "." : "; the rows marked ✗ do not.");

  ExplainResult out;
  out.graph = graph_svg({lstm_graph(m, true), lstm_graph(m, false)},
                        fmt::format("An LSTM cell over 3 steps, L = Σ_t r_t · h_t (attend explain --lstm --seed {}): value "
                                    "and grad of every small tensor; arrows point from an input to the op that uses it",
                                    options.seed));
  m.cell->zero_grad();
  out.text = r.text;
  out.json = r.json.dump(1) + "\n";
  out.checked = r.checked;
  out.failed = r.failed;
  return out;
}

}  // namespace attend::tools
