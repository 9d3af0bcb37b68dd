#pragma once
// The built-in toy language: seeded, deterministic "toy English" -> "toy French"
// sentence pairs, so that attend can be trained and tested without downloading
// anything. It has what makes English->French translation need attention:
//  - nouns with gender; determiners and adjectives agree in gender and number;
//  - most adjectives move after the noun ("the red car" -> "la voiture rouge"),
//    a few stay before it ("the big car" -> "la grande voiture");
//  - verbs agree with the subject's number, also for coordinated subjects;
//  - one word can become two ("because" -> "parce que", "near" -> "près de"),
//    and two can become one ("près de le" -> "près du");
//  - nested noun phrases, prepositional phrases and coordinated clauses reach
//    any source length from 3 to 60 words.
// The alignment is mostly monotone with local reordering, like English->French.
#include <cstdint>
#include <string>
#include <vector>

#include "core/random.hpp"

namespace attend {

struct ToySentence {
  std::vector<std::string> source;  // toy English words
  std::vector<std::string> target;  // toy French words
  // For each target word, the source word it translates (for checking learned
  // attention against the true alignment).
  std::vector<int> target_to_source;
};

// One sentence with exactly `length` source words (3 <= length <= 60).
ToySentence toy_sentence(Generator& gen, int length);

struct ToyCorpusOptions {
  std::int64_t n = 10000;
  int min_len = 3;
  int max_len = 60;
  std::uint64_t seed = 1;
};

// n sentences with source lengths uniform in [min_len, max_len].
std::vector<ToySentence> toy_corpus(const ToyCorpusOptions& options);

// The size of the toy lexicon, for documentation and tests.
struct ToyLexiconSize {
  int nouns, adjectives, adjectives_before_noun, verbs, prepositions, conjunctions, determiners;
};
ToyLexiconSize toy_lexicon_size();

// Words as text: separated by spaces, except that an elided "d'" is written
// against the next word ("d'une"), as the tokenizer expects.
std::string join_words(const std::vector<std::string>& words);

}  // namespace attend
