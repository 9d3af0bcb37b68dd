#include "models/data/vocabulary.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/io/file_io.hpp"
#include "core/io/limits.hpp"
#include "core/io/printable.hpp"
#include "models/data/tokenizer.hpp"

namespace attend {
namespace {

// A token that could not be written as one line of a vocabulary file.
// A token that could not be saved, or that the model could print: one that is
// not valid UTF-8, or holds a control character (the tokenizer never makes one,
// XML forbids them, a terminal obeys them), would reach translations and SVG files.
const char* bad_token(std::string_view token) {
  if (token.empty()) return "is empty";
  if (token.find_first_of("\n\r") != std::string_view::npos) return "contains a line break";
  if (!valid_utf8(token)) return "is not valid UTF-8";
  for (std::size_t pos = 0; pos < token.size();) {
    char32_t c = 0;
    int length = 1;
    decode_utf8(token, pos, c, length);
    if (c < 0x20 || (c >= 0x7F && c <= 0x9F)) return "contains a control character";
    pos += static_cast<std::size_t>(length);
  }
  return nullptr;
}

}  // namespace

void count_tokens(TokenCounts& counts, const std::vector<std::string>& sentence) {
  for (const std::string& token : sentence) ++counts[token];
}

Vocabulary::Vocabulary() {
  for (std::string_view special : kSpecialTokens) {
    ids_.emplace(special, size());
    tokens_.emplace_back(special);
  }
}

Vocabulary Vocabulary::build(const TokenCounts& counts, const VocabularyOptions& options) {
  if (options.max_size != 0 && options.max_size < kNumSpecial)
    fail("Vocabulary::build: max_size {} is too small; it counts the {} special tokens (0 means no limit)",
         options.max_size, kNumSpecial);
  std::vector<std::pair<std::string_view, std::int64_t>> kept;
  for (const auto& [token, count] : counts) {
    if (const char* problem = bad_token(token))
      fail("Vocabulary::build: the token '{}' {}", printable(token), problem);
    bool special = std::find(std::begin(kSpecialTokens), std::end(kSpecialTokens), token) !=
                   std::end(kSpecialTokens);
    if (!special && count >= options.min_count) kept.emplace_back(token, count);
  }
  std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  Vocabulary vocab;
  for (const auto& [token, count] : kept) {
    if (options.max_size != 0 && vocab.size() >= options.max_size) break;
    vocab.ids_.emplace(token, vocab.size());
    vocab.tokens_.emplace_back(token);
  }
  return vocab;
}

Vocabulary Vocabulary::from_tokens(std::vector<std::string> tokens) {
  if (tokens.size() < static_cast<std::size_t>(kNumSpecial))
    fail("Vocabulary: {} tokens given; a vocabulary starts with the {} special tokens", tokens.size(),
         kNumSpecial);
  Vocabulary vocab;
  for (std::int64_t id = 0; id < kNumSpecial; ++id)
    if (tokens[static_cast<std::size_t>(id)] != kSpecialTokens[id])
      fail("Vocabulary: token {} must be '{}', got '{}'", id, kSpecialTokens[id],
           printable(tokens[static_cast<std::size_t>(id)]));
  for (std::size_t id = kNumSpecial; id < tokens.size(); ++id) {
    if (const char* problem = bad_token(tokens[id])) fail("Vocabulary: token {} {}", id, problem);
    auto [it, inserted] = vocab.ids_.emplace(tokens[id], static_cast<std::int64_t>(id));
    if (!inserted) fail("Vocabulary: duplicate token '{}' at ids {} and {}", printable(tokens[id]), it->second, id);
    vocab.tokens_.push_back(std::move(tokens[id]));
  }
  return vocab;
}

bool Vocabulary::contains(std::string_view token) const {
  return ids_.find(token) != ids_.end();
}

std::int64_t Vocabulary::id(std::string_view token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? kUnk : it->second;
}

const std::string& Vocabulary::token(std::int64_t id) const {
  if (id < 0 || id >= size()) fail("Vocabulary::token: id {} is out of range for a vocabulary of size {}", id, size());
  return tokens_[static_cast<std::size_t>(id)];
}

std::vector<std::int64_t> Vocabulary::encode(const std::vector<std::string>& tokens, bool add_bos,
                                             bool add_eos) const {
  std::vector<std::int64_t> ids;
  ids.reserve(tokens.size() + 2);
  if (add_bos) ids.push_back(kBos);
  for (const std::string& token : tokens) ids.push_back(id(token));
  if (add_eos) ids.push_back(kEos);
  return ids;
}

std::vector<std::string> Vocabulary::decode(std::span<const std::int64_t> ids, bool strip_special) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (std::int64_t id : ids) {
    if (id < 0 || id >= size())
      fail("Vocabulary::decode: id {} is out of range for a vocabulary of size {}", id, size());
    if (strip_special) {
      if (id == kEos) break;
      if (id == kPad || id == kBos) continue;
    }
    out.push_back(tokens_[static_cast<std::size_t>(id)]);
  }
  return out;
}

void Vocabulary::save(const std::string& path) const {
  std::string text;
  for (const std::string& token : tokens_) text += token + '\n';
  write_file_atomic(path, text);
}

Vocabulary Vocabulary::load(const std::string& path) {
  const std::string content = limits::read_bounded_file(path, "Vocabulary::load");

  Vocabulary vocab;
  vocab.ids_.clear();
  vocab.tokens_.clear();
  std::int64_t line_number = 0;
  for (std::size_t begin = 0; begin < content.size();) {
    std::size_t end = content.find('\n', begin);
    if (end == std::string::npos) end = content.size();
    std::string_view line(content.data() + begin, end - begin);
    begin = end + 1;
    ++line_number;
    if (line.ends_with('\r')) line.remove_suffix(1);  // written on Windows
    if (line.empty()) fail("Vocabulary::load: {}:{}: empty line", path, line_number);
    // Another CR would stay in the token, and save() + load() would then strip it.
    if (line.find('\r') != std::string_view::npos)
      fail("Vocabulary::load: {}:{}: a carriage return (\\r) inside a token", path, line_number);
    if (!valid_utf8(line)) fail("Vocabulary::load: {}:{}: invalid UTF-8", path, line_number);
    std::int64_t id = line_number - 1;
    if (id < kNumSpecial && line != kSpecialTokens[id])
      fail("Vocabulary::load: {}:{}: expected the special token '{}', got '{}'", path, line_number,
           kSpecialTokens[id], printable(line));
    if (const char* problem = bad_token(line))
      fail("Vocabulary::load: {}:{}: the token '{}' {}", path, line_number, printable(line), problem);
    auto [it, inserted] = vocab.ids_.emplace(line, id);
    if (!inserted)
      fail("Vocabulary::load: {}:{}: duplicate token '{}' (first on line {})", path, line_number, printable(line),
           it->second + 1);
    vocab.tokens_.emplace_back(line);
  }
  if (vocab.size() < kNumSpecial)
    fail("Vocabulary::load: {}:{}: expected the special token '{}', got the end of the file", path,
         line_number + 1, kSpecialTokens[vocab.size()]);
  return vocab;
}

}  // namespace attend
