// The Trainer's validation (models/train/trainer.hpp): the mean loss per target
// token, and the BLEU of greedy translations, each epoch.
#include <cmath>

#include "autograd/grad_mode.hpp"
#include "models/eval/bleu.hpp"
#include "models/train/trainer.hpp"

namespace attend {

namespace {
// Puts the model in evaluation mode for the scope, then back in training mode.
struct EvalScope {
  explicit EvalScope(Seq2Seq& m) : model(m) { model.eval(); }
  ~EvalScope() { model.train(); }
  Seq2Seq& model;
};
}  // namespace

double Trainer::evaluate_loss(const std::vector<EncodedPair>& data) {
  if (data.empty()) return NAN;
  EvalScope eval(model_);
  NoGradGuard no_grad;
  BatchingOptions batching;
  batching.batch_size = options_.batch;
  batching.shuffle = false;
  BatchOptions batch_options;
  batch_options.mask_dtype = model_.dtype();
  double sum = 0;
  std::int64_t tokens = 0;
  std::int64_t index = 0;
  const int ranks = distributed() ? comm_->size() : 1, rank = distributed() ? comm_->rank() : 0;
  for (BatchIterator it(data, batching, 0, 0, 0, batch_options); !it.done(); ++index) {
    Batch b = it.next();
    if (index % ranks != rank) continue;  // under MPI each rank evaluates every ranks-th batch
    sum += model_.loss(b).item() * static_cast<double>(b.target_tokens);
    tokens += b.target_tokens;
  }
  if (distributed()) {
    double totals[2] = {sum, static_cast<double>(tokens)};
    comm_->sum(std::span<double>(totals));
    return totals[0] / totals[1];
  }
  return sum / static_cast<double>(tokens);
}

double Trainer::evaluate_bleu(const std::vector<EncodedPair>& data, std::int64_t limit,
                              const std::vector<std::string>& references_as_written) {
  const std::int64_t n = std::min<std::int64_t>(limit, static_cast<std::int64_t>(data.size()));
  if (n <= 0) return NAN;
  if (!references_as_written.empty() && references_as_written.size() != data.size())
    fail("evaluate_bleu: {} references for {} pairs", references_as_written.size(), data.size());
  EvalScope eval(model_);
  std::vector<EncodedPair> subset(data.begin(), data.begin() + n);
  BatchingOptions batching;
  batching.batch_size = options_.batch;
  batching.shuffle = false;
  BatchOptions batch_options;
  batch_options.mask_dtype = model_.dtype();
  std::vector<std::string> hypotheses, references;
  for (BatchIterator it(subset, batching, 0, 0, 0, batch_options); !it.done();) {
    Batch b = it.next();
    std::vector<Hypothesis> out = greedy_decode(model_, b);
    for (std::int64_t i = 0; i < b.size(); ++i) {
      hypotheses.push_back(options_.target_codec.decode(target_vocab_.decode(strip_eos(out[i].tokens), true)));
      const std::int64_t id = b.example_ids[i];
      references.push_back(references_as_written.empty()
                               ? options_.target_codec.decode(target_vocab_.decode(subset[id].target, true))
                               : references_as_written[static_cast<std::size_t>(id)]);
    }
  }
  return corpus_bleu(hypotheses, references).score;
}

}  // namespace attend
