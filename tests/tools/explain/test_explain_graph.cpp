// The graph pictures: recorded_graph (taps folded away, names, order), to_dot's
// named leaves, and the SVG attend draws itself for `attend explain --graph`:
// valid XML, the composed and the fused step side by side, and in the boxes the
// same values and gradients that `attend explain` prints.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "autograd/dot.hpp"
#include "autograd/ops.hpp"
#include "core/error.hpp"
#include "tests/support/xml_check.hpp"
#include "tools/explain/explain.hpp"
#include "tools/report/graph_svg.hpp"

using namespace attend;

namespace {

// The text lines of the n-th box named `name` in the SVG (n counts from 0).
std::vector<std::string> box(const std::string& svg, const std::string& name, int n = 0) {
  std::size_t at = 0;
  const std::string open = fmt::format("<g class=\"node\" data-name=\"{}\">", name);
  for (int k = 0; k <= n; ++k) {
    at = svg.find(open, k == 0 ? 0 : at + 1);
    REQUIRE_MESSAGE(at != std::string::npos, "box ", name, " #", n);
  }
  const std::size_t end = svg.find("</g>", at);
  std::vector<std::string> lines;
  for (std::size_t t = svg.find("<text", at); t < end; t = svg.find("<text", t + 1)) {
    const std::size_t from = svg.find('>', t) + 1;
    lines.push_back(svg.substr(from, svg.find("</text>", from) - from));
  }
  return lines;
}

// The numbers of the line that starts with `what` ("value", "grad"), with continuation lines.
std::vector<double> numbers(const std::vector<std::string>& lines, const std::string& what) {
  std::vector<double> out;
  bool inside = false;
  for (const std::string& l : lines) {
    if (l.rfind(what, 0) == 0) inside = true;
    else if (l.rfind("      ", 0) != 0) inside = false;  // a continuation line starts with spaces
    if (!inside) continue;
    std::istringstream in(l.substr(l.rfind(what, 0) == 0 ? what.size() : 0));
    for (double x; in >> x;) out.push_back(x);
  }
  return out;
}

// The analytic values of the rows "∂L/∂<name><k>" of explain's text, in order.
std::vector<double> rows(const std::string& text, const std::string& prefix, int n) {
  std::vector<double> out;
  for (int k = 1; k <= n; ++k) {
    const std::string label = fmt::format("  {}{} ", prefix, k);
    const std::size_t at = text.find(label);
    REQUIRE_MESSAGE(at != std::string::npos, label);
    out.push_back(std::stod(text.substr(at + label.size())));
  }
  return out;
}

void check_close(const std::vector<double>& picture, const std::vector<double>& text) {
  REQUIRE(picture.size() == text.size());
  for (std::size_t i = 0; i < text.size(); ++i)
    CHECK(std::abs(picture[i] - text[i]) <= 5.1e-4 * std::abs(text[i]));  // 4 significant digits
}

}  // namespace

TEST_CASE("recorded_graph folds taps into the node they watch, names leaves, lists inputs first") {
  Tensor w = tensor({1, 2, 3, 4, 5, 6}, {3, 2}, Float64).requires_grad_();
  Tensor x = tensor({1, 0, 0, 1, 1, 1}, {2, 3}, Float64);
  Tensor seen;
  Tensor m = tap(matmul(x, w), [&](const Tensor& dy) { seen = dy.clone(); });
  Tensor y = sum(tanh(m));
  const std::vector<GraphNode> g = recorded_graph(y, {{w, "W"}});
  REQUIRE(g.size() == 5);  // x, W, matmul, tanh, sum: no tap
  CHECK(g.back().op == "sum");
  for (std::size_t i = 0; i < g.size(); ++i)
    for (int in : g[i].inputs) CHECK(static_cast<std::size_t>(in) < i);
  int matmul = -1;
  for (std::size_t i = 0; i < g.size(); ++i)
    if (g[i].op == "matmul") matmul = static_cast<int>(i);
  REQUIRE(matmul >= 0);
  CHECK(g[matmul].taps.size() == 1);
  CHECK(g[matmul].value.to_vector() == std::vector<double>{1, 2, 9, 12});
  CHECK(g[g[matmul].inputs[1]].name == "W");
  CHECK(g[g[matmul].inputs[0]].name.empty());
  CHECK_FALSE(g[g[matmul].inputs[0]].requires_grad);
  CHECK(g[g.back().inputs[0]].op == "tanh");

  const std::string dot = to_dot(y, {{w, "W"}});
  CHECK(dot.find("label=\"W\\n[3, 2]\"") != std::string::npos);
  CHECK(dot.find("constant\\n[2, 3]") != std::string::npos);
  CHECK(dot.find("tap") == std::string::npos);
  CHECK(to_dot(y).find("leaf\\n[3, 2]") != std::string::npos);  // no name given
}

