// The attend explorer: type a sentence, see the translation, the attention
// weights α (target rows × source columns) and the signed gradient ∂L/∂α, and
// open the worked numbers of one decoder step.
//
// Everything comes from the server that serves this page (docs/serve.md):
//   GET  /translator/models   which models are loaded, and their attention kind
//   POST /explain             α, ∂L/∂α, the beam's hypotheses and one step's numbers
// Nothing else is fetched. The formulas quoted next to each number are lines of
// docs/backprop-through-attention.md; "§5" means its section 5. The worked
// numbers of one step are drawn by worked.js (renderWorked); the helpers and
// colour scales of sections 1 and 2 are in helpers.js.
"use strict";

// ---------------------------------------------------------------------------
// 3. The API: every answer is JSON; an error is {"status": "error", "error": ...}
// ---------------------------------------------------------------------------

async function api(path, body) {
  const options = body === undefined ? {} :
    {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
  let response;
  try {
    response = await fetch(path, options);
  } catch (e) {
    throw new Error(`the server did not answer (${path}): is attend serve still running?`);
  }
  let json = null;
  try { json = await response.json(); } catch (e) { /* not JSON: said below */ }
  if (!response.ok || json === null || json.status === "error") {
    const why = json && json.error ? json.error : `HTTP ${response.status} ${response.statusText}`;
    throw new Error(`${path}: ${why}`);
  }
  return json;
}

function showError(message) {
  const box = $("#error");
  box.textContent = message;
  box.hidden = message === "";
}

const setStatus = (message) => { $("#status").textContent = message; };

// ---------------------------------------------------------------------------
// 4. The page's state: the question asked, and one view per model shown
// ---------------------------------------------------------------------------

const state = {
  models: [],      // GET /translator/models
  views: [],       // one per model shown: {model, data, show, step, cell, panel}
  question: null,  // {src, ref}
  asked: 0,        // counts requests, so that a late answer to an old question is dropped
};

// The examples are sentences of `attend data toy`, the toy English->French
// language (a model trained on other data will meet unknown words in them).
const EXAMPLES = [
  "the strong mouse sings", "a white bank runs", "every small girl works",
  "my old road sings", "the empty banks work", "these bridges run",
];

// ---------------------------------------------------------------------------
// 5. Asking: /explain for each chosen model
// ---------------------------------------------------------------------------

async function explain(model, question, step) {
  const body = {src: question.src, model: model.model_id, step};
  if (question.ref) body.ref = question.ref;
  return api("/explain", body);
}

async function ask(event) {
  event.preventDefault();
  const src = $("#src").value.trim();
  const ref = $("#ref").value.trim();
  const chosen = state.models.filter((m) => $(`#model-${m.model_id}`)?.checked);
  if (src === "") return showError("Type a sentence first.");
  if (chosen.length === 0) return showError("Tick at least one model.");
  showError("");
  const asked = ++state.asked;
  state.question = {src, ref};
  setStatus("asking the server…");
  $("#go").disabled = true;
  try {
    const answers = await Promise.all(chosen.map((m) => explain(m, state.question, 0)));
    if (asked !== state.asked) return;
    state.views = chosen.map((model, k) => ({model, data: answers[k], show: "alpha", step: 0, cell: [0, 0], panel: null}));
    renderViews();
    setStatus(`explained “${src}” with ${chosen.length === 1 ? "one model" : chosen.length + " models"}.`);
  } catch (e) {
    if (asked === state.asked) { showError(e.message); setStatus(""); }
  } finally {
    if (asked === state.asked) $("#go").disabled = false;
  }
}

// Selecting a cell of row t shows step t's worked numbers: the page asks for
// them unless it already holds them.
async function selectCell(view, t, j) {
  view.cell = [t, j];
  view.step = t;
  if (view.data.step && view.data.step.t !== t) {
    // Only the answer to the latest question and the latest click is drawn.
    const asked = state.asked, clicked = (view.clicks = (view.clicks || 0) + 1);
    try {
      const answer = await explain(view.model, state.question, t);
      if (asked !== state.asked || clicked !== view.clicks) return;
      view.data.step = answer.step;
      showError("");
    } catch (e) {
      showError(e.message);
    }
  }
  renderStep(view);
  $(`td[data-t="${t}"][data-j="${j}"]`, view.panel)?.focus();
}

// ---------------------------------------------------------------------------
// 6. Drawing one model's panel
// ---------------------------------------------------------------------------

function renderViews() {
  const box = $("#models");
  box.replaceChildren();
  for (const view of state.views) {
    view.panel = $("#model-template").content.firstElementChild.cloneNode(true);
    wireView(view);
    box.append(view.panel);
    renderView(view);
  }
}

function renderView(view) {
  const {data, panel} = view;
  const title = `model ${data.model}: ${data.attention === "none" ? "no attention" : data.attention + " attention"}`;
  const heading = $("h2", panel);
  heading.textContent = title;
  heading.id = `model-title-${data.model}`;
  panel.setAttribute("aria-labelledby", heading.id);
  $(".translation", panel).textContent = data.translation || "(empty translation)";
  $(".hyps", panel).replaceChildren(...data.hypotheses.map((h) =>
    el("li", {}, `${h.tgt}  `, el("span", {class: "meta"}, `(score ${num(h.pred_score)})`))));
  if (data.alpha === null) {
    $(".meta", panel).textContent = "This model has no attention: there is no α or ∂L/∂α to show.";
    for (const part of ["h3", ".toolbar", ".heatmap-scroll", ".legend", ".cell-panel", "details.worked"])
      panel.querySelectorAll(part).forEach((node) => { node.hidden = true; });
    return;
  }
  $(".meta", panel).textContent = data.target === "reference"
    ? `∂L/∂α for the reference; loss ${num(data.loss)} per target token`
    : `∂L/∂α for the model's own greedy translation; loss ${num(data.loss)} per target token`;
  $(".show-alpha", panel).setAttribute("aria-pressed", String(view.show === "alpha"));
  $(".show-grad", panel).setAttribute("aria-pressed", String(view.show === "dalpha"));
  renderHeatmap(view);
  renderLegend(view);
  renderStep(view);
}

// What changes when a cell is selected or the decoder steps. The heatmap's
// cells are kept, only marked: a table rebuilt under a resting mouse pointer
// would send a hover to the cell under it and show that cell instead.
function renderStep(view) {
  const {data, panel} = view;
  const steps = data.target_tokens.length;
  $(".step-label", panel).textContent = view.stepping
    ? `step ${view.step + 1} of ${steps}: “${data.target_tokens[view.step]}”`
    : `all ${steps} steps`;
  panel.querySelectorAll("table.heatmap tbody tr").forEach((tr, t) => {
    tr.classList.toggle("future", Boolean(view.stepping) && t > view.step);
    tr.classList.toggle("current", Boolean(view.stepping) && t === view.step);
  });
  panel.querySelectorAll("table.heatmap td[data-t]").forEach((td) => {
    const selected = Number(td.dataset.t) === view.cell[0] && Number(td.dataset.j) === view.cell[1];
    td.classList.toggle("selected", selected);
    td.setAttribute("aria-selected", String(selected));
    td.tabIndex = selected ? 0 : -1;
  });
  renderCell(view, view.cell[0], view.cell[1]);
  renderWorked(view);
}

// The heatmap is a table (role="grid"): one row per target token (decoder
// step t), one column per source token j. Exactly one cell is in the tab
// order (roving tabindex); the arrow keys move between cells.
function renderHeatmap(view) {
  const {data, panel} = view;
  const matrix = data[view.show];
  const maxAbs = maxAbsOf(data.dalpha);
  const exponent = maxAbs > 0 ? Math.floor(Math.log10(maxAbs)) : 0;
  view.exponent = exponent;
  const what = view.show === "alpha" ? "α" : "∂L/∂α";
  const table = $("table.heatmap", panel);
  table.setAttribute("aria-label", `${what} of model ${data.model}: target words down, source words across`);
  const head = el("tr", {}, el("th", {scope: "col"}, el("span", {class: "visually-hidden"}, "target \\ source")));
  data.source_tokens.forEach((w) => head.append(el("th", {scope: "col"}, w)));
  const body = el("tbody");
  data.target_tokens.forEach((target, t) => {
    const tr = el("tr", {}, el("th", {scope: "row"}, target));
    data.source_tokens.forEach((source, j) => {
      const value = matrix[t][j];
      const colour = view.show === "alpha" ? alphaColour(value) : gradColour(value, maxAbs);
      const td = el("td", {
        role: "gridcell", tabindex: "-1", "data-t": t, "data-j": j,
        "aria-label": `${target} ← ${source}: α ${num(data.alpha[t][j])}, ∂L/∂α ${num(data.dalpha[t][j])}`,
      }, cellText(value, view.show, exponent));
      td.style.background = colour;
      td.style.color = textColourOn(colour);
      tr.append(td);
    });
    body.append(tr);
  });
  table.replaceChildren(el("thead", {}, head), body);
}

function renderLegend(view) {
  const legend = $(".legend", view.panel);
  const maxAbs = maxAbsOf(view.data.dalpha);
  let bar, ticks, words;
  if (view.show === "alpha") {
    bar = `linear-gradient(to right, ${SEQUENTIAL.join(", ")})`;
    ticks = ["0", "0.5", "1"];
    words = "α_ij: how much of target word i's context comes from source word j. Each row sums to 1. Cells: α to 2 decimals.";
  } else {
    bar = `linear-gradient(to right, ${DIVERGING.join(", ")})`;
    ticks = [num(-maxAbs), "0", "+" + num(maxAbs)];
    words = `∂L/∂α_ij, signed. Blue (−): more weight on j would lower the loss; red (+): it would raise it. ` +
      `Cells: ∂L/∂α × 10${superscript(-view.exponent)}. Which way training moves the score depends on the row's ` +
      "α-weighted average (§4), shown in the worked numbers.";
  }
  legend.replaceChildren(
    el("div", {class: "bar", role: "img", "aria-label": `colour scale from ${ticks[0]} to ${ticks[2]}`}),
    el("div", {class: "ticks", "aria-hidden": "true"}, ...ticks.map((t) => el("span", {}, t))),
    el("p", {}, words));
  $(".bar", legend).style.background = bar;
}

// The numbers of one cell (t, j). α and ∂L/∂α come from the matrices; the
// contribution α_tj h_j from step t's numbers, once the page holds them.
function renderCell(view, t, j) {
  const {data} = view;
  const step = data.step && data.step.t === t ? data.step : null;
  const item = (name, value, from, key) => [
    el("dt", {}, name),
    el("dd", {"data-key": key}, el("span", {class: "num"}, value), el("span", {class: "from"}, from))];
  // A long vector stays folded until asked for.
  const folded = (name, summary, value, key) => [
    el("dt", {}, name),
    el("dd", {"data-key": key}, el("details", {}, el("summary", {}, summary), el("span", {class: "num"}, value)))];
  // The docs count decoder steps i and source positions j from 1; the API's
  // rows and columns (t, j) count from 0.
  const i = t + 1, jj = j + 1;
  const parts = [
    ...item("cell", `${data.target_tokens[t]} ← ${data.source_tokens[j]}`,
      `decoder step i = ${i} (the target word), source position j = ${jj}`, "cell"),
    ...item(`α_${i},${jj}`, num(data.alpha[t][j]), "α_i = softmax(e_i)   (§5, one decoder step)", "alpha"),
    ...item(`∂L/∂α_${i},${jj}`, num(data.dalpha[t][j]),
      "∂L/∂α_j = ∂L/∂c · h_j   (§3); L is the mean loss over the target's tokens, as attend translate --explain-grad gives it (§4)",
      "dalpha"),
  ];
  if (step) {
    const contribution = row(step.values.H, j).map((h) => data.alpha[t][j] * h);
    parts.push(...item(`‖α_${i},${jj} h_${jj}‖`, num(step.contribution_norms[j]),
      "the length of h_j's share of the context c_i = Σ_j α_ij h_j   (§5, one decoder step)", "contribution"));
    parts.push(...folded(`α_${i},${jj} h_${jj}`, `the share itself, α_ij times h_j: ${contribution.length} numbers`,
      contribution.map(num).join("  "), "contribution-vector"));
  } else {
    parts.push(...item(`α_${i},${jj} h_${jj}`, `click the cell or press Enter to load step ${i}`, "", "contribution"));
  }
  $(".cell-panel", view.panel).replaceChildren(el("dl", {}, ...parts));
}

// ---------------------------------------------------------------------------
// 7. Hover, click and keys
// ---------------------------------------------------------------------------

function wireView(view) {
  const {panel} = view;
  const table = $("table.heatmap", panel);
  const cellOf = (node) => node.closest("td[data-t]");
  const at = (td) => [Number(td.dataset.t), Number(td.dataset.j)];
  // Hover and keyboard focus preview a cell; click and Enter select it.
  table.addEventListener("mouseover", (e) => { const td = cellOf(e.target); if (td) renderCell(view, ...at(td)); });
  table.addEventListener("mouseleave", () => renderCell(view, ...view.cell));
  table.addEventListener("focusin", (e) => { const td = cellOf(e.target); if (td) renderCell(view, ...at(td)); });
  table.addEventListener("click", (e) => { const td = cellOf(e.target); if (td) selectCell(view, ...at(td)); });
  table.addEventListener("keydown", (e) => {
    const td = cellOf(e.target);
    if (!td) return;
    let [t, j] = at(td);
    const rows = view.data.target_tokens.length, cols = view.data.source_tokens.length;
    const moves = {ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1]};
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      selectCell(view, t, j);
    } else if (e.key in moves) {
      e.preventDefault();
      t = Math.min(rows - 1, Math.max(0, t + moves[e.key][0]));
      j = Math.min(cols - 1, Math.max(0, j + moves[e.key][1]));
      const next = $(`td[data-t="${t}"][data-j="${j}"]`, table);
      td.tabIndex = -1;
      next.tabIndex = 0;
      next.focus();
    }
  });
  $(".show-alpha", panel).addEventListener("click", () => { view.show = "alpha"; renderView(view); });
  $(".show-grad", panel).addEventListener("click", () => { view.show = "dalpha"; renderView(view); });
  // Stepping through the decoder: rows after the current step are dimmed; the
  // selected cell is the current row's largest α, the word it attends to most.
  const goTo = (t) => {
    const last = view.data.target_tokens.length - 1;
    t = Math.min(last, Math.max(0, t));
    view.stepping = true;
    const weights = view.data.alpha[t];
    selectCell(view, t, weights.indexOf(Math.max(...weights)));
  };
  $(".step-first", panel).addEventListener("click", () => goTo(0));
  $(".step-prev", panel).addEventListener("click", () => goTo(view.step - 1));
  $(".step-next", panel).addEventListener("click", () => goTo(view.stepping ? view.step + 1 : 0));
  $(".step-all", panel).addEventListener("click", () => { view.stepping = false; renderStep(view); });
}

