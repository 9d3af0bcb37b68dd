// models/decode/decoding: n-best lists, the GNMT length and coverage penalties, and
// beam search held against the exhaustive search of tests/models/decode/decoding_oracle.hpp.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <numeric>

#include "core/io/limits.hpp"
#include "decoding_oracle.hpp"
#include "models/decode/decoding.hpp"
#include "models/decode/detail/decoding_steps.hpp"
#include "models/seq2seq.hpp"

using namespace attend;

using attend::testing::small_model;
using attend::testing::sources;

TEST_CASE("length penalties by hand: average |Y|^alpha, GNMT ((5 + |Y|) / 6)^alpha, none") {
  CHECK(length_penalty_value(LengthPenalty::Average, 0.5, 4) == doctest::Approx(2.0));
  CHECK(length_penalty_value(LengthPenalty::Average, 0.0, 9) == 1.0);
  CHECK(length_penalty_value(LengthPenalty::Gnmt, 1.0, 7) == doctest::Approx(2.0));    // 12 / 6
  CHECK(length_penalty_value(LengthPenalty::Gnmt, 2.0, 4) == doctest::Approx(2.25));   // (9 / 6)^2
  CHECK(length_penalty_value(LengthPenalty::Gnmt, 0.6, 1) == doctest::Approx(1.0));    // 6 / 6
  CHECK(length_penalty_value(LengthPenalty::None, 0.6, 30) == 1.0);
  CHECK(parse_length_penalty("gnmt") == LengthPenalty::Gnmt);
  CHECK(length_penalty_name(LengthPenalty::Average) == "average");
  CHECK_THROWS_WITH_AS(parse_length_penalty("wu"), "unknown length penalty 'wu' (expected average, gnmt or none)", Error);
}

TEST_CASE("coverage penalty by hand: beta * sum_i log(min(sum_j a_ij, 1))") {
  // 3 output tokens over 2 source tokens: the columns sum to 0.8 and 2.2.
  const std::vector<std::vector<double>> a = {{0.5, 0.5}, {0.2, 0.8}, {0.1, 0.9}};
  CHECK(coverage_penalty_value(0.2, a, 2) == doctest::Approx(0.2 * std::log(0.8)));  // log(min(2.2, 1)) = 0
  CHECK(coverage_penalty_value(1.0, a, 1) == doctest::Approx(std::log(0.8)));        // the first column only
  CHECK(coverage_penalty_value(0.0, a, 2) == 0.0);
  // A source token nobody looked at: -inf, but not NaN when beta is 0.
  const std::vector<std::vector<double>> blind = {{1.0, 0.0}, {1.0, 0.0}};
  CHECK(coverage_penalty_value(0.0, blind, 2) == 0.0);
  CHECK(coverage_penalty_value(0.5, blind, 2) == -std::numeric_limits<double>::infinity());
  CHECK_THROWS_WITH_AS(coverage_penalty_value(0.5, a, 3), "coverage penalty: an attention row has 2 weights for 3 source tokens",
                       Error);
  // Fully covered: 0.
  CHECK(coverage_penalty_value(3.0, {{0.5, 0.5}, {0.5, 0.5}}, 2) == 0.0);

  Hypothesis h;
  h.tokens = {4, 5, 3};
  h.attention = a;
  h.log_prob = -3.0;
  DecodeOptions o;
  o.length_penalty = LengthPenalty::Gnmt;
  o.length_alpha = 1.0;
  o.coverage_beta = 0.2;
  score_hypothesis(h, 2, o);
  CHECK(h.length_penalty == doctest::Approx(8.0 / 6.0));
  CHECK(h.coverage_penalty == doctest::Approx(0.2 * std::log(0.8)));
  CHECK(h.score == doctest::Approx(-3.0 / (8.0 / 6.0) + 0.2 * std::log(0.8)));
  o.length_penalty = LengthPenalty::Average;
  o.length_alpha = 0.5;
  o.coverage_beta = 0;
  score_hypothesis(h, 2, o);
  CHECK(h.score == doctest::Approx(-3.0 / std::sqrt(3.0)));
  CHECK(nbest_line(7, "a b", h) ==
        fmt::format("7 ||| a b ||| LogProb= -3 LengthPenalty= {} CoveragePenalty= 0 ||| {}", std::sqrt(3.0), h.score));
}

