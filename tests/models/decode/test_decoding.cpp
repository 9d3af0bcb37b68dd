// models/decode/decoding: options shared by greedy decoding and beam search.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "autograd/grad_mode.hpp"
#include "core/error.hpp"
#include "core/io/limits.hpp"
#include "decoding_oracle.hpp"
#include "models/decode/decoding.hpp"
#include "models/decode/ensemble.hpp"
#include "models/eval/evaluation.hpp"
#include "models/seq2seq.hpp"

using namespace attend;

namespace {

std::unique_ptr<Seq2Seq> eos_loving_model(Generator& init, DType dtype = Float64) {
  Seq2SeqConfig c;
  c.source_vocab = 7;
  c.target_vocab = 7;
  c.embed = 3;
  c.hidden = 3;
  c.attention = AttentionKind::Additive;
  auto model = std::make_unique<Seq2Seq>(c, init, dtype);
  // A large output bias on </s>: left alone, the model ends every sentence at once.
  model->project.bias.set({Vocabulary::kEos}, 50.0);
  model->eval();
  return model;
}

Batch two_sentences(DType dtype = Float64) {
  std::vector<EncodedPair> data = {{{4, 5, 6}, {5}}, {{6}, {4}}};  // source lengths 3 and 1
  BatchOptions o;
  o.mask_dtype = dtype;
  const std::vector<std::int64_t> ids = {0, 1};
  return make_batch(data, ids, o);
}

}  // namespace

TEST_CASE("stop_at_eos false: no </s>, exactly max_len_a * length + max_len_b tokens, greedy and beam") {
  // Both dtypes: float32 decoding reads its logits directly, and </s> being the
  // row's maximum is what greedy decoding must forget when it is excluded.
  for (const std::int64_t beam : {1, 3})
  for (const DType dtype : {Float64, Float32}) {
    CAPTURE(beam);
    CAPTURE(dtype);
    Generator init(7);
    std::unique_ptr<Seq2Seq> model_ptr = eos_loving_model(init, dtype);
    Seq2Seq& model = *model_ptr;
    Batch batch = two_sentences(dtype);
    DecodeOptions o;
    o.beam = beam;
    o.max_len_a = 1.5;
    o.max_len_b = 2;
    const std::vector<Hypothesis> stopped = translate(model, batch, o);
    REQUIRE(stopped.size() == 2);
    for (const Hypothesis& h : stopped) CHECK(h.tokens == std::vector<std::int64_t>{Vocabulary::kEos});
    o.stop_at_eos = false;
    const std::vector<Hypothesis> fixed = translate(model, batch, o);
    REQUIRE(fixed.size() == 2);
    CHECK(fixed[0].tokens.size() == 6);  // int(1.5 * 3) + 2
    CHECK(fixed[1].tokens.size() == 3);  // int(1.5 * 1) + 2
    for (const Hypothesis& h : fixed) {
      CHECK(std::count(h.tokens.begin(), h.tokens.end(), Vocabulary::kEos) == 0);
      CHECK(h.attention.size() == h.tokens.size());
      CHECK(std::isfinite(h.log_prob));
    }
  }
}

