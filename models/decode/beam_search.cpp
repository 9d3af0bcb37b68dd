// Beam search over one model or an ensemble (models/decode/ensemble.hpp), keeping
// the n best finished hypotheses of every sentence.
//
// Letters: B sentences, K beam size, V target vocabulary, S source length.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "autograd/ops.hpp"
#include "models/decode/detail/decoding_steps.hpp"
#include "models/decode/ensemble.hpp"
#include "models/decode/top_tokens.hpp"

namespace attend {

namespace {

const double kDead = -std::numeric_limits<double>::infinity();

// A live hypothesis: its history lives in the Trellis, as the node of its last token.
struct Beam {
  double log_prob = 0;
  std::int64_t node = -1;  // -1: no token yet
  std::int64_t length = 0;
};

// Every token any beam has taken, with a pointer to the node before it, and its
// attention row: a beam that grows adds one node instead of copying its whole
// history (tokens and a row of weights per token, which cost O(T^2 S) per
// hypothesis and a tenth of beam search's time in malloc). A finished
// hypothesis is read back from its last node.
class Trellis {
 public:
  // A token after node `parent` (-1: the first token); weights: its attention
  // row (`length` weights), or null without attention. Returns the new node.
  std::int64_t add(std::int64_t parent, std::int64_t token, const double* weights, std::int64_t length) {
    nodes_.push_back({parent, token, static_cast<std::int64_t>(weights_.size()), length, weights != nullptr});
    if (weights) weights_.insert(weights_.end(), weights, weights + length);
    return static_cast<std::int64_t>(nodes_.size()) - 1;
  }
  // The hypothesis ending at `node`: its tokens and attention rows, first to last.
  Hypothesis read(std::int64_t node, double log_prob) const {
    Hypothesis h;
    h.log_prob = log_prob;
    for (std::int64_t n = node; n >= 0; n = nodes_[n].parent) {
      const Node& x = nodes_[n];
      h.tokens.push_back(x.token);
      if (x.has_weights)
        h.attention.emplace_back(weights_.begin() + x.weights_offset, weights_.begin() + x.weights_offset + x.weights_length);
    }
    std::reverse(h.tokens.begin(), h.tokens.end());
    std::reverse(h.attention.begin(), h.attention.end());
    return h;
  }
  std::int64_t token(std::int64_t node) const { return nodes_[node].token; }
 private:
  struct Node {
    std::int64_t parent, token, weights_offset, weights_length;
    bool has_weights;
  };
  std::vector<Node> nodes_;
  std::vector<double> weights_;
};

struct Candidate {
  double log_prob;  // of the beam grown by the token
  std::int64_t row, token;
};

// A finished hypothesis, scored, read back from the trellis only if it makes
// the n-best list: at the last step every candidate finishes (K rows x 2K
// tokens per sentence), and reading them all was a tenth of beam search's time.
struct Finished {
  std::int64_t node;
  double log_prob, length_penalty, coverage_penalty, score;
};

// Scored as score_hypothesis scores the hypothesis, which is read from the
// trellis here only for the coverage penalty (its attention rows).
Finished finish(const Trellis& trellis, const Beam& beam, std::int64_t source_length, const DecodeOptions& options) {
  Finished f{beam.node, beam.log_prob, 0, 0, 0};
  f.length_penalty = length_penalty_value(options.length_penalty, options.length_alpha, beam.length);
  if (options.coverage_beta != 0)
    f.coverage_penalty =
        coverage_penalty_value(options.coverage_beta, trellis.read(beam.node, beam.log_prob).attention, source_length);
  f.score = f.log_prob / f.length_penalty + f.coverage_penalty;
  return f;
}

// Whether sentence b's search can stop: when nothing is live, or when at least
// K hypotheses are finished and no live beam can end up scoring above the
// n-th best of them (so the n-best list cannot change any more).
//
// The bound on a live beam's final score: log p only falls as a beam grows
// (log p <= 0), and lp(Y) grows with |Y| for alpha >= 0 (Average |Y|^alpha, Gnmt
// ((5 + |Y|) / 6)^alpha, None 1), so log p / lp(Y) <= log p_now / lp(limit).
// The coverage term beta * sum_i log(min(covered_i, 1)) is at most 0 for beta >= 0
// whatever the beam still attends to, so it adds 0 to the bound. It would be
// tighter to add the beam's current coverage, which only rises toward 0 as
// rows of weights are added, but 0 is the simple bound that stays true.
bool sentence_done(const std::vector<Finished>& finished, const std::vector<Beam>& next, std::int64_t first_row,
                   std::int64_t live, std::int64_t limit, const DecodeOptions& options, bool early_stop) {
  if (live == 0) return true;
  if (!early_stop) return false;
  if (static_cast<std::int64_t>(finished.size()) < options.beam) return false;
  std::vector<double> scores;
  for (const Finished& h : finished) scores.push_back(h.score);
  const auto n = static_cast<std::ptrdiff_t>(options.n_best - 1);
  std::nth_element(scores.begin(), scores.begin() + n, scores.end(), std::greater<>());
  const double nth_best = scores[static_cast<std::size_t>(n)];
  const double lp_max = length_penalty_value(options.length_penalty, options.length_alpha, limit);
  double best_live = kDead;
  for (std::int64_t k = 0; k < live; ++k) best_live = std::max(best_live, next[first_row + k].log_prob / lp_max);
  return best_live <= nth_best;
}

}  // namespace

std::vector<std::vector<Hypothesis>> beam_search_n_best(std::span<Seq2Seq* const> models, const Batch& batch,
                                                        const DecodeOptions& options, bool early_stop) {
  check_decode_options(options);
  NoGradGuard no_grad;
  const std::int64_t B = batch.size(), S = batch.source.shape[1], K = options.beam;
  std::vector<std::int64_t> limit(static_cast<std::size_t>(B));
  std::int64_t longest = 0;
  for (std::int64_t b = 0; b < B; ++b) {
    longest = std::max(longest, limit[b] = max_output_length(options, batch.source_lengths[b]));
    check_decode_memory(models, batch.source_lengths[b], options);
  }
  // Every sentence gets K rows: row b*K + k is beam k of sentence b.
  DecoderEnsemble ensemble(models, batch, K);
  check_coverage_needs_attention(ensemble, options);
  const std::int64_t V = ensemble.vocab();

  std::vector<Beam> beams(static_cast<std::size_t>(B * K));
  for (std::int64_t r = 0; r < B * K; ++r) beams[r].log_prob = r % K == 0 ? 0.0 : kDead;  // one live beam at first
  std::vector<std::vector<Finished>> finished(static_cast<std::size_t>(B));
  std::vector<bool> done(static_cast<std::size_t>(B), false);
  std::vector<std::int64_t> previous(static_cast<std::size_t>(B * K), Vocabulary::kBos);
  std::vector<bool> wanted(static_cast<std::size_t>(B * K));
  std::vector<std::int64_t> top;
  std::vector<double> scratch;
  std::vector<Candidate> candidates;
  std::vector<Beam> next(static_cast<std::size_t>(B * K));
  std::vector<std::int64_t> parents(static_cast<std::size_t>(B * K));
  Trellis trellis;
  for (std::int64_t t = 0; t < longest; ++t) {
    for (std::int64_t r = 0; r < B * K; ++r) wanted[r] = !done[r / K] && beams[r].log_prob != kDead;
    DecoderEnsemble::Output& step = ensemble.step(previous, wanted);
    for (std::int64_t b = 0; b < B; ++b) {
      candidates.clear();
      if (!done[b]) {
        for (std::int64_t k = 0; k < K; ++k) {
          const std::int64_t row = b * K + k;
          if (!wanted[row]) continue;
          ignore_eos(options, step, row);
          // Only the best 2K tokens of a beam can make the sentence's top 2K.
          step.best_tokens(row, std::min<std::int64_t>(2 * K, V), top, scratch);
          for (std::int64_t id : top) {
            const double logp = step.log_prob(row, id);
            if (logp > kDead) candidates.push_back({beams[row].log_prob + logp, row, id});
          }
        }
        std::stable_sort(candidates.begin(), candidates.end(),
                         [](const Candidate& x, const Candidate& y) { return x.log_prob > y.log_prob; });
      }
      std::int64_t live = 0;
      for (const Candidate& c : candidates) {
        if (live == K) break;
        const Beam& parent = beams[c.row];
        const double* weights = step.weights.empty() ? nullptr : step.weights.data() + c.row * S;
        const Beam beam{c.log_prob, trellis.add(parent.node, c.token, weights, batch.source_lengths[b]), parent.length + 1};
        if (c.token == Vocabulary::kEos || beam.length >= limit[b]) {
          finished[b].push_back(finish(trellis, beam, batch.source_lengths[b], options));
          continue;
        }
        parents[b * K + live] = c.row;
        next[b * K + live] = beam;
        ++live;
      }
      for (std::int64_t k = live; k < K; ++k) {  // unused rows: dead beams
        parents[b * K + k] = b * K;
        next[b * K + k] = Beam{kDead};
      }
      if (!done[b]) {
        done[b] = sentence_done(finished[b], next, b * K, live, limit[b], options, early_stop);
        if (done[b])
          for (std::int64_t k = 0; k < K; ++k) next[b * K + k] = Beam{kDead};
      }
    }
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    std::swap(beams, next);
    for (std::int64_t r = 0; r < B * K; ++r) previous[r] = beams[r].node < 0 ? Vocabulary::kBos : trellis.token(beams[r].node);
    ensemble.reorder(parents);
  }
  std::vector<std::vector<Hypothesis>> out(static_cast<std::size_t>(B));
  for (std::int64_t b = 0; b < B; ++b) {
    std::vector<Finished>& list = finished[b];
    if (list.empty()) {  // only when no token had a finite log-probability (a model with NaN weights)
      Hypothesis empty{{}, {}, kDead};
      score_hypothesis(empty, batch.source_lengths[b], options);
      out[b].push_back(std::move(empty));
      continue;
    }
    // Best first; among equal scores, the one finished first.
    std::stable_sort(list.begin(), list.end(), [](const Finished& x, const Finished& y) { return x.score > y.score; });
    if (static_cast<std::int64_t>(list.size()) > options.n_best) list.resize(static_cast<std::size_t>(options.n_best));
    for (const Finished& f : list) {
      Hypothesis h = trellis.read(f.node, f.log_prob);
      h.length_penalty = f.length_penalty;
      h.coverage_penalty = f.coverage_penalty;
      h.score = f.score;
      out[b].push_back(std::move(h));
    }
  }
  return out;
}

}  // namespace attend
