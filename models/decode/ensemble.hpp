#pragma once
// The decoder side of one or more Seq2Seq models run in step over the same
// batch: what greedy decoding and beam search see as "the model". Each model
// keeps its own encoder outputs and decoder state; at every step the next
// token's log-probabilities are the mean of the models' log_softmax, and the
// attention weights the mean over the models that have attention.
//
// Letters: B sentences, R rows per sentence (beams), N = B * R decoder rows,
// S source length (padded), V target vocabulary, M models.
#include <cstdint>
#include <span>
#include <vector>

#include "core/kernels/packed_gemm.hpp"
#include "models/data/corpus.hpp"
#include "models/seq2seq.hpp"

namespace attend {

class DecoderEnsemble {
 public:
  // Checks the models (1 to limits::kMaxEnsemble, none null, the same vocabulary
  // sizes and dtype; Error otherwise), encodes the batch's sources with each and
  // gives every sentence R rows: row b * R + r belongs to sentence b.
  DecoderEnsemble(std::span<Seq2Seq* const> models, const Batch& batch, std::int64_t rows_per_sentence);

  // The next token's log-probabilities of the rows asked for, read through the
  // functions below, and the attention weights. One model's are its logits
  // and each row's log-normaliser, log p_v = z_v - log_norm: nothing (N, V) is
  // formed in double, which at config M beam search (320 rows of 8000 tokens)
  // was 20 MB written and read again at every step. An ensemble's are the mean
  // of its models' log p, formed in log_probs. Rows not asked for hold nothing.
  struct Output {
    bool one_model = false;         // true: the fields marked "one model" hold the output; false: log_probs
    Tensor logits;                  // one model: (N, V), the model's dtype; undefined where logits_stored is false
    std::vector<double> log_norm;   // one model: (N), m + log sum_v e^(z_v - m)
    std::vector<double> row_max;    // one model: (N), m = max_v z_v (NaN passed over), or NaN once unknown
    std::vector<std::int64_t> best;  // one model: (N), the best token but the step's `skip`, or -1 when unknown
    std::vector<double> best_logit;  // one model: (N), z of `best` where best is known from the kernel
    bool logits_stored = true;       // false: a step with keep_logits false stored none (see step)
    bool normalised = true;          // false: nor log_norm, where log_probs was false too (see step)
    std::int64_t skip = -1;          // the step's skip
    std::vector<double> log_probs;  // an ensemble: (N, V)
    std::vector<double> weights;    // (N, S) mean attention weights; empty when no model has attention
    std::int64_t vocab = 0;

    double log_prob(std::int64_t row, std::int64_t token) const;
    // Sets log p(token) of the row to -inf (the normaliser is left as it was).
    void exclude(std::int64_t row, std::int64_t token);
    // The token of highest log p, the lowest id on a tie (0 when every one is NaN).
    std::int64_t best_token(std::int64_t row) const;
    // The `keep` tokens of highest log p, best first (models/decode/top_tokens.hpp).
    void best_tokens(std::int64_t row, std::int64_t keep, std::vector<std::int64_t>& top, std::vector<double>& scratch) const;
  };
  // One decoder step of every model, fed the previous token of each row (N),
  // computing the log-probabilities of the rows marked in `wanted` (all when empty).
  // The output lives in this object until the next step: its (N, V) buffer is
  // reused, since fresh pages for it at every step cost more than filling them.
  // `skip` (-1: none) is the token the caller will exclude from every row before
  // it asks for the best one (greedy decoding without </s>): one float32 model
  // then finds each row's best token, maximum and normaliser in the output
  // projection's kernel (blas::RowSummary), with no pass over the logits after it.
  // keep_logits false (greedy decoding) lets that kernel store no logits at all
  // where every wanted row's summary is usable (a row of NaN or infinite logits
  // has them stored after all): then best_token, the log_prob of the best token
  // and exclude(row, skip) are what may be asked of the output (Error otherwise).
  // log_probs false with keep_logits false (greedy decoding without scores)
  // leaves out the normalisers too: the kernel takes no exponential, and
  // best_token and exclude(row, skip) alone may be asked (where the logits
  // were stored after all, log_prob too).
  Output& step(const std::vector<std::int64_t>& previous, const std::vector<bool>& wanted = {},
               std::int64_t skip = -1, bool keep_logits = true, bool log_probs = true);
  // Row r continues from row parents[r] of the last step (N): beam search's reordering.
  void reorder(const std::vector<std::int64_t>& parents);

  std::int64_t rows() const { return rows_; }
  std::int64_t vocab() const { return vocab_; }
  bool has_attention() const { return attending_ > 0; }

 private:
  struct Member {
    Seq2Seq* model;
    Seq2Seq::Encoded enc;
    Seq2Seq::State state;
    // The output projection's weight, made once for every step (project_rows):
    blas::PackedMatrix project_packed;  // float32 models: W (V, H) packed, at the first step that stores logits
    Tensor project_t;                   // float64 models: W^T (H, V)
  };
  const blas::PackedMatrix& packed_projection(Member& m);  // m.project_packed, packed first if need be
  std::vector<Member> members_;
  Output out_;
  std::vector<blas::RowSummary> summaries_;  // (N), one float32 model's, from the output projection's kernel
  std::int64_t rows_ = 0, vocab_ = 0, source_length_ = 0, attending_ = 0;
};

// Throws Error unless 1 <= models.size() <= limits::kMaxEnsemble, no model is
// null, and all have the vocabulary sizes and dtype of the first.
void check_ensemble(std::span<Seq2Seq* const> models);

}  // namespace attend
