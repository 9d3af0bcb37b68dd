#pragma once
// What attention says about a translation, in the forms NMT tools exchange:
//  - hard alignments: each output token linked to the source token it attends
//    to most, as Moses and fast_align write them ("0-0 1-2 2-1": source i,
//    target j, both counted from 0);
//  - unknown-word replacement (Luong et al. 2015): an <unk> in the output
//    becomes the source word it attends to most, looked up in an optional
//    dictionary.
// Letters: T output tokens, S source tokens. weights[t][j] is alpha_t,j, the
// attention of output token t on source token j.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attend {

// The source token output token t attends to most (the first on a tie).
// Throws attend::Error when row t is missing or empty.
std::int64_t most_attended(const std::vector<std::vector<double>>& weights, std::int64_t t);

struct AlignmentLink {
  std::int64_t source = 0, target = 0;  // word indices, from 0
  bool operator==(const AlignmentLink&) const = default;
};

// The hard alignment of `output_tokens` output tokens (rows 0..T-1 of weights;
// a final </s> row, if present, is ignored): each output token linked to its
// most attended source token, both mapped to the words they belong to through
// source_word_of (S entries) and output_word_of (T entries). A word pair that
// several tokens link (subword pieces of the same words) appears once. Links
// are ordered by target word, then source word.
std::vector<AlignmentLink> hard_alignment(const std::vector<std::vector<double>>& weights, std::int64_t output_tokens,
                                          const std::vector<std::int64_t>& source_word_of,
                                          const std::vector<std::int64_t>& output_word_of);
// "0-0 1-2 2-1" (source-target, as Moses and fast_align write them).
std::string format_alignment(const std::vector<AlignmentLink>& links);

// A word translation table for --unk-dict: one entry per line,
// "SOURCE TARGET" or "SOURCE TARGET PROB" separated by spaces or tabs (a
// fast_align or Moses lexical table works as it is). A source word listed more
// than once keeps the target with the highest PROB (the first one without
// PROB). Blank lines are skipped; anything else that is not 2 or 3 fields, or
// not UTF-8, is an error naming FILE:LINE.
class UnkDictionary {
 public:
  UnkDictionary() = default;
  static UnkDictionary load(const std::string& path);
  static UnkDictionary parse(std::string_view text, const std::string& name);
  // The translation of a source word, or the word itself when it is not listed
  // (names, numbers and URLs, the usual unknown words, are copied).
  const std::string& lookup(const std::string& source_word) const;
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string target;
    double prob = 0;
  };
  std::unordered_map<std::string, Entry> entries_;
};

struct UnkReplacement {
  std::int64_t target = 0;       // the output token replaced
  std::int64_t source = 0;       // the source word it attended to most
  std::string word, replacement;
};

// Replaces each token equal to `unk` in output_tokens (T tokens; weights has at
// least T rows) by the dictionary's translation of the source word holding its
// most attended source token. Returns what was replaced, in output order.
std::vector<UnkReplacement> replace_unknown(std::vector<std::string>& output_tokens,
                                            const std::vector<std::vector<double>>& weights,
                                            const std::vector<std::string>& source_words,
                                            const std::vector<std::int64_t>& source_word_of,
                                            const UnkDictionary& dictionary, std::string_view unk = "<unk>");

}  // namespace attend
