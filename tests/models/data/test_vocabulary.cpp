// models/data/vocabulary: building from counts, encode/decode, save/load and its checks.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/error.hpp"
#include "models/data/vocabulary.hpp"
#include "tests/support/scratch.hpp"

using namespace attend;
using Tokens = std::vector<std::string>;
using Ids = std::vector<std::int64_t>;

namespace {

// A file path of its own for each test, removed at the end of the test.
struct TempFile {
  attend::testing::Scratch scratch{"attend-test-vocabulary"};
  const std::string path;
  explicit TempFile(const std::string& name) : path(scratch.path(name)) {}
  void write(const std::string& content) const { std::ofstream(path, std::ios::binary) << content; }
  std::string read() const {
    std::ifstream file(path, std::ios::binary);
    std::ostringstream s;
    s << file.rdbuf();
    return s.str();
  }
};

TokenCounts example_counts() {
  return {{"the", 5}, {"sat", 3}, {"cat", 3}, {"a", 1}, {"<unk>", 9}, {"mat", 2}};
}

}  // namespace

TEST_CASE("a new vocabulary holds the four special tokens at fixed ids") {
  Vocabulary v;
  CHECK(v.size() == 4);
  CHECK(v.tokens() == Tokens{"<pad>", "<unk>", "<s>", "</s>"});
  CHECK(Vocabulary::kPad == 0);
  CHECK(Vocabulary::kUnk == 1);
  CHECK(Vocabulary::kBos == 2);
  CHECK(Vocabulary::kEos == 3);
  CHECK(v.id("<s>") == 2);
  CHECK(v.id("anything") == Vocabulary::kUnk);
}

TEST_CASE("build orders by count, then by token, and applies min_count and max_size") {
  Vocabulary v = Vocabulary::build(example_counts());
  // the(5), then cat and sat (3 each; 'c' < 's'), mat(2), a(1); "<unk>" is special, not added again.
  CHECK(v.tokens() == Tokens{"<pad>", "<unk>", "<s>", "</s>", "the", "cat", "sat", "mat", "a"});
  CHECK(Vocabulary::build(example_counts(), {.min_count = 3}).tokens() ==
        Tokens{"<pad>", "<unk>", "<s>", "</s>", "the", "cat", "sat"});
  CHECK(Vocabulary::build(example_counts(), {.min_count = 1, .max_size = 6}).tokens() ==
        Tokens{"<pad>", "<unk>", "<s>", "</s>", "the", "cat"});
  CHECK(Vocabulary::build(example_counts(), {.min_count = 1, .max_size = 4}).size() == 4);
  CHECK(Vocabulary::build(example_counts(), {.min_count = 10}).size() == 4);
  CHECK(Vocabulary::build({}).size() == 4);
}

TEST_CASE("build does not depend on the order in which counts were inserted") {
  TokenCounts forward, backward;
  Tokens words;
  for (int i = 0; i < 50; ++i) words.push_back(fmt::format("w{}", i));
  for (std::size_t i = 0; i < words.size(); ++i) forward[words[i]] = static_cast<std::int64_t>(i % 3);
  for (std::size_t i = words.size(); i-- > 0;) backward[words[i]] = static_cast<std::int64_t>(i % 3);
  CHECK(Vocabulary::build(forward) == Vocabulary::build(backward));
}

TEST_CASE("count_tokens adds up sentences") {
  TokenCounts counts;
  count_tokens(counts, {"a", "b", "a"});
  count_tokens(counts, {"b"});
  count_tokens(counts, {});
  CHECK(counts.size() == 2);
  CHECK(counts["a"] == 2);
  CHECK(counts["b"] == 2);
}

TEST_CASE("build rejects tokens that cannot be saved and a max_size below 4") {
  CHECK_THROWS_WITH_AS(Vocabulary::build(example_counts(), {.min_count = 1, .max_size = 3}),
                       "Vocabulary::build: max_size 3 is too small; it counts the 4 special tokens (0 means no limit)",
                       Error);
  CHECK_THROWS_WITH_AS(Vocabulary::build({{"", 2}}), "Vocabulary::build: the token '' is empty", Error);
  CHECK_THROWS_WITH_AS(Vocabulary::build({{"a\nb", 2}}), "Vocabulary::build: the token 'a\\nb' contains a line break",
                       Error);
}

TEST_CASE("encode maps unknown tokens to <unk> and can frame with <s> ... </s>") {
  Vocabulary v = Vocabulary::build(example_counts());
  CHECK(v.encode({"the", "cat", "sat"}) == Ids{4, 5, 6});
  CHECK(v.encode({"the", "dog"}, true, true) == Ids{2, 4, 1, 3});
  CHECK(v.encode({"dog", "bird", "The"}) == Ids{1, 1, 1});  // all unknown (case matters)
  CHECK(v.encode({}) == Ids{});
  CHECK(v.encode({}, true, true) == Ids{2, 3});
  CHECK(v.encode({"<s>"}) == Ids{2});  // a special token's text maps to its id
}

TEST_CASE("decode maps ids back and can strip special tokens") {
  Vocabulary v = Vocabulary::build(example_counts());
  const Ids ids{2, 4, 5, 1, 3, 6, 0};
  CHECK(v.decode(ids) == Tokens{"<s>", "the", "cat", "<unk>", "</s>", "sat", "<pad>"});
  CHECK(v.decode(ids, true) == Tokens{"the", "cat", "<unk>"});  // stops at </s>
  CHECK(v.decode(Ids{0, 0, 2}, true) == Tokens{});
  CHECK(v.decode(Ids{}) == Tokens{});
  CHECK_THROWS_WITH_AS(v.decode(Ids{4, 9}), "Vocabulary::decode: id 9 is out of range for a vocabulary of size 9",
                       Error);
  CHECK_THROWS_WITH_AS(v.decode(Ids{-1}), "Vocabulary::decode: id -1 is out of range for a vocabulary of size 9",
                       Error);
  CHECK(v.token(4) == "the");
  CHECK_THROWS_WITH_AS(v.token(9), "Vocabulary::token: id 9 is out of range for a vocabulary of size 9", Error);
  CHECK(v.contains("mat"));
  CHECK_FALSE(v.contains("dog"));
}

