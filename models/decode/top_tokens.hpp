#pragma once
// The few best tokens of a row of V log-probabilities: the step of beam search
// that looks at every token of every beam (V = 8000 and 320 beams at config M).
#include <cstdint>
#include <vector>

namespace attend {

// The `keep` tokens of highest log p, best first, the lower id first on a tie;
// NaN is never chosen (so fewer than `keep` when fewer are numbers). `top` and
// `scratch` are the caller's, so that a search reuses their memory.
// The same order holds for logits (log p plus a constant per row), so float32
// models pass their logits and nothing is converted to double.
void best_tokens(const double* logp, std::int64_t V, std::int64_t keep, std::vector<std::int64_t>& top,
                 std::vector<double>& scratch);
void best_tokens(const float* logp, std::int64_t V, std::int64_t keep, std::vector<std::int64_t>& top,
                 std::vector<double>& scratch);

// The same by sorting every token: the oracle best_tokens is tested against.
std::vector<std::int64_t> best_tokens_by_sorting(const double* logp, std::int64_t V, std::int64_t keep);

// The best token alone, as std::max_element finds it (the first of equal
// ones), NaN passed over; 0 when every one is NaN. Two vectorised passes (the
// largest value, then its first place) instead of max_element's scalar one,
// which was a tenth of greedy decoding's time at config S.
std::int64_t best_token(const double* logp, std::int64_t V);
std::int64_t best_token(const float* logp, std::int64_t V);
// The same when the row's largest value (fast_math::max of it) is known: one pass.
std::int64_t best_token(const double* logp, std::int64_t V, double max);
std::int64_t best_token(const float* logp, std::int64_t V, double max);

}  // namespace attend
