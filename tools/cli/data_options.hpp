#pragma once
// The data flags shared by `attend train` and `attend experiment`: where the
// sentence pairs come from (--data FILE.tsv, --toy, --gettext DIR) and how
// they are split and filtered.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "models/data/dataset.hpp"

namespace attend::tools {

struct DataFlags {
  std::string tsv;          // --data
  bool toy = false;         // --toy
  std::int64_t toy_n = 60000;
  int toy_min_len = 3, toy_max_len = 60;
  std::string gettext_dir;  // --gettext
  std::string lang = "fr";
  bool strict = false;
  bool lowercase = false;
  double valid_fraction = 0.05;
  std::int64_t max_len = 80;
  std::int64_t vocab_min_count = 1, vocab_max_size = 0;
  std::uint64_t seed = 1;
  SubwordSetup subword;  // words unless set (attend train's --subword, --spm-model)

  void add_to(CLI::App& cmd);
  // Reads the pairs (printing skipped-line warnings to stderr) and builds the dataset.
  Dataset load() const;
  std::string describe() const;  // "toy (20000 pairs, lengths 3-60, seed 1)"
};

}  // namespace attend::tools
