// models/data/toy_language: exact lengths, determinism, agreement and alignment.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "core/error.hpp"
#include "models/data/toy_language.hpp"
#include "models/data/detail/toy_lexicon.hpp"

using namespace attend;

TEST_CASE("the lexicon is as large as promised") {
  ToyLexiconSize size = toy_lexicon_size();
  CHECK(size.nouns >= 50);
  CHECK(size.adjectives >= 20);
  CHECK(size.adjectives_before_noun >= 3);
  CHECK(size.adjectives_before_noun < size.adjectives / 2);  // most move after the noun
  CHECK(size.verbs >= 20);
  CHECK(size.prepositions >= 5);
  CHECK(size.conjunctions >= 3);
  bool one_to_two = false;
  for (const auto& c : toy::conjunctions()) one_to_two = one_to_two || c.fr.size() == 2;
  CHECK(one_to_two);
  int masculine = 0;
  for (const auto& n : toy::nouns()) masculine += n.gender == toy::Masculine;
  CHECK(masculine >= 15);
  CHECK(static_cast<int>(toy::nouns().size()) - masculine >= 15);
}

TEST_CASE("every length from 3 to 60 comes out exactly, with a valid alignment") {
  Generator gen(11);
  for (int length = 3; length <= 60; ++length) {
    for (int k = 0; k < 5; ++k) {
      ToySentence s = toy_sentence(gen, length);
      REQUIRE(static_cast<int>(s.source.size()) == length);
      REQUIRE(s.target.size() == s.target_to_source.size());
      CHECK(s.target.size() >= s.source.size() - 2);  // contractions only shorten a little
      std::set<int> covered;
      for (int j : s.target_to_source) {
        REQUIRE(j >= 0);
        REQUIRE(j < length);
        covered.insert(j);
      }
      CHECK(static_cast<int>(covered.size()) == length);  // every English word is translated
    }
  }
  CHECK_THROWS_AS(toy_sentence(gen, 2), Error);
  CHECK_THROWS_AS(toy_sentence(gen, 61), Error);
}

TEST_CASE("the same seed gives the same corpus") {
  ToyCorpusOptions options;
  options.n = 50;
  options.seed = 3;
  auto a = toy_corpus(options), b = toy_corpus(options);
  REQUIRE(a.size() == 50);
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].source == b[i].source);
    CHECK(a[i].target == b[i].target);
  }
  options.seed = 4;
  auto c = toy_corpus(options);
  int same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i].source == c[i].source;
  CHECK(same < 5);
}

TEST_CASE("French agrees: verbs with subjects, nouns and adjectives with number and gender") {
  // Index the lexicon by English and French form.
  std::map<std::string, std::pair<int, bool>> verb_en;  // form -> (verb, plural)
  for (std::size_t v = 0; v < toy::verbs().size(); ++v) {
    verb_en[toy::verbs()[v].en_sg] = {static_cast<int>(v), false};
    verb_en[toy::verbs()[v].en_pl] = {static_cast<int>(v), true};
  }
  std::map<std::string, const toy::Adjective*> adj_en;
  for (const auto& a : toy::adjectives()) adj_en[a.en] = &a;
  std::map<std::string, std::pair<const toy::Noun*, bool>> noun_fr;  // French form -> (noun, plural)
  for (const auto& n : toy::nouns()) {
    noun_fr[n.fr_sg] = {&n, false};
    noun_fr[n.fr_pl] = {&n, true};
  }
  ToyCorpusOptions options;
  options.n = 300;
  options.seed = 9;
  int verbs_checked = 0, adjectives_checked = 0;
  for (const ToySentence& s : toy_corpus(options)) {
    for (std::size_t t = 0; t < s.target.size(); ++t) {
      const std::string& en = s.source[s.target_to_source[t]];
      if (auto v = verb_en.find(en); v != verb_en.end() && en != "open") {
        const toy::Verb& verb = toy::verbs()[v->second.first];
        CHECK(s.target[t] == (v->second.second ? verb.fr_pl : verb.fr_sg));
        ++verbs_checked;
      }
      if (auto a = adj_en.find(en); a != adj_en.end() && en != "open") {  // "open" is a verb too
        // The noun this adjective belongs to: the nearest French noun, after it
        // for "before" adjectives, before it otherwise.
        const toy::Adjective& adj = *a->second;
        int step = adj.before_noun ? 1 : -1;
        for (int u = static_cast<int>(t) + step; u >= 0 && u < static_cast<int>(s.target.size()); u += step) {
          auto n = noun_fr.find(s.target[u]);
          if (n == noun_fr.end() || (adj_en.count(s.source[s.target_to_source[u]]) > 0)) continue;
          const bool fem = n->second.first->gender == toy::Feminine, plural = n->second.second;
          // souris is both singular and plural in French; its number comes from English
          if (std::string(n->second.first->fr_sg) == n->second.first->fr_pl) break;
          const char* want = fem ? (plural ? adj.fr_f_pl : adj.fr_f_sg) : (plural ? adj.fr_m_pl : adj.fr_m_sg);
          CHECK(s.target[t] == want);
          ++adjectives_checked;
          break;
        }
      }
    }
  }
  CHECK(verbs_checked > 300);
  CHECK(adjectives_checked > 300);
}

TEST_CASE("the alignment is mostly monotone, with local crossings") {
  ToyCorpusOptions options;
  options.n = 200;
  options.seed = 5;
  int forward = 0, backward = 0;
  for (const ToySentence& s : toy_corpus(options))
    for (std::size_t t = 1; t < s.target_to_source.size(); ++t) {
      int step = s.target_to_source[t] - s.target_to_source[t - 1];
      if (step > 0) ++forward;
      if (step < 0) {
        ++backward;
        CHECK(step >= -3);  // reordering is local: at most past two adjectives
      }
    }
  CHECK(forward > 5 * backward);
  CHECK(backward > 100);
}

TEST_CASE("a worked example reads as French") {
  // Checked by hand: "de" + "le" contracts to "du", "de" + "une" elides to "d'".
  Generator gen(5);
  std::vector<std::string> all;
  for (int i = 0; i < 400; ++i) {
    ToySentence s = toy_sentence(gen, 12);
    all.push_back(join_words(s.target));
  }
  bool du = false, elided = false, de_le = false;
  for (const std::string& t : all) {
    du = du || t.find("près du ") != std::string::npos;
    elided = elided || t.find("près d'un") != std::string::npos;
    for (const char* wrong : {" de le ", " de les ", " de un ", " de une "})
      de_le = de_le || (" " + t + " ").find(wrong) != std::string::npos;
  }
  CHECK(du);
  CHECK(elided);
  CHECK_FALSE(de_le);
  Generator small(5);
  ToySentence s = toy_sentence(small, 3);
  CHECK(join_words(s.source) == "this boat waits");
  CHECK(join_words(s.target) == "ce bateau attend");
}
