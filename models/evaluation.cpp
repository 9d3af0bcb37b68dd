#include "models/evaluation.hpp"

#include <algorithm>

namespace attend {

std::vector<TextTranslation> translate_text(Seq2Seq& model, const std::vector<std::string>& sentences,
                                            const Vocabulary& source_vocab, const Vocabulary& target_vocab,
                                            const TokenizerOptions& tokenizer, const DecodeOptions& options,
                                            std::int64_t batch_size) {
  std::vector<TextTranslation> out(sentences.size());
  std::vector<EncodedPair> encoded;
  std::vector<std::size_t> rows;  // which sentence each encoded pair is
  for (std::size_t i = 0; i < sentences.size(); ++i) {
    out[i].source_tokens = tokenize(sentences[i], tokenizer);
    if (out[i].source_tokens.empty()) continue;
    encoded.push_back({source_vocab.encode(out[i].source_tokens), {}});
    rows.push_back(i);
  }
  BatchOptions batch_options;
  batch_options.mask_dtype = model.dtype();
  for (std::size_t start = 0; start < encoded.size(); start += static_cast<std::size_t>(batch_size)) {
    const std::size_t end = std::min(encoded.size(), start + static_cast<std::size_t>(batch_size));
    std::vector<std::int64_t> ids;
    for (std::size_t k = start; k < end; ++k) ids.push_back(static_cast<std::int64_t>(k));
    Batch batch = make_batch(encoded, ids, batch_options);
    std::vector<Hypothesis> hyps = translate(model, batch, options);
    for (std::size_t k = 0; k < hyps.size(); ++k) {
      TextTranslation& t = out[rows[start + k]];
      t.output_tokens = target_vocab.decode(strip_eos(hyps[k].tokens), true);
      t.text = detokenize(t.output_tokens);
      t.attention = hyps[k].attention;
      t.log_prob = hyps[k].log_prob;
    }
  }
  return out;
}

BleuReport evaluate_bleu_by_length(Seq2Seq& model, const std::vector<SentencePair>& pairs, const Vocabulary& source_vocab,
                                   const Vocabulary& target_vocab, const TokenizerOptions& tokenizer,
                                   const DecodeOptions& options, std::int64_t width) {
  if (width < 1) fail("evaluate_bleu_by_length: bucket width must be positive, got {}", width);
  std::vector<std::string> sources, references;
  for (const SentencePair& p : pairs) {
    sources.push_back(p.source);
    references.push_back(p.target);
  }
  std::vector<TextTranslation> translations = translate_text(model, sources, source_vocab, target_vocab, tokenizer, options);
  BleuReport report;
  for (const TextTranslation& t : translations) report.hypotheses.push_back(t.text);
  report.overall = corpus_bleu(report.hypotheses, references);
  std::int64_t longest = 0;
  for (const TextTranslation& t : translations) longest = std::max<std::int64_t>(longest, static_cast<std::int64_t>(t.source_tokens.size()));
  for (std::int64_t lo = 1; lo <= longest; lo += width) {
    LengthBucket bucket;
    bucket.lo = lo;
    bucket.hi = lo + width - 1;
    std::vector<std::string> hyp, ref;
    for (std::size_t i = 0; i < translations.size(); ++i) {
      const auto n = static_cast<std::int64_t>(translations[i].source_tokens.size());
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

}  // namespace attend
