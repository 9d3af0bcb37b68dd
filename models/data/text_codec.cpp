#include "models/data/text_codec.hpp"

namespace attend {

std::vector<std::string> TextCodec::encode(std::string_view text) const {
  if (!subword_) return tokenize(text, tokenizer_);
  if (!valid_utf8(text)) return tokenize(text, tokenizer_);  // throws, naming the byte, as for words
  if (!tokenizer_.lowercase) return subword_->encode(text);
  const std::string lower = to_lower(text);
  return subword_->encode(lower);
}

std::string TextCodec::decode(const std::vector<std::string>& tokens) const {
  return subword_ ? subword_->decode(tokens) : detokenize(tokens);
}

namespace {
std::vector<std::string> split_on_spaces(std::string_view text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    char32_t c = 0;
    int length = 1;
    const bool ok = decode_utf8(text, pos, c, length);
    if (ok && is_space(c)) {
      pos += static_cast<std::size_t>(length);
      continue;
    }
    std::size_t end = pos;
    while (end < text.size()) {
      const bool valid = decode_utf8(text, end, c, length);
      if (valid && is_space(c)) break;
      end += static_cast<std::size_t>(length);
    }
    out.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}
}  // namespace

WordMap TextCodec::words(const std::vector<std::string>& tokens, std::string_view text) const {
  WordMap map;
  if (!subword_) {
    map.words = tokens;
    for (std::size_t i = 0; i < tokens.size(); ++i) map.word_of.push_back(static_cast<std::int64_t>(i));
    return map;
  }
  // Word k holds the pieces from its k-th marker up to the next one (pieces
  // before the first marker join the first word).
  std::vector<std::vector<std::string>> groups;
  for (const std::string& piece : tokens) {
    if (groups.empty() || starts_word(piece)) groups.emplace_back();
    groups.back().push_back(piece);
    map.word_of.push_back(static_cast<std::int64_t>(groups.size()) - 1);
  }
  // A lone marker piece ("▁" before a piece that has none) has no text of its own
  // but still starts the word, so the count of groups is the count of words.
  std::vector<std::string> typed = split_on_spaces(text);
  if (typed.size() == groups.size()) {
    map.words = std::move(typed);
  } else {
    for (const auto& g : groups) map.words.push_back(subword_->decode(g));
  }
  return map;
}

}  // namespace attend
