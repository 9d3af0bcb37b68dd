// attend explain: the text it prints is checked number by number. Every gradient
// row agrees with its finite difference (recomputed from the printed numbers, not
// only from the ✓), the printed weights α sum to 1, and the printed ∂L/∂e_j and
// ∂L/∂z_k follow from the printed α, ∂L/∂α and p by their formulas; ∂L/∂c, ∂L/∂α
// and ∂L/∂h~ are redone by hand from the printed parameters and intermediates
// (W_c, W_out, h~, h_j), and the JSON holds every printed number.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "tools/explain/explain.hpp"

namespace {

using attend::tools::explain_attention;
using attend::tools::ExplainOptions;
using attend::tools::ExplainResult;

const char* attention_op(const std::string& attention) {
  return attention == "additive" ? "additive_attention_step" : "dot_attention_step";
}

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
    if (!starts_with(line, "  ∂L/∂")) continue;
    // The name may hold spaces ("∂L/∂c_2 h path[1]"): the three numbers and the
    // mark are the four words before the formula, found from the mark.
    std::size_t mark = line.find("  ✓  ");
    if (mark == std::string::npos) mark = line.find("  ✗  ");
    REQUIRE_MESSAGE(mark != std::string::npos, line);
    std::vector<std::string> words;
    std::istringstream in(line.substr(0, mark));
    for (std::string w; in >> w;) words.push_back(w);
    REQUIRE_MESSAGE(words.size() >= 4, line);
    Row r;
    for (std::size_t k = 0; k + 3 < words.size(); ++k) r.name += (k ? " " : "") + words[k];
    r.analytic = std::stod(words[words.size() - 3]);
    r.numeric = std::stod(words[words.size() - 2]);
    r.mark = line.substr(mark + 2, line.find(' ', mark + 2) - mark - 2);
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

// The numbers after a name at the start of a line: "  h~   +1.0e-01 ..." or
// "     W_c[2,·]  +1.0e-01 ...".
std::vector<double> printed(const std::string& text, const std::string& name) {
  for (const std::string& line : lines_of(text)) {
    std::istringstream in(line);
    std::string first;
    if (!(in >> first) || first != name) continue;
    std::vector<double> out;
    for (double x; in >> x;) out.push_back(x);
    if (!out.empty()) return out;
  }
  FAIL("no line starting with " << name);
  return {};
}

// |x - y| within what printing 9 significant digits of each term allows.
bool close(double x, double y, double scale) { return std::abs(x - y) <= 1e-12 + 1e-7 * scale; }

void check_explain(const ExplainOptions& options, int expected_rows) {
  CAPTURE(options.attention);
  CAPTURE(options.seed);
  CAPTURE(options.padded);
  const int S = options.padded ? 4 : 3;
  const ExplainResult r = explain_attention(options);
  CHECK(r.failed == 0);
  CHECK(r.text.find("✗") == std::string::npos);

  // Every gradient row: ✓, and the printed numbers really agree (9 significant digits printed).
  const std::vector<Row> rows = gradient_rows(r.text);
  CHECK(static_cast<int>(rows.size()) == expected_rows);
  CHECK(r.checked == expected_rows + 2 + (options.padded ? 1 : 0));  // the fused-against-composed checks, the padding
  for (const Row& row : rows) {
    CAPTURE(row.name);
    CHECK(row.mark == "✓");
    CHECK(std::abs(row.analytic - row.numeric) <= 2e-9 + 2e-6 * std::abs(row.numeric));
  }

  // The weights: a distribution over the real source tokens.
  const auto scores = table(r.text, "α_j", S);
  double sum = 0;
  for (int j = 0; j < 3; ++j) {
    CHECK(scores[j].second > 0);
    CHECK(scores[j].second < 1);
    sum += scores[j].second;
  }
  if (options.padded) CHECK(scores[3].second == 0);  // exactly
  CHECK(std::abs(sum - 1) <= 3e-9);  // three values printed to 9 digits

  // ∂L/∂e_j = α_j (∂L/∂α_j − Σ_k α_k ∂L/∂α_k), from the printed numbers.
  double weighted = 0, dalpha_scale = 0;
  for (int j = 0; j < S; ++j) {
    const double dalpha = find_row(rows, "∂L/∂α_" + std::to_string(j + 1)).analytic;
    weighted += scores[j].second * dalpha;
    dalpha_scale = std::max(dalpha_scale, std::abs(dalpha));
  }
  double de_sum = 0, de_scale = 0;
  for (int j = 0; j < S; ++j) {
    const double dalpha = find_row(rows, "∂L/∂α_" + std::to_string(j + 1)).analytic;
    const double de = find_row(rows, "∂L/∂e_" + std::to_string(j + 1)).analytic;
    CHECK(std::abs(de - scores[j].second * (dalpha - weighted)) <= 1e-12 + 1e-6 * dalpha_scale);
    de_sum += de;
    de_scale = std::max(de_scale, std::abs(de));
  }
  CHECK(de_scale > 0);
  // The softmax's gradient sums to 0 over the scores (shifting every e_j changes nothing).
  CHECK(std::abs(de_sum) <= 1e-12 + 1e-6 * de_scale);
  if (options.padded) {  // no gradient reaches a padded key or value; the weight itself would matter
    CHECK(find_row(rows, "∂L/∂e_4").analytic == 0);
    for (int i = 1; i <= 4; ++i) CHECK(find_row(rows, fmt::format("∂L/∂h_4[{}]", i)).analytic == 0);
    CHECK(find_row(rows, "∂L/∂α_4").analytic != 0);
    CHECK(r.text.find("✓ the padded position 4") != std::string::npos);
  }

  // ∂L/∂z_k = p_k − [k = y] with y = "chat" (id 5), from the printed distribution.
  const auto logits = table(r.text, "p_k", 7);
  double p_sum = 0;
  for (int k = 0; k < 7; ++k) {
    const double p = logits[k].second;
    p_sum += p;
    CHECK(std::abs(find_row(rows, "∂L/∂z_" + std::to_string(k)).analytic - (p - (k == 5 ? 1.0 : 0.0))) <= 2e-9);
  }
  CHECK(std::abs(p_sum - 1) <= 5e-9);

  // Redone by hand from the printed parameters and intermediates.
  const std::vector<double> ht = printed(r.text, "h~");
  REQUIRE(ht.size() == 4);
  for (int i = 0; i < 4; ++i) {  // ∂L/∂h~_i = Σ_k W_out[k,i] ∂L/∂z_k
    double want = 0, scale = 0;
    for (int k = 0; k < 7; ++k) {
      const double term = printed(r.text, fmt::format("W_out[{},·]", k + 1))[i] *
                          find_row(rows, "∂L/∂z_" + std::to_string(k)).analytic;
      want += term, scale += std::abs(term);
    }
    CHECK(close(find_row(rows, fmt::format("∂L/∂h~_{}", i + 1)).analytic, want, scale));
  }
  std::vector<double> dc(4);
  for (int i = 0; i < 4; ++i) {  // ∂L/∂c_i = Σ_m W_c[m,4+i] (1 − h~_m²) ∂L/∂h~_m
    double want = 0, scale = 0;
    for (int m = 0; m < 4; ++m) {
      const double term = printed(r.text, fmt::format("W_c[{},·]", m + 1))[4 + i] * (1 - ht[m] * ht[m]) *
                          find_row(rows, fmt::format("∂L/∂h~_{}", m + 1)).analytic;
      want += term, scale += std::abs(term);
    }
    dc[i] = find_row(rows, fmt::format("∂L/∂c_{}", i + 1)).analytic;
    CHECK(close(dc[i], want, scale));
  }
  for (int j = 0; j < S; ++j) {  // ∂L/∂α_j = ∂L/∂c · h_j, h_j from the printed table of states
    const char* const words[4] = {"the", "cat", "sleeps", "<pad>"};
    std::vector<double> h;
    for (const std::string& line : lines_of(r.text)) {
      std::istringstream in(line);
      int index = 0;
      std::string word;
      if (in >> index >> word && index == j + 1 && word == words[j]) {
        for (double x; in >> x;) h.push_back(x);
        if (h.size() == 4) break;
        h.clear();
      }
    }
    REQUIRE(h.size() == 4);
    double want = 0, scale = 0;
    for (int i = 0; i < 4; ++i) want += dc[i] * h[i], scale += std::abs(dc[i] * h[i]);
    CHECK(close(find_row(rows, "∂L/∂α_" + std::to_string(j + 1)).analytic, want, scale));
  }

  // --json: every gradient row and every printed parameter, at full precision.
  const nlohmann::json json = nlohmann::json::parse(r.json);
  std::size_t numbers = 0;
  for (const auto& [name, g] : json["gradients"].items()) {
    CHECK(g["analytic"].size() == g["numeric"].size());
    numbers += g["analytic"].size();
  }
  CHECK(numbers == rows.size());
  const auto dz = json["gradients"]["z"]["analytic"].get<std::vector<double>>();
  for (int k = 0; k < 7; ++k)
    CHECK(close(dz[k], find_row(rows, "∂L/∂z_" + std::to_string(k)).analytic, std::abs(dz[k])));
  const auto W_c = json["values"]["W_c"]["data"].get<std::vector<double>>();
  REQUIRE(W_c.size() == 32);
  for (int m = 0; m < 4; ++m) {
    const std::vector<double> row = printed(r.text, fmt::format("W_c[{},·]", m + 1));
    for (int i = 0; i < 8; ++i) CHECK(close(W_c[m * 8 + i], row[i], std::abs(row[i])));
  }
  CHECK(json["values"]["H"]["shape"] == std::vector<int>{S, 4});
  CHECK(json["loss"].get<double>() > 0);

  // The graph of the step as training records it: the fused attention op, the
  // attentional layer, the projection and the loss; no taps; parameters named.
  for (const char* op : {"digraph", attention_op(options.attention), "concat", "tanh", "linear", "cross_entropy",
                         "W_c\\n[4, 8]", "b_out\\n[7]", "s\\n[1, 4]"})
    CHECK_MESSAGE(r.dot.find(op) != std::string::npos, op);
  CHECK(r.dot.find("tap") == std::string::npos);
  CHECK(r.dot.find("\"leaf\\n") == std::string::npos);  // every leaf has its name
}

}  // namespace

