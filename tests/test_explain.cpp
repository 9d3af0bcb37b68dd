// attend explain: the text it prints is checked number by number. Every gradient
// row agrees with its finite difference (recomputed from the printed numbers, not
// only from the ✓), the printed weights α sum to 1, and the printed ∂L/∂e_j and
// ∂L/∂z_k follow from the printed α, ∂L/∂α and p by their formulas.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tools/explain.hpp"

namespace {

using attend::tools::explain_attention;
using attend::tools::ExplainOptions;
using attend::tools::ExplainResult;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// A row of the backward table: "∂L/∂α_2   +0.1  +0.1  2.0e-11  ✓  formula...".
struct Row {
  std::string name;
  double analytic = 0, numeric = 0;
  std::string mark;
};

std::vector<Row> gradient_rows(const std::string& text) {
  std::vector<Row> rows;
  for (const std::string& line : lines_of(text)) {
    std::istringstream in(line);
    Row r;
    double diff = 0;
    if (!(in >> r.name) || !starts_with(r.name, "∂L/∂")) continue;
    REQUIRE_MESSAGE(static_cast<bool>(in >> r.analytic >> r.numeric >> diff >> r.mark), line);
    rows.push_back(r);
  }
  return rows;
}

const Row& find_row(const std::vector<Row>& rows, const std::string& name) {
  for (const Row& r : rows)
    if (r.name == name) return r;
  FAIL("no row " << name);
  return rows.front();
}

// The n lines of a forward table after its header (the line containing `header`):
// "j  word  x  y" -> {x, y} for each line.
std::vector<std::pair<double, double>> table(const std::string& text, const std::string& header, int n) {
  const std::vector<std::string> lines = lines_of(text);
  for (std::size_t k = 0; k < lines.size(); ++k) {
    if (lines[k].find(header) == std::string::npos) continue;
    std::vector<std::pair<double, double>> out;
    for (int j = 1; j <= n; ++j) {
      REQUIRE(k + j < lines.size());
      std::istringstream in(lines[k + j]);
      int index = 0;
      std::string word;
      double x = 0, y = 0;
      REQUIRE_MESSAGE(static_cast<bool>(in >> index >> word >> x >> y), lines[k + j]);
      out.emplace_back(x, y);
    }
    return out;
  }
  FAIL("no table with header " << header);
  return {};
}

void check_explain(const std::string& attention, std::uint64_t seed, int expected_rows) {
  CAPTURE(attention);
  CAPTURE(seed);
  const ExplainResult r = explain_attention({attention, seed});
  CHECK(r.failed == 0);
  CHECK(r.text.find("✗") == std::string::npos);

  // Every gradient row: ✓, and the printed numbers really agree (8 significant digits printed).
  const std::vector<Row> rows = gradient_rows(r.text);
  CHECK(static_cast<int>(rows.size()) == expected_rows);
  CHECK(r.checked == expected_rows + 2);  // plus the two fused-against-composed checks
  for (const Row& row : rows) {
    CAPTURE(row.name);
    CHECK(row.mark == "✓");
    CHECK(std::abs(row.analytic - row.numeric) <= 2e-9 + 2e-6 * std::abs(row.numeric));
  }

  // The weights: a distribution over the 3 source tokens.
  const auto scores = table(r.text, "α_j", 3);
  double sum = 0;
  for (const auto& [e, alpha] : scores) {
    CHECK(alpha > 0);
    CHECK(alpha < 1);
    sum += alpha;
  }
  CHECK(std::abs(sum - 1) <= 3e-8);  // three values printed to 8 decimals

  // ∂L/∂e_j = α_j (∂L/∂α_j − Σ_k α_k ∂L/∂α_k), from the printed numbers.
  double weighted = 0, dalpha_scale = 0;
  for (int j = 0; j < 3; ++j) {
    const double dalpha = find_row(rows, "∂L/∂α_" + std::to_string(j + 1)).analytic;
    weighted += scores[j].second * dalpha;
    dalpha_scale = std::max(dalpha_scale, std::abs(dalpha));
  }
  double de_sum = 0, de_scale = 0;
  for (int j = 0; j < 3; ++j) {
    const double dalpha = find_row(rows, "∂L/∂α_" + std::to_string(j + 1)).analytic;
    const double de = find_row(rows, "∂L/∂e_" + std::to_string(j + 1)).analytic;
    CHECK(std::abs(de - scores[j].second * (dalpha - weighted)) <= 1e-12 + 1e-6 * dalpha_scale);
    de_sum += de;
    de_scale = std::max(de_scale, std::abs(de));
  }
  CHECK(de_scale > 0);
  // The softmax's gradient sums to 0 over the scores (shifting every e_j changes nothing).
  CHECK(std::abs(de_sum) <= 1e-12 + 1e-6 * de_scale);

  // ∂L/∂z_k = p_k − [k = y] with y = "chat" (id 5), from the printed distribution.
  const auto logits = table(r.text, "p_k", 7);
  double p_sum = 0;
  for (int k = 0; k < 7; ++k) {
    const double p = logits[k].second;
    p_sum += p;
    CHECK(std::abs(find_row(rows, "∂L/∂z_" + std::to_string(k)).analytic - (p - (k == 5 ? 1.0 : 0.0))) <= 2e-8);
  }
  CHECK(std::abs(p_sum - 1) <= 5e-8);

  // The graph of the step as training records it: the fused attention op, the
  // attentional layer, the projection and the loss; no taps.
  for (const char* op : {"digraph", attention == "additive" ? "additive_attention" : "dot_attention", "concat",
                         "tanh", "linear", "cross_entropy"})
    CHECK_MESSAGE(r.dot.find(op) != std::string::npos, op);
  CHECK(r.dot.find("tap") == std::string::npos);
}

}  // namespace

// Rows: 7 logits + 4 h~ + 4 c + 3 α + 3 e + 4 s + 12 h_j, then the attention's
// parameters: W_q, W_k (16 each), b, v (4 each) for additive; W_Q, W_K for dot.
TEST_CASE("explain: additive attention, every row checked from the printed numbers") {
  check_explain("additive", 1, 37 + 40);
}

TEST_CASE("explain: dot attention, every row checked from the printed numbers") {
  check_explain("dot", 1, 37 + 32);
}

TEST_CASE("explain: another seed draws other numbers, which agree too") {
  const ExplainResult one = explain_attention({"additive", 1});
  const ExplainResult two = explain_attention({"additive", 2});
  CHECK(one.text != two.text);
  CHECK(two.failed == 0);
  CHECK(explain_attention({"additive", 1}).text == one.text);  // the same seed, the same numbers
}

TEST_CASE("explain: only additive and dot attention") {
  CHECK_THROWS_WITH_AS(explain_attention({"general", 1}), "explain: the attention must be additive or dot, got 'general'",
                       attend::Error);
}
