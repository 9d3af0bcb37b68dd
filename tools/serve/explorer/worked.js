// The attend explorer's worked numbers: every number of one decoder step (the
// scores, the softmax, the context and their gradients), each headed by the
// formula line of docs/backprop-through-attention.md it comes from. Uses the
// helpers of helpers.js ($, el, num, row); explorer.js calls renderWorked.
"use strict";

// ---------------------------------------------------------------------------
// The worked numbers of the selected step
// ---------------------------------------------------------------------------
// One decoder step i, as docs/backprop-through-attention.md writes it. Each
// column or row is headed by the formula line it comes from, and by its
// section. Where a number can be recomputed from the others on the page (the
// softmax, the context, ∂L/∂α, ∂L/∂e), the page does it and shows how far the
// server's number is from it: a learner can redo every step.

// The formula lines quoted, by attention kind. Additive: §5 "One decoder step";
// dot and general: §6.
function formulas(kind) {
  const additive = kind === "additive";
  return {
    q: additive ? "q_i  = W_q s_i + b   (§5)" : kind === "dot" ? "q   = W_Q s   (§6)" : "the query is s itself   (§6, general: e_j = sᵀ W h_j)",
    k: additive ? "k_j  = W_k h_j   (§5)" : kind === "dot" ? "k_j = W_K h_j   (§6)" : "k_j = W h_j   (§6, general)",
    t: "t_ij = tanh(u_ij),  u_ij = k_j + q_i   (§5)",
    e: additive ? "e_ij = v · t_ij   (§5)" : "e_j = λ k_j · q   (§6)",
    exp: "y_k = exp(x_k) / Σ_j exp(x_j)   (§1; the row's maximum subtracted first)",
    alpha: additive ? "α_i  = softmax(e_i)   (§5)" : "α   = softmax(e)   (§6)",
    c: additive ? "c_i  = Σ_j α_ij h_j   (§5)" : "c = Σ_j α_j h_j   (§6)",
    h_tilde: "h~_i = tanh(W_c [s_i; c_i] + b_c)   (§5)",
    scale: "λ = 1/√d when scaled, else 1   (§6)",
    dalpha: "∂L/∂α_j = ∂L/∂c · h_j   (§3)",
    de: "∂L/∂e_j = α_j (∂L/∂α_j − Σ_k α_k ∂L/∂α_k)   (§4)",
    dc: "∂L/∂[s;c] = W_cᵀ ((1 − h~ ⊙ h~) ⊙ ∂L/∂h~), then split into ∂L/∂s and ∂L/∂c   (§2)",
    dh_tilde: "∂L/∂h~   = W_outᵀ ∂L/∂z   (§2)",
    H: "the encoder states h_j   (§5: c_i = Σ_j α_ij h_j)",
    s: "(s_i, m_i) = LSTMCell([E y_{i−1}; h~_{i−1}], (s_{i−1}, m_{i−1}))   (§5)",
  };
}

const maxDiff = (a, b) => Math.max(0, ...a.map((x, k) => Math.abs(x - b[k])));

// A table: a title, header cells [name, formula], and rows of cells. The
// title stands above the scrolling box (a <caption> would scroll away with a
// wide table on a phone) and names the table for screen readers.
let tables = 0;
function table(caption, headers, rows) {
  const head = el("tr", {}, ...headers.map(([name, formula]) =>
    el("th", {scope: "col"}, name, formula ? el("div", {class: "formula"}, formula) : "")));
  const body = rows.map((cells) => el("tr", {}, ...cells.map((c, k) =>
    k === 0 ? el("th", {scope: "row"}, c) : el("td", {class: typeof c === "number" ? "num" : ""}, typeof c === "number" ? num(c) : c))));
  const id = `worked-table-${++tables}`;
  return el("div", {},
    el("h4", {id, class: "worked-title"}, caption),
    el("div", {class: "worked-scroll"},
      el("table", {class: "worked", "aria-labelledby": id}, el("thead", {}, head), el("tbody", {}, ...body))));
}

