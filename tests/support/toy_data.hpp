#pragma once
// Toy-language sentence pairs encoded with their own vocabularies, every fifth
// held out for validation: the small corpus the trainer tests share
// (test_trainer, test_checkpoint, tests/mpi/data_parallel).
#include <cstdint>
#include <vector>

#include "models/data/corpus.hpp"
#include "models/data/toy_language.hpp"
#include "models/data/vocabulary.hpp"

namespace attend::testing {

struct ToyData {
  Vocabulary source, target;
  std::vector<EncodedPair> train, valid;
};

inline ToyData toy_data(std::int64_t n, std::int64_t max_len = 8, std::uint64_t seed = 2) {
  ToyCorpusOptions o;
  o.n = n;
  o.min_len = 3;
  o.max_len = max_len;
  o.seed = seed;
  std::vector<ToySentence> sentences = toy_corpus(o);
  TokenCounts src, tgt;
  for (const auto& s : sentences) {
    count_tokens(src, s.source);
    count_tokens(tgt, s.target);
  }
  ToyData d{Vocabulary::build(src), Vocabulary::build(tgt), {}, {}};
  for (std::size_t i = 0; i < sentences.size(); ++i)
    (i % 5 == 4 ? d.valid : d.train).push_back({d.source.encode(sentences[i].source), d.target.encode(sentences[i].target)});
  return d;
}

}  // namespace attend::testing
