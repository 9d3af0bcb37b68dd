#include "models/data/tokenizer.hpp"

#include "core/error.hpp"

namespace attend {
namespace {

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// C0 and C1 control characters and DEL are dropped like whitespace.
bool is_control(char32_t c) { return c < 0x20 || (c >= 0x7F && c <= 0x9F); }

bool is_separator(char32_t c) { return is_space(c) || is_control(c); }

bool is_word(char32_t c) { return !is_separator(c) && !is_punctuation(c); }

bool is_apostrophe(char32_t c) { return c == U'\'' || c == U'\u2019'; }

bool is_hyphen(char32_t c) { return c == U'-' || c == U'\u2010' || c == U'\u2011'; }

bool is_digit(char32_t c) { return c >= U'0' && c <= U'9'; }

struct CodePoint {
  char32_t c;
  std::size_t begin;  // byte offset in the (possibly lower-cased) text
  int length;
};

std::vector<CodePoint> decode_all(std::string_view text, const char* op) {
  std::vector<CodePoint> out;
  out.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    char32_t c;
    int length;
    if (!decode_utf8(text, pos, c, length)) fail("{}: invalid UTF-8 at byte {}", op, pos);
    out.push_back({c, pos, length});
    pos += static_cast<std::size_t>(length);
  }
  return out;
}

bool one_of(std::string_view token, std::initializer_list<std::string_view> set) {
  for (std::string_view s : set)
    if (token == s) return true;
  return false;
}

bool is_closing(std::string_view t) {
  return one_of(t, {",", ".", "!", "?", ";", ":", ")", "]", "}", "%", "\u2026", "\u201D", "\u2019"});
}

bool is_opening(std::string_view t) {
  return one_of(t, {"(", "[", "{", "\u00BF", "\u00A1", "\u201C", "\u2018"});
}

// "l'", "qu’": a word that tokenize() ended at an elision apostrophe.
bool is_elided(std::string_view t) {
  for (std::string_view apostrophe : {std::string_view("'"), std::string_view("\u2019")}) {
    if (t.size() > apostrophe.size() && t.ends_with(apostrophe)) {
      std::string_view rest = t.substr(0, t.size() - apostrophe.size());
      // The character before the apostrophe must be a word character.
      std::size_t last = rest.size() - 1;
      while (last > 0 && is_continuation(static_cast<unsigned char>(rest[last]))) --last;
      char32_t c;
      int length;
      if (decode_utf8(rest, last, c, length) && is_word(c)) return true;
    }
  }
  return false;
}

}  // namespace

bool decode_utf8(std::string_view s, std::size_t pos, char32_t& code_point, int& length) {
  length = 1;
  code_point = 0;
  if (pos >= s.size()) return false;
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char b0 = byte(pos);
  if (b0 < 0x80) {
    code_point = b0;
    return true;
  }
  int n;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return false;  // a continuation byte, C0/C1 (overlong) or F5..FF
  }
  if (pos + static_cast<std::size_t>(n) > s.size()) return false;
  if (byte(pos + 1) < lo || byte(pos + 1) > hi) return false;
  char32_t c = b0 & (0xFF >> (n + 1));
  for (int k = 1; k < n; ++k) {
    unsigned char b = byte(pos + static_cast<std::size_t>(k));
    if (!is_continuation(b)) return false;
    c = (c << 6) | (b & 0x3F);
  }
  code_point = c;
  length = n;
  return true;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t pos = 0; pos < s.size();) {
    char32_t c;
    int length;
    if (!decode_utf8(s, pos, c, length)) return false;
    pos += static_cast<std::size_t>(length);
  }
  return true;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

