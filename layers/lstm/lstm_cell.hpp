#pragma once
// LSTMCell: one step of a long short-term memory (Hochreiter & Schmidhuber 1997,
// with the forget gate of Gers et al. 2000), in PyTorch's layout, so that the
// weights of a torch.nn.LSTMCell load unchanged:
//
//   a = x @ W_ih^T + b_ih + h_prev @ W_hh^T + b_hh        (B, 4H), gates [i | f | g | o]
//   i = σ(a_i)   f = σ(a_f)   g = tanh(a_g)   o = σ(a_o)   (B, H) each
//   c = f * c_prev + i * g
//   h = o * tanh(c)
//
//   attend::Generator gen(0);
//   attend::nn::LSTMCell cell(32, 64, gen);    // I = 32, H = 64
//   auto [h, c] = cell.forward(x);             // x (B, 32), state zeros -> h, c (B, 64)
//   auto [h2, c2] = cell.forward(x2, {h, c});
//
// lstm_cell() is the step as ONE recorded op with the two outputs h and c: two
// GEMMs, then the gate math of lstm_kernels.cpp, whose backward lines sit under
// the forward lines they undo. lstm_cell_composed() is the same step built from
// primitive ops (linear, slice, sigmoid, tanh, mul, add): the oracle the tests
// hold the fused op to.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/kernels/packed_gemm.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "layers/module.hpp"

namespace attend::nn {

// The state an LSTM carries from step to step: hidden h and cell c.
struct LSTMState {
  Tensor h;
  Tensor c;
};

struct DeferredWeightGrads;  // below

// The four parameters of one LSTM cell, PyTorch's names and layout.
struct LSTMWeights {
  Tensor weight_ih;  // (4H, I): rows [W_ii | W_if | W_ig | W_io]
  Tensor weight_hh;  // (4H, H)
  Tensor bias_ih;    // (4H)
  Tensor bias_hh;    // (4H)
  // Optional, for speed only: contiguous copies of weight_ih^T (I, 4H) and
  // weight_hh^T (H, 4H), made once by a caller that runs many steps with the same
  // weights (LSTMCell::step_weights). With them lstm_cell's forward multiplies by
  // plain rather than transposed operands, which OpenBLAS does faster for small
  // batches (it re-packs a transposed operand at every call). They must hold the
  // transposes of the weights; gradients still go to weight_ih and weight_hh.
  Tensor weight_ih_t{};  // (default-initialised, so that {W_ih, W_hh, b_ih, b_hh} still reads as complete)
  Tensor weight_hh_t{};
  // Optional, for speed only, float32: the weights packed once for
  // blas::gemm_packed (core/kernels/packed_gemm.hpp), which multiplies rows by them
  // without OpenBLAS's packing of the weight at every call: packed_ih and
  // packed_hh for the forward (x @ W_ih^T, h_prev @ W_hh^T), packed_ih_t and
  // packed_hh_t for the backward (da @ W_ih, da @ W_hh). Each pair together or
  // not at all, and the backward's only with the forward's (step_weights packs
  // the backward's in grad mode only).
  // step_weights makes them for float32 cells. Shared, so that copies of the
  // weights share one packing.
  std::shared_ptr<const blas::PackedMatrix> packed_ih{};
  std::shared_ptr<const blas::PackedMatrix> packed_hh{};
  std::shared_ptr<const blas::PackedMatrix> packed_ih_t{};
  std::shared_ptr<const blas::PackedMatrix> packed_hh_t{};
  // Set by step_weights when the steps will be recorded (grad mode on, both
  // weights requiring grad): weight_ih and weight_hh are then the outputs of the
  // op "lstm_weight_grads", which shares their data, and each step's backward
  // leaves its rows here instead of multiplying them into dW_ih and dW_hh; that
  // op's backward, which runs after every step's, multiplies them all at once.
  std::shared_ptr<DeferredWeightGrads> deferred{};
  // An int8 model's weights (models/quantize/quantize.hpp), packed for
  // blas::gemm_packed: products that record no gradient (decoding) multiply by
  // these instead of weight_ih and weight_hh, which hold their dequantized values.
  // Both or neither.
  std::shared_ptr<const blas::PackedMatrix> int8_ih{};
  std::shared_ptr<const blas::PackedMatrix> int8_hh{};
};

// Checks an int8 pair for a cell of input size I and hidden size H and sets it
// on w (both null: unsets). Error on one null, a float pair, or wrong sizes.
void set_int8_weights(LSTMWeights& w, std::int64_t I, std::int64_t H, std::shared_ptr<const blas::PackedMatrix> ih,
                      std::shared_ptr<const blas::PackedMatrix> hh);

// What the steps of one recorded sequence leave for lstm_weight_grads: per step,
// da (B, 4H), x (B, I) and h_prev (B, H), whose rows make
//   dW_ih (4H, I) += DA^T @ X   and   dW_hh (4H, H) += DA^T @ H_prev
// over the rows of every step: one product each with T * B rows (k = T * B),
// instead of T products with k = B (16 at the default sizes, where reading and
// writing dW takes longer than the multiply-adds).
struct DeferredWeightGrads {
  Tensor weight_ih, weight_hh;  // the parameters themselves, as the cell holds them
  std::vector<Tensor> da, x, h_prev;
};

// weight_ih and weight_hh as steps with `deferred` see them: the same data, the
// outputs of the recorded op "lstm_weight_grads" (step_weights calls it).
std::pair<Tensor, Tensor> defer_weight_grads(const Tensor& weight_ih, const Tensor& weight_hh,
                                             const std::shared_ptr<DeferredWeightGrads>& deferred);

// Below this batch size the transposed copies (float64) pay for themselves (at
// 64 rows OpenBLAS's transposed product is as fast as the plain one).
inline constexpr std::int64_t kTransposedWeightsBelow = 32;

// One step: x (B, I), state.h and state.c (B, H) -> h, c (B, H). Recorded as the
// single op "lstm_cell" with outputs (h, c). Every argument must be defined.
LSTMState lstm_cell(const Tensor& x, const LSTMState& state, const LSTMWeights& w);
// The same step from primitive ops, recorded op by op: the oracle.
LSTMState lstm_cell_composed(const Tensor& x, const LSTMState& state, const LSTMWeights& w);

struct LSTMCellOptions {
  // Start with the forget gate open: σ(1) ≈ 0.73 of the cell is kept instead of
  // σ(0) = 0.5 (Jozefowicz et al. 2015). The bias of f is split over the two
  // bias vectors as bias_ih[H:2H] = 1 and bias_hh[H:2H] = 0, so b_ih + b_hh = 1
  // exactly for every f unit; the other slices keep their uniform draw.
  bool forget_bias_one = false;
  DType dtype = Float32;
};

class LSTMCell : public Module {
 public:
  // Every parameter uniform in [-1/sqrt(H), 1/sqrt(H)], drawn in the order
  // weight_ih, weight_hh, bias_ih, bias_hh (PyTorch's initialisation).
  LSTMCell(std::int64_t input_size, std::int64_t hidden_size, Generator& gen, LSTMCellOptions options = {});

