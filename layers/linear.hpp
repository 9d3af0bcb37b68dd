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

}  // namespace attend::nn