bool is_space(char32_t c) {
  switch (c) {
    case U' ': case U'\t': case U'\n': case U'\v': case U'\f': case U'\r':
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F:
    case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool is_punctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  if (c >= 0xA1 && c <= 0xBF) {
    // Latin-1 punctuation and symbols, but not the letters ª º µ, the digits ² ³ ¹,
    // the fractions ¼ ½ ¾ or the invisible soft hyphen.
    switch (c) {
      case 0xAA: case 0xAD: case 0xB2: case 0xB3: case 0xB5: case 0xB9: case 0xBA:
      case 0xBC: case 0xBD: case 0xBE:
        return false;
      default:
        return true;
    }
  }
  if (c == 0xD7 || c == 0xF7) return true;                              // × ÷
  if ((c >= 0x2010 && c <= 0x2027) || (c >= 0x2030 && c <= 0x205E)) return true;  // General Punctuation
  if (c >= 0x20A0 && c <= 0x20CF) return true;                          // currency signs (€)
  if ((c >= 0x3001 && c <= 0x3003) || (c >= 0x3008 && c <= 0x3011) ||
      (c >= 0x3014 && c <= 0x301F) || c == 0x30FB)
    return true;  // CJK punctuation
  return (c >= 0xFF01 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) ||
         (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65);  // full-width forms
}

char32_t to_lower(char32_t c) {
  if (c < 0x80) return (c >= U'A' && c <= U'Z') ? c + 32 : c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;  // À..Þ
  if (c == 0x130) return U'i';                             // İ (simple mapping)
  if (c >= 0x100 && c <= 0x137) return (c % 2 == 0) ? c + 1 : c;
  if (c >= 0x139 && c <= 0x148) return (c % 2 == 1) ? c + 1 : c;
  if (c >= 0x14A && c <= 0x177) return (c % 2 == 0) ? c + 1 : c;
  if (c == 0x178) return 0xFF;  // Ÿ
  if (c >= 0x179 && c <= 0x17E) return (c % 2 == 1) ? c + 1 : c;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;  // Greek
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x410 && c <= 0x42F) return c + 32;  // Cyrillic
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

std::string to_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const CodePoint& cp : decode_all(s, "to_lower")) append_utf8(out, to_lower(cp.c));
  return out;
}

std::vector<std::string> tokenize(std::string_view input, const TokenizerOptions& options) {
  std::string lowered;
  std::string_view text = input;
  if (options.lowercase) {
    for (std::size_t pos = 0; pos < input.size();) {  // report offsets in the caller's text
      char32_t c;
      int length;
      if (!decode_utf8(input, pos, c, length)) fail("tokenize: invalid UTF-8 at byte {}", pos);
      append_utf8(lowered, to_lower(c));
      pos += static_cast<std::size_t>(length);
    }
    text = lowered;
  }
  const std::vector<CodePoint> cps = decode_all(text, "tokenize");
  const std::size_t n = cps.size();
  const auto slice = [&](std::size_t first, std::size_t last) {  // code points [first, last)
    std::size_t begin = cps[first].begin;
    std::size_t end = cps[last - 1].begin + static_cast<std::size_t>(cps[last - 1].length);
    return std::string(text.substr(begin, end - begin));
  };
  const auto word_at = [&](std::size_t i) { return i < n && is_word(cps[i].c); };

  std::vector<std::string> tokens;
  for (std::size_t i = 0; i < n;) {
    char32_t c = cps[i].c;
    if (is_separator(c)) {
      ++i;
    } else if (is_punctuation(c)) {
      tokens.push_back(slice(i, i + 1));
      ++i;
    } else {
      std::size_t start = i;
      while (i < n) {
        c = cps[i].c;
        if (is_word(c)) {
          ++i;
        } else if (is_apostrophe(c) && word_at(i + 1)) {
          if (options.split_elision) ++i;  // the apostrophe ends this word
          break;
        } else if (is_hyphen(c) && word_at(i + 1)) {
          ++i;
        } else if ((c == U'.' || c == U',') && is_digit(cps[i - 1].c) && i + 1 < n &&
                   is_digit(cps[i + 1].c)) {
          ++i;
        } else {
          break;
        }
      }
      tokens.push_back(slice(start, i));
    }
  }
  return tokens;
}

std::string detokenize(const std::vector<std::string>& tokens) {
  std::string out;
  bool glue_next = true;  // no space before the first token
  for (const std::string& token : tokens) {
    if (!glue_next && !is_closing(token)) out += ' ';
    out += token;
    glue_next = is_opening(token) || is_elided(token);
  }
  return out;
}

}  // namespace attend
