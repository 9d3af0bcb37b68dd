// models/seq2seq and models/decode/decoding: the whole model's gradient, masking,
// batched decoding, beam search, and an overfitting run that must translate
// its 20 training pairs back exactly.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <map>
#include <numeric>

#include "autograd/gradcheck/gradcheck.hpp"
#include "autograd/ops.hpp"
#include "autograd/optim/optim.hpp"
#include "models/decode/decoding.hpp"
#include "models/seq2seq.hpp"
#include "models/data/toy_language.hpp"

using namespace attend;

namespace {

// Pairs of id sequences (ids >= 4; 0-3 are the special tokens).
std::vector<EncodedPair> tiny_pairs() {
  return {{{4, 5, 6}, {5, 4}}, {{6}, {4, 6, 5}}, {{5, 6}, {6}}};
}

Seq2SeqConfig tiny_config(AttentionKind kind, bool bidirectional) {
  Seq2SeqConfig c;
  c.source_vocab = 7;
  c.target_vocab = 7;
  c.embed = 3;
  c.hidden = 3;
  c.bidirectional = bidirectional;
  c.attention = kind;
  return c;
}

Batch batch_of(const std::vector<EncodedPair>& data, DType dtype = Float64) {
  std::vector<std::int64_t> ids(data.size());
  std::iota(ids.begin(), ids.end(), 0);
  BatchOptions o;
  o.mask_dtype = dtype;
  return make_batch(data, ids, o);
}

}  // namespace

TEST_CASE("the whole model's gradient matches finite differences, for every attention") {
  for (AttentionKind kind : {AttentionKind::None, AttentionKind::Additive, AttentionKind::Dot, AttentionKind::General}) {
    for (bool bidirectional : {false, true}) {
      CAPTURE(attention_name(kind));
      CAPTURE(bidirectional);
      Generator init(3);
      Seq2Seq model(tiny_config(kind, bidirectional), init, Float64);
      Batch batch = batch_of(tiny_pairs());  // lengths 3, 1, 2: padding in the source and the target
      LossOptions loss_options;
      loss_options.label_smoothing = 0.1;
      GradcheckReport r = gradcheck([&](const std::vector<Tensor>&) { return model.loss(batch, loss_options); },
                                    model.parameters());
      INFO(r.str());
      CHECK(r.passed);
    }
  }
}

TEST_CASE("padded source positions get no attention and change nothing") {
  Generator init(4);
  Seq2SeqConfig config = tiny_config(AttentionKind::Additive, true);
  Seq2Seq model(config, init, Float64);
  model.eval();
  std::vector<EncodedPair> data = tiny_pairs();
  // The second sentence alone, and inside a padded batch, decode the same way.
  Batch together = batch_of(data);
  Batch alone = batch_of({data[1]});
  DecodeOptions o;
  o.max_len_b = 4;
  std::vector<Hypothesis> a = greedy_decode(model, together, o);
  std::vector<Hypothesis> b = greedy_decode(model, alone, o);
  REQUIRE(a.size() == 3);
  CHECK(a[1].tokens == b[0].tokens);
  REQUIRE(a[1].attention.size() == a[1].tokens.size());
  for (std::size_t t = 0; t < a[1].attention.size(); ++t) {
    REQUIRE(a[1].attention[t].size() == 1);  // one real source token
    CHECK(a[1].attention[t][0] == doctest::Approx(1.0));
    CHECK(b[0].attention[t][0] == doctest::Approx(1.0));
  }
  // The first sentence's weights sum to 1 over its 3 tokens.
  for (const auto& row : a[0].attention) CHECK(std::accumulate(row.begin(), row.end(), 0.0) == doctest::Approx(1.0));
}

TEST_CASE("beam search of width 1 is greedy decoding, wider beams score at least as well") {
  Generator init(5);
  Seq2Seq model(tiny_config(AttentionKind::Dot, false), init, Float64);
  model.eval();
  Batch batch = batch_of(tiny_pairs());
  DecodeOptions greedy;
  greedy.max_len_b = 5;
  DecodeOptions beam1 = greedy;
  beam1.length_alpha = 0;
  std::vector<Hypothesis> g = greedy_decode(model, batch, greedy);
  std::vector<Hypothesis> b1 = beam_search(model, batch, beam1);
  DecodeOptions beam4 = beam1;
  beam4.beam = 4;
  std::vector<Hypothesis> b4 = beam_search(model, batch, beam4);
  for (std::size_t i = 0; i < g.size(); ++i) {
    CHECK(b1[i].tokens == g[i].tokens);
    CHECK(b1[i].log_prob == doctest::Approx(g[i].log_prob));
    // Without length normalisation a wider beam never finds a worse finished sentence
    // than greedy's, when greedy's also ended with </s>.
    if (!g[i].tokens.empty() && g[i].tokens.back() == Vocabulary::kEos)
      CHECK(b4[i].log_prob >= g[i].log_prob - 1e-12);
    CHECK(b4[i].attention.size() == b4[i].tokens.size());
  }
  CHECK_THROWS_WITH_AS(beam_search(model, batch, DecodeOptions{0}), "decode: beam size must be at least 1, got 0", Error);
}

