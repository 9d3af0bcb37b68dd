#include "models/data/gettext.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <unordered_set>

#include "core/error.hpp"
#include "core/io/limits.hpp"
#include "models/data/tokenizer.hpp"

namespace attend {
namespace {

constexpr std::uint32_t kMagic = 0x950412de;
constexpr std::uint32_t kMagicSwapped = 0xde120495;

class MoReader {
 public:
  MoReader(std::string_view bytes, std::string_view name) : bytes_(bytes), name_(name) {}

  std::vector<MoEntry> entries() {
    if (size() < 20)
      fail("read_mo: {}: {} bytes is too short for a .mo header (20 bytes)", name_, size());
    std::uint32_t magic = u32(0);
    if (magic == kMagicSwapped) {
      big_endian_ = true;
    } else if (magic != kMagic) {
      fail("read_mo: {}: not a .mo file (magic number 0x{:08x})", name_, magic);
    }
    std::uint32_t revision = u32(4);
    if ((revision >> 16) > 1) fail("read_mo: {}: unsupported major revision {}", name_, revision >> 16);
    const std::uint64_t n = u32(8);
    const std::uint64_t originals = u32(12);
    const std::uint64_t translations = u32(16);
    check_table("original strings", n, originals);
    check_table("translations", n, translations);
    check_strings(n, originals, translations);
    std::vector<MoEntry> entries;
    entries.reserve(static_cast<std::size_t>(n));
    for (std::uint64_t i = 0; i < n; ++i)
      entries.push_back({string_at("original string", originals, i), string_at("translation", translations, i)});
    return entries;
  }

 private:
  std::uint64_t size() const { return bytes_.size(); }

  // The caller has checked that offset + 4 <= size().
  std::uint32_t u32(std::uint64_t offset) const {
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      auto b = static_cast<unsigned char>(bytes_[static_cast<std::size_t>(offset) + static_cast<std::size_t>(k)]);
      v |= static_cast<std::uint32_t>(b) << (big_endian_ ? 8 * (3 - k) : 8 * k);
    }
    return v;
  }

  void check_table(const char* what, std::uint64_t n, std::uint64_t offset) const {
    // 64-bit arithmetic: n * 8 + offset cannot overflow for 32-bit n and offset.
    if (offset + 8 * n > size())
      fail("read_mo: {}: the table of {} ({} entries at offset {}) runs past the end of the file ({} bytes)",
           name_, what, n, offset, size());
  }

  // Every string within the file and followed by its NUL; then, since entries
  // may point at shared bytes (40,000 entries of one 500 KB string would be
  // 20 GB copied out of 1.6 MB), the total against the file's size; then no two
  // strings sharing bytes at all: msgfmt never writes that (none of the 3,811
  // catalogs of a Debian system does). All before anything is copied.
  void check_strings(std::uint64_t n, std::uint64_t originals, std::uint64_t translations) const {
    struct Span {
      std::uint64_t begin, end, index;
      const char* what;
    };
    std::vector<Span> spans;
    std::uint64_t total = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      for (auto [what, table] : {std::pair{"original string", originals}, std::pair{"translation", translations}}) {
        const std::uint64_t length = u32(table + 8 * i), offset = u32(table + 8 * i + 4);
        check_string(what, i, offset, length);
        total += length;
        if (length > 0) spans.push_back({offset, offset + length, i, what});
      }
    }
    if (total > limits::kMaxMoExpansion * size())
      fail("read_mo: {}: the {} entries' strings add up to {} bytes, more than {} times the file's {} bytes "
           "(entries sharing their strings; the limit is in core/io/limits.hpp)",
           name_, n, total, limits::kMaxMoExpansion, size());
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    for (std::size_t k = 1; k < spans.size(); ++k)
      if (spans[k].begin < spans[k - 1].end)
        fail("read_mo: {}: {} {} (bytes {} to {}) overlaps {} {} (bytes {} to {})", name_, spans[k].what,
             spans[k].index, spans[k].begin, spans[k].end, spans[k - 1].what, spans[k - 1].index, spans[k - 1].begin,
             spans[k - 1].end);
  }

  void check_string(const char* what, std::uint64_t i, std::uint64_t offset, std::uint64_t length) const {
    if (offset + length + 1 > size())  // + 1: the terminating NUL
      fail("read_mo: {}: {} {} (offset {}, length {}) runs past the end of the file ({} bytes)", name_, what, i,
           offset, length, size());
    if (bytes_[static_cast<std::size_t>(offset + length)] != '\0')
      fail("read_mo: {}: {} {} (offset {}, length {}) is not followed by a NUL byte", name_, what, i, offset,
           length);
  }

