#pragma once
// From sentence pairs (text) to what training needs: tokenized, split into
// training and validation sets (seeded), filtered by length, vocabularies built
// on the training side only, and encoded as ids.
#include <cstdint>
#include <string>
#include <vector>

#include "models/corpus.hpp"
#include "models/tokenizer.hpp"
#include "models/toy_language.hpp"
#include "models/vocabulary.hpp"

namespace attend {

struct DatasetOptions {
  double valid_fraction = 0.1;
  LengthLimits lengths{1, 80};
  VocabularyOptions source_vocab, target_vocab;
  TokenizerOptions tokenizer;
  std::uint64_t seed = 1;
};

struct Dataset {
  Vocabulary source_vocab, target_vocab;
  std::vector<EncodedPair> train, valid;
  std::vector<SentencePair> train_text, valid_text;  // the same pairs as text
  std::int64_t dropped_by_length = 0;
};

Dataset build_dataset(const std::vector<SentencePair>& pairs, const DatasetOptions& options);

// Toy sentences as text pairs (words joined by spaces).
std::vector<SentencePair> toy_pairs(const ToyCorpusOptions& options);

}  // namespace attend