TEST_CASE("model configuration: checks, JSON round trip, attention names") {
  Seq2SeqConfig c = tiny_config(AttentionKind::General, true);
  c.layers = 2;
  c.dropout = 0.25;
  Seq2SeqConfig back = Seq2SeqConfig::from_json(c.to_json());
  CHECK(back.to_json() == c.to_json());
  CHECK(parse_attention("dot") == AttentionKind::Dot);
  CHECK_THROWS_WITH_AS(parse_attention("luong"), "unknown attention 'luong': choose none, additive, dot or general", Error);
  c.hidden = 0;
  CHECK_THROWS_WITH_AS(c.validate(), "Seq2SeqConfig: hidden must be positive, got 0", Error);
  Generator init(1);
  Seq2Seq model(tiny_config(AttentionKind::Additive, true), init);
  std::vector<std::string> names;
  for (auto& [name, p] : model.named_parameters()) names.push_back(name);
  CHECK(std::find(names.begin(), names.end(), "encoder.weight_ih_l0_reverse") != names.end());
  CHECK(std::find(names.begin(), names.end(), "cell.weight_hh") != names.end());
  CHECK(std::find(names.begin(), names.end(), "attention.v") != names.end());
  CHECK(std::find(names.begin(), names.end(), "project.weight") != names.end());
}

TEST_CASE("teacher forcing below 1 feeds the model's own predictions") {
  Generator init(6);
  Seq2Seq model(tiny_config(AttentionKind::Additive, false), init, Float64);
  Batch batch = batch_of(tiny_pairs());
  LossOptions o;
  o.teacher_forcing = 0.0;
  CHECK_THROWS_WITH_AS(model.loss(batch, o),
                       "Seq2Seq::loss: teacher_forcing below 1 needs a generator to choose the fed tokens", Error);
  Generator sampling(1);
  Tensor sampled = model.loss(batch, o, &sampling);
  Tensor forced = model.loss(batch);
  CHECK(std::isfinite(sampled.item()));
  CHECK(sampled.item() != forced.item());
  sampled.backward();  // the graph is sound, and the fed tokens carry no gradient
}

TEST_CASE("overfitting 20 sentence pairs: near-zero loss, exact translations back") {
  ToyCorpusOptions toy;
  toy.n = 20;
  toy.min_len = 3;
  toy.max_len = 6;
  toy.seed = 21;
  std::vector<ToySentence> sentences = toy_corpus(toy);
  TokenCounts src_counts, tgt_counts;
  for (const auto& s : sentences) {
    count_tokens(src_counts, s.source);
    count_tokens(tgt_counts, s.target);
  }
  Vocabulary src = Vocabulary::build(src_counts), tgt = Vocabulary::build(tgt_counts);
  std::vector<EncodedPair> data;
  for (const auto& s : sentences) data.push_back({src.encode(s.source), tgt.encode(s.target)});
  Seq2SeqConfig c;
  c.source_vocab = src.size();
  c.target_vocab = tgt.size();
  c.embed = 32;
  c.hidden = 64;
  c.attention = AttentionKind::Additive;
  Generator init(7);
  Seq2Seq model(c, init);
  Batch batch = batch_of(data, Float32);
  optim::AdamOptions adam;
  adam.lr = 0.01;
  optim::Adam opt(model.parameters(), adam);
  double loss = 0;
  for (int step = 0; step < 400 && !(step > 0 && loss < 0.01); ++step) {
    opt.zero_grad();
    Tensor l = model.loss(batch);
    l.backward();
    optim::clip_grad_norm(model.parameters(), 5.0);
    opt.step();
    loss = l.item();
  }
  CHECK(loss < 0.02);
  model.eval();
  std::vector<Hypothesis> out = greedy_decode(model, batch);
  DecodeOptions beam;
  beam.beam = 3;
  std::vector<Hypothesis> beamed = beam_search(model, batch, beam);
  for (std::size_t i = 0; i < data.size(); ++i) {
    CHECK(tgt.decode(strip_eos(out[i].tokens)) == sentences[i].target);
    CHECK(tgt.decode(strip_eos(beamed[i].tokens)) == sentences[i].target);
    CHECK(out[i].tokens.back() == Vocabulary::kEos);
  }
}

