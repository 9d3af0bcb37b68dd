#pragma once
// Text to tokens and back, for the training corpus and for printing translations.
// UTF-8 throughout: text is decoded into code points, so a multi-byte character
// is never cut, and any non-ASCII letter (é, ß, ж, 漢, ...) is a word character.
//
// The rules of tokenize(), in order (simple on purpose; see the tests for examples):
//  1. Whitespace (ASCII and Unicode: U+00A0, U+2000..U+200A, U+3000, ...) and control
//     characters (U+0000..U+001F, U+007F..U+009F) separate tokens and are dropped.
//  2. Punctuation is one token per character: every ASCII punctuation or symbol
//     character (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~) and the common Unicode ones
//     (« » ‹ › “ ” „ ‘ ’ ‚ … – — ¡ ¿ · § ¶ × ÷ °, the General Punctuation block,
//     CJK and full-width punctuation).
//  3. Everything else is a word character: ASCII letters and digits and every other
//     non-ASCII code point. A word is a maximal run of word characters, except:
//     - an apostrophe (' or ’) between two word characters ends the word and stays
//       with it (French elision): "l'homme" -> "l'", "homme"; "qu'il" -> "qu'", "il";
//     - a hyphen between two word characters stays inside: "peut-être", "e-mail";
//     - '.' or ',' between two ASCII digits stays inside: "3.14", "1,5", "10,000".
//     (So English "don't" gives "don'", "t"; symbols such as emoji count as letters.)
// Optional lower-casing (before splitting) covers ASCII, Latin-1, Latin Extended-A,
// basic Greek and Cyrillic (É -> é, Ł -> ł, Ω -> ω, Ж -> ж); other characters are
// kept as they are.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attend {

// True if s is well-formed UTF-8: no stray continuation bytes, no truncated or
// overlong sequences, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF.
bool valid_utf8(std::string_view s);

// Decodes the code point that starts at s[pos]; sets `length` to its byte count.
// Returns false (and length 1) for an invalid sequence.
bool decode_utf8(std::string_view s, std::size_t pos, char32_t& code_point, int& length);
void append_utf8(std::string& out, char32_t code_point);

bool is_space(char32_t c);        // rule 1
bool is_punctuation(char32_t c);  // rule 2
char32_t to_lower(char32_t c);    // the simple mapping described above
// Lower-cases a valid UTF-8 string; throws attend::Error on invalid UTF-8.
std::string to_lower(std::string_view s);

struct TokenizerOptions {
  bool lowercase = false;
  bool split_elision = true;  // rule 3, first exception; off: "l'homme" -> "l", "'", "homme"
};

// Splits text into tokens by the rules above. Throws attend::Error naming the byte
// offset if the text is not valid UTF-8: "tokenize: invalid UTF-8 at byte 3".
std::vector<std::string> tokenize(std::string_view text, const TokenizerOptions& options = {});

// Joins tokens with single spaces, except: no space before a closing token
// (, . ! ? ; : ) ] } … % and closing quotes ” ’), none after an opening token
// (( [ { ¿ ¡ and opening quotes “ ‘) and none after an elided word ending in an
// apostrophe ("l'" + "homme" -> "l'homme"). Guillemets « » keep their spaces, as
// in French. detokenize(tokenize(s)) == s for plainly typeset text.
std::string detokenize(const std::vector<std::string>& tokens);

}  // namespace attend
