#pragma once
// Dropout as a module: zeroes each element with probability p and scales the
// rest by 1/(1-p) while training; passes x through unchanged after eval().
// It owns its Generator, so two runs from the same seed drop the same elements.
//
//   attend::nn::Dropout drop(0.1, /*seed=*/7);
//   Tensor h = drop.forward(x);   // training: masked; after model.eval(): x itself
#include <cstdint>

#include "core/random.hpp"
#include "core/tensor.hpp"
#include "layers/module.hpp"

namespace attend::nn {

class Dropout : public Module {
 public:
  explicit Dropout(double p, std::uint64_t seed = 0);

  Tensor forward(const Tensor& x);  // not const: draws from the generator

  double p() const { return p_; }
  // The generator's state is part of a checkpoint that resumes a run exactly.
  Generator& generator() { return gen_; }

 private:
  double p_;
  Generator gen_;
};

}  // namespace attend::nn
