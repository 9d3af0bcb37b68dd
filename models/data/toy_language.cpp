// Generates toy sentence pairs: grow a sentence tree by random expansions until
// it has exactly the requested number of English words, then write it out in
// English and in French, keeping track of which English word each French word
// translates.
#include "models/data/toy_language.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "models/data/detail/toy_lexicon.hpp"

namespace attend {

namespace {
using namespace toy;

constexpr int kMaxAdjectives = 2;
constexpr int kMaxNpDepth = 2;      // how deep prepositional phrases nest
constexpr int kMaxClausePps = 2;

struct NounPhrase {
  int det = 0, noun = 0, depth = 0;
  bool plural = false;
  std::vector<int> adjectives;
  std::vector<std::pair<int, int>> pps;  // (preposition, noun phrase)
  int coord_conj = -1, coord_np = -1;    // "the cat and the dog"
  // English positions, filled when writing English
  int det_pos = 0, noun_pos = 0, coord_pos = 0;
  std::vector<int> adj_pos, prep_pos;
};

struct Clause {
  int conj = -1;  // joins this clause to the previous one
  int subject = 0, verb = 0, object = -1;
  std::vector<std::pair<int, int>> pps;
  int conj_pos = 0, verb_pos = 0;
  std::vector<int> prep_pos;
};

struct Tree {
  std::vector<NounPhrase> nps;
  std::vector<Clause> clauses;
};

class Builder {
 public:
  explicit Builder(Generator& gen) : gen_(gen) {}

  int pick(std::size_t n) { return static_cast<int>(gen_.randint(static_cast<std::int64_t>(n))); }

  int new_np(int depth, bool allow_plural = true) {
    NounPhrase np;
    np.depth = depth;
    np.noun = pick(nouns().size());
    np.plural = allow_plural && gen_.bernoulli(0.35);
    std::vector<int> dets;
    for (std::size_t d = 0; d < determiners().size(); ++d)
      if ((np.plural ? determiners()[d].en_pl : determiners()[d].en_sg) != nullptr) dets.push_back(static_cast<int>(d));
    np.det = dets[pick(dets.size())];
    tree.nps.push_back(np);
    return static_cast<int>(tree.nps.size()) - 1;
  }

  int pick_verb(bool transitive) {
    std::vector<int> ids;
    for (std::size_t v = 0; v < verbs().size(); ++v)
      if (verbs()[v].transitive == transitive) ids.push_back(static_cast<int>(v));
    return ids[pick(ids.size())];
  }

  void new_clause(int conj) {
    Clause c;
    c.conj = conj;
    c.subject = new_np(0);
    c.verb = pick_verb(false);
    tree.clauses.push_back(c);
  }

  // One random expansion that adds at most `budget` words; returns the words
  // added, or 0 when nothing fits.
  int expand(int budget) {
    struct Option {
      int cost, weight, kind, target;
    };
    std::vector<Option> options;
    for (std::size_t i = 0; i < tree.nps.size(); ++i) {
      const NounPhrase& np = tree.nps[i];
      if (np.adjectives.size() < kMaxAdjectives) options.push_back({1, 2, 0, static_cast<int>(i)});
      if (np.depth < kMaxNpDepth && np.pps.size() < 1) options.push_back({3, 2, 1, static_cast<int>(i)});
      if (np.depth == 0 && np.coord_np < 0) options.push_back({3, 1, 2, static_cast<int>(i)});
    }
    for (std::size_t c = 0; c < tree.clauses.size(); ++c) {
      const Clause& cl = tree.clauses[c];
      if (cl.object < 0) options.push_back({2, 4, 3, static_cast<int>(c)});
      if (cl.pps.size() < kMaxClausePps) options.push_back({3, 1, 4, static_cast<int>(c)});
    }
    options.push_back({4, budget >= 12 ? 5 : 1, 5, 0});
    int total = 0;
    for (const Option& o : options)
      if (o.cost <= budget) total += o.weight;
    if (total == 0) return 0;
    int r = pick(static_cast<std::size_t>(total));
    for (const Option& o : options) {
      if (o.cost > budget) continue;
      if (r >= o.weight) {
        r -= o.weight;
        continue;
      }
      apply(o.kind, o.target);
      return o.cost;
    }
    return 0;
  }

