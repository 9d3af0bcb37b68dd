// SentencePiece subwords (models/data/subword.hpp, models/data/text_codec.hpp): text
// round-trips, attend's pieces against Python's sentencepiece (references in
// tests/data/subword_reference.json, made by tests/reference/spm_reference.py),
// the word maps of TextTranslation, and a subword model through the library.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/random.hpp"
#include "models/data/dataset.hpp"
#include "models/eval/evaluation.hpp"
#include "models/data/subword.hpp"
#include "models/data/text_codec.hpp"

using namespace attend;

namespace {

std::string data_path(const std::string& name) { return std::string(ATTEND_TEST_DATA) + "/" + name; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> toy_text(std::int64_t n, std::uint64_t seed) {
  ToyCorpusOptions o;
  o.n = n;
  o.min_len = 3;
  o.max_len = 12;
  o.seed = seed;
  std::vector<std::string> out;
  for (const SentencePair& p : toy_pairs(o)) {
    out.push_back(p.source);
    out.push_back(p.target);
  }
  return out;
}

}  // namespace

TEST_CASE("a SentencePiece model trained on toy sentences gives each sentence back") {
  const std::vector<std::string> train = toy_text(300, 3), held_out = toy_text(40, 9);
  for (const char* type : {"unigram", "bpe"}) {
    CAPTURE(type);
    SubwordTrainOptions o;
    o.type = type;
    o.vocab_size = 120;
    o.character_coverage = 1.0;  // the apostrophe of "d'un" is rare in the toy language: keep every character
    const SubwordModel model = SubwordModel::train(train, o);
    CHECK(model.size() == 120);
    for (const std::string& s : held_out) {
      const std::vector<std::string> pieces = model.encode(s);
      REQUIRE(!pieces.empty());
      CHECK(starts_word(pieces.front()));
      CHECK(model.decode(pieces) == s);
    }
    // Pieces are parts of words: fewer than the characters, more than the words of a sentence.
    const std::vector<std::string> pieces = model.encode(held_out[0]);
    CHECK(pieces.size() < held_out[0].size());
    // Training is seeded and single-threaded: the same text and options give the same model.
    CHECK(SubwordModel::train(train, o).bytes() == model.bytes());
    // The saved file reads back as the same model.
    const SubwordModel again = SubwordModel::from_bytes(model.bytes(), "again");
    CHECK(again.encode(held_out[1]) == model.encode(held_out[1]));
  }
}

TEST_CASE("subword training refuses what SentencePiece cannot do, with attend::Error") {
  const std::vector<std::string> tiny = {"a b c", "b c a"};
  SubwordTrainOptions o;
  o.vocab_size = 5000;  // far more pieces than three letters allow
  CHECK_THROWS_WITH_AS(SubwordModel::train(tiny, o), doctest::Contains("SentencePiece training"), Error);
  o.type = "word";
  CHECK_THROWS_WITH_AS(SubwordModel::train(tiny, o), doctest::Contains("unigram or bpe"), Error);
  o.type = "unigram";
  CHECK_THROWS_WITH_AS(SubwordModel::train({"", "\t"}, o), doctest::Contains("no sentences"), Error);
}

TEST_CASE("attend's pieces are Python sentencepiece's, for a model made by attend and one made by spm_train") {
  const nlohmann::json ref = nlohmann::json::parse(slurp(data_path("subword_reference.json")));
  const auto sentences = ref.at("sentences").get<std::vector<std::string>>();
  REQUIRE(sentences.size() >= 8);
  for (const auto& [name, expected] : ref.at("models").items()) {
    CAPTURE(name);
    const SubwordModel model = SubwordModel::load(data_path(name));
    CHECK(model.size() == expected.at("size").get<std::int64_t>());
    for (std::size_t i = 0; i < sentences.size(); ++i) {
      CAPTURE(sentences[i]);
      const auto pieces = expected.at("pieces").at(i).get<std::vector<std::string>>();
      CHECK(model.encode(sentences[i]) == pieces);
      CHECK(model.decode(pieces) == expected.at("decoded").at(i).get<std::string>());
    }
  }
  // The references cover unknown characters and NFKC normalization, not only easy text.
  const auto attend_pieces = ref["models"]["subword_attend.model"]["pieces"];
  bool unknown = false;
  for (const auto& sentence : attend_pieces)
    for (const auto& p : sentence) unknown = unknown || p == "<unk>";
  CHECK(unknown);
}

TEST_CASE("word maps: identity for words, by the U+2581 marker for subwords") {
  const TextCodec words;
  const WordMap w = words.words({"l'", "homme", "rit", "."}, "l'homme rit.");
  CHECK(w.words == std::vector<std::string>{"l'", "homme", "rit", "."});
  CHECK(w.word_of == std::vector<std::int64_t>{0, 1, 2, 3});

  auto model = std::make_shared<const SubwordModel>(SubwordModel::load(data_path("subword_attend.model")));
  const TextCodec pieces(model, TokenizerOptions{});
  // "▁the ▁re d ▁c ar": three words; the typed words are kept as typed.
  const WordMap s = pieces.words({"▁the", "▁re", "d", "▁c", "ar"}, "the red car");
  CHECK(s.words == std::vector<std::string>{"the", "red", "car"});
  CHECK(s.word_of == std::vector<std::int64_t>{0, 1, 1, 2, 2});
  // A lone marker starts a word: "▁ f e n ê t r e" is one word.
  const WordMap lone = pieces.words({"▁ma", "▁", "f", "e", "n", "ê", "t", "r", "e"}, "ma fenêtre");
  CHECK(lone.words == std::vector<std::string>{"ma", "fenêtre"});
  CHECK(lone.word_of == std::vector<std::int64_t>{0, 1, 1, 1, 1, 1, 1, 1, 1});
  // When the text's words do not match the pieces' (normalized text, say), each
  // word is its pieces decoded.
  const WordMap other = pieces.words({"▁the", "▁re", "d"}, "the  red  car");
  CHECK(other.words == std::vector<std::string>{"the", "red"});
  CHECK(other.word_of == std::vector<std::int64_t>{0, 1, 1});
  // Pieces before the first marker join the first word; no tokens, no words.
  CHECK(pieces.words({"d", "▁c"}, "d c").word_of == std::vector<std::int64_t>{0, 1});
  CHECK(pieces.words({}, "").words.empty());
  // Every piece of a real sentence maps into its words, in order.
  const std::string sentence = "ma fenêtre sale attend et chaque voisin";
  const std::vector<std::string> encoded = pieces.encode(sentence);
  const WordMap real = pieces.words(encoded, sentence);
  CHECK(real.words.size() == 7);
  REQUIRE(real.word_of.size() == encoded.size());
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    CHECK(real.word_of[i] == (i == 0 ? 0 : real.word_of[i - 1] + (starts_word(encoded[i]) ? 1 : 0)));
  }
}

