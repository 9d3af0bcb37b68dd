// int8 decoding keeps translation quality: a fixed small model trained on the toy
// language (tests/data/toy_tiny: attend train --toy --attention additive --embed 16
// --hidden 32 --minutes 4 --threads 1 --seed 3) translates 300 held-out toy sentences
// greedily and with a beam of 4, in float32 and quantized; BLEU must stay within 0.5.
#include <doctest/doctest.h>

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/eval/bleu.hpp"
#include "models/eval/evaluation.hpp"
#include "models/data/toy_language.hpp"
#include "models/model_dir.hpp"
#include "models/quantize/quantize.hpp"

using namespace attend;

namespace {

double bleu_of(LoadedModel& m, const std::vector<std::string>& sources, const std::vector<std::string>& references,
               std::int64_t beam) {
  DecodeOptions o;
  o.beam = beam;
  std::vector<std::string> hypotheses;
  for (const TextTranslation& t : translate_text(*m.model, sources, m.source_vocab, m.target_vocab, m.codecs, o))
    hypotheses.push_back(t.text);
  return corpus_bleu(hypotheses, references).score;
}

}  // namespace

TEST_CASE("int8 decoding of a trained toy model: BLEU within 0.5 of float32, greedy and with a beam") {
  const std::string dir = std::string(ATTEND_TEST_DATA) + "/toy_tiny";
  LoadedModel float_model = load_model_dir(dir), int8_model = load_model_dir(dir);
  quantize(*int8_model.model);
  ToyCorpusOptions o;
  o.n = 300;
  o.seed = 11;  // not the training data's seed (3)
  std::vector<std::string> sources, references;
  for (const ToySentence& s : toy_corpus(o)) {
    sources.push_back(fmt::format("{}", fmt::join(s.source, " ")));
    references.push_back(fmt::format("{}", fmt::join(s.target, " ")));
  }
  for (std::int64_t beam : {1, 4}) {
    CAPTURE(beam);
    const double f = bleu_of(float_model, sources, references, beam), q = bleu_of(int8_model, sources, references, beam);
    MESSAGE(fmt::format("beam {}: BLEU float32 {:.2f}, int8 {:.2f}", beam, f, q));
    CHECK(f > 95);  // a model that translates: the check below means something
    CHECK(std::abs(f - q) <= 0.5);
  }
}
