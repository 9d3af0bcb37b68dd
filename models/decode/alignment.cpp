#include "models/decode/alignment.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/limits.hpp"
#include "core/io/printable.hpp"
#include "models/data/tokenizer.hpp"

namespace attend {

std::int64_t most_attended(const std::vector<std::vector<double>>& weights, std::int64_t t) {
  if (t < 0 || t >= static_cast<std::int64_t>(weights.size()))
    fail("alignment: output token {} has no attention row ({} rows)", t, weights.size());
  const std::vector<double>& row = weights[static_cast<std::size_t>(t)];
  if (row.empty()) fail("alignment: the attention row of output token {} is empty", t);
  // The first of equal maxima; a NaN weight (a broken model) is never chosen
  // over a number.
  std::size_t best = 0;
  for (std::size_t j = 1; j < row.size(); ++j)
    if (row[j] > row[best] || (std::isnan(row[best]) && !std::isnan(row[j]))) best = j;
  return static_cast<std::int64_t>(best);
}

std::vector<AlignmentLink> hard_alignment(const std::vector<std::vector<double>>& weights, std::int64_t output_tokens,
                                          const std::vector<std::int64_t>& source_word_of,
                                          const std::vector<std::int64_t>& output_word_of) {
  if (output_tokens < 0 || output_tokens > static_cast<std::int64_t>(weights.size()))
    fail("hard_alignment: {} output tokens but {} attention rows", output_tokens, weights.size());
  if (static_cast<std::int64_t>(output_word_of.size()) != output_tokens)
    fail("hard_alignment: {} output tokens but {} entries in output_word_of", output_tokens, output_word_of.size());
  std::vector<AlignmentLink> links;
  for (std::int64_t t = 0; t < output_tokens; ++t) {
    const std::vector<double>& row = weights[static_cast<std::size_t>(t)];
    if (row.size() != source_word_of.size())
      fail("hard_alignment: attention row {} has {} source tokens, source_word_of has {}", t, row.size(),
           source_word_of.size());
    const std::int64_t j = most_attended(weights, t);
    links.push_back({source_word_of[static_cast<std::size_t>(j)], output_word_of[static_cast<std::size_t>(t)]});
  }
  std::sort(links.begin(), links.end(), [](const AlignmentLink& a, const AlignmentLink& b) {
    return a.target != b.target ? a.target < b.target : a.source < b.source;
  });
  links.erase(std::unique(links.begin(), links.end()), links.end());
  return links;
}

std::string format_alignment(const std::vector<AlignmentLink>& links) {
  std::string out;
  for (const AlignmentLink& l : links) {
    if (!out.empty()) out += ' ';
    out += fmt::format("{}-{}", l.source, l.target);
  }
  return out;
}

namespace {

std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t at = 0;
  while (at < line.size()) {
    const std::size_t start = line.find_first_not_of(" \t", at);
    if (start == std::string_view::npos) break;
    const std::size_t end = std::min(line.find_first_of(" \t", start), line.size());
    fields.push_back(line.substr(start, end - start));
    at = end;
  }
  return fields;
}

}  // namespace

UnkDictionary UnkDictionary::parse(std::string_view text, const std::string& name) {
  UnkDictionary d;
  const std::vector<std::string> lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > static_cast<std::size_t>(limits::kMaxLineBytes))
      fail("unk dictionary: {}:{}: the line has {} bytes, more than the limit of {} (core/io/limits.hpp)", name, i + 1,
           line.size(), limits::kMaxLineBytes);
    if (!valid_utf8(line)) fail("unk dictionary: {}:{}: not valid UTF-8: '{}'", name, i + 1, printable(line));
    const std::vector<std::string_view> f = fields_of(line);
    if (f.empty()) continue;
    if (f.size() != 2 && f.size() != 3)
      fail("unk dictionary: {}:{}: expected 'SOURCE TARGET' or 'SOURCE TARGET PROB', got {} fields: '{}'", name, i + 1,
           f.size(), printable(line));
    double prob = 0;
    if (f.size() == 3) {
      const std::string number(f[2]);
      char* end = nullptr;
      prob = std::strtod(number.c_str(), &end);
      if (end != number.c_str() + number.size() || !std::isfinite(prob))
        fail("unk dictionary: {}:{}: the third field must be a finite number (a probability), got '{}'", name, i + 1,
             printable(f[2]));
    }
    auto [it, inserted] = d.entries_.try_emplace(std::string(f[0]), Entry{std::string(f[1]), prob});
    if (!inserted && f.size() == 3 && prob > it->second.prob) it->second = Entry{std::string(f[1]), prob};
  }
  return d;
}

UnkDictionary UnkDictionary::load(const std::string& path) {
  return parse(limits::read_bounded_file(path, "unk dictionary"), path);
}

const std::string& UnkDictionary::lookup(const std::string& source_word) const {
  const auto it = entries_.find(source_word);
  return it == entries_.end() ? source_word : it->second.target;
}

std::vector<UnkReplacement> replace_unknown(std::vector<std::string>& output_tokens,
                                            const std::vector<std::vector<double>>& weights,
                                            const std::vector<std::string>& source_words,
                                            const std::vector<std::int64_t>& source_word_of,
                                            const UnkDictionary& dictionary, std::string_view unk) {
  std::vector<UnkReplacement> done;
  for (std::size_t t = 0; t < output_tokens.size(); ++t) {
    if (output_tokens[t] != unk) continue;
    const std::int64_t j = most_attended(weights, static_cast<std::int64_t>(t));
    if (j >= static_cast<std::int64_t>(source_word_of.size()))
      fail("replace_unknown: attention row {} has {} source tokens, source_word_of has {}", t, weights[t].size(),
           source_word_of.size());
    const std::int64_t word = source_word_of[static_cast<std::size_t>(j)];
    if (word < 0 || word >= static_cast<std::int64_t>(source_words.size()))
      fail("replace_unknown: source token {} belongs to word {}, but there are {} words", j, word, source_words.size());
    const std::string& source_word = source_words[static_cast<std::size_t>(word)];
    done.push_back({static_cast<std::int64_t>(t), word, source_word, dictionary.lookup(source_word)});
    output_tokens[t] = done.back().replacement;
  }
  return done;
}

}  // namespace attend
