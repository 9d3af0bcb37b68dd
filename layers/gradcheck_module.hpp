#pragma once
// gradcheck over a module's parameters, the report naming each one by its
// dotted name, so that a failure reads "encoder.weight_hh_l0 [8, 2]: ... at [3, 1]".
//
//   model.to(attend::Float64);                      // gradcheck needs float64
//   GradcheckOptions o;  o.directions = 3;         // a whole model in seconds
//   GradcheckReport r = nn::gradcheck_parameters(model, [&] { return Tensors{model.loss(batch)}; }, o);
#include <functional>

#include "autograd/gradcheck/gradcheck.hpp"
#include "layers/module.hpp"

namespace attend::nn {

GradcheckReport gradcheck_parameters(const Module& module, const std::function<Tensors()>& fn,
                                     GradcheckOptions options = {});

}  // namespace attend::nn