  std::string string_at(const char* what, std::uint64_t table, std::uint64_t i) const {
    const std::uint64_t length = u32(table + 8 * i);
    const std::uint64_t offset = u32(table + 8 * i + 4);
    check_string(what, i, offset, length);
    return std::string(bytes_.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(length)));
  }

  std::string_view bytes_;
  std::string_view name_;
  bool big_endian_ = false;
};

bool is_ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_letter_start(char c) { return is_ascii_alpha(c) || static_cast<unsigned char>(c) >= 0x80; }

// The checks that apply to each side of a pair on its own.
const char* text_problem(std::string_view s) {
  if (!valid_utf8(s)) return "invalid UTF-8";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const char next = i + 1 < s.size() ? s[i + 1] : '\0';
    if (c == '\n' || c == '\r') return "newline";
    if (c == '\t') return "tab";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return "control character";
    if (c == '%' && next != '\0' && next != ' ') return "format placeholder";
    if (c == '{' || c == '}') return "brace placeholder";
    if (c == '$' && (is_ascii_alpha(next) || next == '{' || next == '(')) return "shell variable";
    if (c == '<' || c == '>') return "markup";
    if (c == '&') {
      std::size_t j = i + 1;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '#')) ++j;
      if (j > i + 1 && j < s.size() && s[j] == ';') return "HTML entity";
    }
    if ((c == '_' || c == '&') && is_letter_start(next)) return "keyboard mnemonic";
  }
  return nullptr;
}

}  // namespace

std::vector<MoEntry> parse_mo(std::string_view bytes, std::string_view name) {
  return MoReader(bytes, name).entries();
}

std::vector<MoEntry> read_mo(const std::string& path) {
  return parse_mo(limits::read_bounded_file(path, "read_mo"), path);
}

const char* rejection_reason(std::string_view msgid, std::string_view msgstr) {
  if (msgid.empty()) return "header entry";
  if (msgid.find('\0') != std::string_view::npos || msgstr.find('\0') != std::string_view::npos)
    return "plural entry";
  if (msgid.find('\x04') != std::string_view::npos) return "context entry";
  if (msgstr.empty()) return "empty translation";
  if (msgstr == msgid) return "translation equals the source";
  if (const char* problem = text_problem(msgid)) return problem;
  return text_problem(msgstr);
}

std::vector<SentencePair> extract_pairs(const std::vector<MoEntry>& entries) {
  std::vector<SentencePair> pairs;
  std::unordered_set<std::string> seen;
  for (const MoEntry& entry : entries) {
    if (rejection_reason(entry.msgid, entry.msgstr)) continue;
    // Neither side holds a NUL after filtering, so it can separate them in the key.
    if (seen.insert(entry.msgid + '\0' + entry.msgstr).second) pairs.push_back({entry.msgid, entry.msgstr});
  }
  return pairs;
}

CatalogHarvest harvest_catalogs(const std::string& directory) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) fail("harvest_catalogs: '{}' is not a directory", directory);
  CatalogHarvest harvest;
  std::vector<std::string> paths;
  fs::recursive_directory_iterator it(directory, fs::directory_options::skip_permission_denied, ec);
  if (ec) fail("harvest_catalogs: cannot read '{}': {}", directory, ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) {
      harvest.errors.push_back(fmt::format("harvest_catalogs: {}: {}", directory, ec.message()));
      break;
    }
    if (it->path().extension() == ".mo" && it->is_regular_file(ec)) paths.push_back(it->path().string());
  }
  std::sort(paths.begin(), paths.end());
  std::unordered_set<std::string> seen;
  for (const std::string& path : paths) {
    std::vector<MoEntry> entries;
    try {
      entries = read_mo(path);
    } catch (const Error& e) {
      harvest.errors.push_back(e.what());
      continue;
    }
    ++harvest.catalogs;
    harvest.entries += static_cast<std::int64_t>(entries.size());
    for (SentencePair& pair : extract_pairs(entries))
      if (seen.insert(pair.source + '\0' + pair.target).second) harvest.pairs.push_back(std::move(pair));
  }
  return harvest;
}

}  // namespace attend
