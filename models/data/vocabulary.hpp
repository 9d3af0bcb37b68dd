#pragma once
// Vocabulary: tokens <-> integer ids. Ids 0..3 are always the special tokens
// <pad> (padding), <unk> (any token not in the vocabulary), <s> (start of a
// target sentence) and </s> (its end); the rest are the corpus tokens, most
// frequent first.
//
// On disk a vocabulary is plain UTF-8 text, one token per line, in id order,
// starting with the four special tokens.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attend {

using TokenCounts = std::unordered_map<std::string, std::int64_t>;

// Adds one to the count of every token of the sentence.
void count_tokens(TokenCounts& counts, const std::vector<std::string>& sentence);

struct VocabularyOptions {
  std::int64_t min_count = 1;  // tokens seen fewer times are left out
  std::int64_t max_size = 0;   // total size including the 4 special tokens; 0: no limit
};

class Vocabulary {
 public:
  static constexpr std::int64_t kPad = 0;
  static constexpr std::int64_t kUnk = 1;
  static constexpr std::int64_t kBos = 2;  // <s>
  static constexpr std::int64_t kEos = 3;  // </s>
  static constexpr std::int64_t kNumSpecial = 4;
  static constexpr std::string_view kSpecialTokens[kNumSpecial] = {"<pad>", "<unk>", "<s>", "</s>"};

  Vocabulary();  // the four special tokens only

  // Keeps tokens with count >= min_count, most frequent first; ties are ordered by
  // the token's bytes, so the result does not depend on the map's order. Tokens
  // equal to a special token are skipped. Throws for an empty token, a token with
  // a line break (it could not be saved) or a max_size between 1 and 3.
  static Vocabulary build(const TokenCounts& counts, const VocabularyOptions& options = {});

  // Tokens in id order; the first four must be the special tokens, no duplicates.
  static Vocabulary from_tokens(std::vector<std::string> tokens);

  std::int64_t size() const { return static_cast<std::int64_t>(tokens_.size()); }
  bool contains(std::string_view token) const;
  std::int64_t id(std::string_view token) const;  // kUnk if absent
  const std::string& token(std::int64_t id) const;  // throws if id is out of range
  const std::vector<std::string>& tokens() const { return tokens_; }

  // Ids of the tokens (unknown -> <unk>), optionally framed by <s> ... </s>.
  std::vector<std::int64_t> encode(const std::vector<std::string>& tokens, bool add_bos = false,
                                   bool add_eos = false) const;
  // Tokens of the ids; throws for an id out of range. With strip_special, stops at
  // the first </s> and leaves out <pad> and <s> (for printing model output).
  std::vector<std::string> decode(std::span<const std::int64_t> ids, bool strip_special = false) const;

  void save(const std::string& path) const;
  // Throws attend::Error naming path:line for a missing or misplaced special token,
  // a duplicate, an empty line or invalid UTF-8.
  static Vocabulary load(const std::string& path);

  bool operator==(const Vocabulary& other) const { return tokens_ == other.tokens_; }

 private:
  struct Hash {  // lets find() take a string_view without building a string
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, std::int64_t, Hash, std::equal_to<>> ids_;
};

}  // namespace attend
