#include "layers/linear.hpp"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "autograd/grad_mode.hpp"
#include "autograd/ops.hpp"

namespace attend::nn {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool with_bias, Generator& gen, DType dtype)
    : in_(in_features), out_(out_features) {
  if (in_features <= 0 || out_features <= 0)
    fail("Linear: in_features and out_features must be positive, got {} and {}", in_features, out_features);
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight = uniform({out_features, in_features}, -bound, bound, gen, dtype);
  register_parameter("weight", weight);
  if (with_bias) {
    bias = uniform({out_features}, -bound, bound, gen, dtype);
    register_parameter("bias", bias);
  }
}

Tensor Linear::forward(const Tensor& x) const {
  check_defined("Linear", x);
  return linear(x, weight, bias);
}

PackedLinear PackedLinear::pack(const Tensor& weight, const Tensor& bias) {
  if (!weight.defined() || weight.dtype() != Float32 || weight.dim() != 2)
    fail("PackedLinear: the weight must be a float32 matrix (out, in), got {}",
         weight.defined() ? fmt::format("{} {}", weight.dtype(), weight.shape()) : std::string("none"));
  if (bias.defined() && (bias.dtype() != Float32 || bias.dim() != 1 || bias.size(0) != weight.size(0)))
    fail("PackedLinear: the bias must be float32 ({}) for weight {}, got {} {}", weight.size(0), weight.shape(),
         bias.dtype(), bias.shape());
  PackedLinear out;
  auto packed = std::make_shared<blas::PackedMatrix>(weight.data<float>(), weight.size(0), weight.size(1),
                                                     weight.size(1));
  packed->set_streamed(true);  // decoding's steps pass more than L2 holds between two products
  out.weight_ = std::move(packed);
  if (bias.defined()) out.bias_ = bias.detach().clone();
  return out;
}

PackedLinear PackedLinear::for_decoding(const Tensor& weight, const Tensor& bias) {
  if (GradMode::enabled() || !weight.defined() || weight.dtype() != Float32) return {};
  return pack(weight, bias);
}

Tensor PackedLinear::forward(const Tensor& x) const {
  if (empty()) fail("PackedLinear.forward: nothing packed");
  if (GradMode::enabled() && x.requires_grad())
    fail("PackedLinear.forward: x requires grad, and no gradient flows through a packed weight (use linear())");
  const std::int64_t in = weight_->k(), out = weight_->n();
  if (x.dtype() != Float32 || x.dim() != 2 || x.size(1) != in)
    fail("PackedLinear.forward: x must be float32 (rows, {}), got {} {}", in, x.dtype(), x.shape());
  Tensor y = attend::empty({x.size(0), out}, Float32);
  blas::gemm_packed(x.size(0), x.data<float>(), in, *weight_, 0.0f, y.data<float>(), out,
                    {bias_.defined() ? bias_.data<float>() : nullptr});
  return y;
}

}  // namespace attend::nn
