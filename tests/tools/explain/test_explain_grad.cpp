// attend translate --explain-grad, end to end: a small model is written to a
// temporary directory, the real command runs on it, and every number and glyph
// it prints (and every cell of the SVG it writes) is checked against
// attention_gradients run independently on the same pair.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/limits.hpp"
#include "layers/serialize.hpp"
#include "models/eval/evaluation.hpp"
#include "models/model_dir.hpp"
#include "models/data/toy_language.hpp"
#include "tests/support/translate_cli.hpp"
#include "tests/support/xml_check.hpp"
#include "tools/cli/commands.hpp"

using namespace attend;
using attend::testing::lines_of;
using attend::testing::run_translate;
using attend::testing::Scratch;
using attend::testing::words_of;
using attend::testing::write_model;
namespace fs = std::filesystem;

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

double number_after(const std::string& line, const std::string& marker) {
  const std::size_t at = line.find(marker);
  REQUIRE_MESSAGE(at != std::string::npos, marker, " in: ", line);
  return std::stod(line.substr(at + marker.size()));
}

// The printed lines of input line `number`: from "line N: " up to the next one.
std::vector<std::string> block_of(const std::vector<std::string>& lines, int number) {
  std::vector<std::string> block;
  bool inside = false;
  for (const std::string& l : lines) {
    if (starts_with(l, "line ")) inside = starts_with(l, fmt::format("line {}: ", number));
    if (inside) block.push_back(l);
  }
  return block;
}

// The ASCII glyph of one dL/dalpha value, by the rule --help and the legend state.
std::string expected_glyph(double v, double scale) {
  const int digit = std::min(9, static_cast<int>(std::abs(v) / scale * 10.0));
  if (digit == 0) return "0";
  return fmt::format("{}{}", v < 0 ? "+" : "-", digit);
}

// Checks one explained line against attention_gradients' own numbers.
void check_block(const std::vector<std::string>& block, const AttentionGradients& g) {
  REQUIRE(!block.empty());
  const std::size_t T = g.target_tokens.size(), S = g.source_tokens.size();
  double loss = NAN;
  std::size_t legend = block.size();
  for (std::size_t i = 0; i < block.size(); ++i) {
    if (starts_with(block[i], "  loss: ")) loss = number_after(block[i], "loss: ");
    if (starts_with(block[i], "+ wanted up")) legend = i;
  }
  CHECK(loss == doctest::Approx(g.loss).epsilon(1e-3));
  REQUIRE_MESSAGE(legend < block.size(), "no legend line");
  double scale = 0;
  for (const auto& row : g.dalpha)
    for (double v : row) scale = std::max(scale, std::abs(v));
  REQUIRE(scale > 0);  // an untrained model: the loss pushes some weight
  CHECK(number_after(block[legend], "k/10 of ") == doctest::Approx(scale).epsilon(1e-2));
  // The T lines above the legend: label, S alpha digits, label, S signed cells.
  REQUIRE(legend >= T);
  for (std::size_t t = 0; t < T; ++t) {
    const std::vector<std::string> w = words_of(block[legend - T + t]);
    CAPTURE(block[legend - T + t]);
    REQUIRE(w.size() == 2 + 2 * S);
    CHECK(w[0] == g.target_tokens[t]);
    CHECK(w[S + 1] == g.target_tokens[t]);
    for (std::size_t j = 0; j < S; ++j) {
      CHECK(w[1 + j] == std::to_string(std::min(9, static_cast<int>(g.alpha[t][j] * 10.0))));
      CHECK(w[S + 2 + j] == expected_glyph(g.dalpha[t][j], scale));
    }
  }
  // The strongest want up is the most negative gradient.
  double lowest = 0;
  for (const auto& row : g.dalpha)
    for (double v : row) lowest = std::min(lowest, v);
  for (const std::string& l : block)
    if (starts_with(l, "  wanted up most:")) {
      if (lowest < 0) CHECK(number_after(l, "dL/dalpha = ") == doctest::Approx(lowest).epsilon(1e-3));
      else CHECK(l.find("none") != std::string::npos);
    }
}

// Every cell's value from the tooltips "<title>row / column: value</title>", in order.
std::vector<double> cell_values(const std::string& svg) {
  std::vector<double> values;
  for (std::size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at + 1)) {
    const std::size_t end = svg.find("</title>", at);
    const std::string title = svg.substr(at, end - at);
    values.push_back(std::stod(title.substr(title.rfind(": ") + 2)));
  }
  return values;
}

