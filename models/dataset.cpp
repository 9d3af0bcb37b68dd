#include "models/dataset.hpp"

namespace attend {

Dataset build_dataset(const std::vector<SentencePair>& pairs, const DatasetOptions& options) {
  if (pairs.empty()) fail("dataset: no sentence pairs");
  Split split = split_indices(static_cast<std::int64_t>(pairs.size()), options.valid_fraction, options.seed);
  std::vector<SentencePair> train_text = subset(pairs, split.train), valid_text = subset(pairs, split.valid);
  // Vocabularies from the training side only: validation words the model never
  // saw become <unk>, as they would in real use.
  TokenCounts source_counts, target_counts;
  std::vector<std::vector<std::string>> train_source, train_target;
  for (const SentencePair& p : train_text) {
    count_tokens(source_counts, tokenize(p.source, options.tokenizer));
    count_tokens(target_counts, tokenize(p.target, options.tokenizer));
  }
  Dataset d;
  d.source_vocab = Vocabulary::build(source_counts, options.source_vocab);
  d.target_vocab = Vocabulary::build(target_counts, options.target_vocab);
  auto keep = [&](const std::vector<SentencePair>& text, std::vector<EncodedPair>& ids, std::vector<SentencePair>& kept) {
    std::vector<EncodedPair> all = encode_pairs(text, d.source_vocab, d.target_vocab, options.tokenizer);
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (within_limits(all[i], options.lengths)) {
        ids.push_back(std::move(all[i]));
        kept.push_back(text[i]);
      } else {
        ++d.dropped_by_length;
      }
    }
  };
  keep(train_text, d.train, d.train_text);
  keep(valid_text, d.valid, d.valid_text);
  if (d.train.empty()) fail("dataset: no training pair is within {} to {} tokens", options.lengths.min_tokens, options.lengths.max_tokens);
  return d;
}

std::vector<SentencePair> toy_pairs(const ToyCorpusOptions& options) {
  std::vector<SentencePair> out;
  for (const ToySentence& s : toy_corpus(options)) out.push_back({join_words(s.source), join_words(s.target)});
  return out;
}

}  // namespace attend
