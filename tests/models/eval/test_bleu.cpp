// models/eval/bleu: against NLTK (tests/reference/bleu_reference.py), against sacreBLEU's
// own documented examples, and hand-computed edge cases.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "models/eval/bleu.hpp"

using namespace attend;
using Sentences = std::vector<std::vector<std::string>>;
using Lines = std::vector<std::string>;
using Counts = std::array<std::int64_t, 4>;

namespace {

nlohmann::json reference() {
  std::ifstream file(std::string(ATTEND_TEST_DATA) + "/bleu_reference.json");
  REQUIRE(file.good());
  return nlohmann::json::parse(file);
}

bool close(double actual, double expected, double rtol = 1e-9) {
  return std::abs(actual - expected) <= rtol * std::max(std::abs(expected), 1e-300);
}

Sentences split(const Lines& lines) {
  Sentences out;
  for (const std::string& line : lines) {
    std::vector<std::string> tokens;
    std::size_t begin = 0;
    while (begin < line.size()) {
      std::size_t end = line.find(' ', begin);
      if (end == std::string::npos) end = line.size();
      if (end > begin) tokens.push_back(line.substr(begin, end - begin));
      begin = end + 1;
    }
    out.push_back(tokens);
  }
  return out;
}

}  // namespace

TEST_CASE("corpus_bleu_tokens matches NLTK's corpus_bleu, unsmoothed and with method3") {
  const nlohmann::json ref = reference();
  REQUIRE(ref["corpora"].size() >= 6);
  int compared_directly = 0;
  for (const auto& c : ref["corpora"]) {
    CAPTURE(c["name"].get<std::string>());
    const auto hyps = c["hypotheses"].get<Sentences>();
    const auto refs = c["references"].get<Sentences>();
    const double nltk_none = c["nltk_none"].get<double>(), nltk_exp = c["nltk_exp"].get<double>();
    BleuScore none = corpus_bleu_tokens(hyps, refs, Smoothing::none);
    BleuScore exp = corpus_bleu_tokens(hyps, refs, Smoothing::exp);
    // NLTK's total for a hypothesis with no n-gram of order n is 1, sacreBLEU's 0.
    Counts shorter{};
    for (const auto& h : hyps)
      for (int n = 0; n < 4; ++n) shorter[n] += static_cast<std::int64_t>(h.size()) < n + 1;
    const auto nltk_totals = c["totals"].get<Counts>();
    for (int n = 0; n < 4; ++n) CHECK(none.totals[n] + shorter[n] == nltk_totals[n]);
    CHECK(none.matches == c["matches"].get<Counts>());
    CHECK(none.sys_len == c["sys_len"].get<std::int64_t>());
    CHECK(none.ref_len == c["ref_len"].get<std::int64_t>());
    CHECK(close(none.brevity_penalty, c["brevity_penalty"].get<double>()));

    // The formula, from NLTK's own statistics.
    BleuStats as_nltk;
    as_nltk.matches = none.matches;
    as_nltk.totals = nltk_totals;
    as_nltk.sys_len = none.sys_len;
    as_nltk.ref_len = none.ref_len;
    BleuScore formula_none = compute_bleu(as_nltk, Smoothing::none, false, "none");
    CHECK(close(compute_bleu(as_nltk, Smoothing::exp, false, "none").score / 100, nltk_exp));
    bool every_order_matched = true;
    for (std::int64_t m : none.matches) every_order_matched = every_order_matched && m > 0;
    if (every_order_matched) {
      CHECK(close(formula_none.score / 100, nltk_none));
    } else {
      // NLTK puts sys.float_info.min in place of a zero precision, which leaves a
      // score around 1e-77; sacreBLEU (and attend) give exactly 0.
      CHECK(formula_none.score == 0.0);
      CHECK(none.score == 0.0);
      CHECK(nltk_none < 1e-50);
    }
    // Without short hypotheses the counts agree, and so do the scores.
    if (shorter == Counts{}) {
      ++compared_directly;
      CHECK(close(exp.score / 100, nltk_exp));
      if (every_order_matched) CHECK(close(none.score / 100, nltk_none));
    }
    CHECK(none.signature == "nrefs:1|case:mixed|eff:no|tok:none|smooth:none|version:attend-0.1");
    CHECK(exp.signature == "nrefs:1|case:mixed|eff:no|tok:none|smooth:exp|version:attend-0.1");
  }
  CHECK(compared_directly >= 4);
}

