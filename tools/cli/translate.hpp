#pragma once
// attend translate, shared between its files: cmd_translate.cpp (flags and the
// streaming loop), translate_output.cpp (what is printed for a sentence) and
// translate_explain.cpp (--explain-grad).
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "models/decode/alignment.hpp"
#include "models/eval/evaluation.hpp"
#include "models/model_dir.hpp"

namespace attend::tools {

// The decoding flags translate and eval share: --beam, --n-best (translate),
// --length-penalty, --alpha, --coverage-penalty.
struct DecodeFlags {
  std::int64_t beam = 1, n_best = 1;
  std::string length_penalty = "average";
  double alpha = 0.6, coverage = 0.0;
  DecodeOptions options() const;  // checked: n_best <= beam, coverage needs a beam; scores only for n-best lines
};
void add_decode_flags(CLI::App* cmd, DecodeFlags& f, bool n_best);

struct TranslateFlags {
  std::vector<std::string> models{"model"};  // several: an ensemble
  std::string input;
  DecodeFlags decode;
  std::int64_t batch = 64;
  std::string alignments;  // "", "soft" or "hard"
  bool replace_unk = false;
  std::string unk_dict;
  bool show_attention = false, ascii = false, explain_grad = false, quiet = false;
  std::string svg_prefix;  // with explain_grad: also write PREFIX_N.svg
  int threads = 1;
};

// What translate prints for one input line (line_index from 0), newline
// included: its best translation, or with --n-best its n-best list.
std::string format_output(const std::vector<TextTranslation>& n_best, std::int64_t line_index, const TranslateFlags& f);

// --replace-unk: each <unk> of the output becomes the translation of the source
// word it attends to most; the text is rebuilt from the new tokens.
void replace_unknown_words(TextTranslation& t, const UnkDictionary& dictionary, const TextCodec& target);

void run_explain_grad(LoadedModel& m, const TranslateFlags& f, const std::vector<std::string>& lines);

}  // namespace attend::tools
