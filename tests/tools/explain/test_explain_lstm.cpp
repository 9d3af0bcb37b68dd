// attend explain --lstm: backprop through time in an LSTM cell. Every gradient row
// agrees with its finite difference from the printed numbers, and the rows are
// redone by hand from the printed values: ∂L/∂h_t from r_t and the next step's
// ∂L/∂a, both paths of ∂L/∂c_t and their sum, each gate, each pre-activation,
// and the parameter gradients summed over the steps. The command line (--json,
// --graph, the flags --lstm excludes) is checked too.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/io/file_io.hpp"
#include "tests/support/scratch.hpp"
#include "tests/support/xml_check.hpp"
#include "tools/cli/commands.hpp"
#include "tools/explain/explain.hpp"

namespace {

using attend::tools::explain_lstm;
using attend::tools::ExplainResult;
namespace fs = std::filesystem;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The gradient rows by name ("∂L/∂c_2 h path[1]"): analytic and numeric.
std::map<std::string, std::pair<double, double>> gradient_rows(const std::string& text) {
  std::map<std::string, std::pair<double, double>> rows;
  for (const std::string& line : lines_of(text)) {
    if (line.rfind("  ∂L/∂", 0) != 0) continue;
    const std::size_t mark = line.find("  ✓  ");
    REQUIRE_MESSAGE(mark != std::string::npos, line);  // every row agrees
    std::vector<std::string> words;
    std::istringstream in(line.substr(0, mark));
    for (std::string w; in >> w;) words.push_back(w);
    REQUIRE(words.size() >= 4);
    std::string name;
    for (std::size_t k = 0; k + 3 < words.size(); ++k) name += (k ? " " : "") + words[k];
    rows[name] = {std::stod(words[words.size() - 3]), std::stod(words[words.size() - 2])};
  }
  return rows;
}

// The numbers printed after `label` at the start of a line (after the indent).
std::vector<double> printed(const std::string& text, const std::string& label) {
  for (const std::string& line : lines_of(text)) {
    const std::size_t start = line.find_first_not_of(' ');
    if (start == std::string::npos || line.compare(start, label.size(), label) != 0) continue;
    std::istringstream in(line.substr(start + label.size()));
    std::vector<double> out;
    for (double x; in >> x;) out.push_back(x);
    if (!out.empty()) return out;
  }
  FAIL("no line starting with " << label);
  return {};
}

bool close(double x, double y, double scale) { return std::abs(x - y) <= 1e-12 + 1e-7 * scale; }

}  // namespace