void check_svg(const std::string& path, const AttentionGradients& g) {
  REQUIRE_MESSAGE(fs::exists(path), path);
  const std::string text = read_file(path);
  testing::XmlSummary s = testing::check_xml(text);
  INFO(s.error);
  REQUIRE(s.ok);
  CHECK(s.classes["panel"] == 2);
  const std::size_t T = g.target_tokens.size(), S = g.source_tokens.size();
  REQUIRE(s.classes["cell"] == static_cast<int>(2 * T * S));
  const std::vector<double> values = cell_values(text);
  REQUIRE(values.size() == 2 * T * S);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < S; ++j) {
      CHECK(values[t * S + j] == doctest::Approx(g.alpha[t][j]).epsilon(1e-3));
      CHECK(values[T * S + t * S + j] == doctest::Approx(g.dalpha[t][j]).epsilon(1e-3));
    }
}

}  // namespace

TEST_CASE("--explain-grad shows the alpha and dL/dalpha of attention_gradients, in text and SVG") {
  const Scratch scratch("attend-test-explain-grad");
  const std::string dir = scratch.dir.string();
  const std::string model_dir = dir + "/model";
  write_model(model_dir, AttentionKind::Additive);
  const std::string source1 = "the red car sleeps", reference1 = "la voiture rouge dort";
  const std::string source3 = "a big dog sees the cat";
  write_file_atomic(dir + "/pairs.tsv", source1 + "\t" + reference1 + "\n\n" + source3 + "\n");
  // --beam 3 changes only the translation printed: the targets stay the reference and the greedy translation.
  const std::string out = run_translate(
      {"--model", model_dir, "--explain-grad", "--ascii", "--beam", "3", "--svg", dir + "/grad", dir + "/pairs.tsv"});
  INFO(out);

  LoadedModel m = load_model_dir(model_dir);
  const std::vector<std::string> lines = lines_of(out);
  AttentionGradients g1 = attention_gradients(*m.model, tokenize(source1, m.tokenizer), tokenize(reference1, m.tokenizer),
                                              m.source_vocab, m.target_vocab);
  const std::vector<std::string> block1 = block_of(lines, 1);
  CHECK(out.find("target (the reference): " + reference1) != std::string::npos);
  check_block(block1, g1);
  check_svg(dir + "/grad_1.svg", g1);

  TextTranslation greedy = translate_text(*m.model, {source3}, m.source_vocab, m.target_vocab, m.tokenizer)[0];
  AttentionGradients g3 = attention_gradients(*m.model, tokenize(source3, m.tokenizer), greedy.output_tokens,
                                              m.source_vocab, m.target_vocab);
  CHECK(out.find("target (no reference after a tab: the model's own greedy translation): " + greedy.text) !=
        std::string::npos);
  check_block(block_of(lines, 3), g3);
  check_svg(dir + "/grad_3.svg", g3);

  CHECK(block_of(lines, 2).empty());  // the blank line is skipped, and numbering follows the input
  CHECK_FALSE(fs::exists(dir + "/grad_2.svg"));
}

TEST_CASE("--explain-grad refuses a model without attention and malformed lines") {
  const Scratch scratch("attend-test-explain-grad-errors");
  const std::string dir = scratch.dir.string();
  write_model(dir + "/none", AttentionKind::None);
  write_model(dir + "/additive", AttentionKind::Additive);
  write_file_atomic(dir + "/one.tsv", "the cat\tle chat\n");
  write_file_atomic(dir + "/two-tabs.tsv", "the cat\tle chat\textra\n");
  write_file_atomic(dir + "/no-reference.tsv", "the cat\t \n");
  CHECK_THROWS_WITH_AS(run_translate({"--model", dir + "/none", "--explain-grad", dir + "/one.tsv"}),
                       ("translate: --explain-grad needs a model with attention; " + dir + "/none has none").c_str(),
                       Error);
  CHECK_THROWS_WITH_AS(run_translate({"--model", dir + "/additive", "--explain-grad", dir + "/two-tabs.tsv"}),
                       "translate --explain-grad: line 1 has more than one tab; expected 'source<TAB>reference'", Error);
  CHECK_THROWS_AS(run_translate({"--model", dir + "/additive", "--explain-grad", dir + "/no-reference.tsv"}), Error);
  // A source and a reference whose α matrix would outgrow the decoding memory
  // limit: refused before anything is translated, naming the line.
  std::string source, reference;
  for (int i = 0; i < 8000; ++i) source += "a ";
  for (int i = 0; i < 24000; ++i) reference += "b ";
  write_file_atomic(dir + "/huge.tsv", "the cat\tle chat\n" + source + "\t" + reference + "\n");
  CHECK_THROWS_WITH_AS(run_translate({"--model", dir + "/additive", "--explain-grad", dir + "/huge.tsv"}),
                       doctest::Contains("translate --explain-grad: line 2: attention_gradients: a source of 8000 "
                                         "tokens and a target of 24000 need about"),
                       Error);
  CHECK(attention_gradients_bytes(8000, 24000) > limits::kMaxDecodeBytes);
  CHECK_NOTHROW(check_attention_gradients_memory(100, 150));
  // --svg means nothing without --explain-grad.
  CHECK_THROWS_AS(run_translate({"--model", dir + "/additive", "--svg", dir + "/x", dir + "/one.tsv"}), CLI::ParseError);
}
