// The toy lexicon. French nouns all start with a consonant, so that no elision
// (l', d') is needed; English nouns too, so that "a" never becomes "an".
#include "models/data/detail/toy_lexicon.hpp"

namespace attend::toy {

const std::vector<Noun>& nouns() {
  static const std::vector<Noun> list = {
      {"cat", "cats", "chat", "chats", Masculine},          {"dog", "dogs", "chien", "chiens", Masculine},
      {"boy", "boys", "garçon", "garçons", Masculine},      {"book", "books", "livre", "livres", Masculine},
      {"garden", "gardens", "jardin", "jardins", Masculine}, {"boat", "boats", "bateau", "bateaux", Masculine},
      {"horse", "horses", "cheval", "chevaux", Masculine},  {"train", "trains", "train", "trains", Masculine},
      {"truck", "trucks", "camion", "camions", Masculine},  {"market", "markets", "marché", "marchés", Masculine},
      {"bridge", "bridges", "pont", "ponts", Masculine},    {"village", "villages", "village", "villages", Masculine},
      {"castle", "castles", "château", "châteaux", Masculine}, {"cake", "cakes", "gâteau", "gâteaux", Masculine},
      {"teacher", "teachers", "professeur", "professeurs", Masculine},
      {"doctor", "doctors", "médecin", "médecins", Masculine},
      {"neighbour", "neighbours", "voisin", "voisins", Masculine}, {"king", "kings", "roi", "rois", Masculine},
      {"lion", "lions", "lion", "lions", Masculine},        {"fish", "fish", "poisson", "poissons", Masculine},
      {"pencil", "pencils", "crayon", "crayons", Masculine}, {"painting", "paintings", "tableau", "tableaux", Masculine},
      {"desk", "desks", "bureau", "bureaux", Masculine},    {"hat", "hats", "chapeau", "chapeaux", Masculine},
      {"knife", "knives", "couteau", "couteaux", Masculine}, {"bag", "bags", "sac", "sacs", Masculine},
      {"bicycle", "bicycles", "vélo", "vélos", Masculine},  {"museum", "museums", "musée", "musées", Masculine},
      {"park", "parks", "parc", "parcs", Masculine},        {"shop", "shops", "magasin", "magasins", Masculine},
      {"woman", "women", "femme", "femmes", Feminine},      {"girl", "girls", "fille", "filles", Feminine},
      {"house", "houses", "maison", "maisons", Feminine},   {"car", "cars", "voiture", "voitures", Feminine},
      {"table", "tables", "table", "tables", Feminine},     {"chair", "chairs", "chaise", "chaises", Feminine},
      {"window", "windows", "fenêtre", "fenêtres", Feminine}, {"door", "doors", "porte", "portes", Feminine},
      {"city", "cities", "ville", "villes", Feminine},      {"river", "rivers", "rivière", "rivières", Feminine},
      {"mountain", "mountains", "montagne", "montagnes", Feminine},
      {"forest", "forests", "forêt", "forêts", Feminine},   {"letter", "letters", "lettre", "lettres", Feminine},
      {"flower", "flowers", "fleur", "fleurs", Feminine},   {"queen", "queens", "reine", "reines", Feminine},
      {"sister", "sisters", "soeur", "soeurs", Feminine},   {"mother", "mothers", "mère", "mères", Feminine},
      {"cup", "cups", "tasse", "tasses", Feminine},         {"bottle", "bottles", "bouteille", "bouteilles", Feminine},
      {"lamp", "lamps", "lampe", "lampes", Feminine},       {"beach", "beaches", "plage", "plages", Feminine},
      {"street", "streets", "rue", "rues", Feminine},       {"road", "roads", "route", "routes", Feminine},
      {"box", "boxes", "boîte", "boîtes", Feminine},        {"shirt", "shirts", "chemise", "chemises", Feminine},
      {"dress", "dresses", "robe", "robes", Feminine},      {"mouse", "mice", "souris", "souris", Feminine},
      {"plant", "plants", "plante", "plantes", Feminine},   {"bank", "banks", "banque", "banques", Feminine},
      {"station", "stations", "gare", "gares", Feminine},
  };
  return list;
}

const std::vector<Adjective>& adjectives() {
  static const std::vector<Adjective> list = {
      {"big", "grand", "grande", "grands", "grandes", true},
      {"small", "petit", "petite", "petits", "petites", true},
      {"good", "bon", "bonne", "bons", "bonnes", true},
      {"pretty", "joli", "jolie", "jolis", "jolies", true},
      {"young", "jeune", "jeune", "jeunes", "jeunes", true},
      {"old", "vieux", "vieille", "vieux", "vieilles", true},
      {"red", "rouge", "rouge", "rouges", "rouges", false},
      {"black", "noir", "noire", "noirs", "noires", false},
      {"white", "blanc", "blanche", "blancs", "blanches", false},
      {"green", "vert", "verte", "verts", "vertes", false},
      {"blue", "bleu", "bleue", "bleus", "bleues", false},
      {"round", "rond", "ronde", "ronds", "rondes", false},
      {"heavy", "lourd", "lourde", "lourds", "lourdes", false},
      {"happy", "content", "contente", "contents", "contentes", false},
      {"tired", "fatigué", "fatiguée", "fatigués", "fatiguées", false},
      {"strong", "fort", "forte", "forts", "fortes", false},
      {"quiet", "calme", "calme", "calmes", "calmes", false},
      {"famous", "célèbre", "célèbre", "célèbres", "célèbres", false},
      {"rich", "riche", "riche", "riches", "riches", false},
      {"empty", "vide", "vide", "vides", "vides", false},
      {"dirty", "sale", "sale", "sales", "sales", false},
      {"broken", "cassé", "cassée", "cassés", "cassées", false},
      {"open", "ouvert", "ouverte", "ouverts", "ouvertes", false},
      {"warm", "chaud", "chaude", "chauds", "chaudes", false},
      {"cold", "froid", "froide", "froids", "froides", false},
  };
  return list;
}

const std::vector<Verb>& verbs() {
  static const std::vector<Verb> list = {
      {"sees", "see", "voit", "voient", true},           {"eats", "eat", "mange", "mangent", true},
      {"likes", "like", "aime", "aiment", true},         {"takes", "take", "prend", "prennent", true},
      {"finds", "find", "trouve", "trouvent", true},     {"follows", "follow", "suit", "suivent", true},
      {"watches", "watch", "regarde", "regardent", true}, {"paints", "paint", "peint", "peignent", true},
      {"carries", "carry", "porte", "portent", true},    {"pushes", "push", "pousse", "poussent", true},
      {"pulls", "pull", "tire", "tirent", true},         {"calls", "call", "appelle", "appellent", true},
      {"buys", "buy", "achète", "achètent", true},       {"sells", "sell", "vend", "vendent", true},
      {"draws", "draw", "dessine", "dessinent", true},   {"cleans", "clean", "nettoie", "nettoient", true},
      {"opens", "open", "ouvre", "ouvrent", true},       {"builds", "build", "construit", "construisent", true},
      {"breaks", "break", "casse", "cassent", true},     {"visits", "visit", "visite", "visitent", true},
      {"sleeps", "sleep", "dort", "dorment", false},     {"runs", "run", "court", "courent", false},
      {"sings", "sing", "chante", "chantent", false},    {"waits", "wait", "attend", "attendent", false},
      {"works", "work", "travaille", "travaillent", false},
  };
  return list;
}

const std::vector<Determiner>& determiners() {
  static const std::vector<Determiner> list = {
      {"the", "the", "le", "la", "les"},
      {"a", "some", "un", "une", "des"},
      {"this", "these", "ce", "cette", "ces"},
      {"my", "my", "mon", "ma", "mes"},
      {"every", nullptr, "chaque", "chaque", nullptr},
  };
  return list;
}

const std::vector<Phrase>& prepositions() {
  static const std::vector<Phrase> list = {
      {"in", {"dans"}},   {"on", {"sur"}},        {"with", {"avec"}},  {"near", {"près", "de"}},
      {"under", {"sous"}}, {"behind", {"derrière"}}, {"for", {"pour"}}, {"without", {"sans"}},
  };
  return list;
}

const std::vector<Phrase>& conjunctions() {
  static const std::vector<Phrase> list = {
      {"and", {"et"}}, {"but", {"mais"}}, {"because", {"parce", "que"}}, {"while", {"pendant", "que"}}, {"so", {"donc"}},
  };
  return list;
}

const std::vector<Phrase>& np_conjunctions() {
  static const std::vector<Phrase> list = {{"and", {"et"}}, {"or", {"ou"}}};
  return list;
}

}  // namespace attend::toy
