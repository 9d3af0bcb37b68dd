#include "models/data/dataset.hpp"

namespace attend {

TextCodecs make_subword_codecs(const std::vector<SentencePair>& train, const SubwordSetup& setup,
                               const TokenizerOptions& tokenizer, std::uint64_t seed) {
  const bool per_side = !setup.source_model.empty() || !setup.target_model.empty();
  if (!setup.model.empty() && per_side) fail("subword: give one model for both sides, or one per side, not both");
  if (per_side && (setup.source_model.empty() || setup.target_model.empty()))
    fail("subword: per-side models need both a source and a target model");
  if (!setup.type.empty() && (!setup.model.empty() || per_side))
    fail("subword: train a model (type {}) or use existing ones, not both", setup.type);
  auto load = [](const std::string& path) { return std::make_shared<const SubwordModel>(SubwordModel::load(path)); };
  if (!setup.model.empty()) {
    auto joint = load(setup.model);
    return {TextCodec(joint, tokenizer), TextCodec(joint, tokenizer)};
  }
  if (per_side) return {TextCodec(load(setup.source_model), tokenizer), TextCodec(load(setup.target_model), tokenizer)};
  SubwordTrainOptions o;
  o.type = setup.type;
  o.vocab_size = setup.vocab_size;
  o.seed = seed;
  auto text_of = [&](bool source, bool target) {
    std::vector<std::string> out;
    for (const SentencePair& p : train) {
      if (source) out.push_back(tokenizer.lowercase ? to_lower(p.source) : p.source);
      if (target) out.push_back(tokenizer.lowercase ? to_lower(p.target) : p.target);
    }
    return out;
  };
  auto train_on = [&](const std::vector<std::string>& text) {
    return std::make_shared<const SubwordModel>(setup.trainer ? setup.trainer(text, o) : SubwordModel::train(text, o));
  };
  if (!setup.separate) {
    auto joint = train_on(text_of(true, true));
    return {TextCodec(joint, tokenizer), TextCodec(joint, tokenizer)};
  }
  return {TextCodec(train_on(text_of(true, false)), tokenizer), TextCodec(train_on(text_of(false, true)), tokenizer)};
}

std::vector<EncodedPair> encode_pairs(const std::vector<SentencePair>& pairs, const Vocabulary& source_vocab,
                                      const Vocabulary& target_vocab, const TextCodecs& codecs) {
  std::vector<EncodedPair> out;
  out.reserve(pairs.size());
  for (const SentencePair& pair : pairs)
    out.push_back({source_vocab.encode(codecs.source.encode(pair.source)),
                   target_vocab.encode(codecs.target.encode(pair.target))});
  return out;
}

Dataset build_dataset(const std::vector<SentencePair>& pairs, const DatasetOptions& options) {
  if (pairs.empty()) fail("dataset: no sentence pairs");
  Split split = split_indices(static_cast<std::int64_t>(pairs.size()), options.valid_fraction, options.seed);
  std::vector<SentencePair> train_text = subset(pairs, split.train), valid_text = subset(pairs, split.valid);
  Dataset d;
  // Subword models, like the vocabularies, learn from the training side only.
  d.codecs = options.subword.enabled()
                 ? make_subword_codecs(train_text, options.subword, options.tokenizer, options.seed)
                 : TextCodecs::words(options.tokenizer);
  // Vocabularies from the training side only: validation words the model never
  // saw become <unk>, as they would in real use. With subwords the vocabulary
  // holds the pieces the training text uses (not the whole SentencePiece model:
  // a piece never seen in training would keep its random embedding).
  TokenCounts source_counts, target_counts;
  for (const SentencePair& p : train_text) {
    count_tokens(source_counts, d.codecs.source.encode(p.source));
    count_tokens(target_counts, d.codecs.target.encode(p.target));
  }
  d.source_vocab = Vocabulary::build(source_counts, options.source_vocab);
  d.target_vocab = Vocabulary::build(target_counts, options.target_vocab);
  auto keep = [&](const std::vector<SentencePair>& text, std::vector<EncodedPair>& ids, std::vector<SentencePair>& kept) {
    std::vector<EncodedPair> all = encode_pairs(text, d.source_vocab, d.target_vocab, d.codecs);
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
  for (const EncodedPair& p : d.valid) {
    d.valid_source_unknown.tokens += static_cast<std::int64_t>(p.source.size());
    d.valid_target_unknown.tokens += static_cast<std::int64_t>(p.target.size());
    for (std::int64_t id : p.source) d.valid_source_unknown.unknown += id == Vocabulary::kUnk;
    for (std::int64_t id : p.target) d.valid_target_unknown.unknown += id == Vocabulary::kUnk;
  }
  return d;
}

std::vector<SentencePair> toy_pairs(const ToyCorpusOptions& options) {
  std::vector<SentencePair> out;
  for (const ToySentence& s : toy_corpus(options)) out.push_back({join_words(s.source), join_words(s.target)});
  return out;
}

}  // namespace attend
