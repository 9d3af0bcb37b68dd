// attend translate: what is printed for one sentence.
//   default            the translation
//   --show-attention   the translation, then its attention drawn as text
//   --alignments hard  TRANSLATION<TAB>ALIGNMENT, Moses/fast_align "i-j" word pairs
//   --alignments soft  one JSON object: the tokens of both sides and the weights
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/tokenizer.hpp"
#include "tools/terminal.hpp"
#include "tools/translate.hpp"

namespace attend::tools {

namespace {

// The output tokens, with "</s>" when the attention has a row for it.
std::vector<std::string> attention_rows(const TextTranslation& t) {
  std::vector<std::string> rows = t.output_tokens;
  if (t.attention.size() > rows.size()) rows.push_back("</s>");
  return rows;
}

std::string soft_alignment(const TextTranslation& t) {
  nlohmann::json j;
  j["translation"] = t.text;
  j["source"] = t.source_tokens;
  j["target"] = attention_rows(t);
  j["weights"] = t.attention;  // [target token][source token]
  return j.dump();
}

}  // namespace

void replace_unknown_words(TextTranslation& t, const UnkDictionary& dictionary) {
  if (replace_unknown(t.output_tokens, t.attention, t.source_words, t.source_word_of, dictionary).empty()) return;
  t.output_words = t.output_tokens;
  t.text = detokenize(t.output_tokens);
}

std::string format_output(const TextTranslation& t, std::int64_t /*line_index*/, const TranslateFlags& f) {
  if (f.alignments == "soft") return soft_alignment(t) + "\n";
  if (f.alignments == "hard") {
    const std::vector<AlignmentLink> links =
        t.attention.empty() ? std::vector<AlignmentLink>{}
                            : hard_alignment(t.attention, static_cast<std::int64_t>(t.output_tokens.size()),
                                             t.source_word_of, t.output_word_of);
    return fmt::format("{}\t{}\n", t.text, format_alignment(links));
  }
  std::string out = t.text + "\n";
  if (f.show_attention && !t.attention.empty()) {
    std::vector<std::vector<double>> weights = t.attention;
    const std::vector<std::string> rows = [&] {
      std::vector<std::string> r = t.output_tokens;
      r.push_back("</s>");
      return r;
    }();
    weights.resize(rows.size(), std::vector<double>(t.source_tokens.size(), 0.0));
    out += attention_text(t.source_tokens, rows, weights, f.ascii) + "\n";
  }
  return out;
}

}  // namespace attend::tools
