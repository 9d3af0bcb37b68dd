#include "models/eval/bleu.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "core/error.hpp"
#include "models/data/tokenizer.hpp"

namespace attend {
namespace {

// Python's str.isspace(): what sacreBLEU's line.split() and rstrip() remove.
bool python_space(char32_t c) {
  if ((c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20)) return true;
  switch (c) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

// The byte length of the whitespace character at s[pos], or 0 if there is none.
int space_at(std::string_view s, std::size_t pos) {
  char32_t c;
  int length;
  return decode_utf8(s, pos, c, length) && python_space(c) ? length : 0;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  std::string out;
  std::size_t begin = 0;
  for (std::size_t at; (at = s.find(from, begin)) != std::string::npos; begin = at + from.size()) {
    out.append(s, begin, at - begin);
    out.append(to);
  }
  out.append(s, begin, std::string::npos);
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The first rule's class [\{-\~\[-\` -\&\(-\+\:-\@\/]: ASCII symbols split off everywhere.
bool always_split(char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') || (c >= '(' && c <= '+') ||
         (c >= ':' && c <= '@') || c == '/';
}

// One left-to-right pass of re.sub(r'(A)(B)', ...): at each position, if the two
// characters match (A, B), write the replacement and skip both; else copy one
// character. The patterns' characters are ASCII, so working on bytes gives the
// same result as Python working on code points: a multi-byte character can only
// match "not a digit", whole, through its last byte, which is copied unchanged.
template <class First, class Second>
std::string pair_pass(const std::string& s, First first, Second second, std::string_view before,
                      std::string_view middle, std::string_view after) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  for (std::size_t i = 0; i < s.size();) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      out.append(before);
      out += s[i];
      out.append(middle);
      out += s[i + 1];
      out.append(after);
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

double my_log(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }  // sacreBLEU's floor

// An n-gram as a map key: each token prefixed by its length, so no two differ-
// ent n-grams share a key whatever bytes the tokens hold.
using NgramCounts = std::unordered_map<std::string, std::int64_t>;
std::array<NgramCounts, kBleuOrder> count_ngrams(const std::vector<std::string>& tokens) {
  std::array<NgramCounts, kBleuOrder> counts;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string key;
    for (std::size_t n = 1; n <= static_cast<std::size_t>(kBleuOrder) && i + n <= tokens.size(); ++n) {
      const std::string& token = tokens[i + n - 1];
      key += std::to_string(token.size());
      key += ':';
      key += token;
      ++counts[n - 1][key];
    }
  }
  return counts;
}

}  // namespace

std::string BleuScore::str() const {
  double ratio = ref_len ? static_cast<double>(sys_len) / static_cast<double>(ref_len) : 0.0;
  return fmt::format("BLEU = {:.2f} {:.1f}/{:.1f}/{:.1f}/{:.1f} (BP = {:.3f} ratio = {:.3f} hyp_len = {} ref_len = {})",
                     score, precisions[0], precisions[1], precisions[2], precisions[3], brevity_penalty, ratio,
                     sys_len, ref_len);
}

void BleuStats::add(const std::vector<std::string>& hypothesis,
                    const std::vector<std::vector<std::string>>& references) {
  if (references.empty()) fail("BleuStats::add: no reference");
  const auto hyp_len = static_cast<std::int64_t>(hypothesis.size());
  std::array<NgramCounts, kBleuOrder> ref_counts;
  std::int64_t closest = -1;
  for (const std::vector<std::string>& reference : references) {
    const auto len = static_cast<std::int64_t>(reference.size());
    if (closest < 0 || std::llabs(hyp_len - len) < std::llabs(hyp_len - closest) ||
        (std::llabs(hyp_len - len) == std::llabs(hyp_len - closest) && len < closest))
      closest = len;
    std::array<NgramCounts, kBleuOrder> counts = count_ngrams(reference);
    for (int n = 0; n < kBleuOrder; ++n)
      for (const auto& [ngram, count] : counts[n]) {
        std::int64_t& best = ref_counts[n][ngram];
        best = std::max(best, count);
      }
  }
  std::array<NgramCounts, kBleuOrder> hyp_counts = count_ngrams(hypothesis);
  for (int n = 0; n < kBleuOrder; ++n)
    for (const auto& [ngram, count] : hyp_counts[n]) {
      totals[n] += count;
      auto it = ref_counts[n].find(ngram);
      if (it != ref_counts[n].end()) matches[n] += std::min(count, it->second);
    }
  sys_len += hyp_len;
  ref_len += closest;
}

void BleuStats::add(const std::vector<std::string>& hypothesis, const std::vector<std::string>& reference) {
  add(hypothesis, std::vector<std::vector<std::string>>{reference});
}

BleuStats& BleuStats::operator+=(const BleuStats& other) {
  for (int n = 0; n < kBleuOrder; ++n) {
    matches[n] += other.matches[n];
    totals[n] += other.totals[n];
  }
  sys_len += other.sys_len;
  ref_len += other.ref_len;
  return *this;
}

BleuScore compute_bleu(const BleuStats& stats, Smoothing smoothing, bool effective_order,
                       std::string_view tokenizer, std::string_view nrefs) {
  BleuScore result;
  result.matches = stats.matches;
  result.totals = stats.totals;
  result.sys_len = stats.sys_len;
  result.ref_len = stats.ref_len;
  result.signature = fmt::format("nrefs:{}|case:mixed|eff:{}|tok:{}|smooth:{}|version:{}", nrefs,
                                 effective_order ? "yes" : "no", tokenizer,
                                 smoothing == Smoothing::exp ? "exp" : "none", kBleuVersion);
  // BP = exp(1 - r / c) when the hypotheses are shorter than the references (c < r).
  if (stats.sys_len < stats.ref_len)
    result.brevity_penalty =
        stats.sys_len > 0 ? std::exp(1.0 - static_cast<double>(stats.ref_len) / static_cast<double>(stats.sys_len))
                          : 0.0;
  else
    result.brevity_penalty = 1.0;
  bool any_match = false;
  for (std::int64_t m : stats.matches) any_match = any_match || m > 0;
  if (!any_match) return result;  // score 0, precisions 0

  double smooth = 1.0;  // 2^k for the k-th order without a match
  int orders = kBleuOrder;
  for (int n = 0; n < kBleuOrder; ++n) {
    if (stats.totals[n] == 0) break;
    if (effective_order) orders = n + 1;
    const auto total = static_cast<double>(stats.totals[n]);
    if (stats.matches[n] == 0) {
      if (smoothing == Smoothing::exp) {
        smooth *= 2.0;
        result.precisions[n] = 100.0 / (smooth * total);
      }
    } else {
      result.precisions[n] = 100.0 * static_cast<double>(stats.matches[n]) / total;
    }
  }
  // BLEU = BP * exp(mean over orders of log p_n)
  double log_sum = 0.0;
  for (int n = 0; n < orders; ++n) log_sum += my_log(result.precisions[n]);
  result.score = result.brevity_penalty * std::exp(log_sum / orders);
  return result;
}

std::vector<std::string> tokenize_13a(std::string_view input) {
  // sacreBLEU first strips trailing whitespace (BLEU._preprocess_segment).
  std::size_t end = input.size();
  while (end > 0) {
    std::size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(input[start]) & 0xC0) == 0x80 && end - start < 4) --start;
    int length = space_at(input, start);
    if (length == 0 || start + static_cast<std::size_t>(length) != end) break;
    end = start;
  }
  std::string line(input.substr(0, end));
  // The language-independent part of mteval-v13a, in its order.
  line = replace_all(std::move(line), "<skipped>", "");
  line = replace_all(std::move(line), "-\n", "");
  line = replace_all(std::move(line), "\n", " ");
  line = replace_all(std::move(line), "&quot;", "\"");
  line = replace_all(std::move(line), "&amp;", "&");
  line = replace_all(std::move(line), "&lt;", "<");
  line = replace_all(std::move(line), "&gt;", ">");
  line = " " + line + " ";
  // ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 "
  std::string spaced;
  spaced.reserve(line.size() * 2);
  for (char c : line) {
    if (always_split(c)) {
      spaced += ' ';
      spaced += c;
      spaced += ' ';
    } else {
      spaced += c;
    }
  }
  const auto not_digit = [](char c) { return !is_digit(c); };
  const auto period_comma = [](char c) { return c == '.' || c == ','; };
  const auto dash = [](char c) { return c == '-'; };
  spaced = pair_pass(spaced, not_digit, period_comma, "", " ", " ");   // ([^0-9])([\.,]) -> "\1 \2 "
  spaced = pair_pass(spaced, period_comma, not_digit, " ", " ", "");   // ([\.,])([^0-9]) -> " \1 \2"
  spaced = pair_pass(spaced, is_digit, dash, "", " ", " ");            // ([0-9])(-) -> "\1 \2 "
  // ' '.join(line.split())
  std::vector<std::string> tokens;
  std::string current;
  for (std::size_t i = 0; i < spaced.size();) {
    if (int length = space_at(spaced, i)) {
      if (!current.empty()) tokens.push_back(std::move(current));
      current.clear();
      i += static_cast<std::size_t>(length);
    } else {
      current += spaced[i++];
    }
  }
  if (!current.empty()) tokens.push_back(std::move(current));
  return tokens;
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references) {
  return corpus_bleu(hypotheses, std::vector<std::vector<std::string>>{references});
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& reference_streams) {
  if (reference_streams.empty()) fail("corpus_bleu: no reference stream");
  for (std::size_t k = 0; k < reference_streams.size(); ++k)
    if (reference_streams[k].size() != hypotheses.size())
      fail("corpus_bleu: {} hypotheses but reference stream {} has {} sentences", hypotheses.size(), k,
           reference_streams[k].size());
  BleuStats stats;
  for (std::size_t i = 0; i < hypotheses.size(); ++i) {
    std::vector<std::vector<std::string>> refs;
    for (const auto& stream : reference_streams) refs.push_back(tokenize_13a(stream[i]));
    stats.add(tokenize_13a(hypotheses[i]), refs);
  }
  return compute_bleu(stats, Smoothing::exp, false, "13a", std::to_string(reference_streams.size()));
}

BleuScore sentence_bleu(std::string_view hypothesis, std::string_view reference) {
  BleuStats stats;
  stats.add(tokenize_13a(hypothesis), tokenize_13a(reference));
  return compute_bleu(stats, Smoothing::exp, true, "13a", "1");
}

BleuScore corpus_bleu_tokens(const std::vector<std::vector<std::string>>& hypotheses,
                             const std::vector<std::vector<std::string>>& references, Smoothing smoothing) {
  if (hypotheses.size() != references.size())
    fail("corpus_bleu_tokens: {} hypotheses but {} references", hypotheses.size(), references.size());
  BleuStats stats;
  for (std::size_t i = 0; i < hypotheses.size(); ++i) stats.add(hypotheses[i], references[i]);
  return compute_bleu(stats, smoothing, false, "none", "1");
}

}  // namespace attend
