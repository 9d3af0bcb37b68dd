#pragma once
// The words of the toy language (models/data/toy_lexicon.cpp). Internal to
// models/data/toy_language.cpp.
#include <string>
#include <vector>

namespace attend::toy {

enum Gender { Masculine, Feminine };

struct Noun {
  const char *en_sg, *en_pl, *fr_sg, *fr_pl;
  Gender gender;
};
struct Adjective {
  const char* en;
  const char *fr_m_sg, *fr_f_sg, *fr_m_pl, *fr_f_pl;
  bool before_noun;  // grand, petit, ... stay before the noun in French
};
struct Verb {
  const char *en_sg, *en_pl, *fr_sg, *fr_pl;
  bool transitive;
};
struct Determiner {
  const char *en_sg, *en_pl;                    // nullptr: not used in that number
  const char *fr_m_sg, *fr_f_sg, *fr_pl;
};
struct Phrase {  // prepositions and conjunctions: one English word, one or more French words
  const char* en;
  std::vector<std::string> fr;
};

const std::vector<Noun>& nouns();
const std::vector<Adjective>& adjectives();
const std::vector<Verb>& verbs();
const std::vector<Determiner>& determiners();
const std::vector<Phrase>& prepositions();
const std::vector<Phrase>& conjunctions();       // between clauses
const std::vector<Phrase>& np_conjunctions();    // between noun phrases

}  // namespace attend::toy
