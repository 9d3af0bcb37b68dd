// models/data/tokenizer: UTF-8 decoding, splitting rules, lower-casing, detokenizing.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "models/data/tokenizer.hpp"

using namespace attend;
using Tokens = std::vector<std::string>;

TEST_CASE("valid_utf8 accepts well-formed text and rejects every kind of malformed sequence") {
  CHECK(valid_utf8(""));
  CHECK(valid_utf8("plain ASCII"));
  CHECK(valid_utf8("\xC3\xA9"));          // é, 2 bytes
  CHECK(valid_utf8("\xE2\x80\x94"));      // —, 3 bytes
  CHECK(valid_utf8("\xF0\x9F\x98\x80"));  // U+1F600, 4 bytes
  CHECK(valid_utf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF, the largest code point
  CHECK(valid_utf8(std::string("a\0b", 3)));  // NUL is a valid character
  CHECK_FALSE(valid_utf8("\x80"));             // lone continuation byte
  CHECK_FALSE(valid_utf8("\xC3"));             // truncated 2-byte sequence
  CHECK_FALSE(valid_utf8("\xE2\x80"));         // truncated 3-byte sequence
  CHECK_FALSE(valid_utf8("\xF0\x9F\x98"));     // truncated 4-byte sequence
  CHECK_FALSE(valid_utf8("\xC3\x28"));         // second byte not a continuation
  CHECK_FALSE(valid_utf8("\xC0\xAF"));         // overlong '/'
  CHECK_FALSE(valid_utf8("\xE0\x80\xAF"));     // overlong 3-byte
  CHECK_FALSE(valid_utf8("\xF0\x80\x80\xAF")); // overlong 4-byte
  CHECK_FALSE(valid_utf8("\xED\xA0\x80"));     // U+D800, a surrogate
  CHECK_FALSE(valid_utf8("\xF4\x90\x80\x80")); // U+110000, too large
  CHECK_FALSE(valid_utf8("\xFF"));
  CHECK_FALSE(valid_utf8("ok\xC3\xA9\xA9"));   // a valid é followed by a stray continuation
}

TEST_CASE("decode_utf8 and append_utf8 round-trip code points of every length") {
  for (char32_t c : {U'A', U'\u00E9', U'\u20AC', U'\U0001F600', U'\U0010FFFF'}) {
    std::string s;
    append_utf8(s, c);
    char32_t back = 0;
    int length = 0;
    REQUIRE(decode_utf8(s, 0, back, length));
    CHECK(back == c);
    CHECK(length == static_cast<int>(s.size()));
  }
  char32_t c;
  int length;
  CHECK_FALSE(decode_utf8("\xE2\x80", 0, c, length));
  CHECK(length == 1);
  CHECK_FALSE(decode_utf8("abc", 3, c, length));  // past the end
}

TEST_CASE("tokenize splits punctuation from words and keeps French elision") {
  CHECK(tokenize("l'homme, qui dort.") == Tokens{"l'", "homme", ",", "qui", "dort", "."});
  CHECK(tokenize("Hello, world!") == Tokens{"Hello", ",", "world", "!"});
  CHECK(tokenize("qu\u2019il vient") == Tokens{"qu\u2019", "il", "vient"});  // typographic apostrophe
  CHECK(tokenize("aujourd'hui") == Tokens{"aujourd'", "hui"});
  CHECK(tokenize("l'homme", {.lowercase = false, .split_elision = false}) == Tokens{"l", "'", "homme"});
  // An apostrophe not between two word characters is punctuation.
  CHECK(tokenize("'quoted'") == Tokens{"'", "quoted", "'"});
  CHECK(tokenize("les amis' maison") == Tokens{"les", "amis", "'", "maison"});
}

TEST_CASE("tokenize keeps hyphenated words and decimal numbers together") {
  CHECK(tokenize("peut-\u00EAtre un e-mail") == Tokens{"peut-\u00EAtre", "un", "e-mail"});
  CHECK(tokenize("c'est-\u00E0-dire") == Tokens{"c'", "est-\u00E0-dire"});
  CHECK(tokenize("pi = 3.14, 1,5 ou 10,000.") == Tokens{"pi", "=", "3.14", ",", "1,5", "ou", "10,000", "."});
  CHECK(tokenize("well- -done --x") == Tokens{"well", "-", "-", "done", "-", "-", "x"});
  CHECK(tokenize("3.") == Tokens{"3", "."});
  CHECK(tokenize("a.b") == Tokens{"a", ".", "b"});  // only between digits
}

TEST_CASE("tokenize splits Unicode punctuation and keeps Unicode letters") {
  CHECK(tokenize("\u00AB Bonjour \u00BB") == Tokens{"\u00AB", "Bonjour", "\u00BB"});
  CHECK(tokenize("\u00ABBonjour\u00BB") == Tokens{"\u00AB", "Bonjour", "\u00BB"});
  CHECK(tokenize("Attends\u2026 non\u2014oui \u2013 fin") ==
        Tokens{"Attends", "\u2026", "non", "\u2014", "oui", "\u2013", "fin"});
  CHECK(tokenize("\u201Cquoi\u201D") == Tokens{"\u201C", "quoi", "\u201D"});
  CHECK(tokenize("\u00BFQu\u00E9?") == Tokens{"\u00BF", "Qu\u00E9", "?"});
  CHECK(tokenize("stra\u00DFe \u0436\u0438\u0437\u043D\u044C \u6F22\u5B57") ==
        Tokens{"stra\u00DFe", "\u0436\u0438\u0437\u043D\u044C", "\u6F22\u5B57"});
  CHECK(tokenize("5\u20AC") == Tokens{"5", "\u20AC"});
  CHECK(tokenize("\u4F60\u597D\u3002") == Tokens{"\u4F60\u597D", "\u3002"});
  CHECK(tokenize("x\U0001F600y") == Tokens{"x\U0001F600y"});  // an emoji is not punctuation here
}

TEST_CASE("tokenize drops Unicode whitespace and control characters") {
  CHECK(tokenize("").empty());
  CHECK(tokenize("   \t\n").empty());
  CHECK(tokenize("a\u00A0b\u2009c\u3000d\r\ne") == Tokens{"a", "b", "c", "d", "e"});
  CHECK(tokenize("a\x01" "b\x7F" "c") == Tokens{"a", "b", "c"});
  CHECK(tokenize("one") == Tokens{"one"});
  CHECK(tokenize(".") == Tokens{"."});
}

TEST_CASE("tokenize never cuts a multi-byte character, wherever it stands") {
  // A 2-, 3- and 4-byte letter at the start, middle and end of a word, next to
  // punctuation and spaces: every token must be valid UTF-8 and the letters
  // must come back whole.
  for (const std::string letter : {"\u00E9", "\u4E2D", "\U00010400"}) {
    CHECK(tokenize(letter) == Tokens{letter});
    CHECK(tokenize(letter + "ab") == Tokens{letter + "ab"});
    CHECK(tokenize("a" + letter + "b") == Tokens{"a" + letter + "b"});
    CHECK(tokenize("ab" + letter) == Tokens{"ab" + letter});
    CHECK(tokenize(letter + "." + letter) == Tokens{letter, ".", letter});
    CHECK(tokenize("(" + letter + ")") == Tokens{"(", letter, ")"});
    CHECK(tokenize(letter + "'" + letter) == Tokens{letter + "'", letter});
    CHECK(tokenize(" " + letter + " ") == Tokens{letter});
    for (const std::string& token : tokenize("x" + letter + ", " + letter + "-" + letter + "!"))
      CHECK(valid_utf8(token));
  }
}

TEST_CASE("tokenize rejects invalid UTF-8 with the byte offset") {
  CHECK_THROWS_WITH_AS(tokenize("abc\xC3"), "tokenize: invalid UTF-8 at byte 3", Error);
  CHECK_THROWS_WITH_AS(tokenize("\x80"), "tokenize: invalid UTF-8 at byte 0", Error);
  // Offsets refer to the caller's text even when lower-casing changes lengths.
  CHECK_THROWS_WITH_AS(tokenize("\u0130\u0130\xFF", {.lowercase = true}), "tokenize: invalid UTF-8 at byte 4", Error);
  CHECK_THROWS_WITH_AS(to_lower("ab\xED\xA0\x80"), "to_lower: invalid UTF-8 at byte 2", Error);
}

TEST_CASE("lower-casing covers ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic") {
  CHECK(to_lower("ABC xyz 123 !") == "abc xyz 123 !");
  CHECK(to_lower("\u00C9T\u00C9 \u00C0 \u00C7A \u00DE") == "\u00E9t\u00E9 \u00E0 \u00E7a \u00FE");
  CHECK(to_lower("\u00D7\u00DF") == "\u00D7\u00DF");                 // × and ß are unchanged
  CHECK(to_lower("\u0152UVRE \u0141\u00D3D\u0179") == "\u0153uvre \u0142\u00F3d\u017A");  // Œ Ł Ó Ź
  CHECK(to_lower("\u0178") == "\u00FF");                             // Ÿ -> ÿ
  CHECK(to_lower("\u0130") == "i");                                  // İ -> i (simple mapping)
  CHECK(to_lower("\u0131") == "\u0131");                             // ı stays
  CHECK(to_lower("\u03A9\u0394") == "\u03C9\u03B4");                 // Ω Δ
  CHECK(to_lower("\u0416\u0401") == "\u0436\u0451");                 // Ж Ё
  CHECK(to_lower("\u6F22") == "\u6F22");
  CHECK(to_lower("") == "");
  CHECK(tokenize("L'\u00C9T\u00C9, D\u00C9J\u00C0.", {.lowercase = true}) ==
        Tokens{"l'", "\u00E9t\u00E9", ",", "d\u00E9j\u00E0", "."});
  CHECK(to_lower(U'\u011E') == U'\u011F');  // Ğ: even upper in U+0100..U+0137
  CHECK(to_lower(U'\u013D') == U'\u013E');  // Ľ: odd upper in U+0139..U+0148
  CHECK(to_lower(U'\u0138') == U'\u0138');  // ĸ has no upper case
}

TEST_CASE("detokenize joins tokens with the spacing rules") {
  CHECK(detokenize({}) == "");
  CHECK(detokenize({"one"}) == "one");
  CHECK(detokenize({"l'", "homme", ",", "qui", "dort", "."}) == "l'homme, qui dort.");
  CHECK(detokenize({"Quoi", "?", "(", "oui", ")", "[", "non", "]", ";", "fin", ":", "!"}) ==
        "Quoi? (oui) [non]; fin:!");
  CHECK(detokenize({"\u00AB", "Bonjour", "\u00BB", "dit-il"}) == "\u00AB Bonjour \u00BB dit-il");
  CHECK(detokenize({"\u201C", "oui", "\u201D", "50", "%", "\u2026"}) == "\u201Coui\u201D 50%\u2026");
  CHECK(detokenize({"\u00BF", "Qu\u00E9", "?"}) == "\u00BFQu\u00E9?");
  CHECK(detokenize({"'", "quoted", "'"}) == "' quoted '");  // a lone apostrophe is not an elision
  CHECK(detokenize({",", "a"}) == ", a");                 // no space before the first token
}

TEST_CASE("detokenize undoes tokenize for plainly typeset text") {
  for (const std::string s : {"Hello, world!", "l'homme, qui dort.", "Il a dit (en fait) qu'il viendra; oui.",
                              "\u00AB Bonjour \u00BB, dit-il.", "Pi vaut 3.14, pas 3.", "Vraiment?"}) {
    CHECK(detokenize(tokenize(s)) == s);
  }
}
