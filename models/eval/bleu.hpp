#pragma once
// BLEU (Papineni et al., 2002) as sacreBLEU computes it, so that attend's scores
// can be compared with published ones:
//  - corpus_bleu: sacreBLEU's BLEU() defaults: the 13a tokenizer, mixed case, n-grams
//    up to 4, brevity penalty against the closest reference length, 'exp'
//    smoothing, no effective order, 0-100 scale;
//  - sentence_bleu: sacreBLEU's sentence_bleu() defaults: the same with effective
//    order on, smoothing 'exp' (mteval-v13a's geometric smoothing: the k-th order
//    with no match gets precision 1 / (2^k * total)).
// corpus_bleu_tokens skips the 13a step, for text that is already tokenized; with
// Smoothing::none it equals NLTK's corpus_bleu, with Smoothing::exp NLTK's
// corpus_bleu with SmoothingFunction().method3 (tests/reference/bleu_reference.py).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attend {

inline constexpr std::string_view kBleuVersion = "attend-0.1";
inline constexpr int kBleuOrder = 4;

enum class Smoothing { none, exp };

struct BleuScore {
  double score = 0.0;                       // 0..100
  std::array<double, kBleuOrder> precisions{};  // 0..100, after smoothing
  std::array<std::int64_t, kBleuOrder> matches{};  // clipped n-gram matches per order
  std::array<std::int64_t, kBleuOrder> totals{};   // hypothesis n-grams per order
  double brevity_penalty = 0.0;
  std::int64_t sys_len = 0;  // hypothesis tokens
  std::int64_t ref_len = 0;  // reference tokens (the closest reference per sentence)
  // "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:attend-0.1"
  std::string signature;
  // sacreBLEU's line: "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)"
  std::string str() const;
};

// Sufficient statistics, summed over sentences; BLEU is computed from them at the
// end (so a validation loop can add batch by batch).
struct BleuStats {
  std::array<std::int64_t, kBleuOrder> matches{};
  std::array<std::int64_t, kBleuOrder> totals{};
  std::int64_t sys_len = 0;
  std::int64_t ref_len = 0;
  // One hypothesis against one or more references: n-gram counts clipped by the
  // largest count in any reference; the reference length closest to the
  // hypothesis length (the shorter on a tie).
  void add(const std::vector<std::string>& hypothesis, const std::vector<std::vector<std::string>>& references);
  void add(const std::vector<std::string>& hypothesis, const std::vector<std::string>& reference);
  BleuStats& operator+=(const BleuStats& other);
};

// sacreBLEU's compute_bleu: no match at all gives 0; an order with no hypothesis
// n-grams ends the precisions (with effective_order, the score then averages the
// orders before it); an order with no match gets 0 (none: the score is then 0) or
// the 'exp' value. `tokenizer` and `nrefs` only go into the signature.
BleuScore compute_bleu(const BleuStats& stats, Smoothing smoothing, bool effective_order,
                       std::string_view tokenizer = "13a", std::string_view nrefs = "1");

// sacreBLEU's tokenizer_13a (mteval-v13a.pl), applied to one line: the tokens.
std::vector<std::string> tokenize_13a(std::string_view line);

// Corpus BLEU of detokenized text, one reference per hypothesis.
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);
// With several reference streams (each as long as `hypotheses`), as in sacreBLEU's
// corpus_score(hyps, [refs1, refs2, ...]).
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& reference_streams);
BleuScore sentence_bleu(std::string_view hypothesis, std::string_view reference);

// Pre-tokenized: no 13a step, tok:none in the signature.
BleuScore corpus_bleu_tokens(const std::vector<std::vector<std::string>>& hypotheses,
                             const std::vector<std::vector<std::string>>& references,
                             Smoothing smoothing = Smoothing::exp);

}  // namespace attend