TEST_CASE("tokenize_13a matches the 13a regular expressions run by Python's re") {
  const nlohmann::json ref = reference();
  REQUIRE(ref["tok13a"].size() >= 10);
  for (const auto& c : ref["tok13a"]) {
    const auto input = c["input"].get<std::string>();
    CAPTURE(input);
    CHECK(tokenize_13a(input) == c["tokens"].get<std::vector<std::string>>());
  }
}

TEST_CASE("corpus_bleu on detokenized text matches 13a + NLTK method3") {
  const nlohmann::json ref = reference();
  REQUIRE(ref["detokenized"].size() >= 2);
  for (const auto& c : ref["detokenized"]) {
    CAPTURE(c["name"].get<std::string>());
    BleuScore s = corpus_bleu(c["hypotheses"].get<Lines>(), c["references"].get<Lines>());
    CHECK(s.matches == c["matches"].get<Counts>());
    CHECK(s.totals == c["totals"].get<Counts>());
    CHECK(close(s.score, c["score"].get<double>()));
  }
}

TEST_CASE("sacreBLEU's README example: two reference streams, 48.53") {
  // mjpost/sacrebleu, README.md, "Using SacreBLEU from Python" (BLEU().corpus_score):
  //   BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)
  //   nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0
  // and test/test_bleu.py, test_corpus_bleu_cases: 48.530827 (checked there to 1e-8),
  // and 0.0 for three empty hypotheses.
  const Lines sys = {"The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."};
  const std::vector<Lines> refs = {
      {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
      {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."}};
  BleuScore s = corpus_bleu(sys, refs);
  CHECK(std::abs(s.score - 48.530827) < 1e-8);  // as tight as sacreBLEU's own test
  CHECK(s.matches == Counts{14, 7, 5, 3});
  CHECK(s.totals == Counts{17, 14, 11, 8});
  CHECK(s.sys_len == 17);
  CHECK(s.ref_len == 18);
  CHECK(close(s.brevity_penalty, std::exp(1.0 - 18.0 / 17.0)));
  CHECK(s.str() == "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");
  CHECK(s.signature == "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:attend-0.1");
  CHECK(corpus_bleu(Lines{"", "", ""}, refs).score == 0.0);
}

TEST_CASE("sacreBLEU's sentence_bleu examples with 'exp' smoothing and effective order") {
  // mjpost/sacrebleu, test/test_sentence_bleu.py (example from issue #98):
  // smooth 'exp', tokenize '13a', effective order -> 8.493 (checked there to 1e-3).
  BleuScore s = sentence_bleu("Producția de zahăr primă va fi exprimată în ceea ce privește zahărul alb;",
                              "producţia de zahăr brut se exprimă în zahăr alb;");
  CHECK(std::abs(s.score - 8.493) < 1e-3);
  CHECK(s.signature == "nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:attend-0.1");
  // The same file, example from issue #141: no match at all gives 0.
  CHECK(sentence_bleu("this is a cat", "okay thanks").score == 0.0);
}

TEST_CASE("hand-computed BLEU: smoothing, effective order and the brevity penalty") {
  // p1 = 3/4, p2 = 2/3, p3 = 1/2, p4 = 0/1; BP = 1.
  const Sentences hyp = {{"a", "b", "c", "d"}}, ref = {{"a", "b", "c", "e"}};
  BleuScore none = corpus_bleu_tokens(hyp, ref, Smoothing::none);
  CHECK(none.score == 0.0);
  CHECK(none.precisions == std::array<double, 4>{75.0, 100.0 * 2 / 3, 50.0, 0.0});
  // exp: the first order without a match gets 1 / (2 * total) = 1/2.
  BleuScore exp = corpus_bleu_tokens(hyp, ref, Smoothing::exp);
  CHECK(exp.precisions[3] == 50.0);
  CHECK(close(exp.score, 100.0 * std::pow(0.75 * (2.0 / 3.0) * 0.5 * 0.5, 0.25)));  // 59.4603557501...
  CHECK(close(exp.score, 59.46035575013605, 1e-12));
  CHECK(exp.brevity_penalty == 1.0);

  // "a b" against "a b c": no trigrams in the hypothesis. The corpus score (all
  // four orders) is 0; sentence BLEU averages the two orders it has:
  // BP * exp((log 100 + log 100) / 2) = exp(1 - 3/2) * 100.
  CHECK(corpus_bleu(Lines{"a b"}, Lines{"a b c"}).score == 0.0);
  BleuScore sentence = sentence_bleu("a b", "a b c");
  CHECK(close(sentence.brevity_penalty, std::exp(-0.5)));
  CHECK(close(sentence.score, 100.0 * std::exp(-0.5)));
  CHECK(sentence.totals == Counts{2, 1, 0, 0});
  CHECK(close(sentence_bleu("one", "one").score, 100.0));  // a one-token sentence
  CHECK(sentence_bleu("", "something").score == 0.0);
  CHECK(sentence_bleu("", "something").brevity_penalty == 0.0);
}

TEST_CASE("corpus BLEU edge cases: empty corpus, mismatched sizes, statistics added up") {
  BleuScore empty = corpus_bleu(Lines{}, Lines{});
  CHECK(empty.score == 0.0);
  CHECK(empty.brevity_penalty == 1.0);
  CHECK(empty.sys_len == 0);
  CHECK(empty.str() == "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 0.000 hyp_len = 0 ref_len = 0)");
  CHECK_THROWS_WITH_AS(corpus_bleu(Lines{"a", "b"}, Lines{"a"}),
                       "corpus_bleu: 2 hypotheses but reference stream 0 has 1 sentences", Error);
  CHECK_THROWS_WITH_AS(corpus_bleu(Lines{"a"}, std::vector<Lines>{}), "corpus_bleu: no reference stream", Error);
  CHECK_THROWS_WITH_AS(corpus_bleu_tokens(Sentences{{"a"}}, Sentences{}),
                       "corpus_bleu_tokens: 1 hypotheses but 0 references", Error);

  // Statistics added sentence by sentence, or batch by batch, give the corpus score.
  const Lines hyps = {"the cat sat on the mat", "a dog ran in the park today", "it is raining"};
  const Lines refs = {"the cat sat on the red mat", "the dog ran in the big park today", "it is raining again now"};
  BleuStats first, second;
  first.add(split({hyps[0]})[0], split({refs[0]})[0]);
  second.add(split({hyps[1]})[0], split({refs[1]})[0]);
  second.add(split({hyps[2]})[0], split({refs[2]})[0]);
  first += second;
  BleuScore summed = compute_bleu(first, Smoothing::exp, false);
  BleuScore whole = corpus_bleu(hyps, refs);
  CHECK(summed.score == whole.score);
  CHECK(summed.matches == whole.matches);
  CHECK(summed.signature == whole.signature);
}

TEST_CASE("the closest reference length breaks ties toward the shorter reference") {
  // Hypothesis of 4 tokens, references of 3 and 5: both 1 away, the shorter (3) counts.
  BleuStats stats;
  stats.add(std::vector<std::string>{"a", "b", "c", "d"},
            std::vector<std::vector<std::string>>{{"a", "b", "c", "d", "e"}, {"a", "b", "c"}});
  CHECK(stats.ref_len == 3);
  // Clipping takes the largest count over the references: "a" twice in the second.
  BleuStats clip;
  clip.add(std::vector<std::string>{"a", "a", "a"}, std::vector<std::vector<std::string>>{{"a", "b"}, {"a", "a"}});
  CHECK(clip.matches[0] == 2);
  CHECK_THROWS_WITH_AS(clip.add(std::vector<std::string>{"a"}, std::vector<std::vector<std::string>>{}),
                       "BleuStats::add: no reference", Error);
}
