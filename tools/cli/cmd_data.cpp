// attend data toy: the built-in toy language as TSV.
// attend data gettext DIR: human translations from gettext catalogs as TSV.
// attend bleu: corpus BLEU of a hypothesis file against a reference file.
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "core/io/file_io.hpp"
#include "core/io/limits.hpp"
#include "models/eval/bleu.hpp"
#include "models/data/dataset.hpp"
#include "models/data/gettext.hpp"
#include "tools/cli/checks.hpp"
#include "tools/cli/commands.hpp"

namespace attend::tools {

namespace {

// Writes to stdout, or to the file named (a file atomically, a device or FIFO through: core/io/file_io.hpp).
void emit(const std::string& out, const std::string& text) {
  if (out.empty() || out == "-") {
    write_stream(stdout, text, "standard output");
  } else {
    write_file_atomic(out, text);
  }
}

std::string tsv_of(const std::vector<SentencePair>& pairs) {
  std::string text;
  for (const SentencePair& p : pairs) text += p.source + "\t" + p.target + "\n";
  return text;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines = split_lines(limits::read_bounded_file(path, "bleu"));
  for (std::string& line : lines)
    if (!line.empty() && line.back() == '\r') line.pop_back();
  return lines;
}

}  // namespace

void add_data_command(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Make parallel text (TSV: source<TAB>target per line)");
  data->require_subcommand(1);

  auto toy = std::make_shared<ToyCorpusOptions>();
  auto toy_out = std::make_shared<std::string>();
  auto* t = data->add_subcommand("toy", "The built-in toy English->French language");
  t->add_option("--n", toy->n, "Number of pairs")->check(check::integer(1, 10000000))->capture_default_str();
  t->add_option("--min-len", toy->min_len, "Shortest source sentence (words, >= 3)")->capture_default_str();
  t->add_option("--max-len", toy->max_len, "Longest source sentence (words, <= 60)")->capture_default_str();
  t->add_option("--seed", toy->seed, "Seed")->check(check::seed())->capture_default_str();
  t->add_option("--out", *toy_out, "Output file (default: stdout)");
  t->callback([toy, toy_out] { emit(*toy_out, tsv_of(toy_pairs(*toy))); });

  auto dir = std::make_shared<std::string>("/usr/share/locale");
  auto lang = std::make_shared<std::string>("fr");
  auto gettext_out = std::make_shared<std::string>();
  auto* g = data->add_subcommand("gettext", "English->LANG pairs from the GNU gettext catalogs (.mo) under DIR");
  g->add_option("DIR", *dir, "Locale directory")->capture_default_str();
  g->add_option("--lang", *lang, "Language of the catalogs (DIR/LANG/LC_MESSAGES)")->capture_default_str();
  g->add_option("--out", *gettext_out, "Output file (default: stdout)");
  g->callback([dir, lang, gettext_out] {
    std::string where = *dir + "/" + *lang + "/LC_MESSAGES";
    CatalogHarvest h = harvest_catalogs(where);
    for (const std::string& e : h.errors) fmt::print(stderr, "warning: {}\n", e);
    fmt::print(stderr, "{}: {} catalogs, {} entries, {} pairs kept\n", where, h.catalogs, h.entries, h.pairs.size());
    if (h.catalogs == 0 && h.errors.empty()) fail("data gettext: {}: no .mo catalogs found", where);
    if (h.catalogs == 0) fail("data gettext: {}: none of the {} catalogs could be read", where, h.errors.size());
    emit(*gettext_out, tsv_of(h.pairs));
  });
}

void add_bleu_command(CLI::App& app) {
  auto ref = std::make_shared<std::string>(), hyp = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("bleu", "Corpus BLEU (sacreBLEU's defaults: 13a tokens, exp smoothing) of --hyp against --ref");
  cmd->add_option("--ref", *ref, "Reference translations, one per line")->required()->check(CLI::ExistingFile);
  cmd->add_option("--hyp", *hyp, "Hypotheses, one per line, in the same order")->required()->check(CLI::ExistingFile);
  cmd->callback([ref, hyp] {
    std::vector<std::string> r = lines_of(*ref), h = lines_of(*hyp);
    if (r.size() != h.size()) fail("bleu: {} has {} lines but {} has {}", *hyp, h.size(), *ref, r.size());
    BleuScore s = corpus_bleu(h, r);
    fmt::print("BLEU = {:.2f} {:.1f}/{:.1f}/{:.1f}/{:.1f} (BP = {:.3f} ratio = {:.3f} hyp_len = {} ref_len = {})\n", s.score,
               s.precisions[0], s.precisions[1], s.precisions[2], s.precisions[3], s.brevity_penalty,
               s.ref_len > 0 ? static_cast<double>(s.sys_len) / static_cast<double>(s.ref_len) : 0.0, s.sys_len, s.ref_len);
    fmt::print("{}\n", s.signature);
  });
}

}  // namespace attend::tools