// The oracle: the model stepped by hand (encode, step, model.logits, </s> set
// to -inf, the first largest logit), against greedy decoding, whose float32
// path reads its logits through a packed weight (core/kernels/packed_gemm.hpp) and a
// kept row maximum. The log-probabilities too: log softmax over every token,
// </s> included, as the model gave it.
TEST_CASE("greedy decoding without </s> equals stepping the model by hand, </s> the largest logit throughout") {
  for (const DType dtype : {Float64, Float32}) {
    CAPTURE(dtype);
    Generator init(9);
    std::unique_ptr<Seq2Seq> model_ptr = eos_loving_model(init, dtype);
    Seq2Seq& model = *model_ptr;
    const Batch batch = two_sentences(dtype);
    DecodeOptions o;
    o.max_len_a = 0;
    o.max_len_b = 4;
    o.stop_at_eos = false;
    const std::vector<Hypothesis> greedy = translate(model, batch, o);

    NoGradGuard no_grad;
    Seq2Seq::Encoded enc = model.encode(batch.source, batch.source_lengths, batch.source_mask);
    Seq2Seq::State state = model.initial_state(enc);
    std::vector<std::int64_t> previous(2, Vocabulary::kBos);
    std::vector<std::vector<std::int64_t>> expected(2);
    std::vector<double> expected_log_prob(2, 0.0);
    for (int t = 0; t < 4; ++t) {
      Seq2Seq::Step step = model.step(enc, Indices(previous), state);
      state = step.state;
      const std::vector<double> z = model.logits(step.attentional).to(Float64).to_vector();  // (2, V)
      for (std::size_t b = 0; b < 2; ++b) {
        std::vector<double> row(z.begin() + static_cast<std::ptrdiff_t>(b * 7), z.begin() + static_cast<std::ptrdiff_t>(b * 7 + 7));
        CHECK(std::max_element(row.begin(), row.end()) - row.begin() == Vocabulary::kEos);  // what is excluded is the max
        double log_norm = 0;  // log sum_v e^(z_v)
        for (const double z_v : row) log_norm += std::exp(z_v);
        log_norm = std::log(log_norm);
        row[Vocabulary::kEos] = -INFINITY;
        previous[b] = std::max_element(row.begin(), row.end()) - row.begin();
        expected[b].push_back(previous[b]);
        expected_log_prob[b] += row[static_cast<std::size_t>(previous[b])] - log_norm;
      }
    }
    CHECK(greedy[0].tokens == expected[0]);
    CHECK(greedy[1].tokens == expected[1]);
    const double tolerance = dtype == Float32 ? 1e-5 : 1e-12;
    CHECK(greedy[0].log_prob == doctest::Approx(expected_log_prob[0]).epsilon(tolerance));
    CHECK(greedy[1].log_prob == doctest::Approx(expected_log_prob[1]).epsilon(tolerance));
  }
}

// Greedy decoding's steps store no logits (keep_logits false): the output
// projection's kernel gives each row's best token, maximum and normaliser alone.
TEST_CASE("a float32 step without logits: the best token and its log p as with them, nothing else, NaN rows keep them") {
  Generator init(9);
  std::unique_ptr<Seq2Seq> model = eos_loving_model(init, Float32);
  const Batch batch = two_sentences(Float32);
  NoGradGuard no_grad;
  Seq2Seq* const models[] = {model.get()};
  DecoderEnsemble with(models, batch, 1), without(models, batch, 1);
  std::vector<std::int64_t> previous(2, Vocabulary::kBos);
  for (int t = 0; t < 3; ++t) {
    CAPTURE(t);
    DecoderEnsemble::Output& a = with.step(previous, {}, Vocabulary::kEos, true);
    DecoderEnsemble::Output& b = without.step(previous, {}, Vocabulary::kEos, false);
    CHECK(a.logits_stored);
    CHECK_FALSE(b.logits_stored);
    for (std::int64_t r = 0; r < 2; ++r) {
      a.exclude(r, Vocabulary::kEos);
      b.exclude(r, Vocabulary::kEos);  // the kernel left it out already
      const std::int64_t best = a.best_token(r);
      CHECK(best != Vocabulary::kEos);
      CHECK(b.best_token(r) == best);
      CHECK(b.log_prob(r, best) == a.log_prob(r, best));
      CHECK_THROWS_AS(b.log_prob(r, best == 4 ? 5 : 4), Error);
      CHECK_THROWS_AS(b.exclude(r, best), Error);
      previous[static_cast<std::size_t>(r)] = best;
    }
    std::vector<std::int64_t> top;
    std::vector<double> scratch;
    CHECK_THROWS_AS(b.best_tokens(0, 2, top, scratch), Error);
  }
  // A NaN logit in every row: no summary is usable, so the logits are stored after all.
  model->project.bias.set({3}, NAN);
  DecoderEnsemble nan_rows(models, batch, 1);
  DecoderEnsemble::Output& c = nan_rows.step(std::vector<std::int64_t>(2, Vocabulary::kBos), {}, Vocabulary::kEos, false);
  CHECK(c.logits_stored);
  c.exclude(0, Vocabulary::kEos);
  CHECK(c.best_token(0) >= 0);
}

