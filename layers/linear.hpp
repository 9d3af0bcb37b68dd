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

#include "core/packed_gemm.hpp"
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

// y = x @ W^T + b by a weight packed once (blas::PackedMatrix), outside the
// graph: for the products decoding repeats at every output step with the same
// weight (the attention's query projection, the combine layer W_c), which
// blas::gemm would pack afresh at every call. The bias is added by the
// kernel's epilogue. linear() is the oracle (tests/test_linear.cpp).
class PackedLinear {
 public:
  PackedLinear() = default;  // empty
  // W (out, in) and b (out) or undefined, float32. Error on another dtype or shape.
  static PackedLinear pack(const Tensor& weight, const Tensor& bias);
  // A packed copy of W and b when decoding would use one: not recording
  // (GradMode off) and float32; else empty.
  static PackedLinear for_decoding(const Tensor& weight, const Tensor& bias);

  bool empty() const { return weight_ == nullptr; }
  // x (rows, in) float32 -> (rows, out). Error when empty, on a wrong x, or
  // while recording (nothing here flows back to W or b).
  Tensor forward(const Tensor& x) const;

 private:
  std::shared_ptr<const blas::PackedMatrix> weight_;
  Tensor bias_;  // a copy, so that a later change to the model's bias is not half seen
};

}  // namespace attend::nn
