#include "layers/linear.hpp"

#include <cmath>

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

}  // namespace attend::nn
