#include "models/seq2seq.hpp"

#include <nlohmann/json.hpp>

#include "autograd/ops.hpp"
#include "core/io/limits.hpp"
#include "models/quantize/quantize.hpp"

namespace attend {

std::string_view attention_name(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::None: return "none";
    case AttentionKind::Additive: return "additive";
    case AttentionKind::Dot: return "dot";
    case AttentionKind::General: return "general";
  }
  return "?";
}

AttentionKind parse_attention(std::string_view name) {
  for (AttentionKind k : {AttentionKind::None, AttentionKind::Additive, AttentionKind::Dot, AttentionKind::General})
    if (attention_name(k) == name) return k;
  fail("unknown attention '{}': choose none, additive, dot or general", name);
}

void Seq2SeqConfig::validate() const {
  if (source_vocab < 5) fail("Seq2SeqConfig: source_vocab must be at least 5 (4 special tokens + 1), got {}", source_vocab);
  if (target_vocab < 5) fail("Seq2SeqConfig: target_vocab must be at least 5 (4 special tokens + 1), got {}", target_vocab);
  if (embed < 1) fail("Seq2SeqConfig: embed must be positive, got {}", embed);
  if (hidden < 1) fail("Seq2SeqConfig: hidden must be positive, got {}", hidden);
  if (layers < 1) fail("Seq2SeqConfig: layers must be positive, got {}", layers);
  if (!(dropout >= 0 && dropout < 1)) fail("Seq2SeqConfig: dropout must be in [0, 1), got {}", dropout);
  // Each size against its limit, so that parameter_count cannot overflow and
  // nothing is allocated for a model that could never fit.
  const auto at_most = [](const char* field, std::int64_t value, std::int64_t limit) {
    if (value > limit) fail("Seq2SeqConfig: {} is {}, more than the limit of {} (core/io/limits.hpp)", field, value, limit);
  };
  at_most("source_vocab", source_vocab, limits::kMaxVocabulary);
  at_most("target_vocab", target_vocab, limits::kMaxVocabulary);
  at_most("embed", embed, limits::kMaxDimension);
  at_most("hidden", hidden, limits::kMaxDimension);
  at_most("layers", layers, limits::kMaxLayers);
  if (const std::int64_t n = parameter_count(); n > limits::kMaxParameters)
    fail("Seq2SeqConfig: the model would have {} parameters, more than the limit of {} (core/io/limits.hpp): "
         "embed {}, hidden {}, layers {}, vocabularies {} and {}",
         n, limits::kMaxParameters, embed, hidden, layers, source_vocab, target_vocab);
}

std::int64_t Seq2SeqConfig::parameter_count() const {
  const std::int64_t E = embed, H = hidden, Hk = key_size();
  const std::int64_t directions = bidirectional ? 2 : 1;
  std::int64_t n = (source_vocab + target_vocab) * E;  // embeddings
  for (std::int64_t l = 0; l < layers; ++l)            // encoder: W_ih, W_hh, two biases per direction
    n += directions * (4 * H * ((l == 0 ? E : Hk) + H) + 8 * H);
  n += 2 * (Hk * H + H);                 // bridge_h, bridge_c
  n += 4 * H * (E + H + H) + 8 * H;      // decoder cell (input: embedding and h~)
  switch (attention) {
    case AttentionKind::None: break;
    case AttentionKind::Additive: n += H * Hk + H * H + 2 * H; break;  // W_k, W_q, b, v
    case AttentionKind::Dot: n += H * H + H * Hk; break;               // W_Q, W_K
    case AttentionKind::General: n += H * Hk; break;                   // W
  }
  n += (attention == AttentionKind::None ? H : H + Hk) * H + H;  // combine
  n += H * target_vocab + target_vocab;                           // project
  return n;
}

nlohmann::json Seq2SeqConfig::to_json() const {
  return {{"source_vocab", source_vocab}, {"target_vocab", target_vocab}, {"embed", embed},
          {"hidden", hidden},             {"layers", layers},             {"bidirectional", bidirectional},
          {"dropout", dropout},           {"attention", std::string(attention_name(attention))}};
}