  void apply(int kind, int target) {
    switch (kind) {
      case 0: {  // an adjective not already on this noun phrase
        auto& adjs = tree.nps[target].adjectives;
        int a;
        do a = pick(adjectives().size());
        while (std::find(adjs.begin(), adjs.end(), a) != adjs.end());
        adjs.push_back(a);
        break;
      }
      case 1: {
        int np = new_np(tree.nps[target].depth + 1);
        tree.nps[target].pps.emplace_back(pick(prepositions().size()), np);
        break;
      }
      case 2: {
        int np = new_np(1);
        // Subjects are joined by "and" only, so that the verb is plural.
        bool is_subject = false;
        for (const Clause& c : tree.clauses) is_subject = is_subject || c.subject == target;
        tree.nps[target].coord_conj = is_subject ? 0 : pick(np_conjunctions().size());
        tree.nps[target].coord_np = np;
        break;
      }
      case 3: {
        int np = new_np(0);
        tree.clauses[target].object = np;
        tree.clauses[target].verb = pick_verb(true);
        break;
      }
      case 4: {
        int np = new_np(1);
        tree.clauses[target].pps.emplace_back(pick(prepositions().size()), np);
        break;
      }
      default:
        new_clause(pick(conjunctions().size()));
    }
  }

  Tree tree;

