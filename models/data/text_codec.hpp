#pragma once
// How one side of a model turns text into tokens and tokens back into text:
// words (tokenize/detokenize with TokenizerOptions, the default) or the pieces
// of a SentencePiece model (models/data/subword.hpp). Either way the tokens are then
// mapped to ids by the side's Vocabulary.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/data/subword.hpp"
#include "models/data/tokenizer.hpp"

namespace attend {

// The words of a sentence and, for each token, the index of the word it is part of.
struct WordMap {
  std::vector<std::string> words;
  std::vector<std::int64_t> word_of;  // one per token
};

class TextCodec {
 public:
  TextCodec() = default;  // words, default tokenizer options
  explicit TextCodec(const TokenizerOptions& tokenizer) : tokenizer_(tokenizer) {}
  // SentencePiece pieces; tokenizer.lowercase lower-cases the text before encoding.
  TextCodec(std::shared_ptr<const SubwordModel> subword, const TokenizerOptions& tokenizer)
      : tokenizer_(tokenizer), subword_(std::move(subword)) {}

  bool is_subword() const { return subword_ != nullptr; }
  const TokenizerOptions& tokenizer() const { return tokenizer_; }
  const SubwordModel* subword() const { return subword_.get(); }
  const std::shared_ptr<const SubwordModel>& subword_ptr() const { return subword_; }

  std::vector<std::string> encode(std::string_view text) const;
  std::string decode(const std::vector<std::string>& tokens) const;

  // The words the tokens make up. Words: the tokens themselves (identity map).
  // Subwords: a piece starting with U+2581 starts a new word; the words are the
  // whitespace-separated words of `text` (the sentence as typed, or the decoded
  // output) when their number agrees with the pieces', else each word's pieces
  // decoded.
  WordMap words(const std::vector<std::string>& tokens, std::string_view text) const;

 private:
  TokenizerOptions tokenizer_;
  std::shared_ptr<const SubwordModel> subword_;
};

struct TextCodecs {
  TextCodec source, target;
  // Both sides as words with these tokenizer options.
  static TextCodecs words(const TokenizerOptions& tokenizer = {}) { return {TextCodec(tokenizer), TextCodec(tokenizer)}; }
};

}  // namespace attend
