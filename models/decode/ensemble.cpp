#include "models/decode/ensemble.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "autograd/ops.hpp"
#include "core/kernels/blas.hpp"
#include "core/kernels/detail/fast_math.hpp"
#include "core/io/limits.hpp"
#include "models/decode/top_tokens.hpp"
#include "models/quantize/quantize.hpp"

namespace attend {

namespace {

// Rows of a (n, ...) tensor, picked by index: (rows.size(), ...).
Tensor pick_rows(const Tensor& x, const std::vector<std::int64_t>& rows) {
  if (!x.defined()) return x;
  const std::int64_t n = x.size(0), rest = x.numel() / std::max<std::int64_t>(n, 1);
  Tensor picked = index_select(reshape(x, Shape{n, rest}), Indices(rows));
  return reshape(picked, x.shape().with(0, static_cast<std::int64_t>(rows.size())));
}

// The encoder's outputs repeated for every row: row r gets sentence expand[r]'s.
void expand_rows(Seq2Seq& model, Seq2Seq::Encoded& enc, const std::vector<std::int64_t>& expand) {
  enc.states = pick_rows(enc.states, expand);
  enc.mask = pick_rows(enc.mask, expand);
  enc.keys.keys = pick_rows(enc.keys.keys, expand);
  enc.keys.values = pick_rows(enc.keys.values, expand);
  enc.keys.mask = pick_rows(enc.keys.mask, expand);
  enc.s0 = pick_rows(enc.s0, expand);
  enc.c0 = pick_rows(enc.c0, expand);
  enc.cell_weights = model.cell.step_weights(static_cast<std::int64_t>(expand.size()));  // steps now run N rows
}

// log sum_v e^(z_v) = m + log sum_v e^(z_v - m), the log-normaliser of
// log_softmax (log p_v = z_v - it), given m = max_v z_v. In double for
// float64 models, so that the exhaustive-search tests (float64) hold beam
// search to 1e-12.
double log_normaliser(const double* z, std::int64_t V, double m) {
  double total = 0;
  for (std::int64_t v = 0; v < V; ++v) total += std::exp(z[v] - m);
  return m + std::log(total);
}

// The same for float32 logits, without turning each into a double and passing it
// through libm's scalar exp, a call per logit at every decoding step: the sum of
// e^(z_u - m) is formed by the vectorised float exp (relative error ~1e-7, summed
// in double).
double log_normaliser(const float* z, std::int64_t V, float m) {
  return static_cast<double>(m) + std::log(fast_math::exp_shifted_sum(z, m, nullptr, V));
}

// out[v] = log p_v (the first model of an ensemble) or out[v] += log p_v (the others).
template <class T>
void put_log_softmax(const T* z, std::int64_t V, bool add, double* out) {
  const double log_norm = log_normaliser(z, V, fast_math::max(z, V));
  for (std::int64_t v = 0; v < V; ++v) out[v] = (add ? out[v] : 0.0) + (static_cast<double>(z[v]) - log_norm);
}

// logits = x @ W^T + b (N, V), as model.logits(x) computes it, but from W made
// ready once per search. float32: W packed (core/kernels/packed_gemm.hpp), as OpenBLAS
// would pack it afresh at every call (core/kernels/packed_gemm.hpp says why
// that matters at decoding's few rows), with the bias added by the kernel and, when
// `summaries` is not null, each row summarised there too (N; with store false
// that is all: y is left unset, see Epilogue::store_y). float64: W^T, as
// OpenBLAS multiplies a plain operand faster than a transposed one at decoding's few rows.
Tensor project_rows(const Tensor& x, const blas::PackedMatrix& packed, const Tensor& weight_t, const Tensor& bias,
                    blas::RowSummary* summaries, std::int64_t skip, bool store = true) {
  const std::int64_t N = x.size(0), H = x.size(1), V = packed.empty() ? weight_t.size(1) : packed.n();
  Tensor y = empty({N, V}, x.dtype());
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* py = y.data<T>();
    if constexpr (std::is_same_v<T, float>) {
      blas::gemm_packed(N, x.data<T>(), H, packed, 0.0f, py, V,
                        {bias.defined() ? bias.data<T>() : nullptr, summaries, skip, store});
    } else {
      if (bias.defined())
        for (std::int64_t r = 0; r < N; ++r) std::copy(bias.data<T>(), bias.data<T>() + V, py + r * V);
      blas::gemm(false, false, N, V, H, T(1), x.data<T>(), H, weight_t.data<T>(), V, bias.defined() ? T(1) : T(0),
                 py, V);
    }
  });
  return y;
}

