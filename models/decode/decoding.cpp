#include "models/decode/decoding.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "autograd/ops.hpp"
#include "core/io/limits.hpp"
#include "models/decode/detail/decoding_steps.hpp"
#include "models/decode/ensemble.hpp"

namespace attend {

std::string_view length_penalty_name(LengthPenalty p) {
  switch (p) {
    case LengthPenalty::Average: return "average";
    case LengthPenalty::Gnmt: return "gnmt";
    case LengthPenalty::None: return "none";
  }
  return "?";
}

LengthPenalty parse_length_penalty(std::string_view name) {
  for (LengthPenalty p : {LengthPenalty::Average, LengthPenalty::Gnmt, LengthPenalty::None})
    if (name == length_penalty_name(p)) return p;
  fail("unknown length penalty '{}' (expected average, gnmt or none)", name);
}

double length_penalty_value(LengthPenalty kind, double alpha, std::int64_t length) {
  const double n = static_cast<double>(std::max<std::int64_t>(length, 1));
  switch (kind) {
    case LengthPenalty::Average: return std::pow(n, alpha);                        // |Y|^alpha
    case LengthPenalty::Gnmt: return std::pow((5.0 + n) / (5.0 + 1.0), alpha);  // (5 + |Y|)^alpha / 6^alpha
    case LengthPenalty::None: return 1.0;
  }
  return 1.0;
}

double coverage_penalty_value(double beta, const std::vector<std::vector<double>>& attention, std::int64_t source_length) {
  if (beta == 0) return 0;  // also when a token got no weight: beta * -inf would be NaN
  for (const std::vector<double>& row : attention)
    if (static_cast<std::int64_t>(row.size()) < source_length)
      fail("coverage penalty: an attention row has {} weights for {} source tokens", row.size(), source_length);
  double total = 0;
  for (std::int64_t i = 0; i < source_length; ++i) {
    double covered = 0;  // sum_j a_ij
    for (const std::vector<double>& row : attention) covered += row[static_cast<std::size_t>(i)];
    total += std::log(std::min(covered, 1.0));
  }
  return beta * total;
}

void score_hypothesis(Hypothesis& h, std::int64_t source_length, const DecodeOptions& options) {
  h.length_penalty = length_penalty_value(options.length_penalty, options.length_alpha,
                                          static_cast<std::int64_t>(h.tokens.size()));
  h.coverage_penalty = coverage_penalty_value(options.coverage_beta, h.attention, source_length);
  h.score = h.log_prob / h.length_penalty + h.coverage_penalty;
}

void check_decode_options(const DecodeOptions& o) {
  if (o.beam < 1) fail("decode: beam size must be at least 1, got {}", o.beam);
  if (o.beam > limits::kMaxBeam)
    fail("decode: beam size {} is above the limit {} (limits::kMaxBeam, core/io/limits.hpp)", o.beam, limits::kMaxBeam);
  if (o.n_best < 1 || o.n_best > o.beam)
    fail("decode: n-best must be between 1 and the beam size {}, got {}", o.beam, o.n_best);
  if (!(o.max_len_a >= 0) || o.max_len_b < 0)
    fail("decode: max length a * len + b needs a, b >= 0, got {} and {}", o.max_len_a, o.max_len_b);
  // The early-stopping bound of beam search needs a penalty that never falls
  // as a hypothesis grows (alpha >= 0) and a coverage term that is at most 0 (beta >= 0).
  if (!(o.length_alpha >= 0) || !std::isfinite(o.length_alpha))
    fail("decode: the length penalty's alpha must be finite and >= 0, got {}", o.length_alpha);
  if (!(o.coverage_beta >= 0) || !std::isfinite(o.coverage_beta))
    fail("decode: the coverage penalty's beta must be finite and >= 0, got {}", o.coverage_beta);
}

std::int64_t max_output_length(const DecodeOptions& o, std::int64_t source_length) {
  const double n = o.max_len_a * static_cast<double>(source_length) + static_cast<double>(o.max_len_b);
  if (!(n <= static_cast<double>(limits::kMaxSequence)))
    fail("decode: the maximum output length {} * {} + {} is above the limit {} (limits::kMaxSequence, core/io/limits.hpp)",
         o.max_len_a, source_length, o.max_len_b, limits::kMaxSequence);
  return std::max<std::int64_t>(
      1, static_cast<std::int64_t>(o.max_len_a * static_cast<double>(source_length)) + o.max_len_b);
}

std::vector<double> attention_row(const std::vector<double>& weights, std::int64_t row, std::int64_t S, std::int64_t length) {
  return std::vector<double>(weights.begin() + row * S, weights.begin() + row * S + length);
}

void ignore_eos(const DecodeOptions& o, DecoderEnsemble::Output& step, std::int64_t row) {
  if (!o.stop_at_eos) step.exclude(row, Vocabulary::kEos);
}

void check_coverage_needs_attention(const DecoderEnsemble& e, const DecodeOptions& o) {
  if (o.coverage_beta > 0 && !e.has_attention())
    fail("decode: the coverage penalty (beta {}) needs attention weights, and no model has attention", o.coverage_beta);
}

std::vector<std::int64_t> strip_eos(const std::vector<std::int64_t>& tokens) {
  std::vector<std::int64_t> out = tokens;
  if (!out.empty() && out.back() == Vocabulary::kEos) out.pop_back();
  return out;
}

std::vector<Hypothesis> greedy_decode(std::span<Seq2Seq* const> models, const Batch& batch, const DecodeOptions& options) {
  check_decode_options(options);
  NoGradGuard no_grad;
  const std::int64_t B = batch.size(), S = batch.source.shape[1];
  std::vector<std::int64_t> limit(static_cast<std::size_t>(B));
  std::int64_t longest = 0;
  for (std::int64_t b = 0; b < B; ++b) longest = std::max(longest, limit[b] = max_output_length(options, batch.source_lengths[b]));
  DecoderEnsemble ensemble(models, batch, 1);
  check_coverage_needs_attention(ensemble, options);
  std::vector<Hypothesis> out(static_cast<std::size_t>(B));
  std::vector<bool> live(static_cast<std::size_t>(B), true);
  std::vector<std::int64_t> previous(static_cast<std::size_t>(B), Vocabulary::kBos);
  for (std::int64_t t = 0; t < longest; ++t) {
    // Without stop_at_eos every row excludes </s> (ignore_eos) before its best token is read.
    // Greedy reads only each row's best token and its log p (or, without scores,
    // the token alone): the kernel stores no logits.
    DecoderEnsemble::Output& step = ensemble.step(previous, live, options.stop_at_eos ? -1 : Vocabulary::kEos,
                                                  /*keep_logits=*/false, /*log_probs=*/options.scores);
    bool any_live = false;
    for (std::int64_t b = 0; b < B; ++b) {
      if (!live[b]) continue;
      ignore_eos(options, step, b);
      const std::int64_t best = step.best_token(b);
      Hypothesis& h = out[b];
      h.tokens.push_back(best);
      if (options.scores) h.log_prob += step.log_prob(b, best);
      if (!step.weights.empty()) h.attention.push_back(attention_row(step.weights, b, S, batch.source_lengths[b]));
      previous[b] = best;
      live[b] = !(best == Vocabulary::kEos || static_cast<std::int64_t>(h.tokens.size()) >= limit[b]);
      any_live = any_live || live[b];
    }
    if (!any_live) break;
  }
  if (options.scores)
    for (std::int64_t b = 0; b < B; ++b) score_hypothesis(out[b], batch.source_lengths[b], options);
  return out;
}

std::vector<Hypothesis> greedy_decode(Seq2Seq& model, const Batch& batch, const DecodeOptions& options) {
  Seq2Seq* const models[] = {&model};
  return greedy_decode(models, batch, options);
}

std::vector<Hypothesis> beam_search(Seq2Seq& model, const Batch& batch, const DecodeOptions& options) {
  Seq2Seq* const models[] = {&model};
  std::vector<std::vector<Hypothesis>> n_best = beam_search_n_best(models, batch, options);
  std::vector<Hypothesis> out;
  for (std::vector<Hypothesis>& list : n_best) out.push_back(std::move(list.front()));
  return out;
}

std::vector<std::vector<Hypothesis>> decode_n_best(std::span<Seq2Seq* const> models, const Batch& batch,
                                                   const DecodeOptions& options) {
  if (options.beam > 1) return beam_search_n_best(models, batch, options);
  check_decode_options(options);  // n_best 1
  std::vector<std::vector<Hypothesis>> out;
  for (Hypothesis& h : greedy_decode(models, batch, options)) out.push_back({std::move(h)});
  return out;
}

std::vector<Hypothesis> translate(std::span<Seq2Seq* const> models, const Batch& batch, const DecodeOptions& options) {
  if (options.beam == 1) return greedy_decode(models, batch, options);
  std::vector<Hypothesis> out;
  for (std::vector<Hypothesis>& list : beam_search_n_best(models, batch, options)) out.push_back(std::move(list.front()));
  return out;
}

std::vector<Hypothesis> translate(Seq2Seq& model, const Batch& batch, const DecodeOptions& options) {
  Seq2Seq* const models[] = {&model};
  return translate(models, batch, options);
}

std::string nbest_line(std::int64_t sentence, std::string_view text, const Hypothesis& h) {
  return fmt::format("{} ||| {} ||| LogProb= {} LengthPenalty= {} CoveragePenalty= {} ||| {}", sentence, text, h.log_prob,
                     h.length_penalty, h.coverage_penalty, h.score);
}

}  // namespace attend
