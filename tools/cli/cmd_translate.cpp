// attend translate: sentences from a file or stdin, translations to stdout;
// --show-attention draws each sentence's alignment in the terminal;
// --explain-grad shows, for sentence pairs, the attention weights next to the
// gradient of the loss at them (which alignments training would strengthen).
// attend eval: BLEU of a model on parallel text, overall and by source length.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <span>

#include <fmt/format.h>

#include "core/kernels/blas.hpp"
#include "core/io/file_io.hpp"
#include "core/io/limits.hpp"
#include "models/decode/decoding.hpp"
#include "models/eval/evaluation.hpp"
#include "models/model_dir.hpp"
#include "tools/cli/checks.hpp"
#include "tools/cli/commands.hpp"
#include "tools/report/report.hpp"
#include "tools/report/svg.hpp"
#include "tools/cli/line_reader.hpp"
#include "tools/cli/terminal.hpp"
#include "tools/cli/translate.hpp"
#include "tools/cli/work_queue.hpp"

namespace attend::tools {

namespace {

static_assert(limits::kMaxLineBytes == 65536 && limits::kMaxDecodeBytes == std::uint64_t{2} << 30,
              "update the footer of attend translate");

// A chunk holds at most this many lines (and about kChunkBytes of them): what
// translate keeps in memory at once, whatever the size of the input.
constexpr std::size_t kChunkLines = 4096;
constexpr std::size_t kChunkBytes = std::size_t{4} << 20;

}  // namespace

std::vector<LoadedModel> load_models(const TranslateFlags& f) {
  if (f.models.size() > static_cast<std::size_t>(limits::kMaxEnsemble))
    fail("translate: {} models given; an ensemble has at most {} (core/io/limits.hpp)", f.models.size(),
         limits::kMaxEnsemble);
  std::vector<LoadedModel> models;
  for (const std::string& dir : f.models) {
    models.push_back(load_model_dir(dir));  // each model checked before the next loads
    if (std::string d = ensemble_difference(models.front(), models.back(), f.models.front()); !d.empty())
      fail("translate: {}: {}; an ensemble's models must share their target side and read the source alike", dir, d);
  }
  return models;
}

namespace {

// All lines, for --explain-grad (its input is a handful of sentence pairs).
std::vector<std::string> read_all_lines(const std::string& path) {
  LineReader reader(path, "translate");
  std::vector<std::string> all, chunk;
  std::size_t bytes = 0;
  while (reader.next(chunk, kChunkLines, kChunkBytes)) {
    for (std::string& line : chunk) {
      bytes += line.size() + 1;
      if (bytes > limits::kMaxTextFileBytes)
        fail("translate: {}: more than {} of input (core/io/limits.hpp)", reader.name(),
             limits::bytes_text(limits::kMaxTextFileBytes));
      all.push_back(std::move(line));
    }
  }
  return all;
}

}  // namespace

std::vector<Seq2Seq*> ensemble_of(std::vector<LoadedModel>& models) {
  std::vector<Seq2Seq*> ensemble;
  for (LoadedModel& m : models) ensemble.push_back(m.model.get());
  return ensemble;
}

std::int64_t checked_tokens(const char* op, std::span<Seq2Seq* const> ensemble, const TextCodec& source,
                            const std::string& line, const std::string& where, const DecodeOptions& options) {
  const auto tokens = static_cast<std::int64_t>(source.encode(line).size());
  if (tokens == 0) return 0;
  if (std::string problem = decode_memory_problem(ensemble, tokens, options); !problem.empty())
    fail("{}: {}: {}; split the sentence", op, where, problem);
  return tokens;
}

namespace {

// Lines [begin, end) of a chunk, with their tokens: at most limits::decode_memory_limit()
// to decode together (translation_batch_end), so that a group's translations, held
// until they are written, stay within it too. Every line fits alone (checked_tokens).
struct Group {
  std::size_t begin, end;
};
std::vector<Group> memory_groups(std::span<Seq2Seq* const> ensemble, const std::vector<std::int64_t>& tokens,
                                 const DecodeOptions& options, std::size_t most_lines) {
  std::vector<Group> groups;
  for (std::size_t begin = 0; begin < tokens.size(); begin = groups.back().end)
    groups.push_back({begin, translation_batch_end(ensemble, tokens, begin, most_lines, options)});
  return groups;
}

}  // namespace


std::vector<std::vector<TextTranslation>> translate_lines(std::span<std::vector<LoadedModel>> replicas,
                                                          const std::vector<std::string>& lines,
                                                          const std::vector<std::int64_t>& tokens,
                                                          const TranslateFlags& f, const DecodeOptions& options) {
  if (replicas.empty()) fail("translate: no models to translate with");
  std::vector<std::size_t> order(lines.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return tokens[a] < tokens[b]; });
  std::vector<std::string> sorted;
  std::vector<std::int64_t> sorted_tokens;
  for (std::size_t i : order) {
    sorted.push_back(lines[i]);
    sorted_tokens.push_back(tokens[i]);
  }
  std::vector<std::vector<Seq2Seq*>> ensembles;
  for (std::vector<LoadedModel>& models : replicas) ensembles.push_back(ensemble_of(models));
  const std::vector<Group> batches =
      memory_groups(ensembles.front(), sorted_tokens, options, static_cast<std::size_t>(f.batch));
  std::vector<std::uint64_t> bytes(batches.size());  // each batch's decoding memory
  for (std::size_t b = 0; b < batches.size(); ++b)
    bytes[b] = decode_memory_bytes(ensembles.front(),
                                   std::span(sorted_tokens).subspan(batches[b].begin, batches[b].end - batches[b].begin),
                                   options);
  std::vector<std::vector<TextTranslation>> in_order(lines.size());
  const auto translate_batch = [&](std::size_t b, std::size_t worker) {
    const Group& g = batches[b];
    const LoadedModel& m = replicas[worker].front();
    const std::vector<std::string> batch(sorted.begin() + static_cast<std::ptrdiff_t>(g.begin),
                                         sorted.begin() + static_cast<std::ptrdiff_t>(g.end));
    std::vector<std::vector<TextTranslation>> out =
        translate_text_n_best(ensembles[worker], batch, m.source_vocab, m.target_vocab, m.codecs, options,
                              static_cast<std::int64_t>(batch.size()));
    for (std::size_t k = 0; k < out.size(); ++k) in_order[order[g.begin + k]] = std::move(out[k]);
  };
  // Each worker (a copy of the models) takes the next batch as soon as it is
  // free, the longest first so that the last to finish are short ones; the
  // batches decoded at once stay within the decoding memory limit together,
  // so that more workers never need more memory than one batch may take.
  std::vector<std::size_t> longest_first(batches.size());
  for (std::size_t b = 0; b < batches.size(); ++b) longest_first[b] = batches.size() - 1 - b;
  run_within_memory(longest_first, bytes, replicas.size(), limits::decode_memory_limit(), translate_batch);
  return in_order;
}