Seq2SeqConfig Seq2SeqConfig::from_json(const nlohmann::json& j) {
  Seq2SeqConfig c;
  try {
    c.source_vocab = j.at("source_vocab").get<std::int64_t>();
    c.target_vocab = j.at("target_vocab").get<std::int64_t>();
    c.embed = j.at("embed").get<std::int64_t>();
    c.hidden = j.at("hidden").get<std::int64_t>();
    c.layers = j.at("layers").get<std::int64_t>();
    c.bidirectional = j.at("bidirectional").get<bool>();
    c.dropout = j.at("dropout").get<double>();
    c.attention = parse_attention(j.at("attention").get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    fail("model config: {}", e.what());
  }
  c.validate();
  return c;
}

namespace {
const Seq2SeqConfig& checked(const Seq2SeqConfig& c) {
  c.validate();
  return c;
}
nn::LSTMOptions encoder_options(const Seq2SeqConfig& c, DType dtype) {
  nn::LSTMOptions o;
  o.num_layers = c.layers;
  o.bidirectional = c.bidirectional;
  o.dropout = c.dropout;
  o.dtype = dtype;
  return o;
}
nn::LSTMCellOptions cell_options(DType dtype) {
  nn::LSTMCellOptions o;
  o.dtype = dtype;
  return o;
}
}  // namespace

Seq2Seq::Seq2Seq(const Seq2SeqConfig& config, Generator& init, DType dtype)
    : source_embed(checked(config).source_vocab, config.embed, Vocabulary::kPad, init, dtype),
      target_embed(config.target_vocab, config.embed, Vocabulary::kPad, init, dtype),
      encoder(config.embed, config.hidden, init, encoder_options(config, dtype)),
      bridge_h(config.key_size(), config.hidden, init, dtype),
      bridge_c(config.key_size(), config.hidden, init, dtype),
      cell(config.embed + config.hidden, config.hidden, init, cell_options(dtype)),
      combine(config.attention == AttentionKind::None ? config.hidden : config.hidden + config.key_size(), config.hidden,
              init, dtype),
      project(config.hidden, config.target_vocab, init, dtype),
      config_(config),
      dtype_(dtype),
      dropout_(config.dropout, init.next_u64()) {
  register_module("source_embed", source_embed);
  register_module("target_embed", target_embed);
  register_module("encoder", encoder);
  register_module("bridge_h", bridge_h);
  register_module("bridge_c", bridge_c);
  register_module("cell", cell);
  switch (config.attention) {
    case AttentionKind::None: break;
    case AttentionKind::Additive:
      additive = std::make_unique<nn::AdditiveAttention>(config.hidden, config.key_size(), init, 0, dtype);
      register_module("attention", *additive);
      break;
    case AttentionKind::Dot: {
      nn::DotAttentionOptions o;
      o.score = nn::DotScore::Projected;
      o.scaled = true;
      dot = std::make_unique<nn::DotProductAttention>(config.hidden, config.key_size(), init, o, dtype);
      register_module("attention", *dot);
      break;
    }
    case AttentionKind::General: {
      nn::DotAttentionOptions o;
      o.score = nn::DotScore::General;
      o.scaled = false;
      dot = std::make_unique<nn::DotProductAttention>(config.hidden, config.key_size(), init, o, dtype);
      register_module("attention", *dot);
      break;
    }
  }
  register_module("combine", combine);
  register_module("project", project);
  register_module("dropout", dropout_);
}

Tensor Seq2Seq::maybe_dropout(const Tensor& x) { return config_.dropout > 0 ? dropout_.forward(x) : x; }

Seq2Seq::Encoded Seq2Seq::encode(const Indices& source, const std::vector<std::int64_t>& lengths, const Tensor& mask) {
  if (source.shape.rank() != 2) fail("Seq2Seq::encode: source ids must be (B, S), got {}", source.shape);
  const std::int64_t B = source.shape[0], H = config_.hidden;
  steps_since_encode_ = 0;
  Encoded enc;
  enc.mask = mask.to(dtype_);
  Tensor x = maybe_dropout(source_embed.forward(source));  // (B, S, E)
  nn::LSTMOutput out = encoder.forward(x, lengths);
  enc.states = out.output;  // (B, S, Hk)
  // The top layer's final state, both directions side by side: (B, Hk).
  const std::int64_t D = config_.bidirectional ? 2 : 1, top = (config_.layers - 1) * D;
  auto last = [&](const Tensor& n) {
    Tensor top_layer = slice(n, 0, top, top + D);                 // (D, B, H)
    return reshape(transpose(top_layer, 0, 1), Shape{B, D * H});  // (B, D*H)
  };
  enc.s0 = tanh(bridge_h.forward(last(out.h_n)));
  enc.c0 = tanh(bridge_c.forward(last(out.c_n)));
  // An int8 model's key projection, when decoding: W_k, W_K or W (general).
  const bool int8_steps = int8_ && !GradMode::enabled();
  const auto int8_keys = [&](const char* name) {
    return int8_steps ? nn::PackedLinear::from_packed(int8_->at(name), Tensor()) : nn::PackedLinear();
  };
  if (additive) enc.keys = additive->precompute(enc.states, enc.mask, int8_keys("attention.W_k"));
  if (dot && dot->options().score != nn::DotScore::Plain)
    enc.keys = dot->precompute(enc.states, enc.mask,
                               int8_keys(dot->options().score == nn::DotScore::General ? "attention.W" : "attention.W_K"));
  else if (dot) enc.keys = dot->precompute(enc.states, enc.mask);
  enc.cell_weights = cell.step_weights(B);  // the same weights for every decoder step of this batch
  // Decoding an int8 model: the steps' products in int8 (W_c is not packed in float first).
  enc.combine = int8_steps ? nn::PackedLinear::from_packed(int8_->at("combine.weight"), combine.bias)
                           : nn::PackedLinear::for_steps(combine.weight, combine.bias);
  if (int8_steps) {
    if (additive) enc.keys.query = nn::PackedLinear::from_packed(int8_->at("attention.W_q"), additive->b);
    if (dot && !enc.keys.query.empty()) enc.keys.query = nn::PackedLinear::from_packed(int8_->at("attention.W_Q"), Tensor());
  }
  return enc;
}

void Seq2Seq::set_int8(std::shared_ptr<const Int8Weights> weights) {
  if (weights == nullptr) fail("Seq2Seq::set_int8: no weights");
  const std::int64_t D = config_.bidirectional ? 2 : 1;
  for (std::int64_t l = 0; l < config_.layers; ++l)
    for (std::int64_t d = 0; d < D; ++d) {
      const std::string suffix = fmt::format("_l{}{}", l, d == 1 ? "_reverse" : "");
      encoder.set_int8(l, d, weights->at("encoder.weight_ih" + suffix), weights->at("encoder.weight_hh" + suffix));
    }
  cell.set_int8(weights->at("cell.weight_ih"), weights->at("cell.weight_hh"));
  weights->at("combine.weight");  // each of these must be there before the model is int8
  weights->at("project.weight");
  int8_ = std::move(weights);
}

Seq2Seq::State Seq2Seq::initial_state(const Encoded& enc) const {
  return {enc.s0, enc.c0, zeros(enc.s0.shape(), dtype_)};
}

// The fast version of one decoder step (prepared weights, fused attention, the
// deferred weight gradients of PackedLinear). To learn it, read its composed
// twin first: tools/explain/explain_model.hpp (Setup::scores, Setup::context,
// Setup::attentional, Setup::logits), built from linear, tanh, concat, matmul;
// docs/backprop-through-attention.md section 5 says which attention this is
// (Luong's order: the cell first, then attention with the current state s_i).
Seq2Seq::Step Seq2Seq::step(const Encoded& enc, const Indices& previous, const State& state) {
  Tensor y = maybe_dropout(target_embed.forward(previous));       // (B, E)
  nn::LSTMState next = cell.forward(concat({y, state.feed}, 1), {state.s, state.c}, enc.cell_weights);  // input feeding
  Step out;
  Tensor features = next.h;  // (B, H), or [s; c] (B, H + Hk) with attention
  if (additive || dot) {
    nn::AttentionOutput a = additive ? additive->step(next.h, enc.keys) : dot->step(next.h, enc.keys);
    out.weights = a.weights;
    Tensor context = a.context;
    if (on_weights_grad) {  // c = alpha @ values, so that dL/dalpha passes the tap
      const std::int64_t t = steps_since_encode_, B = a.weights.size(0), S = a.weights.size(1);
      Tensor alpha = tap(a.weights, [hook = on_weights_grad, t](const Tensor& dy) { hook(t, dy); });
      context = reshape(matmul(reshape(alpha, Shape{B, 1, S}), enc.keys.values), Shape{B, enc.keys.values.size(2)});
    }
    features = concat({next.h, context}, 1);
  }
  // h~ = tanh(W_c [s; c] + b_c)
  out.attentional = tanh(enc.combine.usable() ? enc.combine.forward(features) : combine.forward(features));
  ++steps_since_encode_;
  out.state = {next.h, next.c, out.attentional};
  return out;
}

Tensor Seq2Seq::logits(const Tensor& attentional) { return project.forward(attentional); }

Tensor Seq2Seq::loss(const Batch& batch, const LossOptions& options, Generator* sampling) {
  if (!(options.teacher_forcing >= 0 && options.teacher_forcing <= 1))
    fail("Seq2Seq::loss: teacher_forcing must be in [0, 1], got {}", options.teacher_forcing);
  if (options.teacher_forcing < 1 && sampling == nullptr)
    fail("Seq2Seq::loss: teacher_forcing below 1 needs a generator to choose the fed tokens");
  const std::int64_t B = batch.decoder_input.shape[0], T = batch.decoder_input.shape[1];
  Encoded enc = encode(batch.source, batch.source_lengths, batch.source_mask);
  State state = initial_state(enc);
  std::vector<Tensor> attentional;  // h~_t for every step, projected together afterwards
  attentional.reserve(static_cast<std::size_t>(T));
  std::vector<std::int64_t> previous(static_cast<std::size_t>(B));
  for (std::int64_t t = 0; t < T; ++t) {
    for (std::int64_t b = 0; b < B; ++b) previous[b] = batch.decoder_input.values[b * T + t];
    if (t > 0 && options.teacher_forcing < 1) {
      // Scheduled sampling: some rows get the model's own last prediction.
      NoGradGuard no_grad;
      Tensor scores = logits(attentional.back());  // (B, V)
      const std::int64_t V = scores.size(1);
      std::vector<double> row = scores.to(Float64).to_vector();
      for (std::int64_t b = 0; b < B; ++b) {
        if (sampling->bernoulli(options.teacher_forcing)) continue;
        std::int64_t best = 0;
        for (std::int64_t v = 1; v < V; ++v)
          if (row[b * V + v] > row[b * V + best]) best = v;
        if (previous[b] != Vocabulary::kPad) previous[b] = best;
      }
    }
    Step s = step(enc, Indices(previous), state);
    state = s.state;
    attentional.push_back(s.attentional);
  }
  // The output projection is most of the FLOPs: it runs over all B*T positions
  // at once, fused with the loss so that the (B*T, V) logits are never stored
  // (the same as cross_entropy(logits(h)), which tests/models/test_seq2seq.cpp checks).
  Tensor h = maybe_dropout(stack(attentional, 1));  // (B, T, H)
  return linear_cross_entropy(reshape(h, Shape{B * T, h.size(2)}), project.weight, project.bias,
                              Indices(batch.decoder_target.values), Vocabulary::kPad, options.label_smoothing);
}

}  // namespace attend
