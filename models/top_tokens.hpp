#pragma once
// The few best tokens of a row of V log-probabilities: the step of beam search
// that looks at every token of every beam (V = 8000 and 320 beams at config M).
#include <cstdint>
#include <vector>

namespace attend {

// The `keep` tokens of highest log p, best first, the lower id first on a tie;
// NaN is never chosen (so fewer than `keep` when fewer are numbers). `top` and
// `scratch` are the caller's, so that a search reuses their memory.
void best_tokens(const double* logp, std::int64_t V, std::int64_t keep, std::vector<std::int64_t>& top,
                 std::vector<double>& scratch);

// The same by sorting every token: the oracle best_tokens is tested against.
std::vector<std::int64_t> best_tokens_by_sorting(const double* logp, std::int64_t V, std::int64_t keep);

}  // namespace attend