TEST_CASE("explain --lstm: every row agrees with its finite difference and is redone by hand") {
  const ExplainResult r = explain_lstm({"additive", 1, false});
  CHECK(r.failed == 0);
  CHECK(r.text.find("✗") == std::string::npos);
  auto rows = gradient_rows(r.text);
  // Per step: h 3, h path 3, c path 3, c 3, gates 4 x 3, pre-activations 12; then
  // h_0, c_0 (3 each), W_ih 24, W_hh 36, b 12.
  CHECK(rows.size() == 3 * 36 + 6 + 24 + 36 + 12);
  CHECK(r.checked == static_cast<int>(rows.size()) + 1);  // and the fused-against-composed check
  for (const auto& [name, v] : rows) {
    CAPTURE(name);
    CHECK(std::abs(v.first - v.second) <= 2e-9 + 2e-6 * std::abs(v.second));
  }
  auto d = [&](const std::string& name) {
    REQUIRE_MESSAGE(rows.count(name) == 1, name);
    return rows[name].first;
  };
  auto at = [&](const std::string& label, int k) { return printed(r.text, label).at(static_cast<std::size_t>(k)); };

  for (int t = 3; t >= 1; --t) {
    CAPTURE(t);
    for (int k = 1; k <= 3; ++k) {
      CAPTURE(k);
      const std::string K = fmt::format("[{}]", k);
      // ∂L/∂h_t = r_t (+ W_hhᵀ ∂L/∂a_(t+1))
      double want = at(fmt::format("r[{},·]", t), k - 1), scale = std::abs(want);
      if (t < 3)
        for (int m = 1; m <= 12; ++m) {
          const double term = at(fmt::format("W_hh[{},·]", m), k - 1) * d(fmt::format("∂L/∂a_{}[{}]", t + 1, m));
          want += term, scale += std::abs(term);
        }
      const double dh = d(fmt::format("∂L/∂h_{}", t) + K);
      CHECK(close(dh, want, scale));
      // The h path: ∂L/∂h_t o_t (1 − tanh² c_t); the c path: ∂L/∂c_(t+1) f_(t+1), none after the last step.
      const double o = at(fmt::format("o_{}", t), k - 1), tc = at(fmt::format("tanh c_{}", t), k - 1);
      const double h_path = d(fmt::format("∂L/∂c_{} h path", t) + K), c_path = d(fmt::format("∂L/∂c_{} c path", t) + K);
      CHECK(close(h_path, dh * o * (1 - tc * tc), std::abs(dh)));
      if (t == 3) CHECK(c_path == 0);
      else CHECK(close(c_path, d(fmt::format("∂L/∂c_{}", t + 1) + K) * at(fmt::format("f_{}", t + 1), k - 1), 1));
      const double dc = d(fmt::format("∂L/∂c_{}", t) + K);
      CHECK(close(dc, h_path + c_path, std::abs(h_path) + std::abs(c_path)));
      // The gates and their pre-activations.
      const double i = at(fmt::format("i_{}", t), k - 1), f = at(fmt::format("f_{}", t), k - 1);
      const double g = at(fmt::format("g_{}", t), k - 1);
      const double c_prev = t == 1 ? at("c_0", k - 1) : at(fmt::format("c_{}", t - 1), k - 1);
      CHECK(close(d(fmt::format("∂L/∂i_{}", t) + K), dc * g, std::abs(dc)));
      CHECK(close(d(fmt::format("∂L/∂f_{}", t) + K), dc * c_prev, std::abs(dc)));
      CHECK(close(d(fmt::format("∂L/∂g_{}", t) + K), dc * i, std::abs(dc)));
      CHECK(close(d(fmt::format("∂L/∂o_{}", t) + K), dh * tc, std::abs(dh)));
      CHECK(close(d(fmt::format("∂L/∂a_{}[{}]", t, k)), d(fmt::format("∂L/∂i_{}", t) + K) * i * (1 - i), 1));
      CHECK(close(d(fmt::format("∂L/∂a_{}[{}]", t, 3 + k)), d(fmt::format("∂L/∂f_{}", t) + K) * f * (1 - f), 1));
      CHECK(close(d(fmt::format("∂L/∂a_{}[{}]", t, 6 + k)), d(fmt::format("∂L/∂g_{}", t) + K) * (1 - g * g), 1));
      CHECK(close(d(fmt::format("∂L/∂a_{}[{}]", t, 9 + k)), d(fmt::format("∂L/∂o_{}", t) + K) * o * (1 - o), 1));
    }
  }
  // The initial state, and the parameters summed over the steps.
  for (int k = 1; k <= 3; ++k)
    CHECK(close(d(fmt::format("∂L/∂c_0[{}]", k)), d(fmt::format("∂L/∂c_1[{}]", k)) * at("f_1", k - 1), 1));
  for (int m = 1; m <= 12; ++m) {
    double db = 0;
    for (int t = 1; t <= 3; ++t) db += d(fmt::format("∂L/∂a_{}[{}]", t, m));
    CHECK(close(d(fmt::format("∂L/∂b[{}]", m)), db, 1));
    for (int i = 1; i <= 2; ++i) {
      double dw = 0;
      for (int t = 1; t <= 3; ++t) dw += d(fmt::format("∂L/∂a_{}[{}]", t, m)) * at(fmt::format("x[{},·]", t), i - 1);
      CHECK(close(d(fmt::format("∂L/∂W_ih[{},{}]", m, i)), dw, 1));
    }
  }
  CHECK(r.text.find("✓ the fused op (layers/lstm/lstm_cell.cpp: lstm_cell) gives the composed") != std::string::npos);

  // --json: every row's number at full precision.
  const nlohmann::json json = nlohmann::json::parse(r.json);
  CHECK(json["kind"] == "lstm");
  std::size_t numbers = 0;
  for (const auto& [name, g] : json["gradients"].items()) numbers += g["analytic"].size();
  CHECK(numbers == rows.size());
  const auto c_path = json["gradients"]["c_c_path_2"]["analytic"].get<std::vector<double>>();
  CHECK(close(c_path.at(0), d("∂L/∂c_2 c path[1]"), std::abs(c_path[0])));
  CHECK(json["values"]["W_hh"]["shape"] == std::vector<int>{12, 3});
}

