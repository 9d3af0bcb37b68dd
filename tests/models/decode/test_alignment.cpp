// models/decode/alignment: hard alignments of hand-built attention matrices, the
// unknown-word dictionary and the replacement itself.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "models/decode/alignment.hpp"

using namespace attend;
using Matrix = std::vector<std::vector<double>>;
using Ids = std::vector<std::int64_t>;

namespace {

Ids identity(std::int64_t n) {
  Ids ids;
  for (std::int64_t i = 0; i < n; ++i) ids.push_back(i);
  return ids;
}

}  // namespace

TEST_CASE("hard alignment: each output word to the source word it attends to most") {
  // source: the(0) red(1) car(2); output: la(0) voiture(1) rouge(2), then </s>.
  const Matrix alpha = {
      {0.80, 0.15, 0.05},  // la -> the
      {0.10, 0.20, 0.70},  // voiture -> car
      {0.05, 0.90, 0.05},  // rouge -> red
      {0.30, 0.30, 0.40},  // </s>: not an output word, ignored
  };
  const std::vector<AlignmentLink> links = hard_alignment(alpha, 3, identity(3), identity(3));
  CHECK(links == std::vector<AlignmentLink>{{0, 0}, {2, 1}, {1, 2}});
  CHECK(format_alignment(links) == "0-0 2-1 1-2");
  CHECK(format_alignment({}) == "");
}

TEST_CASE("hard alignment: a tie goes to the first source token, NaN is never chosen") {
  const Matrix alpha = {{0.5, 0.5, 0.0}, {std::nan(""), 0.2, 0.8}};
  CHECK(most_attended(alpha, 0) == 0);
  CHECK(most_attended(alpha, 1) == 2);
}

TEST_CASE("hard alignment: subword pieces map back to words, and repeated word pairs appear once") {
  // source pieces: ▁un(0) ▁fich(1) ier(2)  -> words un(0) fichier(1)
  // output pieces: ▁a(0) ▁fi(1) le(2)      -> words a(0) file(1)
  const Matrix alpha = {
      {0.9, 0.05, 0.05},  // ▁a -> ▁un
      {0.1, 0.60, 0.30},  // ▁fi -> ▁fich
      {0.1, 0.20, 0.70},  // le -> ier: the same word pair as ▁fi -> ▁fich
  };
  const std::vector<AlignmentLink> links = hard_alignment(alpha, 3, {0, 1, 1}, {0, 1, 1});
  CHECK(format_alignment(links) == "0-0 1-1");
}

TEST_CASE("hard alignment: sizes are checked before any work") {
  const Matrix alpha = {{1.0, 0.0}};
  CHECK_THROWS_WITH_AS(hard_alignment(alpha, 2, identity(2), identity(2)),
                       "hard_alignment: 2 output tokens but 1 attention rows", Error);
  CHECK_THROWS_WITH_AS(hard_alignment(alpha, 1, identity(3), identity(1)),
                       "hard_alignment: attention row 0 has 2 source tokens, source_word_of has 3", Error);
  CHECK_THROWS_WITH_AS(hard_alignment(alpha, 1, identity(2), identity(2)),
                       "hard_alignment: 1 output tokens but 2 entries in output_word_of", Error);
  CHECK_THROWS_AS(most_attended({{}}, 0), Error);
}

TEST_CASE("unk dictionary: two or three fields, the most probable target wins") {
  const UnkDictionary d = UnkDictionary::parse(
      "Paris Paris\n"
      "house maison 0.4\n"
      "house domicile 0.1\n"
      "house demeure 0.7\r\n"
      "\n"
      "cat\tchat\n"
      "cat chatte\n",  // without PROB the first entry stays
      "dict.txt");
  CHECK(d.size() == 3);
  CHECK(d.lookup("house") == "demeure");
  CHECK(d.lookup("cat") == "chat");
  CHECK(d.lookup("Zurich") == "Zurich");  // not listed: copied
  CHECK_THROWS_WITH_AS(UnkDictionary::parse("a b c d\n", "dict.txt"),
                       "unk dictionary: dict.txt:1: expected 'SOURCE TARGET' or 'SOURCE TARGET PROB', got 4 fields: "
                       "'a b c d'",
                       Error);
  CHECK_THROWS_WITH_AS(UnkDictionary::parse("ok fine\na b nan\n", "dict.txt"),
                       "unk dictionary: dict.txt:2: the third field must be a finite number (a probability), got 'nan'",
                       Error);
  CHECK_THROWS_WITH_AS(UnkDictionary::parse("caf\xe9 x\n", "dict.txt"),
                       "unk dictionary: dict.txt:1: not valid UTF-8: 'caf\\xe9 x'", Error);
  CHECK_THROWS_AS(UnkDictionary::load("/nonexistent/dict.txt"), Error);
}

TEST_CASE("replace_unknown: each <unk> becomes the translation of the source word it attends to most") {
  // source: Alice(0) buys(1) a(2) zither(3); output: <unk> achète une <unk> </s>
  std::vector<std::string> output = {"<unk>", "achète", "une", "<unk>"};
  const Matrix alpha = {
      {0.7, 0.1, 0.1, 0.1},
      {0.1, 0.8, 0.05, 0.05},
      {0.1, 0.1, 0.7, 0.1},
      {0.05, 0.05, 0.3, 0.6},
      {0.25, 0.25, 0.25, 0.25},
  };
  const UnkDictionary d = UnkDictionary::parse("zither cithare\n", "d");
  const std::vector<UnkReplacement> r =
      replace_unknown(output, alpha, {"Alice", "buys", "a", "zither"}, identity(4), d);
  CHECK(output == std::vector<std::string>{"Alice", "achète", "une", "cithare"});
  REQUIRE(r.size() == 2);
  CHECK(r[0].target == 0);
  CHECK(r[0].source == 0);
  CHECK(r[0].replacement == "Alice");
  CHECK(r[1].target == 3);
  CHECK(r[1].word == "zither");
  CHECK(r[1].replacement == "cithare");
  // nothing to replace: nothing changes, and no attention row is needed
  std::vector<std::string> clean = {"une", "voiture"};
  CHECK(replace_unknown(clean, {}, {"a"}, {0}, d).empty());
  CHECK(clean == std::vector<std::string>{"une", "voiture"});
}