// ---------------------------------------------------------------------------
// 8. Start: list the models, fill the examples, wait for a question
// ---------------------------------------------------------------------------

async function start() {
  for (const sentence of EXAMPLES) {
    $("#examples").append(el("option", {value: sentence}));
    $("#pick").append(el("option", {value: sentence}, sentence));
  }
  $("#pick").addEventListener("change", (e) => {
    if (e.target.value === "") return;
    $("#src").value = e.target.value;
    $("#ask").requestSubmit();
  });
  $("#ask").addEventListener("submit", ask);
  try {
    state.models = await api("/translator/models");
  } catch (e) {
    $("#model-list").textContent = "no models: the server did not list them.";
    showError(e.message);
    return;
  }
  // Two models are ticked at first, so that a server started with two (say,
  // additive and dot attention) shows them side by side.
  $("#model-list").replaceChildren(...state.models.map((m, k) => {
    const box = el("input", {type: "checkbox", id: `model-${m.model_id}`});
    box.checked = k < 2;
    const name = `${m.model_id}: ${m.models.join(", ")} (${m.attention === "none" ? "no attention" : m.attention})`;
    return el("label", {for: box.id}, box, name);
  }));
  setStatus(`${state.models.length} model${state.models.length === 1 ? "" : "s"} loaded. Type or pick a sentence.`);
}

start();
