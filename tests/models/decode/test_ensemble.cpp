// models/decode/ensemble and decoding with several models: the mean of the models'
// log-probabilities at every step, each model with its own state, reordered
// by beam search; the mean attention; mismatched models refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <span>

#include "core/io/limits.hpp"
#include "decoding_oracle.hpp"
#include "models/decode/decoding.hpp"
#include "models/decode/ensemble.hpp"
#include "models/model_dir.hpp"
#include "models/seq2seq.hpp"

using namespace attend;

namespace {

using attend::testing::small_model;
using attend::testing::sources;

std::vector<double> log_softmax(const std::vector<double>& z) {
  double top = *std::max_element(z.begin(), z.end()), total = 0;
  for (double x : z) total += std::exp(x - top);
  std::vector<double> out;
  for (double x : z) out.push_back(x - top - std::log(total));
  return out;
}

void check_same(const std::vector<std::vector<Hypothesis>>& a, const std::vector<std::vector<Hypothesis>>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t s = 0; s < a.size(); ++s) {
    REQUIRE(a[s].size() == b[s].size());
    for (std::size_t i = 0; i < a[s].size(); ++i) {
      CHECK(a[s][i].tokens == b[s][i].tokens);
      CHECK(a[s][i].attention == b[s][i].attention);
      CHECK(a[s][i].log_prob == b[s][i].log_prob);
      CHECK(a[s][i].score == b[s][i].score);
    }
  }
}

}  // namespace

TEST_CASE("an ensemble of a model with itself decodes exactly as the model alone, greedy and beam") {
  std::unique_ptr<Seq2Seq> model = small_model(21, AttentionKind::Additive, 9);
  const Batch batch = sources({{4, 5, 6, 4}, {6, 4}, {5}});
  Seq2Seq* const alone[] = {model.get()};
  Seq2Seq* const twice[] = {model.get(), model.get()};
  for (std::int64_t beam : {1, 4}) {
    CAPTURE(beam);
    DecodeOptions o;
    o.beam = beam;
    o.n_best = beam == 1 ? 1 : 3;
    o.length_penalty = LengthPenalty::Gnmt;
    o.coverage_beta = 0.2;
    const auto a = decode_n_best(alone, batch, o);
    check_same(a, decode_n_best(twice, batch, o));
    // And the one-model span is the plain single-model function.
    const std::vector<Hypothesis> single = translate(*model, batch, o);
    for (std::size_t s = 0; s < a.size(); ++s) {
      CHECK(single[s].tokens == a[s][0].tokens);
      CHECK(single[s].score == a[s][0].score);
    }
  }
}

TEST_CASE("float32 greedy decoding: the kernel's row summaries pick what an ensemble's passes over log p pick") {
  // One float32 model finds each row's best token and normaliser in the output
  // projection's kernel (blas::RowSummary); the same model twice takes the mean
  // of log_softmax in double, pass by pass: the oracle.
  std::unique_ptr<Seq2Seq> model = small_model(22, AttentionKind::Additive, 40, Float32);
  const Batch batch = sources({{4, 5, 6, 4, 5}, {6, 4}, {5}, {6, 5, 4}});
  Seq2Seq* const alone[] = {model.get()};
  Seq2Seq* const twice[] = {model.get(), model.get()};
  for (const bool stop_at_eos : {true, false}) {
    CAPTURE(stop_at_eos);
    DecodeOptions o;
    o.stop_at_eos = stop_at_eos;
    o.max_len_a = 0;
    o.max_len_b = 12;
    const std::vector<Hypothesis> a = greedy_decode(alone, batch, o), b = greedy_decode(twice, batch, o);
    REQUIRE(a.size() == b.size());
    for (std::size_t s = 0; s < a.size(); ++s) {
      CHECK(a[s].tokens == b[s].tokens);
      if (!stop_at_eos) CHECK(std::find(a[s].tokens.begin(), a[s].tokens.end(), Vocabulary::kEos) == a[s].tokens.end());
      CHECK(a[s].log_prob == doctest::Approx(b[s].log_prob).epsilon(1e-5));
    }
  }
}

