// The worked example of docs/backprop-through-attention.md (section 8) is what
// `attend explain --seed 1` prints, and docs/figures/step_graph.svg (in the
// README) is what `attend explain --seed 1 --graph` draws. Builds differ in the last bits (-O3 or -Og,
// FMA contraction or not), which moves the |Δ| column and a finite difference's
// last digit; so words are compared exactly and numbers to a tolerance that
// those differences stay far inside, and that any real change (a new number, a
// drifted digit of a value or gradient) exceeds.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "core/io/file_io.hpp"
#include "tools/explain/explain.hpp"

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The first code block after `heading`.
std::string block_after(const std::string& doc, const std::string& heading) {
  const std::size_t at = doc.find(heading);
  REQUIRE_MESSAGE(at != std::string::npos, heading);
  const std::size_t open = doc.find("```\n", at);
  REQUIRE(open != std::string::npos);
  const std::size_t close = doc.find("\n```", open + 4);
  REQUIRE(close != std::string::npos);
  return doc.substr(open + 4, close - open - 3);
}

bool as_number(const std::string& word, double& x) {
  std::size_t used = 0;
  try {
    x = std::stod(word, &used);
  } catch (...) {
    return false;
  }
  return used == word.size();
}

// One unit in the last printed digit of a number: "+1.96032717e-01" -> 1e-9.
double last_digit(const std::string& word) {
  const std::size_t dot = word.find('.'), e = word.find_first_of("eE");
  if (dot == std::string::npos) return 0;  // an integer: exact
  if (e == std::string::npos) return std::pow(10.0, -static_cast<int>(word.size() - dot - 1));  // "+0.1235" -> 1e-4
  if (e < dot) return 0;
  return std::pow(10.0, std::stoi(word.substr(e + 1)) - static_cast<int>(e - dot - 1));
}

// Equal up to one unit in the last printed digit of a value (a build may round the
// other way), and up to 1e-10 for the tiny numbers (|Δ|, max |Δ|, the last digits
// of a finite difference) that depend on rounding.
bool within(const std::string& doc_word, double x, const std::string& program_word, double y) {
  return std::abs(x - y) <= 1e-10 + std::max(last_digit(doc_word), last_digit(program_word));
}

void check_same_line(const std::string& doc_line, const std::string& program_line) {
  std::istringstream a(doc_line), b(program_line);
  std::vector<std::string> wa, wb;
  for (std::string w; a >> w;) wa.push_back(w);
  for (std::string w; b >> w;) wb.push_back(w);
  REQUIRE(wa.size() == wb.size());
  for (std::size_t k = 0; k < wa.size(); ++k) {
    double x = 0, y = 0;
    const bool nx = as_number(wa[k], x), ny = as_number(wb[k], y);
    CHECK(nx == ny);
    if (nx && ny) CHECK_MESSAGE(within(wa[k], x, wb[k], y), wa[k], " vs ", wb[k]);
    else CHECK(wa[k] == wb[k]);
  }
}

}  // namespace

TEST_CASE("docs/backprop-through-attention.md's worked example is what attend explain --seed 1 prints") {
  const std::string doc = attend::read_file(ATTEND_TEST_DATA "/../../docs/backprop-through-attention.md");
  const std::vector<std::string> expected = lines_of(block_after(doc, "## 8. Worked example: `attend explain --seed 1`"));
  const std::vector<std::string> actual = lines_of(attend::tools::explain_attention({"additive", 1, false}).text);
  CHECK(expected.size() == actual.size());
  for (std::size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
    CAPTURE(i);
    CAPTURE(expected[i]);
    CAPTURE(actual[i]);
    check_same_line(expected[i], actual[i]);
  }
}

TEST_CASE("docs/figures/step_graph.svg is what attend explain --seed 1 --graph draws") {
  const std::string figure = attend::read_file(ATTEND_TEST_DATA "/../../docs/figures/step_graph.svg");
  const std::vector<std::string> expected = lines_of(figure);
  const std::vector<std::string> actual = lines_of(attend::tools::explain_attention({"additive", 1, false}).graph);
  CHECK(expected.size() == actual.size());
  for (std::size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
    CAPTURE(i);
    check_same_line(expected[i], actual[i]);
  }
}

TEST_CASE("the comparison catches a drifted digit and lets rounding noise pass") {
  // The test above must be able to fail: two units in the last digit of a value are a drift.
  CHECK(last_digit("+1.96032717e-01") == doctest::Approx(1e-9));
  CHECK(last_digit("7.1e-12") == doctest::Approx(1e-13));
  CHECK(last_digit("79") == 0);
  CHECK(last_digit("+0.1235") == doctest::Approx(1e-4));
  CHECK(within("+1.96032717e-01", 1.96032717e-01, "+1.96032718e-01", 1.96032718e-01));
  CHECK_FALSE(within("+1.96032717e-01", 1.96032717e-01, "+1.96032719e-01", 1.96032719e-01));
  CHECK_FALSE(within("-8.84993924e-01", -8.84993924e-01, "+8.84993924e-01", 8.84993924e-01));
  CHECK_FALSE(within("79", 79, "80", 80));
  CHECK(within("7.1e-12", 7.1e-12, "3.5e-11", 3.5e-11));  // a rounding-level |Δ| may move
  double x = 0;
  CHECK_FALSE(as_number("∂L/∂z_0", x));
  CHECK(as_number("+4.49373649e-05", x));
}
