// The attend explorer's helpers, loaded before worked.js and explorer.js:
// building elements, writing numbers as the docs write them, and the colour
// scales of the heatmaps (sections 1 and 2; explorer.js goes on with 3).
"use strict";

// ---------------------------------------------------------------------------
// 1. Small helpers
// ---------------------------------------------------------------------------

const $ = (selector, root = document) => root.querySelector(selector);

// el("td", {class: "num"}, "0.5") builds <td class="num">0.5</td>.
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  for (const child of children) node.append(child);
  return node;
}

// Every number in the panels is written one way: 6 significant digits, with
// a real minus sign, so that it reads like the docs and can be compared with
// the JSON the API returned.
function num(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  if (x === 0) return "0";
  const text = Math.abs(x) >= 1e-4 && Math.abs(x) < 1e5 ? x.toPrecision(6) : x.toExponential(5);
  return text.replace("-", "−");
}

// The text of a cell: short enough for a 2.6rem square. α is in [0, 1] and is
// written with 2 decimals; ∂L/∂α is divided by 10^exponent (said in the legend)
// and written with 1 decimal and its sign.
function cellText(value, kind, exponent) {
  if (kind === "alpha") return value.toFixed(2).replace(/^0\./, ".");
  const scaled = value / 10 ** exponent;
  const text = Math.abs(scaled).toFixed(1);
  if (Number(text) === 0) return "0";
  return (scaled < 0 ? "−" : "+") + text;
}

// 10² rather than 10^2: the exponent of the legend's "× 10ⁿ".
const superscript = (n) => String(n).replace(/./g, (c) => "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"["0123456789-".indexOf(c)]);

// The largest |x| of a matrix, by a loop: Math.max(...) of a long sentence's
// T × S numbers would overflow the call stack.
function maxAbsOf(matrix) {
  let most = 0;
  for (const values of matrix) for (const x of values) most = Math.max(most, Math.abs(x));
  return most;
}

// Row j of a {shape: [rows, cols], data: [...]} value from the API.
function row(value, j) {
  const cols = value.shape[1];
  return value.data.slice(j * cols, (j + 1) * cols);
}

// ---------------------------------------------------------------------------
// 2. Colour scales
// ---------------------------------------------------------------------------
// α is a probability: a sequential scale from light (0) to dark (1).
// ∂L/∂α has a sign: a diverging scale, blue below 0, white at 0, red above,
// symmetric around 0 so that equal colours mean equal magnitudes.
// Colour is never alone: each cell also prints its number and sign.

const SEQUENTIAL = ["#f7fcf0", "#ccebc5", "#7bccc4", "#2b8cbe", "#084081"];  // ColorBrewer GnBu
const DIVERGING = ["#2166ac", "#67a9cf", "#d1e5f0", "#f7f7f7", "#fddbc7", "#ef8a62", "#b2182b"];  // ColorBrewer RdBu

const hexToRgb = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));

// The colour at t in [0, 1] along the stops, mixed linearly between neighbours.
function ramp(stops, t) {
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const a = hexToRgb(stops[i]), b = hexToRgb(stops[i + 1]);
  const mix = a.map((c, k) => Math.round(c + (b[k] - c) * (x - i)));
  return `rgb(${mix.join(",")})`;
}

const alphaColour = (a) => ramp(SEQUENTIAL, a);
const gradColour = (g, maxAbs) => ramp(DIVERGING, maxAbs > 0 ? 0.5 + g / (2 * maxAbs) : 0.5);

// Black or white text, whichever contrasts more with the cell (WCAG's
// relative luminance; the crossover of the two contrast ratios is at 0.179).
function textColourOn(rgb) {
  const [r, g, b] = rgb.match(/\d+/g).map(Number).map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.179 ? "#000" : "#fff";
}
