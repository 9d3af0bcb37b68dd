#pragma once
// Translating with a trained Seq2Seq (or an ensemble of them), batched over
// sentences: greedy decoding and beam search. Both return, for each sentence,
// the chosen tokens and the attention matrix of the chosen hypothesis (one row
// per output token, one column per real source token); beam search can return
// the n best hypotheses it found.
//
// Scores. With log p the sum of the log-probabilities of the tokens and |Y| the
// number of output tokens (</s> included, when the model ended the sentence):
//   score = log p / lp(Y) + cp(X; Y)
//   lp: Average  |Y|^alpha                      (the default)
//       Gnmt     (5 + |Y|)^alpha / (5 + 1)^alpha  (Wu et al. 2016, eq. 14)
//       None     1
//   cp = beta * sum_i log(min(sum_j a_ij, 1))   (Wu et al. 2016; 0 when beta is 0)
//     a_ij the attention weight of output token j on source token i: cp is 0 once
//     every source token got a total weight of at least 1, and more negative the
//     less a token was looked at.
// Ensembles (several models over the same vocabularies): at every step the
// next token's log-probability is the mean of the models' log-probabilities
// (log_softmax of each, averaged), and the attention reported (and used by cp)
// is the mean of the weights of the models that have attention.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/data/corpus.hpp"
#include "models/seq2seq.hpp"

namespace attend {

enum class LengthPenalty { Average, Gnmt, None };
std::string_view length_penalty_name(LengthPenalty p);
LengthPenalty parse_length_penalty(std::string_view name);  // average|gnmt|none, else Error

struct DecodeOptions {
  std::int64_t beam = 1;        // 1: greedy
  double length_alpha = 0.6;    // alpha of the length penalty (>= 0)
  double max_len_a = 1.5;       // at most a * source length + b output tokens
  std::int64_t max_len_b = 5;
  // false: </s> is never chosen (its probability is ignored), so every sentence
  // gets exactly max_len_a * source length + max_len_b tokens, none of them </s>:
  // a fixed number of decoder steps, for benchmarks.
  bool stop_at_eos = true;
  std::int64_t n_best = 1;      // hypotheses per sentence, best first (1 <= n_best <= beam)
  LengthPenalty length_penalty = LengthPenalty::Average;
  double coverage_beta = 0;     // beta of the coverage penalty (>= 0; needs attention when > 0)
  // false: greedy decoding leaves every score of its hypotheses at its default
  // (log_prob and score 0, length_penalty 1): its output projection then finds
  // each row's best token alone, with no exponential per logit (what a plain
  // translation or BLEU reads; `attend bench` times greedy both ways). Beam
  // search needs the scores to search, and always has them.
  bool scores = true;
};

struct Hypothesis {
  std::vector<std::int64_t> tokens;           // ends with </s> when the model ended the sentence
  std::vector<std::vector<double>> attention;  // [tokens.size()][source length]; empty for attention none
  double log_prob = 0;                          // log p: sum of log p(token) (the ensemble's mean per token)
  double score = 0;                             // log p / length_penalty + coverage_penalty
  double length_penalty = 1;                    // lp(Y), the divisor
  double coverage_penalty = 0;                  // cp(X; Y), beta included
};

// The penalties and the score of the header comment.
double length_penalty_value(LengthPenalty kind, double alpha, std::int64_t length);
// attention: one row per output token, each with at least source_length weights
// (the first source_length are used; fewer is an Error). -inf when a source token got no weight at all.
double coverage_penalty_value(double beta, const std::vector<std::vector<double>>& attention,
                              std::int64_t source_length);
// Fills h.length_penalty, h.coverage_penalty and h.score from h.tokens, h.attention, h.log_prob.
void score_hypothesis(Hypothesis& h, std::int64_t source_length, const DecodeOptions& options);

// Throws Error naming the bad option (beam, n_best, alpha, beta, maximum length).
void check_decode_options(const DecodeOptions& options);

// Memory. Decoding a sentence of S source tokens (T = max_len_a * S + max_len_b
// output tokens at most, beam K, M models) holds, from its largest parts:
//   attention rows  8 T S bytes per hypothesis kept, models with attention
//                   only: greedy 2 (the hypothesis, and the copy translate_text
//                   makes); beam search 2K + n_best (its trellis holds up to 2K
//                   rows a step, K live beams and up to K finishing, while the
//                   n best are read back; their copies come after it is gone).
//   encoder         per model, K rows of (S, 3 Hk + 4) values (states, keys,
//                   mask, the step's scores and weights), and one sentence's
//                   layer outputs and gates (S, embed + 8 hidden per direction).
// An upper bound on what a batch of sentences of these lengths needs, in bytes
// (saturating at 2^64 - 1): the sum over its sentences, the encoder part of each
// at the longest length (the batch is padded to it).
std::uint64_t decode_memory_bytes(std::span<Seq2Seq* const> models, std::span<const std::int64_t> source_lengths,
                                  const DecodeOptions& options);
// The longest source (tokens) whose decode_memory_bytes is at most max_bytes (0 if none).
std::int64_t max_decodable_source(std::span<Seq2Seq* const> models, const DecodeOptions& options,
                                  std::uint64_t max_bytes);
// "" when a sentence of source_length tokens needs at most
// limits::decode_memory_limit(), else what is wrong: how much, why, and how
// long a source fits. check_decode_memory throws it as an Error.
std::string decode_memory_problem(std::span<Seq2Seq* const> models, std::int64_t source_length,
                                  const DecodeOptions& options);
void check_decode_memory(std::span<Seq2Seq* const> models, std::int64_t source_length, const DecodeOptions& options);

// Decodes every sentence of the batch (only its source side is used). Runs
// without recording a graph; call model.eval() first so that dropout is off.
// Each sentence is checked alone first (check_decode_memory); a batch's total
// (decode_memory_bytes of all its lengths) is the caller's to bound.
std::vector<Hypothesis> greedy_decode(Seq2Seq& model, const Batch& batch, const DecodeOptions& options = {});
std::vector<Hypothesis> beam_search(Seq2Seq& model, const Batch& batch, const DecodeOptions& options);
// greedy_decode when options.beam == 1, else beam_search.
std::vector<Hypothesis> translate(Seq2Seq& model, const Batch& batch, const DecodeOptions& options = {});

// Ensembles: every model must have the same vocabulary sizes and dtype (else
// Error); one model decodes exactly as the functions above. For each sentence,
// the options.n_best best hypotheses, best first (one for greedy decoding;
// fewer than n_best only when the beam cannot find so many, e.g. a vocabulary
// smaller than the beam).
std::vector<std::vector<Hypothesis>> decode_n_best(std::span<Seq2Seq* const> models, const Batch& batch,
                                                   const DecodeOptions& options);
std::vector<Hypothesis> greedy_decode(std::span<Seq2Seq* const> models, const Batch& batch, const DecodeOptions& options);
// The best hypothesis of each sentence (greedy when options.beam == 1).
std::vector<Hypothesis> translate(std::span<Seq2Seq* const> models, const Batch& batch, const DecodeOptions& options = {});

// The output tokens without the final </s>.
std::vector<std::int64_t> strip_eos(const std::vector<std::int64_t>& tokens);

// One line of a Moses n-best list (without the newline), sentence index from 0:
//   "3 ||| the text ||| LogProb= -2.5 LengthPenalty= 1.71 CoveragePenalty= 0 ||| -1.46"
std::string nbest_line(std::int64_t sentence, std::string_view text, const Hypothesis& h);

}  // namespace attend