function renderWorked(view) {
  const box = $(".worked-body", view.panel);
  const {data} = view;
  const step = data.step;
  if (!step) { box.replaceChildren(el("p", {}, "No step numbers for this model.")); return; }
  const f = formulas(data.attention);
  const v = step.values, g = step.gradients;
  const S = data.source_tokens.length, i = step.t + 1;
  const alpha = v.alpha.data, e = v.e.data, dalpha = g.alpha.analytic, de = g.e.analytic;
  const dc = g.c.analytic;
  // Recomputed here, from the numbers above them.
  const top = Math.max(...e);
  const exps = e.map((x) => Math.exp(x - top));
  const Z = exps.reduce((a, b) => a + b, 0);
  const softmax = exps.map((x) => x / Z);
  const H = Array.from({length: S}, (_, j) => row(v.H, j));
  const context = v.c.data.map((_, m) => H.reduce((sum, h, j) => sum + alpha[j] * h[m], 0));
  const dalphaAgain = H.map((h) => h.reduce((sum, x, m) => sum + dc[m] * x, 0));
  const average = alpha.reduce((sum, a, j) => sum + a * dalpha[j], 0);
  const deAgain = alpha.map((a, j) => a * (dalpha[j] - average));

  const intro = el("p", {},
    `Decoder step i = ${i}, target word y_${i} = “${step.target_token}”: p(y_${i}) = ${num(step.p_target)}, ` +
    `its loss L_${i} = −log p(y_${i}) = ${num(step.loss)}. The gradients below are of L_${i} alone; the heatmap's ` +
    "∂L/∂α is of the mean loss over every target token, which also reaches α_ij through the later steps " +
    "(input feeding, §5), so the two differ.");
  const scores = table(`Scores and weights of step ${i}`,
    [["j  source"], ["e_j", f.e], ["exp(e_j − max e)", f.exp], ["α_j", f.alpha], ["∂L/∂α_j", f.dalpha],
     ["∂L/∂e_j", f.de], ["‖α_j h_j‖", f.c]],
    [...data.source_tokens.map((w, j) => [`${j + 1}  ${w}`, e[j], exps[j], alpha[j], dalpha[j], de[j], step.contribution_norms[j]]),
     ["Σ_j", e.reduce((a, b) => a + b, 0), Z, alpha.reduce((a, b) => a + b, 0), "", de.reduce((a, b) => a + b, 0), ""]]);
  const contextTable = table(`The context c of step ${i}: one row per component m`,
    [["m"], ["c[m]", f.c], ["Σ_j α_j h_j[m], recomputed here", ""], ["∂L/∂c[m]", f.dc]],
    v.c.data.map((c, m) => [String(m + 1), c, context[m], dc[m]]));
  const checks = el("ul", {},
    el("li", {}, "Rounding: a float32 model agrees to about 1e−7 of a number's size, a float64 one to about 1e−16."),
    el("li", {}, `softmax(e) recomputed here, against the server's α: max |Δ| = ${num(maxDiff(softmax, alpha))}  (§1)`),
    el("li", {}, `Σ_j α_j h_j recomputed here, against the server's c: max |Δ| = ${num(maxDiff(context, v.c.data))}  (§3)`),
    el("li", {}, `∂L/∂c · h_j recomputed here, against the server's ∂L/∂α_j: max |Δ| = ${num(maxDiff(dalphaAgain, dalpha))}  (§3)`),
    el("li", {}, `Σ_k α_k ∂L/∂α_k = ${num(average)}, the α-weighted average of ∂L/∂α; α_j (∂L/∂α_j − it) against ` +
      `the server's ∂L/∂e_j: max |Δ| = ${num(maxDiff(deAgain, de))}  (§4). A score e_j whose ∂L/∂e_j < 0 ` +
      "would rise in a step of gradient descent."));
  const vectors = [["s", f.s, v.s.data], ["q", f.q, v.q ? v.q.data : null]];
  if (v.scale !== undefined) vectors.push(["λ", f.scale, [v.scale]]);
  for (let j = 0; j < S; ++j) vectors.push([`h_${j + 1}`, f.H, H[j]]);
  for (let j = 0; j < S && v.k; ++j) vectors.push([`k_${j + 1}`, f.k, row(v.k, j)]);
  for (let j = 0; j < S && v.t; ++j) vectors.push([`t_${i},${j + 1}`, f.t, row(v.t, j)]);
  vectors.push(["h~", f.h_tilde, v.h_tilde.data], ["∂L/∂h~", f.dh_tilde, g.h_tilde.analytic]);
  const vectorTable = table(`The vectors of step ${i}`, [["name"], ["from"], ["components 1, 2, …"]],
    vectors.filter(([, , x]) => x).map(([name, from, x]) => [name, el("span", {class: "formula"}, from), x.map(num).join("  ")]));
  box.replaceChildren(intro, scores, checks, contextTable, vectorTable);
}