TEST_CASE("save writes one token per line in id order, load reads it back") {
  TempFile file("roundtrip.txt");
  Vocabulary v = Vocabulary::build({{"\u00E9t\u00E9", 4}, {"l'", 3}, {"\u6F22", 2}, {"x", 1}});
  v.save(file.path);
  CHECK(file.read() == "<pad>\n<unk>\n<s>\n</s>\n\u00E9t\u00E9\nl'\n\u6F22\nx\n");
  Vocabulary back = Vocabulary::load(file.path);
  CHECK(back == v);
  CHECK(back.id("\u6F22") == 6);
  // Windows line ends and a missing final newline are accepted.
  file.write("<pad>\r\n<unk>\r\n<s>\r\n</s>\r\nb\r\na");
  CHECK(Vocabulary::load(file.path).tokens() == Tokens{"<pad>", "<unk>", "<s>", "</s>", "b", "a"});
}

TEST_CASE("load names the file and line of every problem") {
  TempFile file("bad.txt");
  const std::string& p = file.path;
  CHECK_THROWS_WITH_AS(Vocabulary::load(p + ".missing"),
                       ("Vocabulary::load: " + p + ".missing: cannot open: No such file or directory").c_str(), Error);
  file.write("<pad>\n<s>\n<unk>\n</s>\n");
  CHECK_THROWS_WITH_AS(Vocabulary::load(p),
                       ("Vocabulary::load: " + p + ":2: expected the special token '<unk>', got '<s>'").c_str(), Error);
  file.write("<pad>\n<unk>\n<s>\n</s>\ncat\ndog\ncat\n");
  CHECK_THROWS_WITH_AS(Vocabulary::load(p),
                       ("Vocabulary::load: " + p + ":7: duplicate token 'cat' (first on line 5)").c_str(), Error);
  file.write("<pad>\n<unk>\n<s>\n</s>\ncat\n<unk>\n");
  CHECK_THROWS_WITH_AS(Vocabulary::load(p),
                       ("Vocabulary::load: " + p + ":6: duplicate token '<unk>' (first on line 2)").c_str(), Error);
  file.write("<pad>\n<unk>\n<s>\n</s>\ncat\n\ndog\n");
  CHECK_THROWS_WITH_AS(Vocabulary::load(p), ("Vocabulary::load: " + p + ":6: empty line").c_str(), Error);
  file.write("<pad>\n<unk>\n<s>\n</s>\nca\xC3t\n");
  CHECK_THROWS_WITH_AS(Vocabulary::load(p), ("Vocabulary::load: " + p + ":5: invalid UTF-8").c_str(), Error);
  file.write("<pad>\n<unk>\n<s>\n</s>\ncat\n\x1b[2Jdog\n");  // a terminal escape inside a token
  CHECK_THROWS_WITH_AS(Vocabulary::load(p),
                       ("Vocabulary::load: " + p + ":6: the token '\\x1b[2Jdog' contains a control character").c_str(),
                       Error);
  file.write("<pad>\t\n<unk>\n<s>\n</s>\n");  // an invisible tab, shown
  CHECK_THROWS_WITH_AS(Vocabulary::load(p),
                       ("Vocabulary::load: " + p + ":1: expected the special token '<pad>', got '<pad>\\t'").c_str(),
                       Error);
  file.write("<pad>\n<unk>\n");
  CHECK_THROWS_WITH_AS(Vocabulary::load(p),
                       ("Vocabulary::load: " + p + ":3: expected the special token '<s>', got the end of the file").c_str(),
                       Error);
  file.write("");
  CHECK_THROWS_WITH_AS(
      Vocabulary::load(p),
      ("Vocabulary::load: " + p + ":1: expected the special token '<pad>', got the end of the file").c_str(), Error);
}

TEST_CASE("from_tokens checks the special tokens and duplicates") {
  CHECK(Vocabulary::from_tokens({"<pad>", "<unk>", "<s>", "</s>", "a"}).id("a") == 4);
  CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>", "<unk>"}),
                       "Vocabulary: 2 tokens given; a vocabulary starts with the 4 special tokens", Error);
  CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>", "<unk>", "<s>", "<eos>"}),
                       "Vocabulary: token 3 must be '</s>', got '<eos>'", Error);
  CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>", "<unk>", "<s>", "</s>", "a", "b", "a"}),
                       "Vocabulary: duplicate token 'a' at ids 4 and 6", Error);
  CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>", "<unk>", "<s>", "</s>", ""}), "Vocabulary: token 4 is empty",
                       Error);
  // Tokens a translation would print must be text: UTF-8, no control characters (shown as escapes).
  CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>", "<unk>", "<s>", "</s>", "caf\xe9"}),
                       "Vocabulary: token 4 is not valid UTF-8", Error);
  CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>", "<unk>", "<s>", "</s>", "a\x07"}),
                       "Vocabulary: token 4 contains a control character", Error);
  CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>\r", "<unk>", "<s>", "</s>"}),
                       "Vocabulary: token 0 must be '<pad>', got '<pad>\\r'", Error);
  CHECK(Vocabulary::from_tokens({"<pad>", "<unk>", "<s>", "</s>", "caf\xc3\xa9", "\xe6\xbc\xa2"}).size() == 6);
}