TEST_CASE("a beam wide enough to keep every prefix finds the exhaustive search's n best, under every penalty") {
  // Target vocabulary 6, at most 3 tokens: 6 + 36 + 216 sequences; a beam of 64 keeps every prefix
  // (at most 36 live), so its n-best list must be the exhaustive one, and its early stop must not cut it short.
  const Batch batch = sources({{4, 5, 6}, {6, 4}, {5}});
  std::int64_t compared = 0;
  for (std::uint64_t seed : {1, 2, 3}) {
    std::unique_ptr<Seq2Seq> model = small_model(seed);
    Seq2Seq* const models[] = {model.get()};
    for (LengthPenalty penalty : {LengthPenalty::Average, LengthPenalty::Gnmt, LengthPenalty::None}) {
      for (double beta : {0.0, 0.4}) {
        for (double alpha : {0.0, 0.6, 2.0}) {
          CAPTURE(seed);
          CAPTURE(length_penalty_name(penalty));
          CAPTURE(alpha);
          CAPTURE(beta);
          DecodeOptions o;
          o.beam = 64;
          o.n_best = 8;
          o.max_len_a = 0;
          o.max_len_b = 3;
          o.length_penalty = penalty;
          o.length_alpha = alpha;
          o.coverage_beta = beta;
          const std::vector<std::vector<Hypothesis>> lists = decode_n_best(models, batch, o);
          REQUIRE(lists.size() == 3);
          for (std::int64_t b = 0; b < 3; ++b) {
            const std::vector<Hypothesis> all = testing::all_hypotheses({model.get()}, batch, b, 3, o);
            REQUIRE(all.size() == 1 + 5 + 5 * 5 * 6);  // </s> at step 1, at step 2, or any token at step 3
            REQUIRE(lists[b].size() == 8);
            for (std::size_t i = 0; i < 8; ++i) {
              CHECK(lists[b][i].tokens == all[i].tokens);
              CHECK(lists[b][i].score == doctest::Approx(all[i].score).epsilon(1e-12));
              CHECK(lists[b][i].log_prob == doctest::Approx(all[i].log_prob).epsilon(1e-12));
              CHECK(lists[b][i].coverage_penalty == doctest::Approx(all[i].coverage_penalty).epsilon(1e-12));
              if (i > 0) CHECK(lists[b][i].score <= lists[b][i - 1].score);
              ++compared;
            }
          }
        }
      }
    }
  }
  CHECK(compared == 3 * 3 * 2 * 3 * 3 * 8);
}

TEST_CASE("n-best of a narrow beam: sorted, the first is beam search's answer, lists of n_best") {
  std::unique_ptr<Seq2Seq> model = small_model(9, AttentionKind::Dot, 9);
  Seq2Seq* const models[] = {model.get()};
  const Batch batch = sources({{4, 5, 6, 4}, {6, 4}, {5}});
  DecodeOptions o;
  o.beam = 4;
  o.n_best = 4;
  o.length_penalty = LengthPenalty::Gnmt;
  o.coverage_beta = 0.2;
  const std::vector<std::vector<Hypothesis>> lists = decode_n_best(models, batch, o);
  DecodeOptions one = o;
  one.n_best = 1;
  const std::vector<Hypothesis> best = beam_search(*model, batch, one);
  REQUIRE(lists.size() == 3);
  for (std::size_t b = 0; b < 3; ++b) {
    REQUIRE(lists[b].size() == 4);
    CHECK(lists[b][0].tokens == best[b].tokens);
    CHECK(lists[b][0].score == best[b].score);
    for (std::size_t i = 0; i < 4; ++i) {
      const Hypothesis& h = lists[b][i];
      CHECK(h.attention.size() == h.tokens.size());
      CHECK(h.length_penalty == length_penalty_value(LengthPenalty::Gnmt, 0.6, static_cast<std::int64_t>(h.tokens.size())));
      CHECK(h.score == h.log_prob / h.length_penalty + h.coverage_penalty);
      if (i > 0) {
        CHECK(h.score <= lists[b][i - 1].score);
        CHECK(h.tokens != lists[b][i - 1].tokens);
      }
    }
  }
  // Greedy decoding's list has its one hypothesis, scored the same way.
  const std::vector<std::vector<Hypothesis>> greedy = decode_n_best(models, batch, DecodeOptions{});
  const std::vector<Hypothesis> g = greedy_decode(*model, batch);
  REQUIRE(greedy.size() == 3);
  for (std::size_t b = 0; b < 3; ++b) {
    REQUIRE(greedy[b].size() == 1);
    CHECK(greedy[b][0].tokens == g[b].tokens);
    CHECK(g[b].score == doctest::Approx(g[b].log_prob / std::pow(static_cast<double>(g[b].tokens.size()), 0.6)));
  }
}