TEST_CASE("explain --lstm: another seed, other numbers, all agreeing") {
  const ExplainResult one = explain_lstm({"additive", 1, false}), two = explain_lstm({"additive", 5, false});
  CHECK(one.text != two.text);
  CHECK(two.failed == 0);
  CHECK(explain_lstm({"additive", 1, false}).json == one.json);
}

namespace {

// Runs `attend explain ARGS...` as main() would (its text goes to stdout).
void run_explain(std::vector<std::string> args) {
  CLI::App app;
  attend::tools::add_explain_command(app);
  args.insert(args.begin(), {"attend", "explain"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  app.parse(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("attend explain writes --json and --graph, and --lstm refuses the attention flags and --dot") {
  const attend::testing::Scratch scratch("attend-test-explain");
  const fs::path dir = scratch.dir;
  run_explain({"--attention", "general", "--padded", "--json", (dir / "step.json").string(), "--graph",
               (dir / "step.svg").string()});
  const nlohmann::json step = nlohmann::json::parse(attend::read_file((dir / "step.json").string()));
  CHECK(step["attention"] == "general");
  CHECK(step["padded"] == true);
  attend::testing::XmlSummary svg = attend::testing::check_xml(attend::read_file((dir / "step.svg").string()));
  INFO(svg.error);
  CHECK(svg.ok);
  CHECK(svg.classes["panel"] == 2);
  run_explain({"--lstm", "--seed", "2", "--json", (dir / "lstm.json").string()});
  CHECK(nlohmann::json::parse(attend::read_file((dir / "lstm.json").string()))["kind"] == "lstm");
  CHECK_THROWS_AS(run_explain({"--lstm", "--attention", "dot"}), CLI::ParseError);
  CHECK_THROWS_AS(run_explain({"--lstm", "--padded"}), CLI::ParseError);
  CHECK_THROWS_AS(run_explain({"--lstm", "--dot", (dir / "x.dot").string()}), CLI::ParseError);
  run_explain({"--lstm", "--graph", (dir / "lstm.svg").string()});
  const std::string lstm_svg = attend::read_file((dir / "lstm.svg").string());
  attend::testing::XmlSummary lstm = attend::testing::check_xml(lstm_svg);
  INFO(lstm.error);
  CHECK(lstm.ok);
  CHECK(lstm.classes["panel"] == 2);
  int cells = 0, sigmoids = 0;
  for (const std::string& n : lstm.data_names) cells += n == "lstm_cell", sigmoids += n == "sigmoid";
  CHECK(cells == 3);         // the fused view: one op per step
  CHECK(sigmoids == 3 * 3);  // the composed view: i, f, o at each step
  for (const char* name : {"W_ih", "W_hh", "b_ih", "b_hh", "h_0", "c_0", "r_3"})
    CHECK_MESSAGE(std::find(lstm.data_names.begin(), lstm.data_names.end(), name) != lstm.data_names.end(), name);
  CHECK_THROWS_AS(run_explain({"--attention", "plain"}), CLI::ParseError);
  CHECK_FALSE(fs::exists(dir / "x.dot"));
}
