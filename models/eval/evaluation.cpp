#include "models/eval/evaluation.hpp"

#include <algorithm>

#include "autograd/ops.hpp"
#include "core/io/limits.hpp"
#include "models/decode/ensemble.hpp"

namespace attend {

std::size_t translation_batch_end(std::span<Seq2Seq* const> models, std::span<const std::int64_t> lengths,
                                  std::size_t start, std::size_t most, const DecodeOptions& options) {
  if (start >= lengths.size() || most < 1)
    fail("translation_batch_end: start {} of {} sentences, at most {} a batch", start, lengths.size(), most);
  const std::uint64_t limit = limits::decode_memory_limit();
  std::size_t end = start + 1;
  while (end < lengths.size() && end - start < most &&
         decode_memory_bytes(models, lengths.subspan(start, end + 1 - start), options) <= limit)
    ++end;
  return end;
}

std::vector<TextTranslation> translate_text(Seq2Seq& model, const std::vector<std::string>& sentences,
                                            const Vocabulary& source_vocab, const Vocabulary& target_vocab,
                                            const TokenizerOptions& tokenizer, const DecodeOptions& options,
                                            std::int64_t batch_size) {
  return translate_text(model, sentences, source_vocab, target_vocab, TextCodecs::words(tokenizer), options, batch_size);
}

std::vector<TextTranslation> translate_text(Seq2Seq& model, const std::vector<std::string>& sentences,
                                            const Vocabulary& source_vocab, const Vocabulary& target_vocab,
                                            const TextCodecs& codecs, const DecodeOptions& options,
                                            std::int64_t batch_size) {
  DecodeOptions best = options;
  best.n_best = 1;
  Seq2Seq* models[] = {&model};
  std::vector<std::vector<TextTranslation>> lists =
      translate_text_n_best(models, sentences, source_vocab, target_vocab, codecs, best, batch_size);
  std::vector<TextTranslation> out;
  out.reserve(lists.size());
  for (std::vector<TextTranslation>& list : lists) out.push_back(std::move(list.front()));
  return out;
}

std::vector<std::vector<TextTranslation>> translate_text_n_best(std::span<Seq2Seq* const> models,
                                                                const std::vector<std::string>& sentences,
                                                                const Vocabulary& source_vocab,
                                                                const Vocabulary& target_vocab, const TextCodecs& codecs,
                                                                const DecodeOptions& options, std::int64_t batch_size) {
  if (batch_size < 1) fail("translate_text: batch_size must be positive, got {}", batch_size);
  check_decode_options(options);
  check_ensemble(models);
  // An empty sentence keeps one empty translation, whatever n_best is.
  std::vector<std::vector<TextTranslation>> out(sentences.size(), std::vector<TextTranslation>(1));
  std::vector<EncodedPair> encoded;
  std::vector<std::size_t> rows;  // which sentence each encoded pair is
  for (std::size_t i = 0; i < sentences.size(); ++i) {
    TextTranslation& t = out[i].front();
    t.source_tokens = codecs.source.encode(sentences[i]);
    WordMap words = codecs.source.words(t.source_tokens, sentences[i]);
    t.source_words = std::move(words.words);
    t.source_word_of = std::move(words.word_of);
    if (t.source_tokens.empty()) continue;
    encoded.push_back({source_vocab.encode(t.source_tokens), {}});
    rows.push_back(i);
  }
  BatchOptions batch_options;
  batch_options.mask_dtype = models.front()->dtype();
  std::vector<std::int64_t> lengths;
  for (const EncodedPair& pair : encoded) lengths.push_back(static_cast<std::int64_t>(pair.source.size()));
  for (std::size_t start = 0, end = 0; start < encoded.size(); start = end) {
    end = translation_batch_end(models, lengths, start, static_cast<std::size_t>(batch_size), options);
    std::vector<std::int64_t> ids;
    for (std::size_t k = start; k < end; ++k) ids.push_back(static_cast<std::int64_t>(k));
    Batch batch = make_batch(encoded, ids, batch_options);
    std::vector<std::vector<Hypothesis>> lists = decode_n_best(models, batch, options);
    for (std::size_t k = 0; k < lists.size(); ++k) {
      std::vector<TextTranslation>& list = out[rows[start + k]];
      const TextTranslation source = list.front();  // the source side, shared by every hypothesis
      list.clear();
      for (const Hypothesis& h : lists[k]) {
        TextTranslation t = source;
        t.output_tokens = target_vocab.decode(strip_eos(h.tokens), true);
        t.text = codecs.target.decode(t.output_tokens);
        WordMap words = codecs.target.words(t.output_tokens, t.text);
        t.output_words = std::move(words.words);
        t.output_word_of = std::move(words.word_of);
        t.attention = h.attention;
        t.log_prob = h.log_prob;
        t.score = h.score;
        t.length_penalty = h.length_penalty;
        t.coverage_penalty = h.coverage_penalty;
        list.push_back(std::move(t));
      }
      if (list.empty()) list.push_back(source);
    }
  }
  return out;
}

BleuReport evaluate_bleu_by_length(Seq2Seq& model, const std::vector<SentencePair>& pairs, const Vocabulary& source_vocab,
                                   const Vocabulary& target_vocab, const TokenizerOptions& tokenizer,
                                   const DecodeOptions& options, std::int64_t width) {
  return evaluate_bleu_by_length(model, pairs, source_vocab, target_vocab, TextCodecs::words(tokenizer), options, width);
}

BleuReport evaluate_bleu_by_length(Seq2Seq& model, const std::vector<SentencePair>& pairs, const Vocabulary& source_vocab,
                                   const Vocabulary& target_vocab, const TextCodecs& codecs,
                                   const DecodeOptions& options, std::int64_t width) {
  if (width < 1) fail("evaluate_bleu_by_length: bucket width must be positive, got {}", width);
  std::vector<std::string> sources, references;
  for (const SentencePair& p : pairs) {
    sources.push_back(p.source);
    references.push_back(p.target);
  }
  std::vector<TextTranslation> translations = translate_text(model, sources, source_vocab, target_vocab, codecs, options);
  BleuReport report;
  for (const TextTranslation& t : translations) report.hypotheses.push_back(t.text);
  report.overall = corpus_bleu(report.hypotheses, references);
  std::int64_t longest = 0;
  for (const TextTranslation& t : translations) longest = std::max<std::int64_t>(longest, static_cast<std::int64_t>(t.source_words.size()));
  for (std::int64_t lo = 1; lo <= longest; lo += width) {
    LengthBucket bucket;
    bucket.lo = lo;
    bucket.hi = lo + width - 1;
    std::vector<std::string> hyp, ref;
    for (std::size_t i = 0; i < translations.size(); ++i) {
      const auto n = static_cast<std::int64_t>(translations[i].source_words.size());
      if (n < bucket.lo || n > bucket.hi) continue;
      hyp.push_back(report.hypotheses[i]);
      ref.push_back(references[i]);
    }
    bucket.sentences = static_cast<std::int64_t>(hyp.size());
    if (!hyp.empty()) bucket.bleu = corpus_bleu(hyp, ref);
    report.buckets.push_back(bucket);
  }
  return report;
}

std::uint64_t attention_gradients_bytes(std::int64_t source_tokens, std::int64_t target_tokens) {
  // Per cell: α and dL/dα as doubles (16 bytes), the step's recorded scores,
  // weights and their gradients (float32, 16), and the two text grids with their
  // side-by-side copy; 96 bytes bound them all.
  constexpr std::uint64_t kBytesPerCell = 96;
  const auto cells = static_cast<std::uint64_t>(std::max<std::int64_t>(source_tokens, 0) + 1) *
                     static_cast<std::uint64_t>(std::max<std::int64_t>(target_tokens, 0) + 1);
  return cells * kBytesPerCell;
}

void check_attention_gradients_memory(std::int64_t source_tokens, std::int64_t target_tokens) {
  const std::uint64_t need = attention_gradients_bytes(source_tokens, target_tokens);
  const std::uint64_t limit = limits::decode_memory_limit();
  if (need > limit)
    fail("attention_gradients: a source of {} tokens and a target of {} need about {} for α and dL/dα, more than "
         "the {} decoding may take (limits::kMaxDecodeBytes, core/io/limits.hpp)",
         source_tokens, target_tokens, limits::bytes_text(need), limits::bytes_text(limit));
}

AttentionGradients attention_gradients(Seq2Seq& model, const std::vector<std::string>& source_tokens,
                                       const std::vector<std::string>& target_tokens, const Vocabulary& source_vocab,
                                       const Vocabulary& target_vocab) {
  if (model.config().attention == AttentionKind::None) fail("attention_gradients: the model has no attention");
  if (source_tokens.empty()) fail("attention_gradients: the source sentence is empty");
  check_attention_gradients_memory(static_cast<std::int64_t>(source_tokens.size()),
                                   static_cast<std::int64_t>(target_tokens.size()));
  std::vector<EncodedPair> pair = {{source_vocab.encode(source_tokens), target_vocab.encode(target_tokens)}};
  BatchOptions batch_options;
  batch_options.mask_dtype = model.dtype();
  const std::int64_t ids[] = {0};
  Batch batch = make_batch(pair, ids, batch_options);
  const std::int64_t T = batch.decoder_input.shape[1], S = batch.source.shape[1];
  AttentionGradients out;
  out.source_tokens = source_tokens;
  out.target_tokens = target_tokens;
  out.target_tokens.push_back("</s>");
  out.alpha.assign(static_cast<std::size_t>(T), {});
  out.dalpha.assign(static_cast<std::size_t>(T), std::vector<double>(static_cast<std::size_t>(S), 0.0));
  model.on_weights_grad = [&](std::int64_t t, const Tensor& d) {
    std::vector<double> row = d.to(Float64).to_vector();
    for (std::int64_t j = 0; j < S; ++j) out.dalpha[t][j] += row[j];
  };
  // The teacher-forced pass of Seq2Seq::loss, keeping each step's weights.
  Seq2Seq::Encoded enc = model.encode(batch.source, batch.source_lengths, batch.source_mask);
  Seq2Seq::State state = model.initial_state(enc);
  std::vector<Tensor> attentional;
  for (std::int64_t t = 0; t < T; ++t) {
    Seq2Seq::Step step = model.step(enc, Indices({batch.decoder_input.values[t]}), state);
    state = step.state;
    attentional.push_back(step.attentional);
    out.alpha[t] = step.weights.to(Float64).to_vector();
  }
  Tensor logits = model.logits(stack(attentional, 0));  // (T, 1, V)
  Tensor loss = cross_entropy(reshape(logits, Shape{T, model.config().target_vocab}),
                              Indices(batch.decoder_target.values), Vocabulary::kPad);
  out.loss = loss.item();
  loss.backward();
  model.on_weights_grad = nullptr;
  model.zero_grad();
  return out;
}

}  // namespace attend
