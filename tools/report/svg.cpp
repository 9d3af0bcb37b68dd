#include "tools/report/svg.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace attend::tools::svg {

namespace {
// Colours of the series, distinguishable and colour-blind safe (Okabe-Ito).
constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"};

std::string number(double v) {
  if (v == 0) return "0";
  if (std::abs(v) >= 1e5 || std::abs(v) < 1e-3) return fmt::format("{:.2g}", v);
  std::string s = fmt::format("{:.6g}", v);
  return s;
}

std::string header(int width, int height) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
      width, height);
}
}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int approx_count) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, approx_count);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string line_chart(const LineChart& chart) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series& s : chart.series) {
    if (s.x.size() != s.y.size()) fail("svg::line_chart: series '{}' has {} x and {} y values", s.name, s.x.size(), s.y.size());
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, s.y[i]), y1 = std::max(y1, s.y[i]);
    }
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  x0 = chart.x_min.value_or(x0), x1 = chart.x_max.value_or(x1);
  y0 = chart.y_min.value_or(y0), y1 = chart.y_max.value_or(y1);
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + 1;
  const std::vector<double> xt = nice_ticks(x0, x1), yt = nice_ticks(y0, y1);
  if (!chart.x_min) x0 = std::min(x0, xt.front());
  if (!chart.x_max) x1 = std::max(x1, xt.back());
  if (!chart.y_min) y0 = std::min(y0, yt.front());
  if (!chart.y_max) y1 = std::max(y1, yt.back());

  const int W = chart.width, H = chart.height;
  const double left = 70, right = 170, top = 40, bottom = 55;  // the legend sits on the right
  const double pw = W - left - right, ph = H - top - bottom;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return top + ph - (y - y0) / (y1 - y0) * ph; };

  std::string out = header(W, H);
  out += fmt::format("<text class=\"title\" x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
                     left + pw / 2, escape(chart.title));
  out += "<g class=\"axes\" stroke=\"#333\" stroke-width=\"1\">\n";
  out += fmt::format("<line class=\"x-axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", left, top + ph, left + pw, top + ph);
  out += fmt::format("<line class=\"y-axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", left, top, left, top + ph);
  out += "</g>\n<g class=\"ticks\" font-size=\"11\" fill=\"#333\">\n";
  for (double t : xt) {
    if (t < x0 - 1e-12 || t > x1 + 1e-12) continue;
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#333\"/>"
                       "<text class=\"x-tick\" x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                       px(t), top + ph, top + ph + 5, top + ph + 18, number(t));
  }
  for (double t : yt) {
    if (t < y0 - 1e-12 || t > y1 + 1e-12) continue;
    out += fmt::format("<line x1=\"{0}\" y1=\"{2:.1f}\" x2=\"{1}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
                       "<text class=\"y-tick\" x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                       left, left + pw, py(t), left - 6, py(t) + 4, number(t));
  }
  out += "</g>\n";
  out += fmt::format("<text class=\"x-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + pw / 2, H - 12,
                     escape(chart.x_label));
  out += fmt::format("<text class=\"y-label\" transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                     top + ph / 2, escape(chart.y_label));
  for (std::size_t k = 0; k < chart.series.size(); ++k) {
    const Series& s = chart.series[k];
    const char* c = kPalette[k % std::size(kPalette)];
    out += fmt::format("<g class=\"series\" data-name=\"{}\">\n", escape(s.name));
    if (s.line && !s.x.empty()) {
      std::string points;
      for (std::size_t i = 0; i < s.x.size(); ++i)
        if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) points += fmt::format("{:.1f},{:.1f} ", px(s.x[i]), py(s.y[i]));
      out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", c, points);
    }
    if (s.markers || s.x.size() == 1)
      for (std::size_t i = 0; i < s.x.size(); ++i)
        if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]))
          out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(s.x[i]), py(s.y[i]), c);
    out += "</g>\n";
    const double ly = top + 10 + 20.0 * static_cast<double>(k);
    out += fmt::format("<g class=\"legend\"><line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"3\"/>"
                       "<text x=\"{4}\" y=\"{5}\">{6}</text></g>\n",
                       left + pw + 15, ly, left + pw + 40, c, left + pw + 46, ly + 4, escape(s.name));
  }
  out += "</svg>\n";
  return out;
}

std::string colour(const Heatmap& map, double v) {
  double lo = map.lo.value_or(0.0), hi = map.hi.value_or(1.0);
  auto mix = [](double t, int a, int b) { return static_cast<int>(std::lround(a + (b - a) * std::clamp(t, 0.0, 1.0))); };
  if (!std::isfinite(v)) return "#888888";
  if (map.diverging) {  // blue (negative) - white - red (positive)
    const double m = std::max(std::abs(lo), std::abs(hi));
    const double t = m > 0 ? v / m : 0;
    if (t < 0) return fmt::format("#{:02x}{:02x}{:02x}", mix(-t, 255, 33), mix(-t, 255, 102), mix(-t, 255, 172));
    return fmt::format("#{:02x}{:02x}{:02x}", mix(t, 255, 178), mix(t, 255, 24), mix(t, 255, 43));
  }
  const double t = hi > lo ? (v - lo) / (hi - lo) : 0;  // white -> dark blue
  return fmt::format("#{:02x}{:02x}{:02x}", mix(t, 255, 8), mix(t, 255, 48), mix(t, 255, 107));
}