std::vector<std::vector<TextTranslation>> translate_lines(std::vector<LoadedModel>& models,
                                                          const std::vector<std::string>& lines,
                                                          const std::vector<std::int64_t>& tokens,
                                                          const TranslateFlags& f, const DecodeOptions& options) {
  return translate_lines(std::span(&models, 1), lines, tokens, f, options);
}

void check_translate_request(const std::vector<LoadedModel>& models, const TranslateFlags& f) {
  for (const LoadedModel& m : models)
    if (f.explain_grad || !f.alignments.empty() || f.replace_unk)
      if (m.config.attention == AttentionKind::None)
        fail("translate: {} needs a model with attention; {} has none",
             f.explain_grad        ? "--explain-grad"
             : !f.alignments.empty() ? "--alignments"
                                   : "--replace-unk",
             f.models[static_cast<std::size_t>(&m - models.data())]);
  if (f.decode.n_best > 1 && (f.explain_grad || f.show_attention || f.alignments == "soft"))
    fail("translate: --n-best prints Moses n-best lines; it does not combine with {}",
         f.explain_grad ? "--explain-grad" : f.show_attention ? "--show-attention" : "--alignments soft");
}

void for_each_translated_group(std::span<std::vector<LoadedModel>> replicas, const std::vector<std::string>& lines,
                               const std::vector<std::int64_t>& tokens, const TranslateFlags& f,
                               const DecodeOptions& options, const UnkDictionary& dictionary,
                               const std::function<void(std::vector<std::vector<TextTranslation>>&)>& done) {
  const std::vector<Seq2Seq*> ensemble = ensemble_of(replicas.front());
  for (const Group& g : memory_groups(ensemble, tokens, options, lines.size())) {
    const std::vector<std::string> group(lines.begin() + g.begin, lines.begin() + g.end);
    const std::vector<std::int64_t> group_tokens(tokens.begin() + g.begin, tokens.begin() + g.end);
    std::vector<std::vector<TextTranslation>> out = translate_lines(replicas, group, group_tokens, f, options);
    if (f.replace_unk)
      for (std::vector<TextTranslation>& n_best : out)
        for (TextTranslation& t : n_best) replace_unknown_words(t, dictionary, replicas.front().front().codecs.target);
    done(out);
  }
}

void for_each_translated_group(std::vector<LoadedModel>& models, const std::vector<std::string>& lines,
                               const std::vector<std::int64_t>& tokens, const TranslateFlags& f,
                               const DecodeOptions& options, const UnkDictionary& dictionary,
                               const std::function<void(std::vector<std::vector<TextTranslation>>&)>& done) {
  for_each_translated_group(std::span(&models, 1), lines, tokens, f, options, dictionary, done);
}

