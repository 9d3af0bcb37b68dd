#include "tools/report/graph_svg.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "autograd/ops.hpp"
#include "core/error.hpp"
#include "tools/report/svg.hpp"

namespace attend::tools {

namespace {

constexpr double kCharWidth = 6.6;  // monospace at font-size 11
constexpr int kLine = 14, kPad = 6, kRowGap = 36, kBoxGap = 14, kMargin = 16, kTitle = 28, kPanelGap = 40;

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
  return n;
}

std::vector<std::string> number_lines(const char* what, const std::vector<double>& v) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); i += 4) {
    std::string line = i == 0 ? fmt::format("{:<6}", what) : std::string(6, ' ');
    for (std::size_t k = i; k < std::min(v.size(), i + 4); ++k) line += fmt::format(" {:+.3e}", v[k] == 0 ? 0.0 : v[k]);
    out.push_back(line);
  }
  return out;
}

struct Box {
  double x = 0, y = 0, w = 0, h = 0;
  std::vector<std::string> lines;
};

// Lays out one panel: rank = longest path from the leaves, each leaf one row
// below its first user; rows ordered so that a box sits under its users.
struct Layout {
  std::vector<Box> boxes;
  double width = 0, height = 0;
};

Layout layout(const GraphPanel& p) {
  const std::size_t n = p.nodes.size();
  Layout out;
  out.boxes.resize(n);
  std::vector<int> rank(n, 0);
  for (std::size_t i = 0; i < n; ++i)  // inputs come first (recorded_graph's order)
    for (int in : p.nodes[i].inputs) rank[i] = std::max(rank[i], rank[in] + 1);
  std::vector<std::vector<int>> users(n);
  for (std::size_t i = 0; i < n; ++i)
    for (int in : p.nodes[i].inputs) users[in].push_back(static_cast<int>(i));
  for (std::size_t i = 0; i < n; ++i)
    if (p.nodes[i].inputs.empty() && !users[i].empty()) {
      int r = rank[users[i][0]];
      for (int u : users[i]) r = std::min(r, rank[u]);
      rank[i] = r - 1;
    }
  const int top = n == 0 ? 0 : *std::max_element(rank.begin(), rank.end());
  std::vector<std::vector<int>> rows(static_cast<std::size_t>(top) + 1);
  for (std::size_t i = 0; i < n; ++i) rows[static_cast<std::size_t>(top - rank[i])].push_back(static_cast<int>(i));
  for (std::size_t i = 0; i < n; ++i) {
    Box& b = out.boxes[i];
    b.lines = graph_node_lines(p, i);
    std::size_t chars = 0;
    for (const std::string& l : b.lines) chars = std::max(chars, code_points(l));
    b.w = static_cast<double>(chars) * kCharWidth + 2 * kPad;
    b.h = static_cast<double>(b.lines.size()) * kLine + 2 * kPad;
  }
  // Row by row from the root down: order each row by where its users sit.
  double y = kTitle, widest = 0;
  for (std::vector<int>& row : rows) {
    std::map<int, double> key;
    for (int i : row) {
      double sum = 0;
      int count = 0;
      for (int u : users[i])
        if (out.boxes[u].w > 0 && out.boxes[u].y < y) sum += out.boxes[u].x + out.boxes[u].w / 2, ++count;
      key[i] = count ? sum / count : 1e12 + i;
    }
    std::stable_sort(row.begin(), row.end(), [&](int a, int b) { return key[a] < key[b]; });
    double x = 0, height = 0;
    for (int i : row) {
      out.boxes[i].x = x, out.boxes[i].y = y;
      x += out.boxes[i].w + kBoxGap;
      height = std::max(height, out.boxes[i].h);
    }
    widest = std::max(widest, x - kBoxGap);
    y += height + kRowGap;
  }
  // Centre the rows.
  for (const std::vector<int>& row : rows) {
    if (row.empty()) continue;
    const Box& last = out.boxes[row.back()];
    const double shift = (widest - (last.x + last.w)) / 2;
    for (int i : row) out.boxes[i].x += shift;
  }
  out.width = widest;
  out.height = y - kRowGap;
  return out;
}

}  // namespace

std::vector<std::string> graph_node_lines(const GraphPanel& panel, std::size_t node) {
  const GraphNode& g = panel.nodes.at(node);
  std::vector<std::string> lines;
  if (!g.op.empty()) {
    std::string named;
    for (int in : g.inputs)
      if (!panel.nodes[in].name.empty()) named += (named.empty() ? "" : ", ") + panel.nodes[in].name;
    lines.push_back(named.empty() ? g.op : fmt::format("{} ({})", g.op, named));
  } else {
    lines.push_back(!g.name.empty() ? g.name : g.requires_grad ? "leaf" : "constant");
  }
  lines.push_back(fmt::format("{}", g.shape));
  if (g.shape.numel() <= kGraphSmall) {
    if (g.value.defined()) {
      for (std::string& l : number_lines("value", g.value.to_vector())) lines.push_back(std::move(l));
    }
    if (node < panel.grads.size() && !panel.grads[node].empty())
      for (std::string& l : number_lines("grad", panel.grads[node])) lines.push_back(std::move(l));
  }
  return lines;
}