  // x (B, I); state (B, H) each, or undefined for zeros -> (h, c) (B, H) each.
  LSTMState forward(const Tensor& x, const LSTMState& state = {}) const;
  // The oracle: the same step from primitive ops.
  LSTMState forward_composed(const Tensor& x, const LSTMState& state = {}) const;

  std::int64_t input_size() const { return input_size_; }
  std::int64_t hidden_size() const { return hidden_size_; }
  const LSTMWeights& weights() const { return w_; }
  // The weights for running many steps on batches of `batch` rows until the next
  // parameter update: float32 with the weights packed (bench_packed holds the
  // packed kernel to OpenBLAS at the batch sizes attend runs, 16 to 1,920 rows), float64 with the transposed copies when batch < kTransposedWeightsBelow.
  // Make them again after the parameters change, and for every recorded
  // sequence: in grad mode they belong to its graph (see
  // LSTMWeights::deferred), which a backward releases.
  LSTMWeights step_weights(std::int64_t batch) const;
  // An int8 model's W_ih and W_hh (set_int8_weights), which step_weights hands
  // to steps that record no gradient.
  void set_int8(std::shared_ptr<const blas::PackedMatrix> ih, std::shared_ptr<const blas::PackedMatrix> hh);
  // One step with weights from step_weights().
  LSTMState forward(const Tensor& x, const LSTMState& state, const LSTMWeights& step_weights) const;

 private:
  LSTMState initial_state(const Tensor& x, const LSTMState& state) const;
  std::int64_t input_size_, hidden_size_;
  LSTMWeights w_;  // registered as weight_ih, weight_hh, bias_ih, bias_hh
};

// Shared by LSTMCell and LSTM: PyTorch's uniform initialisation of one cell's
// four parameters, with the forget-gate split described in LSTMCellOptions.
LSTMWeights init_lstm_weights(std::int64_t input_size, std::int64_t hidden_size, Generator& gen,
                              bool forget_bias_one, DType dtype);

// Checks that the four weights are defined, of one dtype, and shaped (4H, I),
// (4H, H), (4H), (4H); returns I and H. Errors name `op`.
struct LSTMSizes {
  std::int64_t input, hidden;
};
LSTMSizes check_lstm_weights(const char* op, const LSTMWeights& w);

}  // namespace attend::nn
