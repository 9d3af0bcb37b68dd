#pragma once
// Linear: y = x @ W^T + b, a fully connected layer in PyTorch's layout.
//
//   attend::Generator gen(0);
//   attend::nn::Linear proj(512, 256, gen);   // weight (256, 512), bias (256)
//   Tensor y = proj.forward(x);               // x (..., 512) -> y (..., 256)
//
// Initialisation is PyTorch's default: weight and bias uniform in
// [-1/sqrt(in), 1/sqrt(in)] (what kaiming_uniform_(a=sqrt(5)) reduces to).
#include <cstdint>
#include <memory>
#include <vector>

#include "core/kernels/packed_gemm.hpp"
#include "core/random.hpp"
#include "core/tensor.hpp"
#include "layers/module.hpp"

namespace attend::nn {

class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias, Generator& gen, DType dtype = Float32);
  Linear(std::int64_t in_features, std::int64_t out_features, Generator& gen, DType dtype = Float32)
      : Linear(in_features, out_features, true, gen, dtype) {}

  // x (..., in) -> (..., out), any rank >= 1; recorded by attend::linear.
  Tensor forward(const Tensor& x) const;

  std::int64_t in_features() const { return in_; }
  std::int64_t out_features() const { return out_; }

  Tensor weight;  // (out, in)
  Tensor bias;    // (out), undefined without bias

 private:
  std::int64_t in_, out_;
};

// Learning? Read linear() in autograd/ops/matmul.cpp first: the same y = x W^T + b
// with its backward under it. PackedLinear is its fast twin.
//
// y = x @ W^T + b by a weight packed once (blas::PackedMatrix): for the
// products the decoder repeats at every output step with the same weight (the
// attention's query projection, the combine layer W_c), which blas::gemm would
// pack afresh at every call. The bias is added by the kernel's epilogue.
// linear() is the oracle (tests/layers/test_linear.cpp).
//
// Training (for_steps while recording) records each step as the op
// "packed_linear" and does once per batch what linear()'s backward does at every
// step: W^T is packed once for dx = dy @ W, and dW is deferred. At B = 16 rows a
// step, dW (out, in) += dy^T (out, 16) @ x (16, in) spends its time reading and
// writing dW, not multiplying; so each step leaves its dy and x in
// DeferredLinearGrads, and the op "linear_weight_grads", through which every step
// sees W, multiplies all their rows at once after the last step's backward (as
// LSTMCell::step_weights does for the cell's weights).
struct DeferredLinearGrads {
  std::vector<Tensor> dy, x;  // per step: (B, out) and (B, in)
};

class PackedLinear {
 public:
  PackedLinear() = default;  // empty
  // W (out, in) and b (out) or undefined, float32, for steps that are not
  // recorded (decoding). Error on another dtype or shape.
  static PackedLinear pack(const Tensor& weight, const Tensor& bias);
  // For the steps of one batch: float32 packed (as pack() when not recording);
  // float64, what the gradient checks run in, multiplies by W as it is.
  // Recording, the steps are recorded and W's gradient is deferred (see above)
  // unless defer_weight_grad is false (then each step's backward adds its own
  // dW, as linear()'s). Make it again after the parameters change, and for every
  // recorded batch: it belongs to that batch's graph. Empty without a weight.
  static PackedLinear for_steps(const Tensor& weight, const Tensor& bias, bool defer_weight_grad = true);
  // A weight packed already (an int8 model's, models/quantize/quantize.hpp), for
  // steps that are not recorded. Error when null, or on a bias that is not
  // float32 of the weight's n rows.
  static PackedLinear from_packed(std::shared_ptr<const blas::PackedMatrix> weight, const Tensor& bias);

  bool empty() const { return weight_ == nullptr && !weight_values_.defined(); }
  // Made by for_steps while recording: forward records, and gradients flow.
  bool recorded() const { return weight_in_.defined(); }
  // forward can run now: not empty, and made for recorded steps or not recording
  // (a step that records with a pack made without recording runs linear()).
  bool usable() const;
  // x (rows, in) -> (rows, out). Error when empty or on a wrong x; error when x
  // requires grad and this was not made for recorded steps (nothing would flow
  // back to W or b).
  Tensor forward(const Tensor& x) const;

 private:
  static PackedLinear pack_with(const Tensor& weight, const Tensor& bias, bool streamed);
  std::shared_ptr<const blas::PackedMatrix> weight_;  // float32
  Tensor weight_values_;  // float64: W itself, for y and dx by plain products
  Tensor bias_;  // a copy, so that a later change to the model's bias is not half seen
  // Recorded steps only (for_steps while recording):
  std::shared_ptr<const blas::PackedMatrix> weight_t_;  // float32: W^T (in, out), for dx = dy @ W
  Tensor weight_in_;      // W as the steps' graph takes it: the output of linear_weight_grads, or W
  Tensor bias_in_;        // the bias parameter itself (its gradient is added per step)
  std::shared_ptr<DeferredLinearGrads> deferred_;
};

// W as the steps of one batch see it: the same data, the output of the recorded
// op "linear_weight_grads", whose backward runs after every step's and adds
// dW += DY^T @ X over the rows the steps left in `deferred`.
Tensor defer_linear_weight_grad(const Tensor& weight, const std::shared_ptr<DeferredLinearGrads>& deferred);

}  // namespace attend::nn
