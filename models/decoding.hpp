#pragma once
// Translating with a trained Seq2Seq, batched over sentences: greedy decoding
// and beam search. Both return, for each sentence, the chosen tokens and the
// attention matrix of the chosen hypothesis (one row per output token, one
// column per real source token).
#include <cstdint>
#include <vector>

#include "models/corpus.hpp"
#include "models/seq2seq.hpp"

namespace attend {

struct DecodeOptions {
  std::int64_t beam = 1;        // 1: greedy
  double length_alpha = 0.6;    // beam score = log p / length^alpha
  double max_len_a = 1.5;       // at most a * source length + b output tokens
  std::int64_t max_len_b = 5;
  // false: </s> is never chosen (its probability is ignored), so every sentence
  // gets exactly max_len_a * source length + max_len_b tokens, none of them </s>:
  // a fixed number of decoder steps, for benchmarks.
  bool stop_at_eos = true;
};

struct Hypothesis {
  std::vector<std::int64_t> tokens;           // ends with </s> when the model ended the sentence
  std::vector<std::vector<double>> attention;  // [tokens.size()][source length]; empty for attention none
  double log_prob = 0;                          // sum of log p(token)
  double score = 0;                             // log_prob / length^alpha (beam); log_prob (greedy)
};

// Decodes every sentence of the batch (only its source side is used). Runs
// without recording a graph; call model.eval() first so that dropout is off.
std::vector<Hypothesis> greedy_decode(Seq2Seq& model, const Batch& batch, const DecodeOptions& options = {});
std::vector<Hypothesis> beam_search(Seq2Seq& model, const Batch& batch, const DecodeOptions& options);
// greedy_decode when options.beam == 1, else beam_search.
std::vector<Hypothesis> translate(Seq2Seq& model, const Batch& batch, const DecodeOptions& options = {});

// The output tokens without the final </s>.
std::vector<std::int64_t> strip_eos(const std::vector<std::int64_t>& tokens);

}  // namespace attend
