#include "tools/cli/data_options.hpp"

#include <cstdio>
#include <filesystem>
#include <limits>

#include "core/io/limits.hpp"
#include "models/data/gettext.hpp"
#include "tools/cli/checks.hpp"

namespace attend::tools {

void DataFlags::add_to(CLI::App& cmd) {
  auto* group = cmd.add_option_group("data", "Where the sentence pairs come from (one of these)");
  group->add_option("--data", tsv, "Parallel text: one 'source<TAB>target' pair per line")->check(CLI::ExistingFile);
  group->add_flag("--toy", toy, "The built-in toy English->French language");
  group->add_option("--gettext", gettext_dir,
                    "Human translations from GNU gettext catalogs (.mo) under DIR, e.g. /usr/share/locale");
  group->require_option(1);
  cmd.add_option("--toy-n", toy_n, "Toy pairs to generate")->check(check::integer(1, 10000000))->capture_default_str();
  cmd.add_option("--toy-min-len", toy_min_len, "Shortest toy source sentence (words)")->capture_default_str();
  cmd.add_option("--toy-max-len", toy_max_len, "Longest toy source sentence (words)")->capture_default_str();
  cmd.add_option("--lang", lang, "Catalog language for --gettext (the LANG in LANG/LC_MESSAGES)")->capture_default_str();
  cmd.add_flag("--strict", strict, "Stop at the first invalid line of --data instead of skipping it");
  cmd.add_flag("--lowercase", lowercase, "Lower-case all text");
  cmd.add_option("--valid-fraction", valid_fraction, "Share of pairs held out for validation")
      ->check(check::number(0.0, 0.5))
      ->capture_default_str();
  cmd.add_option("--max-len", max_len, "Drop pairs with a side longer than this (tokens: words, or subword pieces)")
      ->check(check::integer(1, limits::kMaxLineBytes, true))->capture_default_str();
  cmd.add_option("--vocab-min-count", vocab_min_count, "Leave out words seen fewer times (they become <unk>)")
      ->check(check::integer(1, std::numeric_limits<std::int64_t>::max()))
      ->capture_default_str();
  cmd.add_option("--vocab-max-size", vocab_max_size, "Largest vocabulary, special tokens included (0: no limit)")
      ->check(check::integer(0, limits::kMaxVocabulary, true))
      ->capture_default_str();
}

Dataset DataFlags::load() const {
  std::vector<SentencePair> pairs;
  if (toy) {
    ToyCorpusOptions o;
    o.n = toy_n;
    o.min_len = toy_min_len;
    o.max_len = toy_max_len;
    o.seed = seed;
    pairs = toy_pairs(o);
  } else if (!tsv.empty()) {
    ParallelText text = read_tsv(tsv, strict);
    for (const std::string& w : text.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    pairs = std::move(text.pairs);
  } else {
    std::string dir = gettext_dir;
    const std::filesystem::path localized = std::filesystem::path(dir) / lang / "LC_MESSAGES";
    if (std::filesystem::is_directory(localized)) dir = localized.string();
    CatalogHarvest harvest = harvest_catalogs(dir);
    for (const std::string& e : harvest.errors) std::fprintf(stderr, "warning: %s\n", e.c_str());
    pairs = std::move(harvest.pairs);
    if (pairs.empty()) fail("--gettext {}: no usable translations found in {} catalogs", dir, harvest.catalogs);
  }
  DatasetOptions o;
  o.valid_fraction = valid_fraction;
  o.lengths = {1, max_len};
  o.source_vocab = {vocab_min_count, vocab_max_size};
  o.target_vocab = {vocab_min_count, vocab_max_size};
  o.tokenizer.lowercase = lowercase;
  o.subword = subword;
  o.seed = seed;
  return build_dataset(pairs, o);
}

std::string DataFlags::describe() const {
  if (toy) return fmt::format("toy ({} pairs, lengths {}-{}, seed {})", toy_n, toy_min_len, toy_max_len, seed);
  if (!tsv.empty()) return tsv;
  return fmt::format("gettext catalogs in {} ({})", gettext_dir, lang);
}

}  // namespace attend::tools
