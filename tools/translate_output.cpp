// attend translate: what is printed for one sentence.
//   default            the translation
//   --show-attention   the translation, then its attention drawn as text
//   --alignments hard  TRANSLATION<TAB>ALIGNMENT, Moses/fast_align "i-j" word pairs
//   --alignments soft  one JSON object: the tokens of both sides and the weights
#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

void replace_unknown_words(TextTranslation& t, const UnkDictionary& dictionary, const TextCodec& target) {
  const std::vector<std::string> pieces = t.output_tokens;
  const std::vector<UnkReplacement> done =
      replace_unknown(t.output_tokens, t.attention, t.source_words, t.source_word_of, dictionary);
  if (done.empty()) return;
  if (!target.is_subword()) {
    t.text = target.decode(t.output_tokens);
  } else {
    // SentencePiece would decode a word it does not have as " ⁇ ", so the text is
    // joined here: each piece's U+2581 is a space, and a replaced <unk> that
    // started a word gets one.
    std::string text;
    std::size_t next = 0;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const bool replaced = next < done.size() && static_cast<std::size_t>(done[next].target) == i;
      const bool starts_word = replaced ? i == 0 || t.output_word_of[i] != t.output_word_of[i - 1]
                                        : pieces[i].rfind("\u2581", 0) == 0;
      if (starts_word && !text.empty()) text += ' ';
      text += replaced ? done[next++].replacement : target.decode({pieces[i]});
    }
    t.text = text;
  }
  const WordMap words = target.words(t.output_tokens, t.text);
  t.output_words = words.words;
  t.output_word_of = words.word_of;
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
