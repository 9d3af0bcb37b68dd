#pragma once
// gradcheck: compares the gradients backward() computes with central finite
// differences, for every element of every input that requires grad.
//
//   auto report = attend::gradcheck([](const std::vector<Tensor>& in) { return tanh(in[0]); },
//                                   {attend::normal({3, 4}, 0, 1, gen, Float64).requires_grad_()});
//   CHECK(report.passed);
//
// The scalar differentiated is L = sum_k sum(y_k * R_k) with a random upstream
// gradient R_k (never a plain sum, which would hide errors that cancel over
// the elements of y). Inputs must be float64; they are perturbed in place and
// restored, so parameters captured inside fn (a layer's weights) can be passed
// as inputs too. Their .grad is restored afterwards.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace attend {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-5;  // |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-3;
  std::uint64_t seed = 0;  // for the random upstream gradient R
};

struct InputReport {
  int input = 0;
  Shape shape;
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::vector<std::int64_t> worst_index;  // multi-index of the largest error
  double analytic_at_worst = 0, numeric_at_worst = 0;
  bool passed = true;
};

struct GradcheckReport {
  bool passed = true;
  std::vector<InputReport> inputs;  // one per input that requires grad
  double max_abs_error() const;
  double max_rel_error() const;
  std::string str() const;  // a readable summary, naming the worst element of each input
};

using MultiOutputFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
using SingleOutputFn = std::function<Tensor(const std::vector<Tensor>&)>;

GradcheckReport gradcheck(const MultiOutputFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});
GradcheckReport gradcheck(const SingleOutputFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace attend
