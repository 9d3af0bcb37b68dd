// attend translate: sentences from a file or stdin, translations to stdout;
// --show-attention draws each sentence's alignment in the terminal.
// attend eval: BLEU of a model on parallel text, overall and by source length.
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "core/blas.hpp"
#include "models/evaluation.hpp"
#include "models/model_dir.hpp"
#include "tools/commands.hpp"
#include "tools/terminal.hpp"

namespace attend::tools {

namespace {

struct TranslateFlags {
  std::string model = "model", input;
  std::int64_t beam = 1;
  bool show_attention = false, ascii = false;
  int threads = 1;
};

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::string line;
  if (path.empty() || path == "-") {
    while (std::getline(std::cin, line)) lines.push_back(line);
  } else {
    std::ifstream in(path);
    if (!in) fail("translate: cannot open {}", path);
    while (std::getline(in, line)) lines.push_back(line);
  }
  for (std::string& l : lines)
    if (!l.empty() && l.back() == '\r') l.pop_back();
  return lines;
}

void run_translate(const TranslateFlags& f) {
  blas::set_num_threads(f.threads);
  LoadedModel m = load_model_dir(f.model);
  DecodeOptions options;
  options.beam = f.beam;
  std::vector<std::string> lines = read_lines(f.input);
  std::vector<TextTranslation> out =
      translate_text(*m.model, lines, m.source_vocab, m.target_vocab, m.tokenizer, options);
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
  DecodeOptions options;
  options.beam = f.beam;
  BleuReport r = evaluate_bleu_by_length(*m.model, text.pairs, m.source_vocab, m.target_vocab, m.tokenizer, options);
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
  cmd->add_option("--model", f->model, "Model directory written by attend train")->capture_default_str();
  cmd->add_option("--beam", f->beam, "Beam size (1: greedy)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--show-attention", f->show_attention, "Draw the attention weights under each translation");
  cmd->add_flag("--ascii", f->ascii, "With --show-attention: digits 0-9 instead of shaded blocks");
  cmd->add_option("--threads", f->threads, "OpenBLAS threads")->check(CLI::PositiveNumber);
  cmd->add_option("FILE", f->input, "Sentences to translate (default: stdin)");
  cmd->callback([f] { run_translate(*f); });
}

void add_eval_command(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  auto* cmd = app.add_subcommand("eval", "BLEU of a model on parallel text, overall and by source length");
  cmd->add_option("--model", f->model, "Model directory written by attend train")->capture_default_str();
  cmd->add_option("--data", f->data, "Parallel text: 'source<TAB>target' per line")->required()->check(CLI::ExistingFile);
  cmd->add_option("--beam", f->beam, "Beam size (1: greedy)")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--threads", f->threads, "OpenBLAS threads")->check(CLI::PositiveNumber);
  cmd->callback([f] { run_eval(*f); });
}

}  // namespace attend::tools
