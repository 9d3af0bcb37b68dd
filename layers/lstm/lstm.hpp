#pragma once
// LSTM: LSTMCell run over batches of sequences, in layers, in one or both
// directions, like torch.nn.LSTM(batch_first=True); PyTorch's weights load
// unchanged (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, and the same
// with _reverse for the backward direction, then _l1 ...).
//
//   attend::Generator gen(0);
//   attend::nn::LSTM lstm(32, 64, gen, {.num_layers = 2, .bidirectional = true, .dropout = 0.1});
//   auto [out, h_n, c_n] = lstm.forward(x, lengths);
//     // x (B, T, 32), lengths B values in [1, T] -> out (B, T, 128), h_n and c_n (4, B, 64)
//
// Padding. Sequence b has lengths[b] real tokens followed by padding. Padded
// steps leave the state untouched and output exactly 0 (with no gradient to x);
// each sequence's final state is the one at its last real token, and the
// backward direction starts at its last real token. This is what PyTorch gives
// for a pack_padded_sequence input.
//
// Speed: each direction of each layer is ONE recorded op, lstm_sequence(): the
// input's share of every step's gates comes from one GEMM over all B*T rows;
// then each step does one GEMM h_prev @ W_hh^T and the fused gate math. Its
// backward runs the steps in reverse with one GEMM per step for dh_prev and
// ends with one GEMM each for dW_hh, dW_ih and dx over all steps at once.
// lstm_sequence_composed() runs each sequence through lstm_cell_composed step by
// step: the oracle the fused op is tested against.
#include <cstdint>
#include <vector>

#include "core/random.hpp"
#include "core/tensor.hpp"
#include "layers/lstm/lstm_cell.hpp"
#include "layers/module.hpp"

namespace attend::nn {

struct LSTMSequenceOutput {
  Tensor output;      // (B, T, H), 0 at padded steps
  LSTMState final;    // h, c (B, H): the state after each sequence's last real token
};

// One direction of one layer over a batch of sequences, recorded as the single
// op "lstm_sequence" with outputs (output, final.h, final.c).
// x (B, T, I); initial.h, initial.c (B, H); lengths: B values in [1, T], or
// empty for all T. reverse runs each sequence from its last real token back to
// its first.
LSTMSequenceOutput lstm_sequence(const Tensor& x, const LSTMState& initial, const LSTMWeights& w,
                                 const std::vector<std::int64_t>& lengths = {}, bool reverse = false);
// The same from lstm_cell_composed steps, one sequence at a time: the oracle.
LSTMSequenceOutput lstm_sequence_composed(const Tensor& x, const LSTMState& initial, const LSTMWeights& w,
                                          const std::vector<std::int64_t>& lengths = {}, bool reverse = false);

struct LSTMOptions {
  std::int64_t num_layers = 1;
  bool bidirectional = false;
  // Dropout on the output of every layer but the last, while training (PyTorch's rule).
  double dropout = 0.0;
  // Forget-gate bias 1 in every cell, split as bias_ih = 1, bias_hh = 0 (see LSTMCellOptions).
  bool forget_bias_one = false;
  DType dtype = Float32;
};

struct LSTMOutput {
  Tensor output;  // (B, T, D*H): the last layer's outputs, forward then backward half; 0 at padded steps
  Tensor h_n;     // (L*D, B, H): final h of each layer and direction, index layer * D + direction
  Tensor c_n;     // (L*D, B, H)
};

class LSTM : public Module {
 public:
  // Parameters uniform in [-1/sqrt(H), 1/sqrt(H)], drawn in PyTorch's order; then
  // one number from gen seeds the dropout generator.
  LSTM(std::int64_t input_size, std::int64_t hidden_size, Generator& gen, LSTMOptions options = {});

  // x (B, T, I); lengths: B values in [1, T], or empty for all T;
  // initial: h0 and c0 (L*D, B, H) each, or undefined for zeros.
  // Not const: dropout draws from the module's generator.
  LSTMOutput forward(const Tensor& x, const std::vector<std::int64_t>& lengths = {}, const LSTMState& initial = {});
  // The oracle: the same network from lstm_sequence_composed.
  LSTMOutput forward_composed(const Tensor& x, const std::vector<std::int64_t>& lengths = {},
                              const LSTMState& initial = {});

  std::int64_t input_size() const { return input_size_; }
  std::int64_t hidden_size() const { return hidden_size_; }
  std::int64_t num_layers() const { return options_.num_layers; }
  std::int64_t num_directions() const { return options_.bidirectional ? 2 : 1; }
  const LSTMOptions& options() const { return options_; }
  // direction 0 is forward, 1 backward.
  const LSTMWeights& weights(std::int64_t layer, std::int64_t direction) const;
  // An int8 model's W_ih and W_hh for one layer and direction (set_int8_weights,
  // lstm_cell.hpp): the forward multiplies by them when it records no gradient.
  void set_int8(std::int64_t layer, std::int64_t direction, std::shared_ptr<const blas::PackedMatrix> ih,
                std::shared_ptr<const blas::PackedMatrix> hh);
  // Draws the dropout masks; its state belongs in a checkpoint that resumes exactly.
  Generator& dropout_generator() { return dropout_gen_; }

 private:
  LSTMOutput run(const Tensor& x, const std::vector<std::int64_t>& lengths, const LSTMState& initial, bool fused);
  std::int64_t input_size_, hidden_size_;
  LSTMOptions options_;
  std::vector<LSTMWeights> weights_;  // index layer * D + direction; sized once (registration keeps pointers)
  Generator dropout_gen_;
};

// Checks per-sequence lengths against a (B, T) batch and returns them, all T
// when `lengths` is empty. Errors name `op`:
// "LSTM: lengths[2] = 0 is outside [1, T] = [1, 5]".
std::vector<std::int64_t> check_lengths(const char* op, const std::vector<std::int64_t>& lengths, std::int64_t batch,
                                        std::int64_t steps);

}  // namespace attend::nn
