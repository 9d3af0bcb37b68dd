#include "layers/dropout.hpp"

#include "autograd/ops.hpp"

namespace attend::nn {

Dropout::Dropout(double p, std::uint64_t seed) : p_(p), gen_(seed) {
  if (!(p >= 0.0 && p < 1.0)) fail("Dropout: p must be in [0, 1), got {}", p);
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p_, is_training(), gen_); }

}  // namespace attend::nn