TEST_CASE("a lower-casing subword codec lower-cases before encoding, invalid UTF-8 is an error as for words") {
  auto model = std::make_shared<const SubwordModel>(SubwordModel::load(data_path("subword_attend.model")));
  TokenizerOptions lower;
  lower.lowercase = true;
  const TextCodec codec(model, lower);
  CHECK(codec.encode("The RED Car") == model->encode("the red car"));
  CHECK_THROWS_WITH_AS(codec.encode("ab\xFF"), doctest::Contains("invalid UTF-8 at byte 2"), Error);
}

TEST_CASE("a subword dataset and translate_text: pieces in, text and word maps out") {
  ToyCorpusOptions o;
  o.n = 400;
  o.min_len = 3;
  o.max_len = 8;
  DatasetOptions d;
  d.subword.type = "bpe";
  d.subword.vocab_size = 150;
  d.subword.separate = true;
  const Dataset data = build_dataset(toy_pairs(o), d);
  REQUIRE(data.codecs.source.is_subword());
  CHECK(data.codecs.source.subword_ptr() != data.codecs.target.subword_ptr());  // one model per side
  // The vocabularies hold pieces (never more than the models have, plus attend's 4 specials).
  CHECK(data.source_vocab.size() <= data.codecs.source.subword()->size() + 4);
  CHECK(data.source_vocab.contains(data.codecs.source.encode(data.train_text[0].source)[0]));
  CHECK(data.valid_source_unknown.tokens > 0);
  CHECK(data.valid_source_unknown.rate() < 0.05);
  // Pieces are what --max-len counts.
  CHECK(data.train[0].source.size() == data.codecs.source.encode(data.train_text[0].source).size());

  Seq2SeqConfig c;
  c.source_vocab = data.source_vocab.size();
  c.target_vocab = data.target_vocab.size();
  c.embed = 8;
  c.hidden = 8;
  Generator init(1);
  Seq2Seq model(c, init);
  model.eval();
  std::vector<std::string> sources = {data.valid_text[0].source, "", data.valid_text[1].source};
  DecodeOptions decode;
  decode.max_len_b = 2;
  const std::vector<TextTranslation> out =
      translate_text(model, sources, data.source_vocab, data.target_vocab, data.codecs, decode);
  REQUIRE(out.size() == 3);
  CHECK(out[1].source_tokens.empty());
  CHECK(out[1].text.empty());
  for (std::size_t i : {0u, 2u}) {
    const TextTranslation& t = out[i];
    CHECK(t.source_word_of.size() == t.source_tokens.size());
    CHECK(t.output_word_of.size() == t.output_tokens.size());
    // The source words are the sentence's words as typed.
    std::vector<std::string> typed;
    std::istringstream in(sources[i]);
    for (std::string word; in >> word;) typed.push_back(word);
    CHECK(t.source_words == typed);
    CHECK(t.source_word_of.back() == static_cast<std::int64_t>(typed.size()) - 1);
    // The output is text: the pieces decoded, no marker left.
    CHECK(t.text == data.codecs.target.decode(t.output_tokens));
    CHECK(t.text.find("\xE2\x96\x81") == std::string::npos);
    for (std::int64_t k : t.output_word_of) CHECK((k >= 0 && k < static_cast<std::int64_t>(t.output_words.size())));
  }
  // BLEU of a subword model scores text: its hypotheses are the translations' text.
  const std::vector<SentencePair> pairs(data.valid_text.begin(), data.valid_text.begin() + 4);
  const BleuReport r = evaluate_bleu_by_length(model, pairs, data.source_vocab, data.target_vocab, data.codecs, decode);
  REQUIRE(r.hypotheses.size() == 4);
  for (const std::string& h : r.hypotheses) CHECK(h.find("\xE2\x96\x81") == std::string::npos);
  // Buckets count source words, not pieces.
  std::int64_t bucketed = 0;
  for (const LengthBucket& b : r.buckets) bucketed += b.sentences;
  CHECK(bucketed == 4);
}

