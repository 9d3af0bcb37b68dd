// docs/derivatives.md, the index of every recorded op, held to the source both
// ways: every op recorded in autograd/ and layers/ has a row, every row names
// a recorded op, every file and function a row names exists, and every formula
// it writes in code type (`...`) stands in one of the row's files.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/autograd/recorded_ops.hpp"

namespace {

using attend::test::read_text;
using attend::test::source_root;

// "| `op` | forward | backward | file, file | function, function |"
struct Row {
  std::string op;
  std::vector<std::string> formulas;  // the code spans of the forward and backward cells
  std::vector<std::string> files, functions;
};

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

std::vector<std::string> split(const std::string& s, const std::string& by) {
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (std::size_t at; (at = s.find(by, from)) != std::string::npos; from = at + by.size())
    parts.push_back(trim(s.substr(from, at - from)));
  parts.push_back(trim(s.substr(from)));
  return parts;
}

// Runs of whitespace as one space: a formula may wrap differently in a comment.
std::string squeeze(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  return out;
}

// Markdown code spans: `x`, or ``x `y` z`` around a backtick.
std::vector<std::string> code_spans(const std::string& cell) {
  static const std::regex span(R"re((`+)(.+?)\1)re");
  std::vector<std::string> spans;
  for (std::sregex_iterator it(cell.begin(), cell.end(), span), end; it != end; ++it)
    spans.push_back((*it)[1].length() > 1 ? trim((*it)[2]) : std::string((*it)[2]));
  return spans;
}

std::vector<Row> index_rows(const std::string& doc) {
  std::vector<Row> rows;
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::vector<std::string> cells = split(line.substr(2, line.size() - 4), " | ");
    Row row;
    row.op = cells[0].size() > 2 ? cells[0].substr(1, cells[0].size() - 2) : cells[0];
    if (cells.size() != 5) {
      row.files = {"(a row of " + std::to_string(cells.size()) + " cells, not 5)"};
      rows.push_back(row);
      continue;
    }
    for (int c : {1, 2})
      for (const std::string& s : code_spans(cells[c])) row.formulas.push_back(s);
    row.files = split(cells[3], ", ");
    row.functions = split(cells[4], ", ");
    rows.push_back(row);
  }
  return rows;
}

std::string joined(const std::vector<std::string>& parts, const std::string& by) {
  std::string s;
  for (const std::string& part : parts) s += (s.empty() ? "" : by) + part;
  return s;
}

// What is wrong with the index `doc` against the source, one line each.
std::vector<std::string> index_problems(const std::string& doc) {
  const std::set<std::string> recorded = attend::test::recorded_op_names();
  const std::vector<Row> rows = index_rows(doc);
  std::vector<std::string> problems;
  std::set<std::string> listed;
  for (const Row& row : rows) {
    listed.insert(row.op);
    if (!recorded.count(row.op)) problems.push_back(row.op + ": listed, but no code records it");
    std::vector<std::string> texts;
    for (const std::string& file : row.files) {
      if (!std::filesystem::is_regular_file(source_root() / file)) {
        problems.push_back(row.op + ": no file " + file);
        continue;
      }
      texts.push_back(squeeze(read_text(source_root() / file)));
    }
    auto anywhere = [&](const std::regex& pattern) {
      return std::any_of(texts.begin(), texts.end(), [&](const std::string& t) { return std::regex_search(t, pattern); });
    };
    for (const std::string& function : row.functions) {
      const std::string name = std::regex_replace(function, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
      if (!anywhere(std::regex("(^|[^A-Za-z0-9_:])" + name + "\\(")))
        problems.push_back(row.op + ": no function " + function + " in " + joined(row.files, ", "));
    }
    for (const std::string& formula : row.formulas) {
      const std::string f = squeeze(formula);
      if (std::none_of(texts.begin(), texts.end(), [&](const std::string& t) { return t.find(f) != std::string::npos; }))
        problems.push_back(row.op + ": the formula `" + formula + "` is in none of its files");
    }
  }
  for (const std::string& op : recorded)
    if (!listed.count(op)) problems.push_back(op + ": recorded, but not in docs/derivatives.md");
  return problems;
}

std::string index_text() { return read_text(source_root() / "docs" / "derivatives.md"); }

// The doc without the row of `op` (its first one).
std::string without_row(const std::string& doc, const std::string& op) {
  const std::size_t at = doc.find("| `" + op + "` |");
  REQUIRE(at != std::string::npos);
  return doc.substr(0, at) + doc.substr(doc.find('\n', at) + 1);
}

}  // namespace

TEST_CASE("docs/derivatives.md lists every recorded op, with files, functions and formulas that exist") {
  const std::set<std::string> recorded = attend::test::recorded_op_names();
  for (const char* sure : {"add", "sum", "concat", "lstm_sequence", "additive_attention_step", "linear_weight_grads"})
    CHECK(recorded.count(sure) == 1);  // the scan itself works
  const std::vector<std::string> problems = index_problems(index_text());
  INFO(joined(problems, "\n"));
  CHECK(problems.empty());
  CHECK(index_rows(index_text()).size() >= recorded.size());
}

TEST_CASE("the index check fails on a missing op, an op not recorded, a wrong function and a wrong formula") {
  const std::string doc = index_text();
  std::vector<std::string> p = index_problems(without_row(doc, "tanh"));
  REQUIRE(p.size() == 1);
  CHECK(p[0] == "tanh: recorded, but not in docs/derivatives.md");

  p = index_problems(doc + "| `no_such_op` | `y = x` | `dx += dy` | autograd/ops/hooks.cpp | tap |\n");
  REQUIRE(p.size() == 1);
  CHECK(p[0] == "no_such_op: listed, but no code records it");

  std::string wrong = doc;
  const std::string row = "| autograd/ops/elementwise.cpp | relu |";
  REQUIRE(wrong.find(row) != std::string::npos);
  wrong.replace(wrong.find(row), row.size(), "| autograd/ops/elementwise.cpp | rectify |");
  p = index_problems(wrong);
  REQUIRE(p.size() == 1);
  CHECK(p[0] == "relu: no function rectify in autograd/ops/elementwise.cpp");

  wrong = doc;
  const std::string formula = "`dx += dy * (1 - y*y)`";
  REQUIRE(wrong.find(formula) != std::string::npos);
  wrong.replace(wrong.find(formula), formula.size(), "`dx += dy * (1 - y)`");
  p = index_problems(wrong);
  REQUIRE(p.size() == 1);
  CHECK(p[0] == "tanh: the formula `dx += dy * (1 - y)` is in none of its files");

  wrong = doc;
  const std::string file = "| autograd/ops/hooks.cpp |";
  wrong.replace(wrong.find(file), file.size(), "| autograd/ops/taps.cpp |");
  p = index_problems(wrong);
  REQUIRE(p.size() >= 1);
  CHECK(p[0] == "tap: no file autograd/ops/taps.cpp");
}