TEST_CASE("a source too long to decode within limits::kMaxDecodeBytes is refused before any work, saying what fits") {
  using attend::testing::small_model;
  using attend::testing::sources;
  std::unique_ptr<Seq2Seq> attending = small_model(5, AttentionKind::Dot);
  std::unique_ptr<Seq2Seq> plain = small_model(5, AttentionKind::None);
  Seq2Seq* const models[] = {attending.get()};
  for (std::int64_t beam : {1, 4}) {
    CAPTURE(beam);
    DecodeOptions o;
    o.beam = beam;
    // The attention rows grow with the square of the length: 8 T S bytes for each row kept.
    const std::int64_t S = 1000, T = 1505;
    const std::int64_t one[] = {S};
    const std::uint64_t kept = beam == 1 ? 2 : 2 * 4 + 1;
    CHECK(decode_memory_bytes(models, one, o) >= kept * 8 * T * S);
    CHECK(decode_memory_bytes(models, one, o) < kept * 8 * T * S + 2'000'000);  // the encoder's part is small here
    // The longest source that fits is the limit's, and one token more does not fit.
    const std::uint64_t limit = limits::decode_memory_limit();
    const std::int64_t fits = max_decodable_source(models, o, limit);
    REQUIRE(fits > 100);
    const std::int64_t at[] = {fits}, past[] = {fits + 1};
    CHECK(decode_memory_bytes(models, at, o) <= limit);
    CHECK(decode_memory_bytes(models, past, o) > limit);
    CHECK_NOTHROW(check_decode_memory(models, fits, o));
    CHECK_THROWS_WITH_AS(check_decode_memory(models, fits + 1, o),
                         doctest::Contains(fmt::format("decode: a source of {} tokens would take about", fits + 1).c_str()), Error);
    // A batch is refused before its encoder runs: a 32768-token source (what a
    // 65536-byte line of one-letter words makes) was decoded for half a minute,
    // then ran out of memory.
    const Batch batch = sources({{4, 5}, std::vector<std::int64_t>(32768, 4)});
    CHECK_THROWS_WITH_AS(decode_n_best(models, batch, o),
                         doctest::Contains("decode: a source of 32768 tokens would take about"), Error);
    CHECK_THROWS_WITH_AS(decode_n_best(models, batch, o),
                         doctest::Contains(fmt::format("sources of at most {} tokens fit", fits).c_str()), Error);
  }
  // Without attention the need grows with the length alone: a long source fits.
  Seq2Seq* const none[] = {plain.get()};
  const std::int64_t long_source[] = {32768};
  CHECK(decode_memory_bytes(none, long_source, DecodeOptions{}) < limits::decode_memory_limit());
}

TEST_CASE("translate_text's batches stay within limits::kMaxDecodeBytes together, not only one sentence at a time") {
  std::unique_ptr<Seq2Seq> model = attend::testing::small_model(5, AttentionKind::Dot);
  Seq2Seq* const models[] = {model.get()};
  const DecodeOptions o;
  // Sentences of the longest length that fits alone: each needs more than half
  // the limit, so no two fit together, and each batch holds one.
  const std::int64_t fits = max_decodable_source(models, o, limits::decode_memory_limit());
  REQUIRE(fits > 100);
  const std::vector<std::int64_t> longest(3, fits);
  CHECK(translation_batch_end(models, longest, 0, 64, o) == 1);
  CHECK(translation_batch_end(models, longest, 2, 64, o) == 3);
  // Short sentences: as many as the batch size allows.
  const std::vector<std::int64_t> short_ones(5, 3);
  CHECK(translation_batch_end(models, short_ones, 0, 64, o) == 5);
  CHECK(translation_batch_end(models, short_ones, 1, 2, o) == 3);
  // Sentences of 0.6 times that length need about 0.36 of the limit each:
  // after the short ones, two of them fit together and the third starts a batch.
  std::vector<std::int64_t> mixed = short_ones;
  mixed.insert(mixed.end(), 3, fits * 6 / 10);
  CHECK(translation_batch_end(models, mixed, 0, 64, o) == 7);
  CHECK(translation_batch_end(models, mixed, 7, 64, o) == 8);
  CHECK_THROWS_AS(translation_batch_end(models, mixed, 8, 64, o), Error);
}