namespace {

void run_translate(const TranslateFlags& f) {
  blas::set_num_threads(f.threads);
  std::vector<LoadedModel> models = load_models(f);
  check_translate_request(models, f);
  if (f.explain_grad) {
    if (models.size() > 1) fail("translate: --explain-grad explains one model; {} were given", models.size());
    return run_explain_grad(models.front(), f, read_all_lines(f.input));
  }
  const UnkDictionary dictionary = f.unk_dict.empty() ? UnkDictionary() : UnkDictionary::load(f.unk_dict);
  const DecodeOptions options = f.decode.options();
  std::vector<std::vector<LoadedModel>> replicas = load_replicas(f, std::move(models));  // --workers

  // A file is read through once first, so that a bad line (or one too long
  // to decode, checked_tokens) stops the command before anything is
  // translated, and the progress bar knows the total.
  const std::vector<Seq2Seq*> ensemble = ensemble_of(replicas.front());
  const TextCodec& source = replicas.front().front().codecs.source;
  const bool from_file = !(f.input.empty() || f.input == "-");
  std::int64_t total = 0;
  if (from_file) {
    try {
      total = count_checked_lines(f.input, "translate", [&](const std::string& line, const std::string& where) {
        checked_tokens("translate", ensemble, source, line, where, options);
      });
    } catch (const Error& e) {
      fail("{}; nothing was translated", e.what());
    }
  }
  LineReader reader(f.input, "translate");
  // On a terminal the bar redraws in place; in a log, a line every 10 s (none
  // for a short run), and always the final speed.
  const bool terminal = is_terminal(stderr);
  ProgressBar progress("translate", static_cast<long>(total), terminal, 10.0, stderr);
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<std::string> lines;
  std::vector<std::int64_t> tokens;
  std::int64_t done = 0;
  for (;;) {
    try {
      if (!reader.next(lines, kChunkLines, kChunkBytes)) break;
      tokens.clear();
      const std::int64_t first = reader.lines_read() - static_cast<std::int64_t>(lines.size()) + 1;
      for (std::size_t i = 0; i < lines.size(); ++i)
        tokens.push_back(checked_tokens("translate", ensemble, source, lines[i],
                                        fmt::format("{}:{}", reader.name(), first + static_cast<std::int64_t>(i)), options));
    } catch (const Error& e) {
      // Standard input cannot be read twice: what came before the bad line is
      // already translated and written.
      if (done == 0) fail("{}; nothing was translated", e.what());
      fail("{}; the {} lines before it were translated", e.what(), done);
    }
    // The chunk in groups of lines, in input order, whose translations (held
    // until they are written) fit in the memory limit together.
    for_each_translated_group(replicas, lines, tokens, f, options, dictionary,
                              [&](std::vector<std::vector<TextTranslation>>& out) {
                                std::string text;
                                for (std::size_t i = 0; i < out.size(); ++i)
                                  text += format_output(out[i], done + static_cast<std::int64_t>(i), f);
                                write_stream(stdout, text, "standard output");
                                done += static_cast<std::int64_t>(out.size());
                              });
    if (!f.quiet && (terminal || seconds() >= 10.0))
      progress.update(static_cast<long>(done), fmt::format("{:.1f} sentences/s", done / std::max(seconds(), 1e-9)));
  }
  if (!f.quiet)
    fmt::print(stderr, "{}translate: {} sentences in {}, {:.1f} sentences/s\n", terminal ? "\r\033[K" : "", done,
               format_duration(seconds()), done / std::max(seconds(), 1e-9));
}

struct EvalFlags {
  std::string model = "model", data;
  DecodeFlags decode;
  int threads = 1;
};

void run_eval(const EvalFlags& f) {
  blas::set_num_threads(f.threads);
  LoadedModel m = load_model_dir(f.model);
  ParallelText text = read_tsv(f.data);
  for (const std::string& w : text.warnings) fmt::print(stderr, "warning: {}\n", w);
  if (text.pairs.empty())
    fail("eval: {} has no usable 'source<TAB>target' lines ({} skipped): nothing to score", f.data, text.skipped);
  const DecodeOptions options = f.decode.options();
  Seq2Seq* const ensemble[] = {m.model.get()};
  for (std::size_t i = 0; i < text.pairs.size(); ++i)  // refused before any sentence is decoded
    checked_tokens("eval", ensemble, m.codecs.source, text.pairs[i].source,
                   fmt::format("{}: sentence pair {}", f.data, i + 1), options);
  BleuReport r = evaluate_bleu_by_length(*m.model, text.pairs, m.source_vocab, m.target_vocab, m.codecs, options);
  fmt::print("BLEU {:.2f}  ({} sentences, beam {})\n", r.overall.score, text.pairs.size(), f.decode.beam);
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
  add_translate_flags(cmd, *f);
  cmd->callback([f] { run_translate(*f); });
}

void add_translate_flags(CLI::App* cmd, TranslateFlags& flags) {
  TranslateFlags* f = &flags;
  cmd->footer(
      "Each input line gives one output line (K lines with --n-best K). The input is read in chunks of 4096 lines,\n"
      "each translated in batches sorted by length and written in input order, so memory stays bounded for any\n"
      "file; progress and sentences/s go to stderr. Every line of a FILE is checked before any is translated: a\n"
      "line that is not valid UTF-8, or longer than 65536 bytes, is an error naming it (FILE:LINE), and nothing is\n"
      "translated. So is a line of more tokens than decoding can take within 2 GiB (or half the RAM if less): it\n"
      "keeps an attention row over the source for each output token, so its need grows with the square of the\n"
      "line's length; the message says how many tokens fit.\n"
      "Standard input cannot be read twice: there the error says how many lines were translated.\n\n"
      "--explain-grad reads 'source<TAB>reference' lines and, for each, differentiates the loss of the reference\n"
      "(teacher forcing) at the attention weights: it prints the translation, the loss per token, then alpha and\n"
      "dL/dalpha side by side. '+' marks a weight the loss wants up (dL/dalpha < 0: the loss falls if it grows),\n"
      "'-' one it wants down (dL/dalpha > 0), sized against the largest |dL/dalpha|. The weights of a row sum to 1,\n"
      "so training moves the score e_j by dL/dalpha_j minus the alpha-weighted mean of its row, not by its sign\n"
      "alone. A line without a tab is explained against the model's own greedy translation. The model needs\n"
      "attention (additive, dot or general). --beam there changes only the translation printed: the target\n"
      "explained is the reference, or the greedy translation.\n"
      "  printf 'the red car\\tla voiture rouge\\n' | attend translate --model DIR --explain-grad --svg grad");
  cmd->add_option("--model", f->models,
                  "Model directory written by attend train (default: model). Given more than once: an ensemble, "
                  "decoding with the mean of the models' log-probabilities (they must share their vocabularies)")
      ->type_name("DIR")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  add_decode_flags(cmd, f->decode, true);
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
  auto* alignments = cmd->add_option("--alignments", f->alignments,
                  "hard: print TRANSLATION<TAB>ALIGNMENT, with 'i-j' pairs (source word i, output word j, from 0) "
                  "linking each output word to the source word it attends to most, as Moses and fast_align write "
                  "them; soft: one JSON object per sentence with both token lists and the attention weights")
      ->check(CLI::IsMember({"soft", "hard"}))
      ->type_name("soft|hard");
  auto* replace = cmd->add_flag("--replace-unk", f->replace_unk,
                "Replace each <unk> of the output by the source word it attends to most (Luong et al. 2015), "
                "translated through --unk-dict when it is listed there");
  cmd->add_option("--unk-dict", f->unk_dict,
                  "With --replace-unk: a word translation table, 'SOURCE TARGET [PROB]' per line (a fast_align or "
                  "Moses lexical table works); the most probable target of a source word is used")
      ->type_name("FILE")
      ->needs(replace)
      ->check(CLI::ExistingFile);
  cmd->add_option("--batch", f->batch, "Sentences decoded together (sorted by length within chunks of 4096 lines)")
      ->check(check::integer(1, limits::kMaxBatch, true))
      ->capture_default_str();
  cmd->add_flag("--quiet", f->quiet, "No progress bar or final speed line on stderr");
  cmd->add_option("--threads", f->threads, "OpenBLAS threads")->check(check::threads());
  cmd->add_option("--workers", f->workers,
                  "Batches decoded at once, each by a copy of the models on a thread of its own (N copies in memory; "
                  "the batches decoded together stay within the decoding memory limit); the output is the same. "
                  "Use with --threads 1")
      ->check(check::threads())
      ->capture_default_str();
  alignments->excludes(explain);
  replace->excludes(explain);
  cmd->add_option("FILE", f->input,
                  "Sentences to translate (default: stdin); with --explain-grad, 'source<TAB>reference' per line");
}

void add_eval_command(CLI::App& app) {
  auto f = std::make_shared<EvalFlags>();
  auto* cmd = app.add_subcommand("eval", "BLEU of a model on parallel text, overall and by source length");
  cmd->add_option("--model", f->model, "Model directory written by attend train")->capture_default_str();
  cmd->add_option("--data", f->data, "Parallel text: 'source<TAB>target' per line")->required()->check(CLI::ExistingFile);
  add_decode_flags(cmd, f->decode, false);
  cmd->add_option("--threads", f->threads, "OpenBLAS threads")->check(check::threads());
  cmd->callback([f] { run_eval(*f); });
}

}  // namespace attend::tools
