#pragma once
// One decoder step of a trained model, number by number: what `attend explain`
// shows for its tiny model (the same Setup and pass, explain_model.hpp), here
// for the step t of a sentence pair run with teacher forcing. attend serve's
// POST /explain returns it (docs/serve.md).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/data/vocabulary.hpp"
#include "models/seq2seq.hpp"

namespace attend::tools {

// The step's values and gradients under the names of `attend explain --json`:
//   values:    H (S, Hk), s (H), q, k (S, A), t (additive), e (S), alpha (S), c (Hk), h_tilde (H), scale (dot, general)
//   gradients: {shape, analytic} of L_t = −log p(y_t) at e, alpha, c, h_tilde, s, H
// and t, target_token, loss, p_target, contribution_norms (‖α_j h_j‖ per source token).
// target_tokens are without </s> (it is appended: the last step predicts it); t
// counts from 0 and must be below target_tokens.size() + 1. The model needs
// attention. Its gradients are zeroed again afterwards.
nlohmann::ordered_json explain_model_step(Seq2Seq& model, const std::vector<std::string>& source_tokens,
                                          const std::vector<std::string>& target_tokens,
                                          const Vocabulary& source_vocab, const Vocabulary& target_vocab,
                                          std::int64_t t);

}  // namespace attend::tools