TEST_CASE("recorded_graph after backward: the released nodes keep their names and shapes, lose their inputs") {
  Tensor w = ones({2}, Float64).requires_grad_();
  Tensor y = sum(tanh(tap(w, [](const Tensor&) {})));
  y.backward();
  const std::vector<GraphNode> g = recorded_graph(y);
  REQUIRE(!g.empty());
  CHECK(g.back().op == "sum");
  CHECK(to_dot(y).find("sum") != std::string::npos);
  CHECK(testing::check_xml(tools::graph_svg({{"after backward", g, {}}})).ok);
  CHECK(recorded_graph(w).size() == 1);  // a leaf alone
}

TEST_CASE("graph_svg refuses gradients that do not match the nodes") {
  Tensor w = ones({2}, Float64).requires_grad_();
  tools::GraphPanel p{"p", recorded_graph(sum(w)), {{1.0}}};
  CHECK_THROWS_AS(tools::graph_svg({p}), Error);
}

TEST_CASE("explain --graph: composed and fused side by side, the boxes hold explain's values and gradients") {
  for (const char* attention : {"additive", "dot", "general"}) {
    CAPTURE(attention);
    const tools::ExplainResult r = tools::explain_attention({attention, 1, false});
    testing::XmlSummary s = testing::check_xml(r.graph);
    INFO(s.error);
    REQUIRE(s.ok);
    CHECK(s.classes["panel"] == 2);
    CHECK(s.classes["edge"] > 20);
    const std::string fused = std::string(attention) == "additive" ? "additive_attention_step" : "dot_attention_step";
    std::vector<std::string> names{"s", "H", "W_c", "b_c", "W_out", "b_out", "masked_softmax", fused, "cross_entropy"};
    if (std::string(attention) == "additive") names.insert(names.end(), {"W_q", "W_k", "b", "v"});
    if (std::string(attention) == "dot") names.insert(names.end(), {"W_Q", "W_K"});
    if (std::string(attention) == "general") names.push_back("W");
    for (const std::string& n : names) {
      CAPTURE(n);
      CHECK(std::find(s.data_names.begin(), s.data_names.end(), n) != s.data_names.end());
    }
    // s in the composed panel (the first box named s): its value, and ∂L/∂s as explain prints it.
    const std::vector<std::string> s_box = box(r.graph, "s");
    CHECK(s_box[0] == "s");
    CHECK(s_box[1] == "[1, 4]");
    check_close(numbers(s_box, "grad"), rows(r.text, "∂L/∂s_", 4));
    // α in the composed panel, with ∂L/∂α; the context c out of the fused op, with ∂L/∂c.
    const std::vector<std::string> alpha = box(r.graph, "masked_softmax");
    check_close(numbers(alpha, "grad"), rows(r.text, "∂L/∂α_", 3));
    const std::vector<std::string> step = box(r.graph, fused);
    CHECK(step[0].rfind(fused + " (", 0) == 0);  // the op and its named inputs
    CHECK(step[0].find("H") != std::string::npos);
    check_close(numbers(step, "grad"), rows(r.text, "∂L/∂c_", 4));
    // The loss at the top of each panel: L and ∂L/∂L = 1.
    for (int panel = 0; panel < 2; ++panel) {
      const std::vector<std::string> loss = box(r.graph, "cross_entropy", panel);
      REQUIRE(numbers(loss, "grad").size() == 1);
      CHECK(numbers(loss, "grad")[0] == 1);
    }
    // A large tensor shows its shape, not its numbers.
    const std::vector<std::string> W_c = box(r.graph, "W_c");
    CHECK(W_c == std::vector<std::string>{"W_c", "[4, 8]"});
  }
}

TEST_CASE("explain --graph --padded: the padded position's gradient is 0 in the picture too") {
  const tools::ExplainResult r = tools::explain_attention({"additive", 1, true});
  REQUIRE(testing::check_xml(r.graph).ok);
  const std::vector<double> dalpha = numbers(box(r.graph, "masked_softmax"), "value");
  REQUIRE(dalpha.size() == 4);
  CHECK(dalpha[3] == 0);
}
