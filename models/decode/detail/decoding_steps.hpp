#pragma once
// The pieces models/decode/decoding.cpp (greedy decoding) and models/decode/beam_search.cpp
// share; users include models/decode/decoding.hpp.
#include <cstdint>
#include <span>
#include <vector>

#include "models/decode/decoding.hpp"
#include "models/decode/ensemble.hpp"

namespace attend {

// At most max_len_a * source length + max_len_b output tokens (at least 1);
// Error above limits::kMaxSequence.
std::int64_t max_output_length(const DecodeOptions& options, std::int64_t source_length);
// Row `row` of a (N, S) weights matrix, its first `length` (real source) columns.
std::vector<double> attention_row(const std::vector<double>& weights, std::int64_t row, std::int64_t S, std::int64_t length);
// Without stop_at_eos, </s> can never be picked: its log-probability in the row becomes -inf.
void ignore_eos(const DecodeOptions& options, DecoderEnsemble::Output& step, std::int64_t row);
// Error when coverage_beta > 0 and no model has attention.
void check_coverage_needs_attention(const DecoderEnsemble& ensemble, const DecodeOptions& options);

// Beam search for decode_n_best (any beam size >= 1): per sentence, at most
// options.n_best hypotheses, best first, never none. early_stop false runs every
// sentence to its maximum length: the oracle the early stop is tested against.
std::vector<std::vector<Hypothesis>> beam_search_n_best(std::span<Seq2Seq* const> models, const Batch& batch,
                                                        const DecodeOptions& options, bool early_stop = true);

}  // namespace attend
