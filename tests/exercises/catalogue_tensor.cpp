// Exercises 3 to 9: the backwards on tensors, each answer the backward of a
// custom op whose forward is attend's own.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "tests/exercises/exercises.hpp"
#include "tests/exercises/grader.hpp"

namespace attend::exercises::grader {

namespace {

// An exercise of one check: `op` with every input checked; its backward runs
// `answer` on the slots of all its inputs.
using TensorAnswer = std::function<void(const OpContext& ctx, const Grads& g, Tensors& d)>;
Exercise single(const char* name, std::array<const char*, 3> hints, std::vector<std::string> names,
                std::function<Tensors(OpContext&, const Tensors&)> forward, TensorAnswer answer, Tensors args) {
  auto at = std::make_shared<Attempt>();
  at->names = names;
  const std::size_t n = names.size();
  CustomOp op{.name = name,
              .input_names = names,
              .forward = std::move(forward),
              .backward =
                  [at, n, answer](const OpContext& ctx, Grads& g) {
                    std::vector<Tensor*> slots;
                    for (std::size_t i = 0; i < n; ++i) slots.push_back(&g.dx(static_cast<int>(i)));
                    run_answer(*at, slots, [&](Tensors& d) { answer(ctx, g, d); });
                  }};
  Exercise e{name, hints, {}, nullptr, nullptr};
  e.checks.push_back(Check{"", [op](const Tensors& in) { return op(in); }, std::move(args), at});
  return e;
}

Exercise softmax_exercise(Generator& gen) {
  return single(
      "softmax_backward",
      {"every y_k depends on every x_i of its row (they share the denominator), so the Jacobian is not diagonal: "
       "dx_i collects dy_k from every k",
       "∂y_k/∂x_i = y_k ([k = i] − y_i); put it in dx_i = Σ_k dy_k ∂y_k/∂x_i and the sum over k becomes one dot "
       "product per row",
       "dx += y * (dy − sum(y * dy, −1, keepdim)), that is dx_i = y_i (dy_i − Σ_k y_k dy_k)"},
      {"x"},
      [](OpContext& ctx, const Tensors& in) {
        Tensor y = softmax(in[0], -1);
        ctx.save({y});
        return Tensors{y};
      },
      [](const OpContext& ctx, const Grads& g, Tensors& d) { softmax_backward(ctx.saved(0), g.dy(), d[0]); },
      {draw(gen, {4, 5})});
}

Exercise cross_entropy_exercise(Generator& gen) {
  std::vector<std::int64_t> t;
  for (int n = 0; n < 3; ++n) t.push_back(gen.randint(5));
  const Indices targets(t);
  Tensor onehot = zeros({3, 5}, Float64);
  for (std::int64_t n = 0; n < 3; ++n) onehot.set({n, t[static_cast<std::size_t>(n)]}, 1.0);
  return single(
      "cross_entropy_backward",
      {"one row first: −log p_t = log Σ_k exp(z_k) − z_t; the first term's derivative is the softmax itself; then "
       "the mean over the rows",
       "∂(−log p_t)/∂z_k = p_k − [k = t] for one row; the mean over N rows scales every row by 1/N, and dL (a "
       "scalar) scales everything",
       "dz += (p − onehot) * dL * (1 / N)"},
      {"z"},
      [targets](OpContext& ctx, const Tensors& in) {
        ctx.save({softmax(in[0], -1)});
        return Tensors{cross_entropy(in[0], targets)};
      },
      [onehot](const OpContext& ctx, const Grads& g, Tensors& d) {
        cross_entropy_backward(ctx.saved(0), onehot, g.dy(), d[0]);
      },
      {draw(gen, {3, 5})});
}

Exercise additive_score_exercise(Generator& gen) {
  return single(
      "additive_score_backward",
      {"undo the lines from the last: e_j = v · t_j, then t_j = tanh(u_j), then u_j = k_j + q; q is added at "
       "every position j, so its gradient collects from all of them",
       "du_j = de_j v ⊙ tanh'(u_j), with tanh' written with t itself; dk_j is du_j; dq sums du over j; dv sums "
       "de_j t_j over the batch and j",
       "du = reshape(de, {B, S, 1}) * v * (1 − t * t);  dq += sum(du, 1);  dk += du;  dv += Σ_{b,j} de_j t_j"},
      {"q", "k", "v"},
      [](OpContext& ctx, const Tensors& in) {
        const std::int64_t B = in[1].size(0), A = in[1].size(2);
        Tensor t = tanh(in[1] + reshape(in[0], {B, 1, A}));  // (B, S, A)
        ctx.save({t, in[2]});
        return Tensors{sum(t * in[2], -1)};  // (B, S)
      },
      [](const OpContext& ctx, const Grads& g, Tensors& d) {
        additive_score_backward(ctx.saved(0), ctx.saved(1), g.dy(), d[0], d[1], d[2]);
      },
      {draw(gen, {2, 4}), draw(gen, {2, 3, 4}), draw(gen, {4})});
}

Exercise additive_attention_exercise(Generator& gen) {
  const Tensor mask = tensor({1, 1, 1, /**/ 1, 1, 0}, {2, 3}, Float64);
  return single(
      "additive_attention_backward",
      {"h is used twice, as the values (in c) and through the keys (in the scores): its gradient is the sum of both "
       "paths. Go back line by line: c, then the softmax, then the score, then the key projection",
       "in this order: dα (B, S), one dot product per position j; de (B, S), exercise 3's softmax backward "
       "applied to dα; du (B, S, A), back through e_j = v · t_j and the tanh; then the inputs: dq (B, A) and dv (A) "
       "are sums over the positions that shared them, dW_k (A, Hk) a sum of outer products over b and j, and dh_j "
       "(B, S, Hk) two terms added, one from the values and one from the keys",
       "dα_j = dc · h_j;  de = α (dα − Σ_k α_k dα_k);  du_j = de_j v (1 − t_j²);  dq += Σ_j du_j;  dv += Σ de_j t_j;  "
       "dW_k += Σ_{b,j} du_j h_jᵀ;  dh_j += α_j dc + W_kᵀ du_j"},
      {"h", "W_k", "v", "q"},
      [mask](OpContext& ctx, const Tensors& in) {
        const Tensor &h = in[0], &W_k = in[1], &v = in[2], &q = in[3];
        const std::int64_t B = h.size(0), S = h.size(1), Hk = h.size(2), A = W_k.size(0);
        Tensor t = tanh(linear(h, W_k) + reshape(q, {B, 1, A}));                 // (B, S, A)
        Tensor alpha = masked_softmax(sum(t * v, -1), mask, -1);                 // (B, S)
        Tensor c = reshape(matmul(reshape(alpha, {B, 1, S}), h), {B, Hk});       // (B, Hk)
        ctx.save({h, W_k, v, t, alpha});
        return Tensors{c};
      },
      [mask](const OpContext& ctx, const Grads& g, Tensors& d) {
        additive_attention_backward(ctx.saved(0), ctx.saved(1), ctx.saved(2), ctx.saved(3), ctx.saved(4), mask,
                                    g.dy(), d[0], d[1], d[2], d[3]);
      },
      {draw(gen, {2, 3, 5}), draw(gen, {4, 5}, 0.5), draw(gen, {4}), draw(gen, {2, 4})});
}

Exercise dot_exercise(Generator& gen) {
  const Tensor mask = tensor({1, 1, 1, /**/ 1, 1, 0}, {2, 3}, Float64);
  const double lambda = 0.5;  // 1/√d, d = 4
  return single(
      "dot_attention_backward",
      {"three lines back to front: the context, the softmax, the score; the score is bilinear, so each of q and k_j "
       "gets the other times de_j",
       "dα_j = dc · h_j and dh_j = α_j dc; de = the softmax's backward of dα; dq = λ Σ_j de_j k_j and dk_j = λ de_j q",
       "dα = Σ_m h[..., m] dc[m];  dh += α dc;  de = α (dα − Σ_k α_k dα_k);  dq += λ Σ_j de_j k_j;  "
       "dk += λ de_j q"},
      {"q", "k", "h"},
      [mask, lambda](OpContext& ctx, const Tensors& in) {
        const Tensor &q = in[0], &k = in[1], &h = in[2];
        const std::int64_t B = k.size(0), S = k.size(1), d = k.size(2), Hk = h.size(2);
        Tensor e = sum(k * reshape(q, {B, 1, d}), -1) * lambda;              // (B, S)
        Tensor alpha = masked_softmax(e, mask, -1);                           // (B, S)
        Tensor c = reshape(matmul(reshape(alpha, {B, 1, S}), h), {B, Hk});   // (B, Hk)
        ctx.save({q, k, h, alpha});
        return Tensors{c};
      },
      [mask, lambda](const OpContext& ctx, const Grads& g, Tensors& d) {
        dot_attention_backward(ctx.saved(0), ctx.saved(1), ctx.saved(2), ctx.saved(3), mask, lambda, g.dy(), d[0],
                               d[1], d[2]);
      },
      {draw(gen, {2, 4}), draw(gen, {2, 3, 4}), draw(gen, {2, 3, 5})});
}

Exercise lstm_exercise(Generator& gen) {
  const std::int64_t B = 2, I = 3, H = 4;
  return single(
      "lstm_cell_backward",
      {"c reaches L two ways, directly (dc) and through h = o ⊙ tanh(c); add both before going further back. Then "
       "each gate, its nonlinearity, and the two matrix products",
       "dc_all = dc + dh ⊙ o ⊙ tanh'(c); dc_prev = dc_all ⊙ f; the gates' gradients come from c = f c_prev + i g "
       "and h = o tanh(c); σ' = σ(1 − σ); the four side by side make da (B, 4H), which the linear layers take "
       "apart",
       "dc_all = dc + dh o (1 − tanh(c)²);  dc_prev += dc_all f;  da_i = dc_all g i (1 − i);  da_f = dc_all c_prev "
       "f (1 − f);  da_g = dc_all i (1 − g²);  da_o = dh tanh(c) o (1 − o);  batched: dx += da W_ih, dh_prev += da "
       "W_hh, dW_ih += daᵀ x, dW_hh += daᵀ h_prev, db_ih and db_hh += Σ_batch da"},
      {"x", "h_prev", "c_prev", "W_ih", "W_hh", "b_ih", "b_hh"},
      [](OpContext& ctx, const Tensors& in) {
        const std::int64_t Hh = in[1].size(1);
        Tensor a = linear(in[0], in[3], in[5]) + linear(in[1], in[4], in[6]);  // (B, 4H)
        Tensor i = sigmoid(slice(a, 1, 0, Hh)), f = sigmoid(slice(a, 1, Hh, 2 * Hh));
        Tensor gate_g = tanh(slice(a, 1, 2 * Hh, 3 * Hh)), o = sigmoid(slice(a, 1, 3 * Hh, 4 * Hh));
        Tensor c = f * in[2] + i * gate_g;
        Tensor tanh_c = tanh(c);
        ctx.save({in[0], in[1], in[2], in[3], in[4], i, f, gate_g, o, tanh_c});
        return Tensors{o * tanh_c, c};
      },
      [](const OpContext& ctx, const Grads& g, Tensors& d) {
        const LSTMSaved s{ctx.saved(0), ctx.saved(1), ctx.saved(2), ctx.saved(3), ctx.saved(4),
                          ctx.saved(5), ctx.saved(6), ctx.saved(7), ctx.saved(8), ctx.saved(9)};
        lstm_cell_backward(s, g.dy(0), g.dy(1), {d[0], d[1], d[2], d[3], d[4], d[5], d[6]});
      },
      {draw(gen, {B, I}), draw(gen, {B, H}), draw(gen, {B, H}), draw(gen, {4 * H, I}, 0.5), draw(gen, {4 * H, H}, 0.5),
       draw(gen, {4 * H}, 0.5), draw(gen, {4 * H}, 0.5)});
}

// α = masked_softmax(e), c = α @ h: the op as attend composes it.
Tensors softmax_context(const Tensor& e, const Tensor& h, const Tensor& mask) {
  const std::int64_t B = h.size(0), S = h.size(1), Hk = h.size(2);
  Tensor alpha = masked_softmax(e, mask, -1);                              // (B, S)
  return {reshape(matmul(reshape(alpha, {B, 1, S}), h), {B, Hk}), alpha};  // (B, Hk), (B, S)
}

Exercise fused_exercise(Generator& gen) {
  const Tensor mask = tensor({1, 1, 0, 1, /**/ 1, 1, 1, 1}, {2, 4}, Float64);
  Tensor e = draw(gen, {2, 4}), h = draw(gen, {2, 4, 3});
  Exercise ex = single(
      "softmax_context_backward",
      {"the steps of exercise 7's first two lines, written as loops over one batch row at a time: first every dα_j "
       "(and the values' share of dh), then the softmax, which needs all of dα first",
       "per row b: dα_j = Σ_m dc[b][m] h[b][j][m] and dh[b][j][m] += α_j dc[b][m]; then w = Σ_j α_j dα_j and "
       "de[b][j] += α_j (dα_j − w)",
       "for b: w = 0; for j: { dot = 0; for m: { dot += dc[b*Hk+m] h[(b*S+j)*Hk+m]; dh[(b*S+j)*Hk+m] += α[b*S+j] "
       "dc[b*Hk+m] } dα[j] = dot; w += α[b*S+j] dot }  for j: de[b*S+j] += α[b*S+j] (dα[j] − w)"},
      {"e", "h"},
      [mask](OpContext& ctx, const Tensors& in) {
        Tensors out = softmax_context(in[0], in[1], mask);
        ctx.save({out[1], in[1]});
        return Tensors{out[0]};
      },
      [](const OpContext& ctx, const Grads& g, Tensors& d) {
        softmax_context_backward(ctx.saved(0), ctx.saved(1), g.dy(), d[0], d[1]);
      },
      {e, h});
  // The oracle: the same op composed of masked_softmax and matmul, its backward derived by autograd.
  Tensor dc = normal({2, 3}, 0.0, 1.0, gen, Float64);
  ex.after = [mask, e, h, dc] {
    Tensor e2 = e.detach().clone().requires_grad_(), h2 = h.detach().clone().requires_grad_();
    Tensors out = softmax_context(e2, h2, mask);
    out[0].backward(dc);
    Tensor de = zeros({2, 4}, Float64), dh = zeros({2, 4, 3}, Float64);
    softmax_context_backward(out[1].detach(), h2.detach(), dc, de, dh);
    const double worst = std::max(max_diff(de, e2.grad()), max_diff(dh, h2.grad()));
    if (worst > 1e-12)
      return Verdict{fmt::format("your loops differ from the composed oracle (masked_softmax, matmul) by {:.1e}", worst),
                     false};
    return Verdict{fmt::format("the same as the composed oracle (masked_softmax, matmul): max |Δ| = {:.1e}", worst)};
  };
  return ex;
}

}  // namespace

std::vector<Exercise> tensor_exercises(Generator& gen) {
  std::vector<Exercise> all;
  all.push_back(softmax_exercise(gen));
  all.push_back(cross_entropy_exercise(gen));
  all.push_back(additive_score_exercise(gen));
  all.push_back(additive_attention_exercise(gen));
  all.push_back(dot_exercise(gen));
  all.push_back(lstm_exercise(gen));
  all.push_back(fused_exercise(gen));
  return all;
}

}  // namespace attend::exercises::grader
