// attend translate: sentences from a file or stdin, translations to stdout;
// --show-attention draws each sentence's alignment in the terminal;
// --explain-grad shows, for sentence pairs, the attention weights next to the
// gradient of the loss at them (which alignments training would strengthen).
// attend eval: BLEU of a model on parallel text, overall and by source length.
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "core/blas.hpp"
#include "core/file_io.hpp"
#include "core/limits.hpp"
#include "models/evaluation.hpp"
#include "models/model_dir.hpp"
#include "tools/checks.hpp"
#include "tools/commands.hpp"
#include "tools/report.hpp"
#include "tools/svg.hpp"
#include "tools/terminal.hpp"

namespace attend::tools {

namespace {

struct TranslateFlags {
  std::string model = "model", input;
  std::int64_t beam = 1;
  bool show_attention = false, ascii = false, explain_grad = false;
  std::string svg_prefix;  // with explain_grad: also write PREFIX_N.svg
  int threads = 1;
};

static_assert(limits::kMaxLineBytes == 65536, "update the footer of attend translate");

// The input lines, each checked before anything is translated: an output line
// per input line is the contract, so a bad line (too long, not UTF-8) is an
// error naming it rather than a line silently skipped or garbled.

std::vector<std::string> read_lines(const std::string& path) {
  const bool from_stdin = path.empty() || path == "-";
  const std::string name = from_stdin ? "<stdin>" : path;
  std::string text;
  if (from_stdin) {
    char chunk[65536];
    for (std::size_t got; (got = std::fread(chunk, 1, sizeof chunk, stdin)) > 0;) {
      text.append(chunk, got);
      if (text.size() > limits::kMaxTextFileBytes)
        fail("translate: {}: more than {} of input (core/limits.hpp)", name, limits::bytes_text(limits::kMaxTextFileBytes));
    }
    if (std::ferror(stdin)) fail("translate: {}: cannot read", name);
  } else {
    text = limits::read_bounded_file(path, "translate");  // refuses a directory or a FIFO
  }
  std::vector<std::string> lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string& l = lines[i];
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (l.size() > static_cast<std::size_t>(limits::kMaxLineBytes))
      fail("translate: {}:{}: the line has {} bytes, more than the limit of {} (core/limits.hpp); nothing was "
           "translated",
           name, i + 1, l.size(), limits::kMaxLineBytes);
    if (!valid_utf8(l)) {
      std::size_t at = 0;
      for (char32_t c = 0; at < l.size();) {
        int length = 1;
        if (!decode_utf8(l, at, c, length)) break;
        at += static_cast<std::size_t>(length);
      }
      fail("translate: {}:{}: invalid UTF-8 at byte {} (from 0); nothing was translated", name, i + 1, at);
    }
  }
  return lines;
}

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
  std::vector<std::string> target = pair.has_reference ? m.codecs.target.encode(pair.reference) : greedy.output_tokens;
  if (pair.has_reference) {
    std::size_t unknown = 0;
    for (const std::string& w : target) unknown += m.target_vocab.id(w) == Vocabulary::kUnk;
    fmt::print("  target (the reference): {}", pair.reference);
    if (unknown > 0) fmt::print("  ({} of its words are not in the target vocabulary: read as <unk>)", unknown);
    fmt::print("\n");
  } else {
    fmt::print("  target (no reference after a tab: the model's own greedy translation): {}\n", greedy.text);
  }
  AttentionGradients g =
      attention_gradients(*m.model, translation.source_tokens, target, m.source_vocab, m.target_vocab);
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

// --explain-grad: the loss of each pair is differentiated with teacher forcing
// on the reference (or, without one, on the greedy translation): beam search
// only changes the translation printed, never the target explained.
void run_explain_grad(LoadedModel& m, const TranslateFlags& f, const std::vector<std::string>& lines) {
  std::vector<ExplainPair> pairs;
  std::vector<std::string> sources;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    pairs.push_back(split_pair(lines[i], i + 1));
    sources.push_back(pairs.back().source);
  }
  auto translate_all = [&](std::int64_t beam) {
    DecodeOptions options;
    options.beam = beam;
    return translate_text(*m.model, sources, m.source_vocab, m.target_vocab, m.codecs, options);
  };
  std::vector<TextTranslation> out = translate_all(f.beam);
  const bool all_have_references =
      std::all_of(pairs.begin(), pairs.end(), [](const ExplainPair& p) { return p.has_reference; });
  // Without a reference the target is the greedy translation, whatever --beam says.
  std::vector<TextTranslation> greedy = f.beam > 1 && !all_have_references ? translate_all(1) : out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;  // a blank line (often the last one) asks nothing
    explain_one(m, f, i + 1, pairs[i], out[i], greedy[i]);
  }
}

void run_translate(const TranslateFlags& f) {
  blas::set_num_threads(f.threads);
  LoadedModel m = load_model_dir(f.model);
  if (f.explain_grad && m.config.attention == AttentionKind::None)
    fail("--explain-grad needs a model with attention; this one has none");
  std::vector<std::string> lines = read_lines(f.input);
  if (f.explain_grad) return run_explain_grad(m, f, lines);
  DecodeOptions options;
  options.beam = f.beam;
  std::vector<TextTranslation> out =
      translate_text(*m.model, lines, m.source_vocab, m.target_vocab, m.codecs, options);
  for (const TextTranslation& t : out) {
    fmt::print("{}\n", t.text);
    if (f.show_attention && !t.attention.empty()) {
      std::vector<std::string> rows = t.output_tokens;
      rows.push_back("</s>");
      std::vector<std::vector<double>> weights = t.attention;
      weights.resize(rows.size(), std::vector<double>(t.source_tokens.size(), 0.0));
      fmt::print("{}\n", attention_text(t.source_tokens, rows, weights, f.ascii));
    }
  }
}