TEST_CASE("greedy decoding without scores: the same tokens and attention, every score left at its default") {
  // One float32 model then finds each row's best token alone in the output
  // projection's kernel (blas::SummaryParts::MaxAndBest); float64 and an ensemble
  // take the passes over log p, and leave the scores out too.
  std::unique_ptr<Seq2Seq> model32 = small_model(23, AttentionKind::Additive, 40, Float32);
  std::unique_ptr<Seq2Seq> model64 = small_model(23, AttentionKind::Additive, 40);
  const Batch batch = sources({{4, 5, 6, 4, 5}, {6, 4}, {5}, {6, 5, 4}});
  Seq2Seq* const alone32[] = {model32.get()};
  Seq2Seq* const alone64[] = {model64.get()};
  Seq2Seq* const twice[] = {model32.get(), model32.get()};
  for (const auto& models : {std::span<Seq2Seq* const>(alone32), std::span<Seq2Seq* const>(alone64),
                             std::span<Seq2Seq* const>(twice)})
    for (const bool stop_at_eos : {true, false}) {
      CAPTURE(models.size());
      CAPTURE(stop_at_eos);
      DecodeOptions o;
      o.stop_at_eos = stop_at_eos;
      o.max_len_a = 0;
      o.max_len_b = 12;
      const std::vector<Hypothesis> scored = greedy_decode(models, batch, o);
      o.scores = false;
      const std::vector<Hypothesis> plain = greedy_decode(models, batch, o);
      REQUIRE(plain.size() == scored.size());
      for (std::size_t s = 0; s < plain.size(); ++s) {
        CHECK(plain[s].tokens == scored[s].tokens);
        CHECK(plain[s].attention == scored[s].attention);
        CHECK(scored[s].log_prob < 0);
        CHECK(plain[s].log_prob == 0);
        CHECK(plain[s].score == 0);
        CHECK(plain[s].length_penalty == 1);
        CHECK(plain[s].coverage_penalty == 0);
      }
    }
  // The step itself: with neither logits nor log_probs, a row's log p cannot be asked.
  DecoderEnsemble ensemble(alone32, batch, 1);
  const std::vector<std::int64_t> previous(4, Vocabulary::kBos);
  DecoderEnsemble::Output& step = ensemble.step(previous, {}, -1, /*keep_logits=*/false, /*log_probs=*/false);
  CHECK_FALSE(step.logits_stored);
  CHECK_FALSE(step.normalised);
  const std::int64_t best = step.best_token(0);
  CHECK(best >= 0);
  CHECK_THROWS_WITH_AS(step.log_prob(0, best), doctest::Contains("no log-probabilities"), Error);
}

TEST_CASE("two models by hand: each step's log p is the mean of their log_softmax, the attention the mean of theirs") {
  std::unique_ptr<Seq2Seq> first = small_model(31, AttentionKind::Additive, 8);
  std::unique_ptr<Seq2Seq> second = small_model(32, AttentionKind::Dot, 8);
  const std::vector<std::int64_t> words = {4, 6, 5};
  const Batch batch = sources({words});
  Seq2Seq* const models[] = {first.get(), second.get()};
  DecodeOptions o;
  o.max_len_a = 0;
  o.max_len_b = 3;
  o.stop_at_eos = false;
  const std::vector<Hypothesis> out = greedy_decode(models, batch, o);
  REQUIRE(out.size() == 1);
  REQUIRE(out[0].tokens.size() == 3);
  REQUIRE(out[0].attention.size() == 3);

  // The same three greedy steps, each model stepped on its own.
  NoGradGuard no_grad;
  const Indices source(words, Shape{1, 3});
  const Tensor mask = ones(Shape{1, 3}, Float64);
  Seq2Seq::Encoded enc1 = first->encode(source, {3}, mask), enc2 = second->encode(source, {3}, mask);
  Seq2Seq::State state1 = first->initial_state(enc1), state2 = second->initial_state(enc2);
  std::int64_t previous = Vocabulary::kBos;
  double log_prob = 0;
  bool models_disagree = false;
  for (std::size_t t = 0; t < 3; ++t) {
    CAPTURE(t);
    Seq2Seq::Step s1 = first->step(enc1, Indices({previous}), state1);
    Seq2Seq::Step s2 = second->step(enc2, Indices({previous}), state2);
    state1 = s1.state;
    state2 = s2.state;
    const std::vector<double> p1 = log_softmax(first->logits(s1.attentional).to_vector());
    const std::vector<double> p2 = log_softmax(second->logits(s2.attentional).to_vector());
    std::int64_t best = -1;
    std::vector<double> mean(p1.size());
    for (std::size_t v = 0; v < p1.size(); ++v) {
      mean[v] = (p1[v] + p2[v]) / 2;
      if (static_cast<std::int64_t>(v) != Vocabulary::kEos && (best < 0 || mean[v] > mean[best])) best = static_cast<std::int64_t>(v);
    }
    const auto argmax = [](const std::vector<double>& p) {
      std::size_t m = 0;
      for (std::size_t v = 0; v < p.size(); ++v)
        if (static_cast<std::int64_t>(v) != Vocabulary::kEos && p[v] > p[m]) m = v;
      return m;
    };
    models_disagree = models_disagree || argmax(p1) != argmax(p2);
    CHECK(out[0].tokens[t] == best);
    log_prob += mean[best];
    const std::vector<double> w1 = s1.weights.to_vector(), w2 = s2.weights.to_vector();
    for (std::size_t i = 0; i < 3; ++i) CHECK(out[0].attention[t][i] == doctest::Approx((w1[i] + w2[i]) / 2).epsilon(1e-14));
    previous = best;
  }
  CHECK(out[0].log_prob == doctest::Approx(log_prob).epsilon(1e-13));
  CHECK(models_disagree);  // so the mean is not just either model's choice
}