// A kernel's row summary is used where it is the plain case: a finite maximum
// and normaliser, and a best token. Rows with NaN or infinite logits take the
// passes over the logits instead, whose every edge the tests pin down.
// Without the sums (MaxAndBest), a row needs its best token alone: the kernel
// finds the one the logits would give wherever it finds one (NaN passed over).
bool summary_usable(const blas::RowSummary& s, blas::SummaryParts parts) {
  if (parts == blas::SummaryParts::MaxAndBest) return s.best >= 0;
  return s.best >= 0 && std::isfinite(s.max) && std::isfinite(s.exp_sum) && s.exp_sum > 0;
}

// Whether every wanted row's summary is usable (all rows when wanted is empty).
bool summaries_usable(const std::vector<blas::RowSummary>& summaries, const std::vector<bool>& wanted,
                      blas::SummaryParts parts) {
  for (std::size_t r = 0; r < summaries.size(); ++r)
    if ((wanted.empty() || wanted[r]) && !summary_usable(summaries[r], parts)) return false;
  return true;
}

}  // namespace

void check_ensemble(std::span<Seq2Seq* const> models) {
  const auto M = static_cast<std::int64_t>(models.size());
  if (M < 1) fail("decode: no model to decode with");
  if (M > limits::kMaxEnsemble)
    fail("decode: {} models in the ensemble, at most {} (limits::kMaxEnsemble, core/io/limits.hpp)", M, limits::kMaxEnsemble);
  for (std::int64_t m = 0; m < M; ++m)
    if (models[m] == nullptr) fail("decode: model {} of the ensemble is null", m + 1);
  const Seq2SeqConfig& first = models[0]->config();
  for (std::int64_t m = 1; m < M; ++m) {
    const Seq2SeqConfig& c = models[m]->config();
    if (c.target_vocab != first.target_vocab)
      fail("decode: the ensemble's models have different target vocabularies: model 1 has {} tokens, model {} has {}",
           first.target_vocab, m + 1, c.target_vocab);
    if (c.source_vocab != first.source_vocab)
      fail("decode: the ensemble's models have different source vocabularies: model 1 has {} tokens, model {} has {}",
           first.source_vocab, m + 1, c.source_vocab);
    if (models[m]->dtype() != models[0]->dtype())
      fail("decode: the ensemble's models have different dtypes: model 1 is {}, model {} is {}", models[0]->dtype(), m + 1,
           models[m]->dtype());
    if ((models[m]->int8() != nullptr) != (models[0]->int8() != nullptr))
      fail("decode: the ensemble's models have weights of different kinds: model 1's are {}, model {}'s are {}",
           models[0]->int8() ? "int8" : "float32", m + 1, models[m]->int8() ? "int8" : "float32");
  }
}

DecoderEnsemble::DecoderEnsemble(std::span<Seq2Seq* const> models, const Batch& batch, std::int64_t rows_per_sentence) {
  check_ensemble(models);
  const std::int64_t B = batch.size(), R = rows_per_sentence;
  rows_ = B * R;
  vocab_ = models[0]->config().target_vocab;
  source_length_ = batch.source.shape[1];
  std::vector<std::int64_t> expand(static_cast<std::size_t>(rows_));
  for (std::int64_t r = 0; r < rows_; ++r) expand[r] = r / R;
  for (Seq2Seq* model : models) {
    Seq2Seq::Encoded enc = model->encode(batch.source, batch.source_lengths, batch.source_mask);
    if (R > 1) expand_rows(*model, enc, expand);
    Seq2Seq::State state = model->initial_state(enc);
    const Tensor& W = model->project.weight;  // (V, H)
    Tensor project_t;  // float32: W is packed at the first step that stores logits (packed_projection)
    if (W.dtype() != Float32) project_t = transpose(W.detach(), 0, 1);  // a copy: tensors are contiguous
    members_.push_back({model, std::move(enc), std::move(state), blas::PackedMatrix(), std::move(project_t)});
    if (model->config().attention != AttentionKind::None) ++attending_;
  }
}

