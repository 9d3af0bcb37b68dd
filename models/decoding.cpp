#include "models/decoding.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "autograd/ops.hpp"

namespace attend {

namespace {

std::int64_t max_length(const DecodeOptions& o, std::int64_t source_length) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(o.max_len_a * static_cast<double>(source_length)) + o.max_len_b);
}

// Rows of a (N, ...) tensor, picked by index: (rows.size(), ...).
Tensor pick_rows(const Tensor& x, const std::vector<std::int64_t>& rows) {
  if (!x.defined()) return x;
  const std::int64_t n = x.size(0), rest = x.numel() / std::max<std::int64_t>(n, 1);
  Tensor picked = index_select(reshape(x, Shape{n, rest}), Indices(rows));
  return reshape(picked, x.shape().with(0, static_cast<std::int64_t>(rows.size())));
}

// log_softmax of one row of logits, in double.
void log_softmax_row(const double* z, std::int64_t V, std::vector<double>& out) {
  out.resize(static_cast<std::size_t>(V));
  const double m = *std::max_element(z, z + V);
  double total = 0;
  for (std::int64_t v = 0; v < V; ++v) total += std::exp(z[v] - m);
  const double log_total = m + std::log(total);
  for (std::int64_t v = 0; v < V; ++v) out[v] = z[v] - log_total;
}

// Without stop_at_eos, </s> can never be picked: the row's best tokens are sought
// among the others.
void ignore_eos(const DecodeOptions& o, std::vector<double>& logp) {
  if (!o.stop_at_eos) logp[Vocabulary::kEos] = -std::numeric_limits<double>::infinity();
}

void check_options(const DecodeOptions& o) {
  if (o.beam < 1) fail("decode: beam size must be at least 1, got {}", o.beam);
  if (o.max_len_a < 0 || o.max_len_b < 0) fail("decode: max length a * len + b needs a, b >= 0, got {} and {}", o.max_len_a, o.max_len_b);
}

std::vector<double> weights_row(const std::vector<double>& all, std::int64_t row, std::int64_t S, std::int64_t length) {
  return std::vector<double>(all.begin() + row * S, all.begin() + row * S + length);
}

}  // namespace

std::vector<std::int64_t> strip_eos(const std::vector<std::int64_t>& tokens) {
  std::vector<std::int64_t> out = tokens;
  if (!out.empty() && out.back() == Vocabulary::kEos) out.pop_back();
  return out;
}

std::vector<Hypothesis> greedy_decode(Seq2Seq& model, const Batch& batch, const DecodeOptions& options) {
  check_options(options);
  NoGradGuard no_grad;
  const std::int64_t B = batch.size(), S = batch.source.shape[1];
  Seq2Seq::Encoded enc = model.encode(batch.source, batch.source_lengths, batch.source_mask);
  Seq2Seq::State state = model.initial_state(enc);
  std::vector<Hypothesis> out(static_cast<std::size_t>(B));
  std::vector<bool> done(static_cast<std::size_t>(B), false);
  std::vector<std::int64_t> previous(static_cast<std::size_t>(B), Vocabulary::kBos);
  std::int64_t longest = 0;
  for (std::int64_t b = 0; b < B; ++b) longest = std::max(longest, max_length(options, batch.source_lengths[b]));
  std::vector<double> logp;
  for (std::int64_t t = 0; t < longest; ++t) {
    Seq2Seq::Step step = model.step(enc, Indices(previous), state);
    state = step.state;
    const Tensor scores = model.logits(step.attentional).to(Float64);  // (B, V)
    const std::int64_t V = scores.size(1);
    const std::vector<double> weights = step.weights.defined() ? step.weights.to(Float64).to_vector() : std::vector<double>{};
    bool all_done = true;
    for (std::int64_t b = 0; b < B; ++b) {
      if (done[b]) continue;
      log_softmax_row(scores.data<double>() + b * V, V, logp);
      ignore_eos(options, logp);
      const std::int64_t best = std::max_element(logp.begin(), logp.end()) - logp.begin();
      Hypothesis& h = out[b];
      h.tokens.push_back(best);
      h.log_prob += logp[best];
      if (!weights.empty()) h.attention.push_back(weights_row(weights, b, S, batch.source_lengths[b]));
      previous[b] = best;
      done[b] = best == Vocabulary::kEos || static_cast<std::int64_t>(h.tokens.size()) >= max_length(options, batch.source_lengths[b]);
      all_done = all_done && done[b];
    }
    if (all_done) break;
  }
  for (Hypothesis& h : out) h.score = h.log_prob;
  return out;
}

