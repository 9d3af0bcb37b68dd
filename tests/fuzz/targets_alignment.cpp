// The alignment target: --unk-dict tables, and hard alignments and unknown-word
// replacement over attention matrices and word maps of any shape.
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/error.hpp"
#include "models/decode/alignment.hpp"
#include "tests/fuzz/targets.hpp"

namespace attend::fuzz {

namespace {

// The rest of the input as a matrix of at most 8 x 8 weights (some NaN or
// infinite) and word maps that may point anywhere.
void fuzz_links(Choices& in) {
  const std::size_t rows = in.below(9), columns = in.below(9);
  std::vector<std::vector<double>> weights(rows, std::vector<double>(columns));
  const double specials[] = {0.0, 1.0, std::nan(""), INFINITY, -INFINITY, 0.5};
  for (auto& row : weights)
    for (double& w : row) w = in.byte() < 32 ? specials[in.below(6)] : in.byte() / 255.0;
  std::vector<std::int64_t> source_word_of(in.below(9)), output_word_of(in.below(9));
  for (auto& w : source_word_of) w = static_cast<std::int64_t>(in.below(10)) - 1;
  for (auto& w : output_word_of) w = static_cast<std::int64_t>(in.below(10)) - 1;
  const std::int64_t output_tokens = static_cast<std::int64_t>(in.below(10)) - 1;
  try {
    for (const AlignmentLink& l : hard_alignment(weights, output_tokens, source_word_of, output_word_of)) {
      bool source_known = false, target_known = false;
      for (std::int64_t w : source_word_of) source_known = source_known || w == l.source;
      for (std::int64_t w : output_word_of) target_known = target_known || w == l.target;
      if (!source_known || !target_known)
        finding(fmt::format("hard_alignment: link {}-{} names a word of neither map", l.source, l.target));
    }
  } catch (const Error& e) {
    expected(e);
  }
  std::vector<std::string> output(in.below(9), "<unk>"), words(in.below(9), "w");
  for (std::size_t i = 0; i < output.size(); ++i)
    if (in.byte() & 1) output[i] = "x";
  try {
    const UnkDictionary none;
    const std::vector<UnkReplacement> r = replace_unknown(output, weights, words, source_word_of, none);
    for (const UnkReplacement& u : r)
      if (output[static_cast<std::size_t>(u.target)] != "w")
        finding(fmt::format("replace_unknown: token {} became '{}', not the source word", u.target, output[u.target]));
  } catch (const Error& e) {
    expected(e);
  }
}

}  // namespace

// The input is "TABLE NUL CHOICES": a --unk-dict file, then bytes that shape a
// matrix and word maps.
int fuzz_alignment(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = as_text(data, size);
  const std::size_t nul = text.find('\0');
  try {
    const UnkDictionary d = UnkDictionary::parse(text.substr(0, nul), "fuzz.dict");
    const std::string word = "a";
    (void)d.lookup(word);
  } catch (const Error& e) {
    expected(e);
  }
  if (nul != std::string_view::npos) {
    Choices in(data + nul + 1, size - nul - 1);
    fuzz_links(in);
  }
  return 0;
}

}  // namespace attend::fuzz
