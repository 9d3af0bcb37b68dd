#include "core/io/printable.hpp"

#include <fmt/format.h>

namespace attend {
namespace {

// The length of the well-formed UTF-8 sequence starting at s[i] (2 to 4), or 0.
// Refuses overlong forms, surrogates and code points above U+10FFFF.
std::size_t sequence_length(std::string_view s, std::size_t i, char32_t& cp) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  std::size_t n = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) n = 2, cp = b0 & 0x1F;
  else if (b0 >= 0xE0 && b0 <= 0xEF) n = 3, cp = b0 & 0x0F;
  else if (b0 >= 0xF0 && b0 <= 0xF4) n = 4, cp = b0 & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0x80) {
      char32_t cp = 0;
      const std::size_t n = sequence_length(s, i, cp);
      if (n == 0) {
        out += fmt::format("\\x{:02x}", b);
        ++i;
      } else if (cp <= 0x9F) {  // a C1 control character, e.g. U+009B (CSI)
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
        i += n;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (b) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (b < 0x20 || b == 0x7F) out += fmt::format("\\x{:02x}", b);
        else out += static_cast<char>(b);
    }
    ++i;
  }
  return out;
}

}  // namespace attend