TEST_CASE("the weights-gradient hook sees dL/dalpha without changing any gradient") {
  Generator init(8);
  Seq2Seq model(tiny_config(AttentionKind::Additive, true), init, Float64);
  Batch batch = batch_of(tiny_pairs());
  model.loss(batch).backward();
  std::map<std::string, Tensor> plain;
  for (auto& [name, p] : model.named_parameters()) plain[name] = p.grad().clone();
  model.zero_grad();
  std::map<std::int64_t, Tensor> dalpha;
  model.on_weights_grad = [&](std::int64_t t, const Tensor& d) { dalpha[t] = d.clone(); };
  model.loss(batch).backward();
  for (auto& [name, p] : model.named_parameters()) CHECK_MESSAGE(allclose(p.grad(), plain[name], 1e-10, 1e-12), name);
  const std::int64_t T = batch.decoder_input.shape[1];
  REQUIRE(static_cast<std::int64_t>(dalpha.size()) == T);
  // Padded source positions may receive a gradient at alpha, but it goes nowhere:
  // their weight is 0 and the softmax backward multiplies by it.
  CHECK(dalpha[0].shape() == Shape{3, 3});
  double total = 0;
  for (auto& [t, d] : dalpha) total += std::abs(d.to_vector()[0]);
  CHECK(total > 0);
}

// Seq2Seq::loss fuses the output projection with the loss (linear_cross_entropy);
// the same decoder steps followed by logits() and cross_entropy must give the
// same loss and the same gradient for every parameter.
TEST_CASE("the model's fused projection and loss equal logits() then cross_entropy") {
  for (double smoothing : {0.0, 0.1}) {
    CAPTURE(smoothing);
    Generator init(9);
    Seq2Seq model(tiny_config(AttentionKind::Additive, true), init, Float64);
    Batch batch = batch_of(tiny_pairs());
    LossOptions options;
    options.label_smoothing = smoothing;
    Tensor fused = model.loss(batch, options);
    fused.backward();
    std::map<std::string, Tensor> fused_grads;
    for (auto& [name, p] : model.named_parameters()) fused_grads[name] = p.grad().clone();
    model.zero_grad();

    const std::int64_t B = batch.decoder_input.shape[0], T = batch.decoder_input.shape[1];
    Seq2Seq::Encoded enc = model.encode(batch.source, batch.source_lengths, batch.source_mask);
    Seq2Seq::State state = model.initial_state(enc);
    std::vector<Tensor> scores;
    for (std::int64_t t = 0; t < T; ++t) {
      std::vector<std::int64_t> previous(static_cast<std::size_t>(B));
      for (std::int64_t b = 0; b < B; ++b) previous[b] = batch.decoder_input.values[b * T + t];
      Seq2Seq::Step s = model.step(enc, Indices(previous), state);
      state = s.state;
      scores.push_back(model.logits(s.attentional));  // (B, V)
    }
    const std::int64_t V = model.config().target_vocab;
    Tensor composed = cross_entropy(reshape(stack(scores, 1), Shape{B * T, V}), Indices(batch.decoder_target.values),
                                    Vocabulary::kPad, smoothing);
    CHECK(composed.item() == doctest::Approx(fused.item()).epsilon(1e-13));
    composed.backward();
    for (auto& [name, p] : model.named_parameters()) CHECK_MESSAGE(allclose(p.grad(), fused_grads[name], 1e-11, 1e-13), name);
  }
}

TEST_CASE("decoding's steps by packed weights (no grad, float32) equal the recorded steps") {
  for (const AttentionKind kind : {AttentionKind::Additive, AttentionKind::Dot, AttentionKind::None}) {
    CAPTURE(attention_name(kind));
    Generator init(9);
    Seq2SeqConfig config = tiny_config(kind, false);
    config.hidden = 20;  // more than one panel of the packed kernel
    Seq2Seq model(config, init, Float32);
    model.eval();
    const Batch batch = batch_of(tiny_pairs(), Float32);
    const Indices previous({2, 5, 6});
    Seq2Seq::Encoded recorded = model.encode(batch.source, batch.source_lengths, batch.source_mask);
    CHECK(recorded.combine.recorded());  // recorded steps by packed weights too (PackedLinear::for_steps)
    CHECK(recorded.keys.query.recorded() == (kind != AttentionKind::None));
    const Seq2Seq::Step want = model.step(recorded, previous, model.initial_state(recorded));
    NoGradGuard no_grad;
    Seq2Seq::Encoded packed = model.encode(batch.source, batch.source_lengths, batch.source_mask);
    CHECK(!packed.combine.empty());
    CHECK(packed.keys.query.empty() == (kind == AttentionKind::None));
    const Seq2Seq::Step got = model.step(packed, previous, model.initial_state(packed));
    const std::vector<double> a = got.attentional.to_vector(), b = want.attentional.to_vector();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-5));
    if (kind != AttentionKind::None) {
      const std::vector<double> wa = got.weights.to_vector(), wb = want.weights.to_vector();
      for (std::size_t i = 0; i < wa.size(); ++i) CHECK(wa[i] == doctest::Approx(wb[i]).epsilon(1e-5));
    }
  }
}