 private:
  Generator& gen_;
};

bool subject_plural(const Tree& t, const Clause& c) {
  const NounPhrase& s = t.nps[c.subject];
  return s.plural || s.coord_np >= 0;  // "the cat and the dog" are plural
}

void write_english_np(Tree& t, int i, std::vector<std::string>& out) {
  NounPhrase& np = t.nps[i];
  const Determiner& d = determiners()[np.det];
  np.det_pos = static_cast<int>(out.size());
  out.push_back(np.plural ? d.en_pl : d.en_sg);
  np.adj_pos.clear();
  for (int a : np.adjectives) {
    np.adj_pos.push_back(static_cast<int>(out.size()));
    out.push_back(adjectives()[a].en);
  }
  np.noun_pos = static_cast<int>(out.size());
  out.push_back(np.plural ? nouns()[np.noun].en_pl : nouns()[np.noun].en_sg);
  np.prep_pos.clear();
  for (auto [prep, child] : std::vector<std::pair<int, int>>(np.pps)) {
    t.nps[i].prep_pos.push_back(static_cast<int>(out.size()));
    out.push_back(prepositions()[prep].en);
    write_english_np(t, child, out);
  }
  if (t.nps[i].coord_np >= 0) {
    t.nps[i].coord_pos = static_cast<int>(out.size());
    out.push_back(np_conjunctions()[t.nps[i].coord_conj].en);
    write_english_np(t, t.nps[i].coord_np, out);
  }
}

struct FrenchWriter {
  const Tree& t;
  ToySentence& s;
  void word(const std::string& w, int source) {
    s.target.push_back(w);
    s.target_to_source.push_back(source);
  }
  // "de" followed by "le" or "les" contracts (près de le chat -> près du chat),
  // and before "un"/"une" it elides (près de une -> près d' une).
  void np(int i, bool after_de) {
    const NounPhrase& p = t.nps[i];
    const Noun& n = nouns()[p.noun];
    const Determiner& d = determiners()[p.det];
    std::string det = p.plural ? d.fr_pl : (n.gender == Masculine ? d.fr_m_sg : d.fr_f_sg);
    if (after_de && (det == "le" || det == "les" || det == "des")) {
      s.target.pop_back();  // the "de"
      s.target_to_source.pop_back();
      det = det == "le" ? "du" : (det == "les" ? "des" : "de");
    } else if (after_de && (det == "un" || det == "une")) {
      s.target.back() = "d'";  // près d' une robe: elision, split as a tokenizer splits "d'une"
    }
    word(det, p.det_pos);
    auto adjective = [&](std::size_t k) {
      const Adjective& a = adjectives()[p.adjectives[k]];
      const char* form = n.gender == Masculine ? (p.plural ? a.fr_m_pl : a.fr_m_sg) : (p.plural ? a.fr_f_pl : a.fr_f_sg);
      word(form, p.adj_pos[k]);
    };
    for (std::size_t k = 0; k < p.adjectives.size(); ++k)
      if (adjectives()[p.adjectives[k]].before_noun) adjective(k);
    word(p.plural ? n.fr_pl : n.fr_sg, p.noun_pos);
    for (std::size_t k = 0; k < p.adjectives.size(); ++k)
      if (!adjectives()[p.adjectives[k]].before_noun) adjective(k);
    for (std::size_t k = 0; k < p.pps.size(); ++k) pp(p.pps[k], p.prep_pos[k]);
    if (p.coord_np >= 0) {
      for (const std::string& w : np_conjunctions()[p.coord_conj].fr) word(w, p.coord_pos);
      np(p.coord_np, false);
    }
  }
  void pp(std::pair<int, int> prep_np, int pos) {
    const Phrase& prep = prepositions()[prep_np.first];
    for (const std::string& w : prep.fr) word(w, pos);
    np(prep_np.second, prep.fr.back() == "de");
  }
};

}  // namespace

ToySentence toy_sentence(Generator& gen, int length) {
  if (length < 3 || length > 60) fail("toy_sentence: length must be in [3, 60], got {}", length);
  for (;;) {  // rarely, the last words cannot be placed; then start again
    Builder b(gen);
    b.new_clause(-1);
    int words = 3;
    while (words < length) {
      int added = b.expand(length - words);
      if (added == 0) break;
      words += added;
    }
    if (words != length) continue;

    Tree& t = b.tree;
    ToySentence s;
    for (Clause& c : t.clauses) {
      if (c.conj >= 0) {
        c.conj_pos = static_cast<int>(s.source.size());
        s.source.push_back(conjunctions()[c.conj].en);
      }
      write_english_np(t, c.subject, s.source);
      c.verb_pos = static_cast<int>(s.source.size());
      const Verb& v = verbs()[c.verb];
      s.source.push_back(subject_plural(t, c) ? v.en_pl : v.en_sg);
      if (c.object >= 0) write_english_np(t, c.object, s.source);
      c.prep_pos.clear();
      for (auto [prep, np] : c.pps) {
        c.prep_pos.push_back(static_cast<int>(s.source.size()));
        s.source.push_back(prepositions()[prep].en);
        write_english_np(t, np, s.source);
      }
    }
    FrenchWriter fr{t, s};
    for (const Clause& c : t.clauses) {
      if (c.conj >= 0)
        for (const std::string& w : conjunctions()[c.conj].fr) fr.word(w, c.conj_pos);
      fr.np(c.subject, false);
      const Verb& v = verbs()[c.verb];
      fr.word(subject_plural(t, c) ? v.fr_pl : v.fr_sg, c.verb_pos);
      if (c.object >= 0) fr.np(c.object, false);
      for (std::size_t k = 0; k < c.pps.size(); ++k) fr.pp(c.pps[k], c.prep_pos[k]);
    }
    return s;
  }
}

std::vector<ToySentence> toy_corpus(const ToyCorpusOptions& options) {
  if (options.min_len < 3 || options.max_len > 60 || options.min_len > options.max_len)
    fail("toy_corpus: lengths must satisfy 3 <= min_len <= max_len <= 60, got min_len {} and max_len {}", options.min_len,
         options.max_len);
  if (options.n < 0) fail("toy_corpus: n must not be negative, got {}", options.n);
  Generator gen(options.seed);
  std::vector<ToySentence> out;
  out.reserve(static_cast<std::size_t>(options.n));
  for (std::int64_t i = 0; i < options.n; ++i) {
    int length = options.min_len + static_cast<int>(gen.randint(options.max_len - options.min_len + 1));
    out.push_back(toy_sentence(gen, length));
  }
  return out;
}

ToyLexiconSize toy_lexicon_size() {
  int before = 0;
  for (const Adjective& a : adjectives()) before += a.before_noun ? 1 : 0;
  return {static_cast<int>(nouns().size()),        static_cast<int>(adjectives().size()), before,
          static_cast<int>(verbs().size()),        static_cast<int>(prepositions().size()),
          static_cast<int>(conjunctions().size()), static_cast<int>(determiners().size())};
}

std::string join_words(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& w : words) {
    if (!text.empty() && text.back() != '\'') text += ' ';  // "d'" joins the next word: d'une
    text += w;
  }
  return text;
}

}  // namespace attend