TEST_CASE("decoding options are checked: n-best, alpha, beta, coverage without attention, lengths") {
  std::unique_ptr<Seq2Seq> model = small_model(4);
  std::unique_ptr<Seq2Seq> plain = small_model(4, AttentionKind::None);
  Seq2Seq* const models[] = {model.get()};
  const Batch batch = sources({{4, 5}});
  DecodeOptions o;
  o.beam = 2;
  o.n_best = 3;
  CHECK_THROWS_WITH_AS(decode_n_best(models, batch, o), "decode: n-best must be between 1 and the beam size 2, got 3", Error);
  o.n_best = 0;
  CHECK_THROWS_AS(decode_n_best(models, batch, o), Error);
  o = DecodeOptions{};
  o.n_best = 2;  // greedy
  CHECK_THROWS_WITH_AS(decode_n_best(models, batch, o), "decode: n-best must be between 1 and the beam size 1, got 2", Error);
  o = DecodeOptions{};
  o.beam = limits::kMaxBeam + 1;
  CHECK_THROWS_AS(translate(*model, batch, o), Error);
  o = DecodeOptions{};
  o.length_alpha = -0.5;
  CHECK_THROWS_WITH_AS(translate(*model, batch, o), "decode: the length penalty's alpha must be finite and >= 0, got -0.5", Error);
  o.length_alpha = std::nan("");
  CHECK_THROWS_AS(translate(*model, batch, o), Error);
  o = DecodeOptions{};
  o.coverage_beta = -1;
  CHECK_THROWS_AS(translate(*model, batch, o), Error);
  o.coverage_beta = 0.2;
  CHECK_NOTHROW(translate(*model, batch, o));
  CHECK_THROWS_WITH_AS(translate(*plain, batch, o),
                       "decode: the coverage penalty (beta 0.2) needs attention weights, and no model has attention", Error);
  o = DecodeOptions{};
  o.max_len_a = 1e300;
  CHECK_THROWS_AS(translate(*model, batch, o), Error);  // not a wrapped-around integer
  o.max_len_a = std::nan("");
  CHECK_THROWS_AS(translate(*model, batch, o), Error);
}

TEST_CASE("the early stop never changes the n-best list: it equals the list of a beam run to the maximum length") {
  // A finished hypothesis found after the stop would have to beat the n-th best
  // (not just the best) to change the list; the bound on live beams rules that out.
  const Batch batch = sources({{4, 5, 6, 4, 5}, {6, 4}, {5}, {6, 6, 5, 4}});
  std::int64_t compared = 0;
  for (std::uint64_t seed : {11, 12, 13, 14}) {
    std::unique_ptr<Seq2Seq> model = small_model(seed, AttentionKind::General, 8);
    // A likely </s>: many hypotheses finish, and the early stop comes soon, while
    // live beams can still finish at little cost.
    model->project.bias.set({Vocabulary::kEos}, 1.0 + static_cast<double>(seed % 2));
    Seq2Seq* const models[] = {model.get()};
    for (LengthPenalty penalty : {LengthPenalty::Average, LengthPenalty::Gnmt, LengthPenalty::None}) {
      for (double beta : {0.0, 0.3}) {
        for (std::int64_t n_best : {2, 3, 4}) {
         for (double alpha : {0.0, 1.0}) {
          CAPTURE(seed);
          CAPTURE(length_penalty_name(penalty));
          CAPTURE(beta);
          CAPTURE(n_best);
          DecodeOptions o;
          o.beam = 4;
          o.n_best = n_best;
          o.max_len_a = 2;
          o.max_len_b = 4;
          o.length_penalty = penalty;
          o.length_alpha = alpha;
          o.coverage_beta = beta;
          const auto stopped = beam_search_n_best(models, batch, o);
          const auto full = beam_search_n_best(models, batch, o, false);
          REQUIRE(stopped.size() == full.size());
          for (std::size_t b = 0; b < full.size(); ++b) {
            REQUIRE(stopped[b].size() == full[b].size());
            for (std::size_t i = 0; i < full[b].size(); ++i) {
              CHECK(stopped[b][i].tokens == full[b][i].tokens);
              CHECK(stopped[b][i].score == full[b][i].score);
              ++compared;
            }
          }
         }
        }
      }
    }
  }
  CHECK(compared == 4 * 3 * 2 * 2 * (2 + 3 + 4) * 4);
}