std::vector<Hypothesis> beam_search(Seq2Seq& model, const Batch& batch, const DecodeOptions& options) {
  check_options(options);
  NoGradGuard no_grad;
  const std::int64_t B = batch.size(), S = batch.source.shape[1], K = options.beam;
  Seq2Seq::Encoded enc = model.encode(batch.source, batch.source_lengths, batch.source_mask);
  // Every sentence gets K rows: row b*K + k is beam k of sentence b.
  std::vector<std::int64_t> expand(static_cast<std::size_t>(B * K));
  for (std::int64_t r = 0; r < B * K; ++r) expand[r] = r / K;
  enc.states = pick_rows(enc.states, expand);
  enc.mask = pick_rows(enc.mask, expand);
  enc.keys.keys = pick_rows(enc.keys.keys, expand);
  enc.keys.values = pick_rows(enc.keys.values, expand);
  enc.keys.mask = pick_rows(enc.keys.mask, expand);
  enc.s0 = pick_rows(enc.s0, expand);
  enc.c0 = pick_rows(enc.c0, expand);
  enc.cell_weights = model.cell.step_weights(B * K);  // steps now run B*K rows
  Seq2Seq::State state = model.initial_state(enc);

  struct Beam {
    std::vector<std::int64_t> tokens;
    std::vector<std::vector<double>> attention;
    double log_prob = 0;
  };
  const double kDead = -std::numeric_limits<double>::infinity();
  std::vector<Beam> beams(static_cast<std::size_t>(B * K));
  for (std::int64_t r = 0; r < B * K; ++r) beams[r].log_prob = r % K == 0 ? 0.0 : kDead;  // one live beam at first
  std::vector<std::vector<Hypothesis>> finished(static_cast<std::size_t>(B));
  std::vector<bool> done(static_cast<std::size_t>(B), false);
  std::vector<std::int64_t> previous(static_cast<std::size_t>(B * K), Vocabulary::kBos);
  auto normalized = [&](double log_prob, std::size_t length) {
    return log_prob / std::pow(static_cast<double>(std::max<std::size_t>(length, 1)), options.length_alpha);
  };
  std::int64_t longest = 0;
  for (std::int64_t b = 0; b < B; ++b) longest = std::max(longest, max_length(options, batch.source_lengths[b]));
  std::vector<double> logp;
  for (std::int64_t t = 0; t < longest; ++t) {
    Seq2Seq::Step step = model.step(enc, Indices(previous), state);
    const Tensor scores = model.logits(step.attentional).to(Float64);  // (B*K, V)
    const std::int64_t V = scores.size(1);
    const std::vector<double> weights = step.weights.defined() ? step.weights.to(Float64).to_vector() : std::vector<double>{};
    std::vector<Beam> next(static_cast<std::size_t>(B * K));
    std::vector<std::int64_t> parents(static_cast<std::size_t>(B * K));
    for (std::int64_t b = 0; b < B; ++b) {
      const std::int64_t limit = max_length(options, batch.source_lengths[b]);
      // Candidates (total log p, row, token) over the K beams of this sentence.
      struct Candidate {
        double log_prob;
        std::int64_t row, token;
      };
      std::vector<Candidate> candidates;
      if (!done[b]) {
        for (std::int64_t k = 0; k < K; ++k) {
          const std::int64_t row = b * K + k;
          if (beams[row].log_prob == kDead) continue;
          log_softmax_row(scores.data<double>() + row * V, V, logp);
          ignore_eos(options, logp);
          // Only the best 2K tokens of a beam can make the sentence's top 2K.
          std::vector<std::int64_t> ids(static_cast<std::size_t>(V));
          std::iota(ids.begin(), ids.end(), 0);
          const std::int64_t keep = std::min<std::int64_t>(2 * K, V);
          std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(),
                            [&](std::int64_t x, std::int64_t y) { return logp[x] > logp[y]; });
          for (std::int64_t i = 0; i < keep; ++i)
            if (logp[ids[i]] != kDead) candidates.push_back({beams[row].log_prob + logp[ids[i]], row, ids[i]});
        }
        std::stable_sort(candidates.begin(), candidates.end(),
                         [](const Candidate& x, const Candidate& y) { return x.log_prob > y.log_prob; });
      }
      std::int64_t live = 0;
      for (const Candidate& c : candidates) {
        if (live == K) break;
        Beam beam = beams[c.row];
        beam.tokens.push_back(c.token);
        beam.log_prob = c.log_prob;
        if (!weights.empty()) beam.attention.push_back(weights_row(weights, c.row, S, batch.source_lengths[b]));
        const bool ends = c.token == Vocabulary::kEos || static_cast<std::int64_t>(beam.tokens.size()) >= limit;
        if (ends) {
          finished[b].push_back({beam.tokens, beam.attention, beam.log_prob, normalized(beam.log_prob, beam.tokens.size())});
          continue;
        }
        parents[b * K + live] = c.row;
        next[b * K + live] = std::move(beam);
        ++live;
      }
      for (std::int64_t k = live; k < K; ++k) {  // unused rows: dead beams
        parents[b * K + k] = b * K;
        next[b * K + k].log_prob = kDead;
      }
      // Done when K hypotheses are finished and no live beam can still beat the
      // best of them (log p only falls as a beam grows; its normaliser is at most
      // limit^alpha), or when nothing is live.
      if (!done[b]) {
        double best_finished = kDead;
        for (const Hypothesis& h : finished[b]) best_finished = std::max(best_finished, h.score);
        double best_live = kDead;
        for (std::int64_t k = 0; k < live; ++k) {
          const double lp = next[b * K + k].log_prob;
          best_live = std::max(best_live, lp / std::pow(static_cast<double>(limit), options.length_alpha));
        }
        done[b] = live == 0 || (static_cast<std::int64_t>(finished[b].size()) >= K && best_live <= best_finished);
        if (done[b])
          for (std::int64_t k = 0; k < K; ++k) next[b * K + k].log_prob = kDead;
      }
    }
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    beams = std::move(next);
    for (std::int64_t r = 0; r < B * K; ++r) previous[r] = beams[r].tokens.empty() ? Vocabulary::kBos : beams[r].tokens.back();
    state.s = pick_rows(step.state.s, parents);
    state.c = pick_rows(step.state.c, parents);
    state.feed = pick_rows(step.state.feed, parents);
  }
  std::vector<Hypothesis> out(static_cast<std::size_t>(B));
  for (std::int64_t b = 0; b < B; ++b) {
    if (finished[b].empty()) continue;  // cannot happen: max length always ends a beam
    out[b] = *std::max_element(finished[b].begin(), finished[b].end(),
                               [](const Hypothesis& x, const Hypothesis& y) { return x.score < y.score; });
  }
  return out;
}

std::vector<Hypothesis> translate(Seq2Seq& model, const Batch& batch, const DecodeOptions& options) {
  return options.beam == 1 ? greedy_decode(model, batch, options) : beam_search(model, batch, options);
}

}  // namespace attend