TEST_CASE("an ensemble's wide beam finds the exhaustive search's n best: every model's state follows its beam") {
  std::unique_ptr<Seq2Seq> first = small_model(41, AttentionKind::Additive);
  std::unique_ptr<Seq2Seq> second = small_model(42, AttentionKind::General);
  Seq2Seq* const models[] = {first.get(), second.get()};
  const Batch batch = sources({{4, 5, 6}, {6, 4}});
  DecodeOptions o;
  o.beam = 64;  // keeps every prefix of at most 3 tokens over 6 target tokens
  o.n_best = 6;
  o.max_len_a = 0;
  o.max_len_b = 3;
  o.coverage_beta = 0.3;
  const auto lists = decode_n_best(models, batch, o);
  for (std::int64_t b = 0; b < 2; ++b) {
    const std::vector<Hypothesis> all = testing::all_hypotheses({first.get(), second.get()}, batch, b, 3, o);
    REQUIRE(lists[b].size() == 6);
    for (std::size_t i = 0; i < 6; ++i) {
      CHECK(lists[b][i].tokens == all[i].tokens);
      CHECK(lists[b][i].score == doctest::Approx(all[i].score).epsilon(1e-12));
      REQUIRE(lists[b][i].attention.size() == all[i].attention.size());
      for (std::size_t t = 0; t < all[i].attention.size(); ++t)
        for (std::size_t j = 0; j < all[i].attention[t].size(); ++j)
          CHECK(lists[b][i].attention[t][j] == doctest::Approx(all[i].attention[t][j]).epsilon(1e-12));
    }
  }
}

TEST_CASE("a model without attention adds its log p but no attention weights to the mean") {
  std::unique_ptr<Seq2Seq> plain = small_model(51, AttentionKind::None);
  std::unique_ptr<Seq2Seq> attending = small_model(52, AttentionKind::Additive);
  const Batch batch = sources({{4, 5, 6}});
  Seq2Seq* const both[] = {plain.get(), attending.get()};
  DecodeOptions o;
  o.max_len_a = 0;
  o.max_len_b = 1;
  const std::vector<Hypothesis> mixed = greedy_decode(both, batch, o);
  NoGradGuard no_grad;
  const Indices source({4, 5, 6}, Shape{1, 3});
  Seq2Seq::Encoded enc = attending->encode(source, {3}, ones(Shape{1, 3}, Float64));
  const std::vector<double> w =
      attending->step(enc, Indices({Vocabulary::kBos}), attending->initial_state(enc)).weights.to_vector();
  REQUIRE(mixed[0].attention.size() == 1);
  CHECK(mixed[0].attention[0] == w);  // the mean over the one model with attention
  Seq2Seq* const none[] = {plain.get()};
  CHECK(greedy_decode(none, batch, o)[0].attention.empty());
}

TEST_CASE("ensembles of mismatched models, of none, or of too many are refused") {
  std::unique_ptr<Seq2Seq> six = small_model(61, AttentionKind::Additive, 6);
  std::unique_ptr<Seq2Seq> seven = small_model(62, AttentionKind::Additive, 7);
  std::unique_ptr<Seq2Seq> single = small_model(63, AttentionKind::Additive, 6, Float32);
  const Batch batch = sources({{4, 5}});
  Seq2Seq* const vocab[] = {six.get(), six.get(), seven.get()};
  CHECK_THROWS_WITH_AS(decode_n_best(vocab, batch, DecodeOptions{}),
                       "decode: the ensemble's models have different target vocabularies: model 1 has 6 tokens, model 3 has 7",
                       Error);
  Seq2Seq* const dtype[] = {six.get(), single.get()};
  CHECK_THROWS_WITH_AS(decode_n_best(dtype, batch, DecodeOptions{}),
                       "decode: the ensemble's models have different dtypes: model 1 is float64, model 2 is float32", Error);
  Seq2Seq* const null[] = {six.get(), nullptr};
  CHECK_THROWS_WITH_AS(decode_n_best(null, batch, DecodeOptions{}), "decode: model 2 of the ensemble is null", Error);
  CHECK_THROWS_WITH_AS(decode_n_best(std::span<Seq2Seq* const>{}, batch, DecodeOptions{}), "decode: no model to decode with",
                       Error);
  std::vector<Seq2Seq*> many(static_cast<std::size_t>(limits::kMaxEnsemble + 1), six.get());
  CHECK_THROWS_WITH_AS(decode_n_best(many, batch, DecodeOptions{}),
                       fmt::format("decode: {} models in the ensemble, at most {} (limits::kMaxEnsemble, core/io/limits.hpp)",
                                   limits::kMaxEnsemble + 1, limits::kMaxEnsemble)
                           .c_str(),
                       Error);
  many.pop_back();
  CHECK(decode_n_best(many, batch, DecodeOptions{}).size() == 1);
}

