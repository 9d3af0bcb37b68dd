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

namespace {

// The two parts of the header's estimate for one sentence of S tokens, in bytes
// (doubles: they may pass 2^64 before they are compared with anything).
double attention_rows_bytes(std::span<Seq2Seq* const> models, double S, const DecodeOptions& o) {
  const bool attention = std::any_of(models.begin(), models.end(), [](const Seq2Seq* m) {
    return m != nullptr && m->config().attention != AttentionKind::None;
  });
  if (!attention) return 0;
  const double T = std::max(1.0, std::floor(o.max_len_a * S) + static_cast<double>(o.max_len_b));
  const double kept = o.beam == 1 ? 2.0 : 2.0 * static_cast<double>(o.beam) + static_cast<double>(o.n_best);
  return kept * T * S * sizeof(double);
}

double encoder_bytes(std::span<Seq2Seq* const> models, double S, const DecodeOptions& o) {
  double total = 0;
  for (const Seq2Seq* m : models) {
    if (m == nullptr) continue;
    const Seq2SeqConfig& c = m->config();
    const double value = static_cast<double>(dtype_size(m->dtype()));
    const double per_row = static_cast<double>(3 * c.key_size() + 4) * value + 2 * sizeof(double);  // weights in double
    const double once = static_cast<double>(c.embed + 8 * c.key_size()) * value;
    total += S * (static_cast<double>(o.beam) * per_row + once);
  }
  return total;
}

std::uint64_t saturated(double bytes) {
  return bytes >= 18446744073709551615.0 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(bytes);
}

}  // namespace

std::uint64_t decode_memory_bytes(std::span<Seq2Seq* const> models, std::span<const std::int64_t> source_lengths,
                                  const DecodeOptions& options) {
  double longest = 0, total = 0;
  for (std::int64_t S : source_lengths) {
    longest = std::max(longest, static_cast<double>(S));
    total += attention_rows_bytes(models, static_cast<double>(S), options);
  }
  total += static_cast<double>(source_lengths.size()) * encoder_bytes(models, longest, options);
  return saturated(total);
}

std::int64_t max_decodable_source(std::span<Seq2Seq* const> models, const DecodeOptions& options, std::uint64_t max_bytes) {
  const auto fits = [&](std::int64_t S) {
    const std::int64_t one[] = {S};
    return decode_memory_bytes(models, one, options) <= max_bytes;
  };
  std::int64_t lo = 0, hi = std::int64_t{1} << 40;  // fits(lo); the need grows with S
  if (fits(hi)) return hi;
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

std::string decode_memory_problem(std::span<Seq2Seq* const> models, std::int64_t source_length,
                                  const DecodeOptions& options) {
  const std::int64_t one[] = {source_length};
  const std::uint64_t need = decode_memory_bytes(models, one, options), limit = limits::decode_memory_limit();
  if (need <= limit) return "";
  const double T = std::max(1.0, std::floor(options.max_len_a * static_cast<double>(source_length)) +
                                     static_cast<double>(options.max_len_b));
  const std::string why = attention_rows_bytes(models, static_cast<double>(source_length), options) > 0
                              ? fmt::format("up to {:.0f} output tokens, each with an attention row over the source", T)
                              : "the encoder's states for every row";
  return fmt::format("a source of {} tokens would take about {} to decode (beam {}: {}), more than the limit of {} "
                     "(limits::kMaxDecodeBytes, core/io/limits.hpp); sources of at most {} tokens fit",
                     source_length, limits::bytes_text(need), options.beam, why, limits::bytes_text(limit),
                     max_decodable_source(models, options, limit));
}

void check_decode_memory(std::span<Seq2Seq* const> models, std::int64_t source_length, const DecodeOptions& options) {
  if (std::string problem = decode_memory_problem(models, source_length, options); !problem.empty())
    fail("decode: {}", problem);
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
  for (std::int64_t b = 0; b < B; ++b) {
    longest = std::max(longest, limit[b] = max_output_length(options, batch.source_lengths[b]));
    check_decode_memory(models, batch.source_lengths[b], options);
  }
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
