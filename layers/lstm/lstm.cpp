// The LSTM module: parameters named and initialised as PyTorch's, layers and
// directions wired from lstm_sequence (or, for the oracle, lstm_sequence_composed).
#include "layers/lstm/lstm.hpp"

#include <string>

#include "autograd/ops.hpp"

namespace attend::nn {

LSTM::LSTM(std::int64_t input_size, std::int64_t hidden_size, Generator& gen, LSTMOptions options)
    : input_size_(input_size), hidden_size_(hidden_size), options_(options) {
  if (input_size <= 0 || hidden_size <= 0)
    fail("LSTM: input_size and hidden_size must be positive, got {} and {}", input_size, hidden_size);
  if (options.num_layers < 1) fail("LSTM: num_layers must be at least 1, got {}", options.num_layers);
  if (!(options.dropout >= 0.0 && options.dropout < 1.0))
    fail("LSTM: dropout must be in [0, 1), got {}", options.dropout);
  const std::int64_t D = num_directions();
  weights_.reserve(static_cast<std::size_t>(options.num_layers * D));
  for (std::int64_t layer = 0; layer < options.num_layers; ++layer) {
    const std::int64_t in = layer == 0 ? input_size : D * hidden_size;  // layer l > 0 reads both directions
    for (std::int64_t d = 0; d < D; ++d) {
      weights_.push_back(init_lstm_weights(in, hidden_size, gen, options.forget_bias_one, options.dtype));
      LSTMWeights& w = weights_.back();
      const std::string suffix = "_l" + std::to_string(layer) + (d == 1 ? "_reverse" : "");
      register_parameter("weight_ih" + suffix, w.weight_ih);
      register_parameter("weight_hh" + suffix, w.weight_hh);
      register_parameter("bias_ih" + suffix, w.bias_ih);
      register_parameter("bias_hh" + suffix, w.bias_hh);
    }
  }
  dropout_gen_.manual_seed(gen.next_u64());
}

const LSTMWeights& LSTM::weights(std::int64_t layer, std::int64_t direction) const {
  if (layer < 0 || layer >= num_layers() || direction < 0 || direction >= num_directions())
    fail("LSTM::weights: no layer {} direction {} in an LSTM of {} layers and {} directions", layer, direction,
         num_layers(), num_directions());
  return weights_[static_cast<std::size_t>(layer * num_directions() + direction)];
}

void LSTM::set_int8(std::int64_t layer, std::int64_t direction, std::shared_ptr<const blas::PackedMatrix> ih,
                    std::shared_ptr<const blas::PackedMatrix> hh) {
  weights(layer, direction);  // checks the layer and direction
  LSTMWeights& w = weights_[static_cast<std::size_t>(layer * num_directions() + direction)];
  set_int8_weights(w, w.weight_ih.size(1), hidden_size_, std::move(ih), std::move(hh));
}

LSTMOutput LSTM::forward(const Tensor& x, const std::vector<std::int64_t>& lengths, const LSTMState& initial) {
  return run(x, lengths, initial, true);
}

LSTMOutput LSTM::forward_composed(const Tensor& x, const std::vector<std::int64_t>& lengths,
                                  const LSTMState& initial) {
  return run(x, lengths, initial, false);
}

LSTMOutput LSTM::run(const Tensor& x, const std::vector<std::int64_t>& lengths, const LSTMState& initial,
                     bool fused) {
  const std::int64_t L = num_layers(), D = num_directions(), H = hidden_size_;
  check_defined("LSTM", x, "x");
  if (x.dim() != 3 || x.size(2) != input_size_)
    fail("LSTM: x must be (B, T, I) = (B, T, {}), got {}", input_size_, x.shape());
  const std::int64_t B = x.size(0), T = x.size(1);
  if (B < 1 || T < 1) fail("LSTM: x must hold at least one sequence of at least one step, got {}", x.shape());
  if (x.dtype() != weights_[0].weight_ih.dtype())
    fail("LSTM: x is {} but the parameters are {} (convert with .to(dtype))", x.dtype(),
         weights_[0].weight_ih.dtype());
  check_lengths("LSTM", lengths, B, T);
  if (initial.h.defined() != initial.c.defined()) fail("LSTM: give both h0 and c0, or neither (for zeros)");
  const bool has_initial = initial.h.defined();
  if (has_initial) {
    const Shape expected{L * D, B, H};
    for (const auto& [name, t] : {std::pair{"h0", initial.h}, std::pair{"c0", initial.c}}) {
      if (!(t.shape() == expected))
        fail("LSTM: {} must be (num_layers * num_directions, B, H) = ({}, {}, {}), got {}", name, L * D, B, H,
             t.shape());
      if (t.dtype() != x.dtype()) fail("LSTM: {} is {} but x is {}", name, t.dtype(), x.dtype());
    }
  }

  Tensor input = x;
  std::vector<Tensor> hs, cs;  // final states, in (layer, direction) order
  for (std::int64_t layer = 0; layer < L; ++layer) {
    if (layer > 0) input = dropout(input, options_.dropout, is_training(), dropout_gen_);
    std::vector<Tensor> outputs;
    for (std::int64_t d = 0; d < D; ++d) {
      const std::int64_t k = layer * D + d;
      LSTMState start;
      if (has_initial) {
        start.h = reshape(slice(initial.h, 0, k, k + 1), {B, H});
        start.c = reshape(slice(initial.c, 0, k, k + 1), {B, H});
      } else {
        start.h = zeros({B, H}, x.dtype());
        start.c = zeros({B, H}, x.dtype());
      }
      const LSTMWeights& w = weights_[static_cast<std::size_t>(k)];
      LSTMSequenceOutput r = fused ? lstm_sequence(input, start, w, lengths, d == 1)
                                   : lstm_sequence_composed(input, start, w, lengths, d == 1);
      outputs.push_back(r.output);
      hs.push_back(r.final.h);
      cs.push_back(r.final.c);
    }
    input = D == 1 ? outputs[0] : concat(outputs, 2);  // (B, T, D*H)
  }
  return {input, stack(hs, 0), stack(cs, 0)};
}

}  // namespace attend::nn
