// One decoder step of a trained model (explain_step.hpp): the encoder and the
// decoder run without recording up to step t; the step itself goes through
// explain_detail::run_pass, the pass `attend explain` prints, on the borrowed model.
#include "tools/explain/explain_step.hpp"

#include <cmath>

#include "autograd/grad_mode.hpp"
#include "core/error.hpp"
#include "models/data/corpus.hpp"
#include "tools/explain/explain_model.hpp"

namespace attend::tools {

namespace {

using namespace explain_detail;

nlohmann::ordered_json entry(const std::vector<std::int64_t>& shape, const Values& data, const char* key) {
  return {{"shape", shape}, {key, data}};
}

// The step's state: H and s as leaves of their own, the model borrowed.
Setup step_setup(Seq2Seq& model, const Batch& batch, std::int64_t t) {
  Setup st;
  st.model = std::shared_ptr<Seq2Seq>(std::shared_ptr<Seq2Seq>(), &model);  // not owned
  const AttentionKind kind = model.config().attention;
  st.kind = kind == AttentionKind::Additive ? Kind::Additive : kind == AttentionKind::Dot ? Kind::Dot : Kind::General;
  st.kind_name = kind == AttentionKind::Additive ? "additive" : kind == AttentionKind::Dot ? "dot" : "general";
  NoGradGuard no_grad;
  Seq2Seq::Encoded enc = model.encode(batch.source, batch.source_lengths, batch.source_mask);
  Seq2Seq::State state = model.initial_state(enc);
  for (std::int64_t i = 0; i <= t; ++i)
    state = model.step(enc, Indices({batch.decoder_input.values[static_cast<std::size_t>(i)]}), state).state;
  st.S = enc.states.size(1);
  st.H = enc.states.detach();
  st.s = state.s.detach();  // the query of step t: the decoder cell's output
  st.mask = enc.mask;
  st.target = Indices({batch.decoder_target.values[static_cast<std::size_t>(t)]});
  return st;
}

}  // namespace

nlohmann::ordered_json explain_model_step(Seq2Seq& model, const std::vector<std::string>& source_tokens,
                                          const std::vector<std::string>& target_tokens,
                                          const Vocabulary& source_vocab, const Vocabulary& target_vocab,
                                          std::int64_t t) {
  if (model.config().attention == AttentionKind::None) fail("explain: the model has no attention");
  if (source_tokens.empty()) fail("explain: the source sentence is empty");
  const auto T = static_cast<std::int64_t>(target_tokens.size()) + 1;  // </s> included
  if (t < 0 || t >= T) fail("explain: step {} is out of range: the target has {} steps (0 to {})", t, T, T - 1);
  std::vector<EncodedPair> pair = {{source_vocab.encode(source_tokens), target_vocab.encode(target_tokens)}};
  BatchOptions batch_options;
  batch_options.mask_dtype = model.dtype();
  const std::int64_t ids[] = {0};
  const Batch batch = make_batch(pair, ids, batch_options);
  const Setup st = step_setup(model, batch, t);
  const Pass p = run_pass(st, true);
  model.zero_grad();
  const std::int64_t S = st.S, Hk = st.H.size(2), H = st.s.size(1);
  const auto A = static_cast<std::int64_t>(p.q.size());
  nlohmann::ordered_json out;
  out["t"] = t;
  out["target_token"] = t + 1 < T ? target_tokens[static_cast<std::size_t>(t)] : "</s>";
  auto& v = out["values"];
  v["H"] = entry({S, Hk}, st.H.to_vector(), "data");
  v["s"] = entry({H}, st.s.to_vector(), "data");
  v["q"] = entry({A}, p.q, "data");
  v["k"] = entry({S, static_cast<std::int64_t>(p.k.size()) / S}, p.k, "data");
  if (!p.t.empty()) v["t"] = entry({S, static_cast<std::int64_t>(p.t.size()) / S}, p.t, "data");
  v["e"] = entry({S}, p.e, "data");
  v["alpha"] = entry({S}, p.alpha, "data");
  v["c"] = entry({Hk}, p.c, "data");
  v["h_tilde"] = entry({H}, p.ht, "data");
  if (st.kind != Kind::Additive) v["scale"] = st.model->dot->scale();
  auto& g = out["gradients"];
  g["e"] = entry({S}, p.de, "analytic");
  g["alpha"] = entry({S}, p.dalpha, "analytic");
  g["c"] = entry({Hk}, p.dc, "analytic");
  g["h_tilde"] = entry({H}, p.dht, "analytic");
  g["s"] = entry({H}, p.ds, "analytic");
  g["H"] = entry({S, Hk}, p.dH, "analytic");
  out["loss"] = p.loss;
  out["p_target"] = p.p[static_cast<std::size_t>(st.target.values[0])];
  const Values h = st.H.to_vector();
  Values norms;
  for (std::int64_t j = 0; j < S; ++j) {
    double sum = 0;
    for (std::int64_t i = 0; i < Hk; ++i) sum += h[j * Hk + i] * h[j * Hk + i];
    norms.push_back(p.alpha[j] * std::sqrt(sum));  // ‖α_j h_j‖ = α_j ‖h_j‖, α_j ≥ 0
  }
  out["contribution_norms"] = norms;
  return out;
}

}  // namespace attend::tools
