// models/quantize: int8 models. quantize() in memory (which weights, their
// dequantized values), decoding through the int8 products, the weights file
// (save_int8 / load_int8: round trip, every refusal).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "autograd/ops.hpp"
#include "core/io/safetensors.hpp"
#include "layers/serialize.hpp"
#include "models/data/corpus.hpp"
#include "models/quantize/quantize.hpp"
#include "tests/support/scratch.hpp"

using namespace attend;

namespace {

Seq2SeqConfig small_config(AttentionKind attention) {
  Seq2SeqConfig c;
  c.source_vocab = 20;
  c.target_vocab = 23;
  c.embed = 8;
  c.hidden = 12;
  c.layers = 2;
  c.attention = attention;
  return c;
}

// A batch of three sentences of lengths 5, 3 and 4 over ids 4 .. 19.
Batch small_batch() {
  std::vector<EncodedPair> pairs = {{{4, 5, 6, 7, 8}, {4, 5}}, {{9, 10, 11}, {6}}, {{12, 13, 19, 15}, {7, 8, 9}}};
  const std::int64_t ids[] = {0, 1, 2};
  return make_batch(pairs, ids);
}

// A float copy of `model`'s parameters (dequantized values, for an int8 model).
std::unique_ptr<Seq2Seq> float_copy(Seq2Seq& model) {
  Generator init(99);
  auto copy = std::make_unique<Seq2Seq>(model.config(), init);
  copy->load_state_dict(model.state_dict());
  copy->eval();
  return copy;
}

// The attentional vectors and logits of four decoder steps, fed the same tokens.
std::vector<double> decode_steps(Seq2Seq& model, const Batch& batch) {
  NoGradGuard no_grad;
  Seq2Seq::Encoded enc = model.encode(batch.source, batch.source_lengths, batch.source_mask);
  Seq2Seq::State state = model.initial_state(enc);
  std::vector<double> out;
  for (std::int64_t t = 0; t < 4; ++t) {
    Seq2Seq::Step step = model.step(enc, Indices(std::vector<std::int64_t>{2 + t, 5, 7 + t}), state);
    state = step.state;
    for (double v : step.attentional.to_vector()) out.push_back(v);
    for (double v : model.logits(step.attentional).to_vector()) out.push_back(v);
  }
  return out;
}

std::string load_error(Seq2Seq& model, const std::string& path) {
  try {
    load_int8(model, path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded without error)";
}

}  // namespace

TEST_CASE("quantize: every weight matrix but the embeddings becomes int8, and each parameter its dequantized value") {
  Generator init(3);
  Seq2Seq model(small_config(AttentionKind::Additive), init);
  std::map<std::string, std::vector<double>> before;
  for (const auto& [name, t] : model.named_parameters()) before[name] = t.to_vector();
  quantize(model);
  REQUIRE(model.int8() != nullptr);
  std::set<std::string> names;
  for (const auto& [name, q] : model.int8()->rows) names.insert(name);
  const std::set<std::string> expected = {
      "encoder.weight_ih_l0", "encoder.weight_hh_l0", "encoder.weight_ih_l0_reverse", "encoder.weight_hh_l0_reverse",
      "encoder.weight_ih_l1", "encoder.weight_hh_l1", "encoder.weight_ih_l1_reverse", "encoder.weight_hh_l1_reverse",
      "bridge_h.weight",      "bridge_c.weight",      "cell.weight_ih",               "cell.weight_hh",
      "attention.W_k",        "attention.W_q",        "combine.weight",               "project.weight"};
  CHECK(names == expected);
  for (const auto& [name, t] : model.named_parameters()) {
    const std::vector<double> now = t.to_vector();
    auto it = model.int8()->rows.find(name);
    if (it == model.int8()->rows.end()) {
      CHECK_MESSAGE(now == before[name], name);  // embeddings, biases, v: untouched
      continue;
    }
    const blas::QuantizedRows& q = it->second;
    for (std::int64_t n = 0; n < q.n; ++n)
      for (std::int64_t k = 0; k < q.k; ++k) {
        const std::size_t i = static_cast<std::size_t>(n * q.k + k);
        const float scale = q.scales[static_cast<std::size_t>(n)];
        REQUIRE(now[i] == static_cast<double>(scale * static_cast<float>(q.values[i])));
        REQUIRE(std::abs(now[i] - before[name][i]) <= scale * 0.5 + 1e-7);
      }
  }
  CHECK_THROWS_WITH_AS(quantize(model), "quantize: the model is int8 already", Error);
  Generator init64(3);
  Seq2Seq wide(small_config(AttentionKind::Dot), init64, Float64);
  CHECK_THROWS_WITH_AS(quantize(wide), "quantize: int8 models are made from float32 models, this one is float64", Error);
}

TEST_CASE("decoding an int8 model multiplies in int8: near the float32 decoding of its own weights, not equal to it") {
  for (AttentionKind kind : {AttentionKind::Additive, AttentionKind::Dot, AttentionKind::General, AttentionKind::None}) {
    CAPTURE(attention_name(kind));
    Generator init(5);
    Seq2Seq model(small_config(kind), init);
    model.eval();
    quantize(model);
    const std::unique_ptr<Seq2Seq> same_weights = float_copy(model);
    const Batch batch = small_batch();
    const std::vector<double> q = decode_steps(model, batch), f = decode_steps(*same_weights, batch);
    REQUIRE(q.size() == f.size());
    double largest = 0, worst = 0;
    for (std::size_t i = 0; i < q.size(); ++i) {
      largest = std::max(largest, std::abs(f[i]));
      worst = std::max(worst, std::abs(q[i] - f[i]));
    }
    CHECK(worst > 0);               // the products really ran in int8
    CHECK(worst < 0.02 * largest);  // activations quantized to 8 bits: well under 2% of the largest value
  }
}

TEST_CASE("save_int8 then load_int8 gives back the same int8 model, bit for bit") {
  attend::testing::Scratch tmp("attend-test-quantize");
  const std::string path = (tmp.dir / "model.safetensors").string();
  Generator init(8);
  Seq2Seq model(small_config(AttentionKind::Dot), init);
  model.eval();
  CHECK_THROWS_WITH_AS(save_int8(model, path), ("save_int8: " + path + ": the model is not int8 (quantize it first)").c_str(),
                       Error);
  quantize(model);
  save_int8(model, path);
  Generator other(9);
  Seq2Seq loaded(small_config(AttentionKind::Dot), other);
  loaded.eval();
  load_int8(loaded, path);
  REQUIRE(loaded.int8() != nullptr);
  for (const auto& [name, t] : model.named_parameters()) CHECK_MESSAGE(t.to_vector() == loaded.state_dict().at(name).to_vector(), name);
  for (const auto& [name, q] : model.int8()->rows) {
    CHECK(q.values == loaded.int8()->rows.at(name).values);
    CHECK(q.scales == loaded.int8()->rows.at(name).scales);
  }
  const Batch batch = small_batch();
  CHECK(decode_steps(model, batch) == decode_steps(loaded, batch));
  // A float model's loader refuses the file rather than load it half.
  Generator third(10);
  Seq2Seq plain(small_config(AttentionKind::Dot), third);
  CHECK_THROWS_WITH_AS(nn::load(plain, path),
                       ("load: " + path + ": the file holds int8 weights ('attention.W_K' is I8): it belongs to an int8 "
                        "model directory (attend quantize), which load_model_dir reads").c_str(),
                       Error);
}

TEST_CASE("load_int8 refuses a malformed weights file, naming the file and the parameter") {
  attend::testing::Scratch tmp("attend-test-quantize");
  const std::string good = (tmp.dir / "good.safetensors").string(), bad = (tmp.dir / "bad.safetensors").string();
  Generator init(11);
  Seq2Seq model(small_config(AttentionKind::Additive), init);
  quantize(model);
  save_int8(model, good);
  struct Case {
    const char* what;
    std::function<void(SafetensorsFile&)> spoil;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {"a missing scale", [](SafetensorsFile& f) { f.tensors.erase("combine.weight.scale"); },
       "'combine.weight.scale' is missing"},
      {"a scale of the wrong shape", [](SafetensorsFile& f) { f.tensors["combine.weight.scale"] = zeros({3}, Float32); },
       "'combine.weight.scale' must be F32 [12], got float32 [3]"},
      {"a float64 scale", [](SafetensorsFile& f) { f.tensors["combine.weight.scale"] = zeros({12}, Float64); },
       "'combine.weight.scale' must be F32 [12], got float64 [12]"},
      {"a negative scale",
       [](SafetensorsFile& f) { f.tensors["project.weight.scale"].data<float>()[4] = -0.5f; },
       "'project.weight.scale' row 4 is -0.5; scales are finite and >= 0"},
      {"a NaN scale",
       [](SafetensorsFile& f) { f.tensors["project.weight.scale"].data<float>()[0] = std::nanf(""); },
       "'project.weight.scale' row 0 is nan; scales are finite and >= 0"},
      {"a value of -128", [](SafetensorsFile& f) { f.int8["cell.weight_hh"].values[12 + 3] = -128; },
       "'cell.weight_hh' holds -128 at row 1 column 3; int8 weights are in [-127, 127]"},
      {"an array of the wrong shape", [](SafetensorsFile& f) { f.int8["bridge_h.weight"].shape = Shape{24, 12}; },
       "'bridge_h.weight' has shape [24, 12], the model's is [12, 24]"},
      {"a weight matrix stored as F32",
       [](SafetensorsFile& f) {
         f.int8.erase("project.weight");
         f.tensors["project.weight"] = zeros({23, 12}, Float32);
       },
       "'project.weight' must be an I8 array in an int8 model, and it is float32"},
      {"a weight matrix missing", [](SafetensorsFile& f) { f.int8.erase("attention.W_q"); },
       "'attention.W_q' must be an I8 array in an int8 model, and it is missing"},
      {"an unknown I8 array", [](SafetensorsFile& f) { f.int8["extra"] = Int8Array{Shape{1}, {1}}; },
       "'extra' is not an int8 weight of this model"},
      {"an unknown tensor", [](SafetensorsFile& f) { f.tensors["extra.scale"] = zeros({1}, Float32); },
       "'extra.scale' is not a parameter of this model"},
      {"a missing embedding", [](SafetensorsFile& f) { f.tensors.erase("source_embed.weight"); },
       "'source_embed.weight' is missing"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    SafetensorsFile f = load_safetensors(good);
    c.spoil(f);
    save_safetensors(bad, f.tensors, f.metadata, f.int8);
    Generator fresh(12);
    Seq2Seq target(small_config(AttentionKind::Additive), fresh);
    const std::string message = load_error(target, bad);
    CHECK_MESSAGE(message.starts_with("load_int8: " + bad + ": "), message);
    CHECK_MESSAGE(message.find(c.problem) != std::string::npos, message);
    CHECK(target.int8() == nullptr);  // nothing half-made
  }
}

TEST_CASE("precompute's keys_by: an int8 W_k gives the keys near linear()'s, and a W of another size is refused") {
  Generator gen(13);
  nn::AdditiveAttention attn(6, 8, gen, 5);
  const Tensor states = uniform({2, 3, 8}, -1, 1, gen, Float32), mask = ones({2, 3}, Float32);
  NoGradGuard no_grad;
  const std::vector<double> plain = attn.precompute(states, mask).keys.to_vector();
  const blas::QuantizedRows q = blas::quantize_rows(attn.W_k.data<float>(), 5, 8, 8);
  auto packed = std::make_shared<const blas::PackedMatrix>(blas::PackedMatrix::from_int8(q.values.data(), q.scales.data(), 5, 8));
  const Tensor keys = attn.precompute(states, mask, nn::PackedLinear::from_packed(packed, Tensor())).keys;
  CHECK(keys.shape() == Shape{2, 3, 5});
  const std::vector<double> int8 = keys.to_vector();
  double worst = 0, largest = 0;
  for (std::size_t i = 0; i < plain.size(); ++i) {
    worst = std::max(worst, std::abs(int8[i] - plain[i]));
    largest = std::max(largest, std::abs(plain[i]));
  }
  CHECK(worst > 0);
  CHECK(worst < 0.03 * largest);
  const blas::QuantizedRows other = blas::quantize_rows(attn.W_k.data<float>(), 4, 8, 8);
  auto four = std::make_shared<const blas::PackedMatrix>(
      blas::PackedMatrix::from_int8(other.values.data(), other.scales.data(), 4, 8));
  CHECK_THROWS_WITH_AS(attn.precompute(states, mask, nn::PackedLinear::from_packed(four, Tensor())),
                       "AdditiveAttention.precompute: the prepared key projection gives 4 values a state, the layer's "
                       "W has 5 rows",
                       Error);
}
