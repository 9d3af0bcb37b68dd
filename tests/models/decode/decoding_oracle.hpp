#pragma once
// The simple version beam search is held against: every output sequence up to
// the maximum length, scored by stepping the models one sentence at a time.
// Its best n are the n best any search can find, and a beam wide enough to
// keep every prefix must find exactly them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "autograd/ops.hpp"
#include "models/decode/decoding.hpp"
#include "models/seq2seq.hpp"

namespace attend::testing {

// All hypotheses for sentence `b` of the batch: sequences ending with </s>, or
// of exactly max_length tokens, each scored with score_hypothesis. The next
// token's log p is the mean of the models' log_softmax, the attention the mean
// of the models' weights (all models must have attention, or none).
inline std::vector<Hypothesis> all_hypotheses(const std::vector<Seq2Seq*>& models, const Batch& batch, std::int64_t b,
                                              std::int64_t max_length, const DecodeOptions& options) {
  NoGradGuard no_grad;
  const std::int64_t length = batch.source_lengths[b];
  // The sentence alone, as a batch of one.
  const std::int64_t S = batch.source.shape[1];
  std::vector<std::int64_t> ids(batch.source.values.begin() + b * S, batch.source.values.begin() + b * S + length);
  Indices source(ids, Shape{1, length});
  Tensor mask = ones(Shape{1, length}, models[0]->dtype());
  std::vector<Seq2Seq::Encoded> enc;
  std::vector<Seq2Seq::State> start;
  for (Seq2Seq* m : models) {
    enc.push_back(m->encode(source, {length}, mask));
    start.push_back(m->initial_state(enc.back()));
  }
  std::vector<Hypothesis> out;
  // Depth-first over prefixes.
  struct Node {
    Hypothesis h;
    std::vector<Seq2Seq::State> states;
  };
  std::vector<Node> stack{{Hypothesis{}, start}};
  while (!stack.empty()) {
    Node node = std::move(stack.back());
    stack.pop_back();
    const std::int64_t previous = node.h.tokens.empty() ? Vocabulary::kBos : node.h.tokens.back();
    std::vector<double> mean_logp;
    std::vector<double> mean_weights;
    std::vector<Seq2Seq::State> states;
    for (std::size_t m = 0; m < models.size(); ++m) {
      Seq2Seq::Step step = models[m]->step(enc[m], Indices({previous}), node.states[m]);
      states.push_back(step.state);
      std::vector<double> z = models[m]->logits(step.attentional).to(Float64).to_vector();
      double top = *std::max_element(z.begin(), z.end()), total = 0;
      for (double x : z) total += std::exp(x - top);
      if (mean_logp.empty()) mean_logp.assign(z.size(), 0.0);
      for (std::size_t v = 0; v < z.size(); ++v) mean_logp[v] += (z[v] - top - std::log(total)) / static_cast<double>(models.size());
      if (step.weights.defined()) {
        std::vector<double> w = step.weights.to(Float64).to_vector();
        if (mean_weights.empty()) mean_weights.assign(w.size(), 0.0);
        for (std::size_t i = 0; i < w.size(); ++i) mean_weights[i] += w[i] / static_cast<double>(models.size());
      }
    }
    for (std::size_t v = 0; v < mean_logp.size(); ++v) {
      const auto token = static_cast<std::int64_t>(v);
      if (token == Vocabulary::kEos && !options.stop_at_eos) continue;
      Node child{node.h, states};
      child.h.tokens.push_back(token);
      child.h.log_prob += mean_logp[v];
      if (!mean_weights.empty()) child.h.attention.push_back(mean_weights);
      if (token == Vocabulary::kEos || static_cast<std::int64_t>(child.h.tokens.size()) == max_length) {
        score_hypothesis(child.h, length, options);
        out.push_back(std::move(child.h));
      } else {
        stack.push_back(std::move(child));
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Hypothesis& x, const Hypothesis& y) { return x.score > y.score; });
  return out;
}

// A tiny float64 model (source vocabulary 7, embed 3, hidden 4) whose output
// weights are scaled up: sharper, more varied distributions than the
// initialisation's, so that searches disagree when they are wrong.
inline std::unique_ptr<Seq2Seq> small_model(std::uint64_t seed, AttentionKind kind = AttentionKind::Additive,
                                            std::int64_t target_vocab = 6, DType dtype = Float64) {
  Seq2SeqConfig c;
  c.source_vocab = 7;
  c.target_vocab = target_vocab;
  c.embed = 3;
  c.hidden = 4;
  c.attention = kind;
  Generator init(seed);
  auto model = std::make_unique<Seq2Seq>(c, init, dtype);
  model->project.weight.mul_(4.0);
  model->eval();
  return model;
}

// A batch of these source sentences (token ids), float64 masks.
inline Batch sources(const std::vector<std::vector<std::int64_t>>& sentences) {
  std::vector<EncodedPair> data;
  for (const auto& s : sentences) data.push_back({s, {4}});
  std::vector<std::int64_t> ids(data.size());
  std::iota(ids.begin(), ids.end(), 0);
  BatchOptions o;
  o.mask_dtype = Float64;
  return make_batch(data, ids, o);
}

}  // namespace attend::testing