namespace {
// A heatmap's drawing without its enclosing <svg>, and the size it needs, so
// that several heatmaps can share one picture.
struct Panel {
  std::string body;
  int width = 0, height = 0;
};

Panel heatmap_panel(const Heatmap& map) {
  const std::size_t rows = map.values.size(), cols = rows ? map.values[0].size() : 0;
  if (map.row_labels.size() != rows || map.column_labels.size() != cols)
    fail("svg::heatmap: {} x {} values but {} row and {} column labels", rows, cols, map.row_labels.size(),
         map.column_labels.size());
  for (const auto& r : map.values)
    if (r.size() != cols) fail("svg::heatmap: rows have different lengths ({} and {})", r.size(), cols);
  Heatmap m = map;  // with the scale filled in
  if (!m.lo || !m.hi) {
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& r : map.values)
      for (double v : r)
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    if (!std::isfinite(lo)) lo = 0, hi = 1;
    if (!m.lo) m.lo = m.diverging ? -std::max(std::abs(lo), std::abs(hi)) : std::min(0.0, lo);
    if (!m.hi) m.hi = m.diverging ? std::max(std::abs(lo), std::abs(hi)) : std::max(hi, *m.lo + 1e-12);
  }
  std::size_t longest_row = 1, longest_col = 1;
  for (const auto& l : map.row_labels) longest_row = std::max(longest_row, l.size());
  for (const auto& l : map.column_labels) longest_col = std::max(longest_col, l.size());
  const double cell = map.cell;
  const double left = 30 + 7.0 * static_cast<double>(longest_row), top = 50 + 6.0 * static_cast<double>(longest_col);
  const double scale_w = 90;
  const int W = static_cast<int>(left + cell * static_cast<double>(cols) + scale_w + 20);
  const int H = static_cast<int>(std::max(top + cell * static_cast<double>(rows) + 40, top + 200));

  std::string out = fmt::format("<text class=\"title\" x=\"{}\" y=\"18\" font-size=\"14\">{}</text>\n", 10,
                                escape(map.title));
  out += "<g class=\"cells\">\n";
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double v = map.values[r][c];
      out += fmt::format("<rect class=\"cell\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
                         "stroke=\"#eee\"><title>{} / {}: {:.4g}</title></rect>\n",
                         left + cell * static_cast<double>(c), top + cell * static_cast<double>(r), cell, cell, colour(m, v),
                         escape(map.row_labels[r]), escape(map.column_labels[c]), v);
    }
  out += "</g>\n<g class=\"column-labels\">\n";
  for (std::size_t c = 0; c < cols; ++c) {
    const double x = left + cell * (static_cast<double>(c) + 0.5);
    out += fmt::format("<text transform=\"translate({:.1f} {:.1f}) rotate(-60)\">{}</text>\n", x + 4, top - 6,
                       escape(map.column_labels[c]));
  }
  out += "</g>\n<g class=\"row-labels\">\n";
  for (std::size_t r = 0; r < rows; ++r)
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 6,
                       top + cell * (static_cast<double>(r) + 0.5) + 4, escape(map.row_labels[r]));
  out += "</g>\n";
  if (!map.row_axis.empty())
    out += fmt::format("<text class=\"y-label\" transform=\"translate(12 {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                       top + cell * static_cast<double>(rows) / 2, escape(map.row_axis));
  if (!map.column_axis.empty())
    out += fmt::format("<text class=\"x-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                       left + cell * static_cast<double>(cols) / 2, top + cell * static_cast<double>(rows) + 24,
                       escape(map.column_axis));
  // The colour scale: a column of swatches from hi (top) to lo (bottom).
  const double sx = left + cell * static_cast<double>(cols) + 24, sy = top, sh = 160;
  out += "<g class=\"colour-scale\">\n";
  constexpr int kSteps = 20;
  for (int i = 0; i < kSteps; ++i) {
    const double v = *m.hi - (*m.hi - *m.lo) * (i + 0.5) / kSteps;
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"14\" height=\"{:.2f}\" fill=\"{}\"/>\n", sx,
                       sy + sh * i / kSteps, sh / kSteps + 0.5, colour(m, v));
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", sx + 20, sy + 8, number(*m.hi));
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", sx + 20, sy + sh, number(*m.lo));
  out += "</g>\n";
  return {out, W, H};
}
}  // namespace

std::string heatmap(const Heatmap& map) {
  const Panel panel = heatmap_panel(map);
  return header(panel.width, panel.height) + panel.body + "</svg>\n";
}

std::string heatmaps_side_by_side(const std::vector<Heatmap>& maps, int gap) {
  if (maps.empty()) fail("svg::heatmaps_side_by_side: no heatmaps to draw");
  std::vector<Panel> panels;
  int width = 0, height = 0;
  for (const Heatmap& map : maps) {
    panels.push_back(heatmap_panel(map));
    width += panels.back().width + (panels.size() > 1 ? gap : 0);
    height = std::max(height, panels.back().height);
  }
  std::string out = header(width, height);
  int x = 0;
  for (const Panel& panel : panels) {
    out += fmt::format("<g class=\"panel\" transform=\"translate({} 0)\">\n", x) + panel.body + "</g>\n";
    x += panel.width + gap;
  }
  return out + "</svg>\n";
}

}  // namespace attend::tools::svg
