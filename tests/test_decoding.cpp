// models/decoding: options shared by greedy decoding and beam search.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "models/decoding.hpp"
#include "models/seq2seq.hpp"

using namespace attend;

namespace {

std::unique_ptr<Seq2Seq> eos_loving_model(Generator& init) {
  Seq2SeqConfig c;
  c.source_vocab = 7;
  c.target_vocab = 7;
  c.embed = 3;
  c.hidden = 3;
  c.attention = AttentionKind::Additive;
  auto model = std::make_unique<Seq2Seq>(c, init, Float64);
  // A large output bias on </s>: left alone, the model ends every sentence at once.
  model->project.bias.set({Vocabulary::kEos}, 50.0);
  model->eval();
  return model;
}

Batch two_sentences() {
  std::vector<EncodedPair> data = {{{4, 5, 6}, {5}}, {{6}, {4}}};  // source lengths 3 and 1
  BatchOptions o;
  o.mask_dtype = Float64;
  const std::vector<std::int64_t> ids = {0, 1};
  return make_batch(data, ids, o);
}

}  // namespace

TEST_CASE("stop_at_eos false: no </s>, exactly max_len_a * length + max_len_b tokens, greedy and beam") {
  Generator init(7);
  std::unique_ptr<Seq2Seq> model_ptr = eos_loving_model(init);
  Seq2Seq& model = *model_ptr;
  Batch batch = two_sentences();
  for (std::int64_t beam : {1, 3}) {
    CAPTURE(beam);
    DecodeOptions o;
    o.beam = beam;
    o.max_len_a = 1.5;
    o.max_len_b = 2;
    const std::vector<Hypothesis> stopped = translate(model, batch, o);
    REQUIRE(stopped.size() == 2);
    for (const Hypothesis& h : stopped) CHECK(h.tokens == std::vector<std::int64_t>{Vocabulary::kEos});
    o.stop_at_eos = false;
    const std::vector<Hypothesis> fixed = translate(model, batch, o);
    REQUIRE(fixed.size() == 2);
    CHECK(fixed[0].tokens.size() == 6);  // int(1.5 * 3) + 2
    CHECK(fixed[1].tokens.size() == 3);  // int(1.5 * 1) + 2
    for (const Hypothesis& h : fixed) {
      CHECK(std::count(h.tokens.begin(), h.tokens.end(), Vocabulary::kEos) == 0);
      CHECK(h.attention.size() == h.tokens.size());
      CHECK(std::isfinite(h.log_prob));
    }
  }
}