struct EvalFlags {
  std::string model = "model", data;
  std::int64_t beam = 1;
  int threads = 1;
};

void run_eval(const EvalFlags& f) {
  blas::set_num_threads(f.threads);
  LoadedModel m = load_model_dir(f.model);
  ParallelText text = read_tsv(f.data);
  for (const std::string& w : text.warnings) fmt::print(stderr, "warning: {}\n", w);
  if (text.pairs.empty())
    fail("eval: {} has no usable 'source<TAB>target' lines ({} skipped): nothing to score", f.data, text.skipped);
  DecodeOptions options;
  options.beam = f.beam;
  BleuReport r = evaluate_bleu_by_length(*m.model, text.pairs, m.source_vocab, m.target_vocab, m.codecs, options);
  fmt::print("BLEU {:.2f}  ({} sentences, beam {})\n", r.overall.score, text.pairs.size(), f.beam);
  fmt::print("{}\n\n", r.overall.signature);
  fmt::print("{:>12} {:>10} {:>8}\n", "source len", "sentences", "BLEU");
  for (const LengthBucket& b : r.buckets) {
    if (b.sentences == 0) fmt::print("{:>5}-{:<6} {:>10} {:>8}\n", b.lo, b.hi, 0, "-");
    else fmt::print("{:>5}-{:<6} {:>10} {:>8.2f}\n", b.lo, b.hi, b.sentences, b.bleu.score);
  }
}

}  // namespace

void add_translate_command(CLI::App& app) {
  auto f = std::make_shared<TranslateFlags>();
  auto* cmd = app.add_subcommand("translate", "Translate sentences (one per line) from FILE or stdin");
  cmd->footer(
      "Each input line gives one output line. Every line is checked before any is translated: a line that is not\n"
      "valid UTF-8, or longer than 65536 bytes, is an error naming it (FILE:LINE), and nothing is translated.\n\n"
      "--explain-grad reads 'source<TAB>reference' lines and, for each, differentiates the loss of the reference\n"
      "(teacher forcing) at the attention weights: it prints the translation, the loss per token, then alpha and\n"
      "dL/dalpha side by side. '+' marks a weight the loss wants up (dL/dalpha < 0: the loss falls if it grows),\n"
      "'-' one it wants down (dL/dalpha > 0), sized against the largest |dL/dalpha|. The weights of a row sum to 1,\n"
      "so training moves the score e_j by dL/dalpha_j minus the alpha-weighted mean of its row, not by its sign\n"
      "alone. A line without a tab is explained against the model's own greedy translation. The model needs\n"
      "attention (additive, dot or general).\n"
      "  printf 'the red car\\tla voiture rouge\\n' | attend translate --model DIR --explain-grad --svg grad");
  cmd->add_option("--model", f->model, "Model directory written by attend train")->capture_default_str();
  cmd->add_option("--beam", f->beam,
                  "Beam size (1: greedy). With --explain-grad it changes only the translation printed: the target "
                  "explained is the reference, or the greedy translation")
      ->check(check::integer(1, limits::kMaxBeam, true))
      ->capture_default_str();
  cmd->add_flag("--show-attention", f->show_attention, "Draw the attention weights under each translation");
  auto* explain = cmd->add_flag("--explain-grad", f->explain_grad,
                                "For each 'source<TAB>reference' line: alpha and dL/dalpha side by side, the loss "
                                "per token and the strongest wants (implies --show-attention)");
  cmd->add_option("--svg", f->svg_prefix,
                  "With --explain-grad: also write PREFIX_N.svg (N: the input line, from 1) with both heatmaps")
      ->type_name("PREFIX")
      ->needs(explain);
  cmd->add_flag("--ascii", f->ascii,
                "With --show-attention: digits 0-9 instead of shaded blocks; with --explain-grad: signs and digits "
                "(+3, -7) instead of signs and blocks");
  cmd->add_option("--threads", f->threads, "OpenBLAS threads")->check(check::threads());
  cmd->add_option("FILE", f->input,
                  "Sentences to translate (default: stdin); with --explain-grad, 'source<TAB>reference' per line");
  cmd->callback([f] { run_translate(*f); });
}

void add_eval_command(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  auto* cmd = app.add_subcommand("eval", "BLEU of a model on parallel text, overall and by source length");
  cmd->add_option("--model", f->model, "Model directory written by attend train")->capture_default_str();
  cmd->add_option("--data", f->data, "Parallel text: 'source<TAB>target' per line")->required()->check(CLI::ExistingFile);
  cmd->add_option("--beam", f->beam, "Beam size (1: greedy)")->check(check::integer(1, limits::kMaxBeam, true))->capture_default_str();
  cmd->add_option("--threads", f->threads, "OpenBLAS threads")->check(check::threads());
  cmd->callback([f] { run_eval(*f); });
}

}  // namespace attend::tools