// Rows: 7 logits + 4 h~ + 4 c + 3 α + 3 e + 4 s + 12 h_j, then the attention's
// parameters: W_q, W_k (16 each), b, v (4 each) for additive; W_Q, W_K for dot;
// W for general. Padding adds a 4th α, e and h_j: 1 + 1 + 4 rows.
TEST_CASE("explain: additive attention, every row checked from the printed numbers") {
  check_explain({"additive", 1, false}, 37 + 40);
}

TEST_CASE("explain: dot attention, every row checked from the printed numbers") {
  check_explain({"dot", 1, false}, 37 + 32);
}

TEST_CASE("explain: general attention, every row checked from the printed numbers") {
  check_explain({"general", 1, false}, 37 + 16);
}

TEST_CASE("explain --padded: the padded position's weight and gradients are exactly 0") {
  check_explain({"additive", 1, true}, 43 + 40);
  check_explain({"dot", 3, true}, 43 + 32);
  check_explain({"general", 2, true}, 43 + 16);
}

TEST_CASE("explain: another seed draws other numbers, which agree too") {
  const ExplainResult one = explain_attention({"additive", 1, false});
  const ExplainResult two = explain_attention({"additive", 2, false});
  CHECK(one.text != two.text);
  CHECK(two.failed == 0);
  CHECK(explain_attention({"additive", 1, false}).text == one.text);  // the same seed, the same numbers
  CHECK(explain_attention({"additive", 1, false}).json == one.json);
}

TEST_CASE("explain: only additive, dot and general attention") {
  CHECK_THROWS_WITH_AS(explain_attention({"plain", 1, false}),
                       "explain: the attention must be additive, dot or general, got 'plain'", attend::Error);
}
