#pragma once
// From sentence pairs (text) to what training needs: tokenized (words, or
// SentencePiece pieces), split into training and validation sets (seeded),
// filtered by length, vocabularies built on the training side only, and
// encoded as ids.
#include <cstdint>
#include <string>
#include <vector>

#include "models/data/corpus.hpp"
#include "models/data/text_codec.hpp"
#include "models/data/tokenizer.hpp"
#include "models/data/toy_language.hpp"
#include "models/data/vocabulary.hpp"

namespace attend {

// Subwords instead of words: a SentencePiece model trained on the training
// side of the data (type unigram or bpe), or existing .model files (made by
// spm_train, say): `model` for both sides, or `source_model` and `target_model`.
struct SubwordSetup {
  std::string type;  // "" (words, the default), "unigram" or "bpe"
  std::int64_t vocab_size = 8000;
  bool separate = false;  // with type: one model per side instead of one joint model
  std::string model, source_model, target_model;
  SubwordTrainer trainer;  // with type: what trains the models; empty: SubwordModel::train
  bool enabled() const { return !type.empty() || !model.empty() || !source_model.empty() || !target_model.empty(); }
};

struct DatasetOptions {
  double valid_fraction = 0.1;
  LengthLimits lengths{1, 80};  // in tokens: words, or pieces with subwords
  VocabularyOptions source_vocab, target_vocab;
  TokenizerOptions tokenizer;
  SubwordSetup subword;
  std::uint64_t seed = 1;
};

// How many tokens of a set are <unk>.
struct UnknownCount {
  std::int64_t tokens = 0, unknown = 0;
  double rate() const { return tokens > 0 ? static_cast<double>(unknown) / static_cast<double>(tokens) : 0.0; }
};

struct Dataset {
  Vocabulary source_vocab, target_vocab;
  TextCodecs codecs;  // words, or the SentencePiece models of both sides
  std::vector<EncodedPair> train, valid;
  std::vector<SentencePair> train_text, valid_text;  // the same pairs as text
  std::int64_t dropped_by_length = 0;
  UnknownCount valid_source_unknown, valid_target_unknown;  // in the encoded validation pairs
};

Dataset build_dataset(const std::vector<SentencePair>& pairs, const DatasetOptions& options);

// Tokenizes both sides with the codecs and maps them to ids (unknown -> <unk>).
std::vector<EncodedPair> encode_pairs(const std::vector<SentencePair>& pairs, const Vocabulary& source_vocab,
                                      const Vocabulary& target_vocab, const TextCodecs& codecs);

// The codecs of a subword setup: trains the models on the pairs (the training
// side), or loads the given files. Throws attend::Error naming a bad file.
TextCodecs make_subword_codecs(const std::vector<SentencePair>& train, const SubwordSetup& setup,
                               const TokenizerOptions& tokenizer, std::uint64_t seed);

// Toy sentences as text pairs (words joined by spaces).
std::vector<SentencePair> toy_pairs(const ToyCorpusOptions& options);

}  // namespace attend
