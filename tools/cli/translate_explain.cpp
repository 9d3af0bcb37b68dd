// attend translate --explain-grad: for sentence pairs, the attention weights
// next to the gradient of the loss at them (which alignments training would
// strengthen).
#include <algorithm>

#include <fmt/format.h>

#include "core/io/file_io.hpp"
#include "models/eval/evaluation.hpp"
#include "tools/report/report.hpp"
#include "tools/report/svg.hpp"
#include "tools/cli/terminal.hpp"
#include "tools/cli/translate.hpp"

namespace attend::tools {

namespace {

// One input line of --explain-grad: "source<TAB>reference", or a source alone.
struct ExplainPair {
  std::string source, reference;
  bool has_reference = false;
};

ExplainPair split_pair(const std::string& line, std::size_t number) {
  const std::size_t tab = line.find('\t');
  if (tab == std::string::npos) return {line, "", false};
  if (line.find('\t', tab + 1) != std::string::npos)
    fail("translate --explain-grad: line {} has more than one tab; expected 'source<TAB>reference'", number);
  ExplainPair p{line.substr(0, tab), line.substr(tab + 1), true};
  if (p.source.find_first_not_of(" \t") == std::string::npos)
    fail("translate --explain-grad: line {} has a reference but no source before the tab", number);
  if (p.reference.find_first_not_of(" \t") == std::string::npos)
    fail("translate --explain-grad: line {} has a tab but no reference after it (drop the tab to explain the "
         "model's own translation)",
         number);
  return p;
}

// The strongest want in one direction: the cell with the most negative
// (sign -1: wanted up) or most positive (+1: wanted down) gradient.
std::string strongest(const AttentionGradients& g, int sign, const char* a, const char* d) {
  std::size_t best_t = 0, best_j = 0;
  double best = 0;
  for (std::size_t t = 0; t < g.dalpha.size(); ++t)
    for (std::size_t j = 0; j < g.dalpha[t].size(); ++j)
      if (sign * g.dalpha[t][j] > best) best = sign * g.dalpha[t][j], best_t = t, best_j = j;
  if (best == 0) return "none";
  return fmt::format("{} <- {}  ({} = {:+.4g}, {} = {:.3f})", g.target_tokens[best_t], g.source_tokens[best_j], d,
                     g.dalpha[best_t][best_j], a, g.alpha[best_t][best_j]);
}

void write_explain_svg(const std::string& path, const AttentionGradients& g, const std::string& row_axis) {
  const GradientHeatmaps maps = gradient_heatmaps(g, "alpha (teacher forced)", row_axis);
  write_file_atomic(path, svg::heatmaps_side_by_side({maps.alpha, maps.dalpha}));
}

void explain_one(LoadedModel& m, const TranslateFlags& f, std::size_t number, const ExplainPair& pair,
                 const TextTranslation& translation, const TextTranslation& greedy) {
  fmt::print("line {}: {}\n", number, pair.source);
  fmt::print("  translation: {}\n", translation.text);
  if (translation.source_tokens.empty()) {
    fmt::print("  (empty source: nothing to explain)\n\n");
    return;
  }
  if (pair.has_reference) {
    std::size_t unknown = 0;
    for (const std::string& w : m.codecs.target.encode(pair.reference)) unknown += m.target_vocab.id(w) == Vocabulary::kUnk;
    fmt::print("  target (the reference): {}", pair.reference);
    if (unknown > 0) fmt::print("  ({} of its words are not in the target vocabulary: read as <unk>)", unknown);
    fmt::print("\n");
  } else {
    fmt::print("  target (no reference after a tab: the model's own greedy translation): {}\n", greedy.text);
  }
  AttentionGradients g = explained_gradients(m, greedy, pair.has_reference ? &pair.reference : nullptr);
  fmt::print("  loss: {:.4f} per token (mean cross-entropy over {} target tokens, </s> included)\n\n", g.loss,
             g.target_tokens.size());
  const char* a = f.ascii ? "alpha" : "α";
  const char* d = f.ascii ? "dL/dalpha" : "dL/dα";
  const std::string left =
      fmt::format("{} (attention)\n", a) + attention_text(g.source_tokens, g.target_tokens, g.alpha, f.ascii);
  const std::string right =
      fmt::format("{} (gradient of the loss)\n", d) + signed_text(g.source_tokens, g.target_tokens, g.dalpha, f.ascii);
  fmt::print("{}{}\n", side_by_side(left, right), signed_legend(signed_scale(g.dalpha), f.ascii));
  fmt::print("  wanted up most:   {}\n", strongest(g, -1, a, d));
  fmt::print("  wanted down most: {}\n", strongest(g, +1, a, d));
  if (!f.svg_prefix.empty()) {
    const std::string path = fmt::format("{}_{}.svg", f.svg_prefix, number);
    write_explain_svg(path, g, pair.has_reference ? "reference" : "greedy translation");
    fmt::print("  wrote {}\n", path);
  }
  fmt::print("\n");
}

}  // namespace

AttentionGradients explained_gradients(LoadedModel& m, const TextTranslation& greedy, const std::string* reference) {
  const std::vector<std::string> target = reference ? m.codecs.target.encode(*reference) : greedy.output_tokens;
  return attention_gradients(*m.model, greedy.source_tokens, target, m.source_vocab, m.target_vocab);
}

// --explain-grad: the loss of each pair is differentiated with teacher forcing
// on the reference (or, without one, on the greedy translation): beam search
// only changes the translation printed, never the target explained.
void run_explain_grad(LoadedModel& m, const TranslateFlags& f, const std::vector<std::string>& lines) {
  std::vector<ExplainPair> pairs;
  std::vector<std::string> sources;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    pairs.push_back(split_pair(lines[i], i + 1));
    sources.push_back(pairs.back().source);
    // A reference is the target to explain: bound the matrix before translating anything.
    if (!pairs.back().has_reference) continue;
    try {
      check_attention_gradients_memory(static_cast<std::int64_t>(m.codecs.source.encode(pairs.back().source).size()),
                                       static_cast<std::int64_t>(m.codecs.target.encode(pairs.back().reference).size()));
    } catch (const Error& e) {
      fail("translate --explain-grad: line {}: {}", i + 1, e.what());
    }
  }
  auto translate_all = [&](std::int64_t beam) {
    DecodeOptions options;
    options.beam = beam;
    return translate_text(*m.model, sources, m.source_vocab, m.target_vocab, m.codecs, options);
  };
  std::vector<TextTranslation> out = translate_all(f.decode.beam);
  const bool all_have_references =
      std::all_of(pairs.begin(), pairs.end(), [](const ExplainPair& p) { return p.has_reference; });
  // Without a reference the target is the greedy translation, whatever --beam says.
  std::vector<TextTranslation> greedy = f.decode.beam > 1 && !all_have_references ? translate_all(1) : out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;  // a blank line (often the last one) asks nothing
    explain_one(m, f, i + 1, pairs[i], out[i], greedy[i]);
  }
}

}  // namespace attend::tools
