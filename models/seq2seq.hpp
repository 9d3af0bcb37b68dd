#pragma once
// Seq2Seq with attention: the model of Bahdanau et al. (2015) with Luong et
// al.'s (2015) input feeding and attentional layer.
//
//   encoder:   x_j = E_src[w_j];  h_1..h_S = LSTM(x)   (bidirectional: h_j = [h_fwd_j; h_bwd_j])
//   bridge:    s_0 = tanh(W_h h_last),  c_0 = tanh(W_c0 c_last)   (the encoder's final state)
//   decoder step t, with input feeding (h~_0 = 0):
//              (s_t, c_t)  = LSTMCell([E_tgt[y_{t-1}]; h~_{t-1}], (s_{t-1}, c_{t-1}))
//              c_t, alpha  = attention(s_t, h_1..h_S)            (context and weights)
//              h~_t        = tanh(W_c [s_t; c_t] + b_c)           (attentional vector)
//              p(y_t | ..) = softmax(W_out h~_t + b_out)
//   attention none: h~_t = tanh(W_c s_t + b_c), the decoder sees only s_0 from the
//   encoder: the plain Seq2Seq that the attention results are compared against.
//
// Letters: B batch, S source length, T target length, E embedding size,
// H hidden size, Hk encoder state size (H, or 2H when bidirectional), V vocabulary.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "layers/attention/attention.hpp"
#include "layers/dropout.hpp"
#include "layers/embedding.hpp"
#include "layers/linear.hpp"
#include "layers/lstm/lstm.hpp"
#include "layers/module.hpp"
#include "models/data/corpus.hpp"

namespace attend {

struct Int8Weights;  // models/quantize/quantize.hpp

enum class AttentionKind { None, Additive, Dot, General };
std::string_view attention_name(AttentionKind kind);
AttentionKind parse_attention(std::string_view name);  // none|additive|dot|general, else Error

struct Seq2SeqConfig {
  std::int64_t source_vocab = 0, target_vocab = 0;
  std::int64_t embed = 64;
  std::int64_t hidden = 128;
  std::int64_t layers = 1;     // encoder LSTM layers
  bool bidirectional = true;   // encoder
  double dropout = 0.0;        // on embeddings, between encoder layers, and on h~
  AttentionKind attention = AttentionKind::Additive;

  std::int64_t key_size() const { return bidirectional ? 2 * hidden : hidden; }  // Hk
  // Throws Error naming the bad field; sizes are bounded by core/io/limits.hpp,
  // parameter_count() included, before anything is allocated.
  void validate() const;
  std::int64_t parameter_count() const;  // what Seq2Seq(config).num_parameters() will be
  nlohmann::json to_json() const;
  static Seq2SeqConfig from_json(const nlohmann::json& j);
};

struct LossOptions {
  double label_smoothing = 0.0;
  // Probability of feeding the reference token at each decoder step; otherwise the
  // model's own previous prediction is fed (without gradient through the choice).
  double teacher_forcing = 1.0;
};

class Seq2Seq : public nn::Module {
 public:
  Seq2Seq(const Seq2SeqConfig& config, Generator& init, DType dtype = Float32);

  // The encoder's work for one batch, shared by every decoder step.
  struct Encoded {
    Tensor states;       // (B, S, Hk)
    Tensor mask;         // (B, S)
    Tensor s0, c0;       // (B, H) initial decoder state (through the bridge)
    nn::AttentionKeys keys;  // precomputed key side of the attention (undefined for none)
    nn::LSTMWeights cell_weights;  // the decoder cell's, prepared for B-row steps (LSTMCell::step_weights)
    nn::PackedLinear combine;      // W_c prepared for the steps (PackedLinear::for_steps), recording or not
  };
  struct State {
    Tensor s, c;   // (B, H) decoder LSTM state
    Tensor feed;   // (B, H) previous attentional vector h~ (input feeding)
  };
  struct Step {
    State state;
    Tensor attentional;  // (B, H) h~_t
    Tensor weights;      // (B, S) alpha_t, undefined for attention none
  };

  Encoded encode(const Indices& source, const std::vector<std::int64_t>& lengths, const Tensor& mask);
  State initial_state(const Encoded& enc) const;
  Step step(const Encoded& enc, const Indices& previous, const State& state);  // previous (B) token ids
  Tensor logits(const Tensor& attentional);  // (..., H) -> (..., V)

  // Mean cross-entropy over the batch's target tokens (padding ignored).
  Tensor loss(const Batch& batch, const LossOptions& options = {}, Generator* sampling = nullptr);

  // For teaching (attend translate --explain-grad): when set, step() forms the
  // context from its weights output with primitive ops (c = alpha @ values)
  // behind a tap, and backward calls this with dL/dalpha (B, S) of decoder step
  // `t` (0-based since the last encode()). The gradients are the same; it is slower.
  std::function<void(std::int64_t t, const Tensor& dweights)> on_weights_grad;

  const Seq2SeqConfig& config() const { return config_; }
  DType dtype() const { return dtype_; }
  // An int8 model's packed weights (models/quantize/quantize.hpp: quantize and
  // load_int8 set them), or null for a float model. Decoding multiplies by them.
  const Int8Weights* int8() const { return int8_.get(); }
  void set_int8(std::shared_ptr<const Int8Weights> weights);
  // The generator behind dropout, saved in checkpoints so a resumed run is exact.
  Generator& dropout_generator() { return dropout_.generator(); }

  nn::Embedding source_embed, target_embed;
  nn::LSTM encoder;
  nn::Linear bridge_h, bridge_c;
  nn::LSTMCell cell;
  std::unique_ptr<nn::AdditiveAttention> additive;  // attention additive
  std::unique_ptr<nn::DotProductAttention> dot;     // attention dot or general
  nn::Linear combine;  // W_c: [s; c] -> h~ (or s -> h~ without attention)
  nn::Linear project;  // W_out: h~ -> logits

 private:
  Tensor maybe_dropout(const Tensor& x);
  Seq2SeqConfig config_;
  DType dtype_;
  std::shared_ptr<const Int8Weights> int8_;
  std::int64_t steps_since_encode_ = 0;
  nn::Dropout dropout_;
};

}  // namespace attend