TEST_CASE("a words translation maps each token to itself") {
  ToyCorpusOptions o;
  o.n = 100;
  o.min_len = 3;
  o.max_len = 6;
  const Dataset data = build_dataset(toy_pairs(o), DatasetOptions{});
  CHECK(!data.codecs.source.is_subword());
  Seq2SeqConfig c;
  c.source_vocab = data.source_vocab.size();
  c.target_vocab = data.target_vocab.size();
  c.embed = 8;
  c.hidden = 8;
  Generator init(1);
  Seq2Seq model(c, init);
  model.eval();
  DecodeOptions decode;
  decode.max_len_b = 2;
  const auto out = translate_text(model, {data.train_text[0].source}, data.source_vocab, data.target_vocab,
                                  TokenizerOptions{}, decode);
  REQUIRE(out.size() == 1);
  CHECK(out[0].source_words == out[0].source_tokens);
  CHECK(out[0].output_words == out[0].output_tokens);
  for (std::size_t i = 0; i < out[0].source_word_of.size(); ++i) CHECK(out[0].source_word_of[i] == static_cast<std::int64_t>(i));
  CHECK(out[0].source_word_of.size() == out[0].source_tokens.size());
  CHECK(out[0].output_word_of.size() == out[0].output_tokens.size());
}
