#pragma once
// Translating text and scoring it: sentences in, detokenized translations (with
// their attention) out, and BLEU overall and by source length.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/eval/bleu.hpp"
#include "models/data/corpus.hpp"
#include "models/decode/decoding.hpp"
#include "models/data/text_codec.hpp"
#include "models/data/tokenizer.hpp"
#include "models/data/vocabulary.hpp"

namespace attend {

struct TextTranslation {
  std::vector<std::string> source_tokens;  // as the model saw them (unknown words shown as typed)
  std::vector<std::string> output_tokens;  // without </s>
  std::string text;                        // detokenized output
  // The words of the source and of the output, and for each source/output
  // token the index of its word. Words: the tokens, the identity map.
  // Subwords: a piece starting with U+2581 starts a word; the words are the
  // whitespace-separated words of the source text and of `text`.
  std::vector<std::string> source_words, output_words;
  std::vector<std::int64_t> source_word_of, output_word_of;
  std::vector<std::vector<double>> attention;  // [output token][source token] (empty for attention none)
  double log_prob = 0;
  double score = 0, length_penalty = 1, coverage_penalty = 0;  // as in Hypothesis (models/decode/decoding.hpp)
};

// Translates each sentence (batched; empty sentences give empty translations).
// The codecs turn text into tokens and output tokens back into text (words or
// SentencePiece pieces: models/data/text_codec.hpp).
std::vector<TextTranslation> translate_text(Seq2Seq& model, const std::vector<std::string>& sentences,
                                            const Vocabulary& source_vocab, const Vocabulary& target_vocab,
                                            const TextCodecs& codecs, const DecodeOptions& options = {},
                                            std::int64_t batch_size = 64);
// The options.n_best best translations of each sentence, best first, decoded by
// the models together (an ensemble: the mean of their log-probabilities; one
// model is the usual case). The models share the vocabularies and codecs.
std::vector<std::vector<TextTranslation>> translate_text_n_best(std::span<Seq2Seq* const> models,
                                                                const std::vector<std::string>& sentences,
                                                                const Vocabulary& source_vocab,
                                                                const Vocabulary& target_vocab, const TextCodecs& codecs,
                                                                const DecodeOptions& options, std::int64_t batch_size = 64);
// Where the batch of sentences with these source lengths (tokens) that starts
// at `start` ends (one past its last): at most `most` sentences, and no more
// than decode within limits::decode_memory_limit() together
// (decode_memory_bytes); always one at least, which decoding checks alone.
// translate_text and attend translate batch by it, so that sentences that each
// fit do not add up to many times the limit.
std::size_t translation_batch_end(std::span<Seq2Seq* const> models, std::span<const std::int64_t> lengths,
                                  std::size_t start, std::size_t most, const DecodeOptions& options);
// The same for a words model with these tokenizer options.
std::vector<TextTranslation> translate_text(Seq2Seq& model, const std::vector<std::string>& sentences,
                                            const Vocabulary& source_vocab, const Vocabulary& target_vocab,
                                            const TokenizerOptions& tokenizer, const DecodeOptions& options = {},
                                            std::int64_t batch_size = 64);

struct LengthBucket {
  std::int64_t lo = 0, hi = 0;  // source lengths lo..hi (words, for a subword model too)
  std::int64_t sentences = 0;
  BleuScore bleu;
};

struct BleuReport {
  BleuScore overall;
  std::vector<LengthBucket> buckets;  // 1-10, 11-20, ... up to the longest sentence
  std::vector<std::string> hypotheses;  // one per pair, in order
};

// BLEU of the model's translations of pairs' sources against their targets,
// overall and per bucket of `width` source words. BLEU is sacreBLEU's, on the
// detokenized translations (a subword model's pieces decoded back to text).
BleuReport evaluate_bleu_by_length(Seq2Seq& model, const std::vector<SentencePair>& pairs, const Vocabulary& source_vocab,
                                   const Vocabulary& target_vocab, const TextCodecs& codecs,
                                   const DecodeOptions& options = {}, std::int64_t width = 10);
BleuReport evaluate_bleu_by_length(Seq2Seq& model, const std::vector<SentencePair>& pairs, const Vocabulary& source_vocab,
                                   const Vocabulary& target_vocab, const TokenizerOptions& tokenizer,
                                   const DecodeOptions& options = {}, std::int64_t width = 10);

// One sentence pair through the model with teacher forcing, and the gradient
// of its loss at the attention weights: which alignments the loss wants up
// (dL/dalpha < 0: it falls if they grow) and which down (> 0).
struct AttentionGradients {
  std::vector<std::string> source_tokens, target_tokens;  // target ends with </s>
  std::vector<std::vector<double>> alpha, dalpha;          // [target token][source token]
  double loss = 0;                                         // mean per target token
};
// What attention_gradients holds for a source of S tokens and a target of T (each
// with its </s>): α and dL/dα, the recorded rows of every step and the printed
// grids grow with S·T. check_attention_gradients_memory throws when that is over
// limits::decode_memory_limit(), naming both lengths, before any work.
std::uint64_t attention_gradients_bytes(std::int64_t source_tokens, std::int64_t target_tokens);
void check_attention_gradients_memory(std::int64_t source_tokens, std::int64_t target_tokens);
AttentionGradients attention_gradients(Seq2Seq& model, const std::vector<std::string>& source_tokens,
                                       const std::vector<std::string>& target_tokens, const Vocabulary& source_vocab,
                                       const Vocabulary& target_vocab);

}  // namespace attend