const blas::PackedMatrix& DecoderEnsemble::packed_projection(Member& m) {
  const Tensor& W = m.model->project.weight;  // (V, H)
  if (m.project_packed.empty() && m.model->int8() != nullptr) m.project_packed = *m.model->int8()->at("project.weight");
  if (m.project_packed.empty() && W.dtype() == Float32 && W.size(0) > 0) {
    m.project_packed = blas::PackedMatrix(W.data<float>(), W.size(0), W.size(1), W.size(1));
    m.project_packed.set_streamed(true);  // the decoder's other weights pass through L2 between steps
  }
  return m.project_packed;
}

DecoderEnsemble::Output& DecoderEnsemble::step(const std::vector<std::int64_t>& previous, const std::vector<bool>& wanted,
                                               std::int64_t skip, bool keep_logits, bool log_probs) {
  const std::int64_t N = rows_, V = vocab_, S = source_length_;
  Output& out = out_;
  out.vocab = V;
  const bool one = members_.size() == 1;
  // The buffers are the same size at every step: no new memory.
  if (one) {
    out.log_norm.resize(static_cast<std::size_t>(N));
    out.row_max.resize(static_cast<std::size_t>(N));
    out.best.assign(static_cast<std::size_t>(N), -1);
    out.best_logit.resize(static_cast<std::size_t>(N));
    summaries_.resize(static_cast<std::size_t>(N));
  } else {
    out.log_probs.resize(static_cast<std::size_t>(N * V));
  }
  if (attending_ > 0) out.weights.assign(static_cast<std::size_t>(N * S), 0.0);
  out.one_model = one;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    Member& m = members_[i];
    Seq2Seq::Step step = m.model->step(m.enc, Indices(previous), m.state);
    m.state = step.state;
    const bool summarised = one && !m.project_t.defined();  // one float32 model
    const auto project = [&](bool store) {  // (N, V)
      return project_rows(step.attentional, packed_projection(m), m.project_t, m.model->project.bias,
                          summarised ? summaries_.data() : nullptr, skip, store);
    };
    bool stored = !summarised || keep_logits;
    // The product's epilogue (stored logits) always gives the sums.
    blas::SummaryParts parts = blas::SummaryParts::All;
    Tensor logits;
    if (stored) {
      logits = project(true);
    } else if (m.model->int8() != nullptr) {  // the int8 kernel's epilogue summarises, storing nothing
      project(false);
      if (!summaries_usable(summaries_, wanted, parts)) {
        logits = project(true);
        stored = true;
      }
    } else {  // the summaries alone, from W as it is (blas::summarise_rows): greedy decoding packs no W
      const Tensor& W = m.model->project.weight, &bias = m.model->project.bias;
      const std::int64_t H = W.size(1);
      if (!log_probs) parts = blas::SummaryParts::MaxAndBest;
      blas::summarise_rows(N, step.attentional.data<float>(), H, W.data<float>(), V, H, H,
                           bias.defined() ? bias.data<float>() : nullptr, skip, summaries_.data(), parts);
      if (!summaries_usable(summaries_, wanted, parts)) {  // a row's passes need the logits
        logits = project(true);
        stored = true;
        parts = blas::SummaryParts::All;
      }
    }
    const bool add = i > 0;
    for (std::int64_t r = 0; r < N; ++r) {
      if (!wanted.empty() && !wanted[r]) continue;
      if (summarised && summary_usable(summaries_[r], parts)) {
        const blas::RowSummary& sum = summaries_[r];
        out.row_max[r] = sum.max;
        out.log_norm[r] = parts == blas::SummaryParts::All ? static_cast<double>(sum.max) + std::log(sum.exp_sum)
                                                           : std::numeric_limits<double>::quiet_NaN();
        out.best[r] = sum.best;
        out.best_logit[r] = sum.best_value;
        continue;
      }
      dispatch(logits.dtype(), [&](auto zero) {
        using T = decltype(zero);
        const T* z = logits.data<T>() + r * V;
        if (one) {
          const T m = fast_math::max(z, V);  // kept: greedy's best token is the first z_v equal to it
          out.row_max[r] = m;
          out.log_norm[r] = log_normaliser(z, V, m);
        } else {
          put_log_softmax(z, V, add, out.log_probs.data() + r * V);
        }
      });
    }
    if (one) {
      out.logits = logits;
      out.logits_stored = stored;
      out.normalised = parts == blas::SummaryParts::All;
      out.skip = skip;
    }
    if (step.weights.defined()) {
      const Tensor weights = step.weights.to(Float64);  // (N, S)
      const double* w = weights.data<double>();
      for (std::int64_t j = 0; j < N * S; ++j) out.weights[j] += w[j];
    }
  }
  // A mean of a model with itself gives (x + x) / 2, exactly x, so such an
  // ensemble decodes exactly as the model alone.
  const auto M = static_cast<double>(members_.size());
  if (!one)
    for (double& x : out.log_probs) x /= M;
  if (attending_ > 1)
    for (double& x : out.weights) x /= static_cast<double>(attending_);
  return out;
}