std::string graph_svg(const std::vector<GraphPanel>& panels, const std::string& caption) {
  for (const GraphPanel& p : panels)
    if (!p.grads.empty() && p.grads.size() != p.nodes.size())
      fail("graph_svg: panel '{}' has {} nodes but {} gradients", p.title, p.nodes.size(), p.grads.size());
  std::vector<Layout> layouts;
  double width = kMargin, height = 0;
  for (const GraphPanel& p : panels) {
    layouts.push_back(layout(p));
    width += std::max(layouts.back().width, code_points(p.title) * 8.0) + kPanelGap;
    height = std::max(height, layouts.back().height);
  }
  width += kMargin - kPanelGap;
  const double caption_height = caption.empty() ? 0 : 24;
  height += 2 * kMargin + caption_height;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\" font-size=\"11\">\n"
      "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
      "orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#555\"/></marker></defs>\n"
      "<rect width=\"{0:.0f}\" height=\"{1:.0f}\" fill=\"white\"/>\n",
      width, height);
  if (!caption.empty())
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\">{}</text>\n", kMargin, kMargin + 4,
                       svg::escape(caption));
  double left = kMargin;
  for (std::size_t k = 0; k < panels.size(); ++k) {
    const GraphPanel& p = panels[k];
    const Layout& l = layouts[k];
    const double top = kMargin + caption_height;
    out += fmt::format("<g class=\"panel\" transform=\"translate({:.1f},{:.1f})\">\n", left, top);
    out += fmt::format("<text x=\"0\" y=\"14\" font-size=\"13\" font-weight=\"bold\">{}</text>\n", svg::escape(p.title));
    for (std::size_t i = 0; i < p.nodes.size(); ++i)  // edges first, under the boxes
      for (int in : p.nodes[i].inputs) {
        const Box &a = l.boxes[in], &b = l.boxes[i];
        const double x0 = a.x + a.w / 2, y0 = a.y, x1 = b.x + b.w / 2, y1 = b.y + b.h;
        out += fmt::format(
            "<path class=\"edge\" d=\"M {:.1f} {:.1f} C {:.1f} {:.1f}, {:.1f} {:.1f}, {:.1f} {:.1f}\" fill=\"none\" "
            "stroke=\"#555\" marker-end=\"url(#arrow)\"/>\n",
            x0, y0, x0, (y0 + y1) / 2, x1, (y0 + y1) / 2, x1, y1);
      }
    for (std::size_t i = 0; i < p.nodes.size(); ++i) {
      const GraphNode& g = p.nodes[i];
      const Box& b = l.boxes[i];
      const bool leaf = g.op.empty();
      const char* fill = !leaf ? "#fff4d6" : g.requires_grad ? "#dcebff" : "#f0f0f0";
      const std::string name = leaf ? (g.name.empty() ? (g.requires_grad ? "leaf" : "constant") : g.name) : g.op;
      out += fmt::format("<g class=\"node\" data-name=\"{}\">\n", svg::escape(name));
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"{}\" fill=\"{}\" "
                         "stroke=\"#333\"{}/>\n",
                         b.x, b.y, b.w, b.h, leaf ? 10 : 2, fill,
                         leaf && !g.requires_grad ? " stroke-dasharray=\"4 3\"" : (i + 1 == p.nodes.size() ? " stroke-width=\"2\"" : ""));
      for (std::size_t t = 0; t < b.lines.size(); ++t)
        out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" xml:space=\"preserve\"{}>{}</text>\n", b.x + kPad,
                           b.y + kPad + kLine * (t + 1) - 3, t == 0 ? " font-weight=\"bold\"" : "",
                           svg::escape(b.lines[t]));
      out += "</g>\n";
    }
    out += "</g>\n";
    left += std::max(l.width, code_points(p.title) * 8.0) + kPanelGap;
  }
  out += "</svg>\n";
  return out;
}

Tensor GraphTaps::operator()(const Tensor& x) {
  slots_.emplace_back();
  std::vector<double>& slot = slots_.back();
  Tensor y = tap(x, [&slot](const Tensor& dy) { slot = dy.to_vector(); });
  if (y.impl()->grad_fn) slot_of_[y.impl()->grad_fn.get()] = slots_.size() - 1;
  return y;
}

GraphPanel GraphTaps::panel(std::string title, std::vector<GraphNode> nodes) const {
  GraphPanel p{std::move(title), std::move(nodes), {}};
  for (const GraphNode& n : p.nodes) {
    std::vector<double> g;
    if (n.op.empty()) {
      if (n.requires_grad && n.value.grad().defined()) g = n.value.grad().to_vector();
    } else if (!n.taps.empty()) {
      if (auto it = slot_of_.find(n.taps.front()); it != slot_of_.end()) g = slots_[it->second];
    }
    p.grads.push_back(g);
  }
  if (!p.grads.empty()) p.grads.back() = {1.0};  // the root: ∂L/∂L
  return p;
}

}  // namespace attend::tools
