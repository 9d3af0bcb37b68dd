// The text and catalog readers: .mo catalogs, TSV corpora, vocabularies, the
// tokenizer and BLEU's input. See targets.hpp for the contract.
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "models/eval/bleu.hpp"
#include "models/data/corpus.hpp"
#include "models/data/gettext.hpp"
#include "models/data/tokenizer.hpp"
#include "models/data/vocabulary.hpp"
#include "tests/fuzz/targets.hpp"

namespace attend::fuzz {

int fuzz_mo(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = as_text(data, size);
  try {
    const std::vector<MoEntry> entries = parse_mo(bytes, "fuzz.mo");
    // The file reader is the same parser behind read_file.
    if (read_mo(scratch_file("fuzz.mo", bytes)).size() != entries.size())
      finding("read_mo and parse_mo disagree on the number of entries");
    for (const SentencePair& pair : extract_pairs(entries)) {
      if (rejection_reason(pair.source, pair.target) != nullptr) finding("extract_pairs kept a rejected entry");
      if (!valid_utf8(pair.source) || !valid_utf8(pair.target)) finding("extract_pairs kept invalid UTF-8");
    }
  } catch (const Error& e) {
    expected(e);
  }
  return 0;
}

int fuzz_corpus(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = as_text(data, size);
  try {
    const ParallelText parsed = parse_tsv(text, "fuzz.tsv");
    for (const SentencePair& p : parsed.pairs) {
      for (const std::string* side : {&p.source, &p.target}) {
        if (side->find_first_of("\t\n") != std::string::npos) finding("parse_tsv kept a tab or newline in a side");
        if (!valid_utf8(*side)) finding("parse_tsv kept invalid UTF-8");
      }
    }
    if (read_tsv(scratch_file("fuzz.tsv", text)).pairs != parsed.pairs) finding("read_tsv and parse_tsv disagree");
    bool strict_ok = true;
    try {
      parse_tsv(text, "fuzz.tsv", /*strict=*/true);
    } catch (const Error&) {
      strict_ok = false;
    }
    if (strict_ok && parsed.skipped != 0) finding("strict parse_tsv accepted a text the lenient one skipped lines of");

    // What training does next with the pairs: vocabularies, ids, batches.
    TokenCounts source_counts, target_counts;
    for (const SentencePair& p : parsed.pairs) {
      count_tokens(source_counts, tokenize(p.source));
      count_tokens(target_counts, tokenize(p.target));
    }
    const Vocabulary source_vocab = Vocabulary::build(source_counts);
    const Vocabulary target_vocab = Vocabulary::build(target_counts);
    const std::vector<EncodedPair> encoded =
        filter_by_length(encode_pairs(parsed.pairs, source_vocab, target_vocab), LengthLimits{1, 50});
    if (encoded.empty()) return 0;
    BatchingOptions batching;
    batching.batch_size = 3;
    batching.chunk_batches = 2;
    for (BatchIterator it(encoded, batching, /*seed=*/7, /*epoch=*/1); !it.done();) it.next();
  } catch (const Error& e) {
    expected(e);
  }
  return 0;
}

int fuzz_vocabulary(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = as_text(data, size);
  try {
    const Vocabulary vocab = Vocabulary::load(scratch_file("fuzz.vocab", text));
    if (vocab.size() < Vocabulary::kNumSpecial) finding("Vocabulary::load returned fewer than the special tokens");
    for (std::int64_t id = 0; id < vocab.size(); ++id)
      if (vocab.id(vocab.token(id)) != id) finding(fmt::format("token {} does not map back to its id", id));
    const std::string again = (std::filesystem::path(scratch_dir()) / "fuzz-again.vocab").string();
    vocab.save(again);
    if (!(Vocabulary::load(again) == vocab)) finding("a saved vocabulary loads back different");
    if (!(Vocabulary::from_tokens(vocab.tokens()) == vocab)) finding("from_tokens of a loaded vocabulary differs");
  } catch (const Error& e) {
    expected(e);
  }
  try {  // the model directory's reader (models/model_dir.cpp)
    Vocabulary::from_tokens(split_lines(text));
  } catch (const Error& e) {
    expected(e);
  }
  return 0;
}

int fuzz_tokenizer(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  TokenizerOptions options;
  options.lowercase = (data[0] & 1) != 0;
  options.split_elision = (data[0] & 2) != 0;
  const std::string_view text = as_text(data + 1, size - 1);
  const bool valid = valid_utf8(text);
  std::vector<std::string> tokens;
  try {
    tokens = tokenize(text, options);
  } catch (const Error& e) {
    if (valid) finding(fmt::format("tokenize refused valid UTF-8: {}", e.what()));
    return 0;
  }
  if (!valid) finding("tokenize accepted invalid UTF-8");
  for (const std::string& token : tokens) {
    if (token.empty()) finding("tokenize returned an empty token");
    if (!valid_utf8(token)) finding("tokenize returned a token that is not valid UTF-8");
    char32_t c = 0;
    int length = 0;
    for (std::size_t pos = 0; pos < token.size(); pos += static_cast<std::size_t>(length)) {
      if (!decode_utf8(token, pos, c, length)) finding("decode_utf8 failed inside a valid token");
      if (is_space(c)) finding("tokenize returned a token with whitespace");
    }
  }
  if (!valid_utf8(detokenize(tokens))) finding("detokenize returned invalid UTF-8");
  const std::string lower = to_lower(text);
  if (!valid_utf8(lower)) finding("to_lower returned invalid UTF-8");
  if (to_lower(lower) != lower) finding("to_lower is not idempotent");
  return 0;
}

namespace {
void check_score(const BleuScore& s, std::string_view what) {
  if (!std::isfinite(s.score) || s.score < 0 || s.score > 100 + 1e-9)
    finding(fmt::format("{}: BLEU {} is outside [0, 100]", what, s.score));
  if (!std::isfinite(s.brevity_penalty) || s.brevity_penalty < 0 || s.brevity_penalty > 1)
    finding(fmt::format("{}: brevity penalty {} is outside [0, 1]", what, s.brevity_penalty));
  for (int n = 0; n < kBleuOrder; ++n)
    if (s.matches[n] < 0 || s.matches[n] > s.totals[n])
      finding(fmt::format("{}: {} matches of {} {}-grams", what, s.matches[n], s.totals[n], n + 1));
}
}  // namespace

// The input is "hypotheses NUL references", each one sentence a line, as eval reads them.
int fuzz_bleu(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = as_text(data, size);
  const std::size_t nul = text.find('\0');
  const std::vector<std::string> hyps = split_lines(text.substr(0, nul));
  const std::vector<std::string> refs =
      split_lines(nul == std::string_view::npos ? std::string_view() : text.substr(nul + 1));
  try {
    check_score(corpus_bleu(hyps, refs), "corpus_bleu");
  } catch (const Error& e) {
    expected(e);
  }
  try {
    check_score(corpus_bleu(hyps, std::vector<std::vector<std::string>>{refs, hyps}), "corpus_bleu, 2 streams");
  } catch (const Error& e) {
    expected(e);
  }
  for (std::size_t i = 0; i < hyps.size() && i < refs.size(); ++i) {
    try {
      check_score(sentence_bleu(hyps[i], refs[i]), "sentence_bleu");
    } catch (const Error& e) {
      expected(e);
    }
  }
  try {
    std::vector<std::vector<std::string>> hyp_tokens, ref_tokens;
    for (const std::string& h : hyps) hyp_tokens.push_back(tokenize(h));
    for (const std::string& r : refs) ref_tokens.push_back(tokenize(r));
    check_score(corpus_bleu_tokens(hyp_tokens, ref_tokens, Smoothing::none), "corpus_bleu_tokens");
  } catch (const Error& e) {
    expected(e);
  }
  return 0;
}

}  // namespace attend::fuzz