double DecoderEnsemble::Output::log_prob(std::int64_t row, std::int64_t token) const {
  if (!one_model) return log_probs[static_cast<std::size_t>(row * vocab + token)];
  if (!logits_stored) {
    if (!normalised)
      fail("decode: this step computed no log-probabilities (log_probs false: greedy decoding without scores)");
    if (token != best[static_cast<std::size_t>(row)])
      fail("decode: this step stored no logits (keep_logits false): row {} knows only its best token's "
           "log-probability, not token {}'s", row, token);
    return best_logit[static_cast<std::size_t>(row)] - log_norm[static_cast<std::size_t>(row)];
  }
  return dispatch(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    return static_cast<double>(logits.data<T>()[row * vocab + token]) - log_norm[static_cast<std::size_t>(row)];
  });
}

void DecoderEnsemble::Output::exclude(std::int64_t row, std::int64_t token) {
  if (!one_model) {
    log_probs[static_cast<std::size_t>(row * vocab + token)] = -std::numeric_limits<double>::infinity();
    return;
  }
  if (!logits_stored) {
    if (token != skip)
      fail("decode: this step stored no logits (keep_logits false): only its skip token {} can be excluded, not {}",
           skip, token);
    return;  // the kernel left it out of the best token already
  }
  if (!best.empty() && best[static_cast<std::size_t>(row)] == token)
    best[static_cast<std::size_t>(row)] = -1;  // found without the step's skip, but not without this token
  dispatch(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T& z = logits.data<T>()[row * vocab + token];
    if (static_cast<double>(z) == row_max[static_cast<std::size_t>(row)])
      row_max[static_cast<std::size_t>(row)] = std::numeric_limits<double>::quiet_NaN();  // the max may be gone
    z = -std::numeric_limits<T>::infinity();
  });
}

std::int64_t DecoderEnsemble::Output::best_token(std::int64_t row) const {
  if (!one_model) return attend::best_token(log_probs.data() + row * vocab, vocab);
  if (best[static_cast<std::size_t>(row)] >= 0) return best[static_cast<std::size_t>(row)];
  if (!logits_stored) fail("decode: this step stored no logits (keep_logits false), and row {} has no best token", row);
  return dispatch(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* z = logits.data<T>() + row * vocab;
    const double m = row_max[static_cast<std::size_t>(row)];
    return std::isnan(m) ? attend::best_token(z, vocab) : attend::best_token(z, vocab, m);
  });
}

void DecoderEnsemble::Output::best_tokens(std::int64_t row, std::int64_t keep, std::vector<std::int64_t>& top,
                                          std::vector<double>& scratch) const {
  if (!one_model) return attend::best_tokens(log_probs.data() + row * vocab, vocab, keep, top, scratch);
  if (!logits_stored) fail("decode: this step stored no logits (keep_logits false): no best tokens but the best one");
  dispatch(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    attend::best_tokens(logits.data<T>() + row * vocab, vocab, keep, top, scratch);
  });
}

void DecoderEnsemble::reorder(const std::vector<std::int64_t>& parents) {
  for (Member& m : members_) {
    m.state.s = pick_rows(m.state.s, parents);
    m.state.c = pick_rows(m.state.c, parents);
    m.state.feed = pick_rows(m.state.feed, parents);
  }
}

}  // namespace attend