namespace {

// A model directory's description, in memory (no weights: check_ensemble reads none).
LoadedModel described(std::vector<std::string> target_words, TextCodecs codecs = TextCodecs::words()) {
  const auto vocab = [](std::vector<std::string> words) {
    std::vector<std::string> tokens = {"<pad>", "<unk>", "<s>", "</s>"};
    tokens.insert(tokens.end(), words.begin(), words.end());
    return Vocabulary::from_tokens(tokens);
  };
  LoadedModel m;
  m.source_vocab = vocab({"the", "black", "cat"});
  m.target_vocab = vocab(std::move(target_words));
  m.codecs = std::move(codecs);
  return m;
}

std::string ensemble_error(const std::vector<LoadedModel>& models) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < models.size(); ++i) names.push_back(fmt::format("m{}", i + 1));
  try {
    check_ensemble(models, names);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("an ensemble of model directories must share the target side, naming the first difference") {
  const std::string why = "; an ensemble's models must share their target side and read the source alike";
  std::vector<LoadedModel> models;
  models.push_back(described({"le", "chat", "noir"}));
  models.push_back(described({"le", "chat", "noir"}));
  CHECK(ensemble_error(models).empty());
  models.push_back(described({"le", "chat", "noir", "blanc"}));
  CHECK(ensemble_error(models) == "ensemble: m3: target.vocab has 8 tokens, m1's has 7" + why);
  models.back() = described({"le", "chien", "noir"});
  CHECK(ensemble_error(models) == "ensemble: m3: target.vocab line 6 (token 5) is 'chien', m1's is 'chat'" + why);
  // The same vocabularies, read by other SentencePiece models.
  std::vector<std::string> text;
  for (int i = 0; i < 40; ++i) text.push_back(fmt::format("le chat noir {} dort sous la table {}", i % 7, i % 5));
  SubwordTrainOptions o;
  o.vocab_size = 30;
  o.character_coverage = 1.0;
  auto unigram = std::make_shared<const SubwordModel>(SubwordModel::train(text, o));
  o.type = "bpe";
  auto bpe = std::make_shared<const SubwordModel>(SubwordModel::train(text, o));
  REQUIRE(unigram->bytes() != bpe->bytes());
  models.back() = described({"le", "chat", "noir"}, {TextCodec(unigram, {}), TextCodec(unigram, {})});
  CHECK(ensemble_error(models) == "ensemble: m3: the target side is read as SentencePiece pieces, m1's as words" + why);
  models.front() = described({"le", "chat", "noir"}, {TextCodec(unigram, {}), TextCodec(unigram, {})});
  models[1] = described({"le", "chat", "noir"}, {TextCodec(unigram, {}), TextCodec(unigram, {})});
  CHECK(ensemble_error(models).empty());
  models.back() = described({"le", "chat", "noir"}, {TextCodec(unigram, {}), TextCodec(bpe, {})});
  CHECK(ensemble_error(models) == "ensemble: m3: the target side is read by another SentencePiece model than m1's" + why);
  // The source side, and the tokenizer options that read it.
  models.back() = described({"le", "chat", "noir"}, {TextCodec(bpe, {}), TextCodec(unigram, {})});
  CHECK(ensemble_error(models) == "ensemble: m3: the source side is read by another SentencePiece model than m1's" + why);
  TokenizerOptions lower;
  lower.lowercase = true;
  models.back() = described({"le", "chat", "noir"}, {TextCodec(unigram, lower), TextCodec(unigram, {})});
  CHECK(ensemble_error(models) == "ensemble: m3: tokenizer.lowercase is true, m1's is false" + why);
  // averaging compares the same way (tests/models/train/test_average.cpp)
  CHECK(side_difference(ModelSide::Target, described({"a"}), described({"b"}), "the first input") ==
        "target.vocab line 5 (token 4) is 'b', the first input's is 'a'");
  CHECK(ensemble_error({}) == "ensemble: no model to decode with");
  CHECK(ensemble_error(std::vector<LoadedModel>(static_cast<std::size_t>(limits::kMaxEnsemble) + 1)) ==
        fmt::format("ensemble: {} models, at most {} (limits::kMaxEnsemble, core/io/limits.hpp)",
                    limits::kMaxEnsemble + 1, limits::kMaxEnsemble));
}
