#include "layers/gradcheck_module.hpp"

namespace attend::nn {

GradcheckReport gradcheck_parameters(const Module& module, const std::function<Tensors()>& fn,
                                     GradcheckOptions options) {
  if (!fn) fail("gradcheck_parameters: no function given");
  Tensors params;
  options.names.clear();
  for (const auto& [name, p] : module.named_parameters()) {
    if (p.dtype() != Float64)
      fail("gradcheck_parameters: parameter '{}' is {}; convert the module with .to(attend::Float64) first", name,
           p.dtype());
    params.push_back(p);
    options.names.push_back(name);
  }
  if (params.empty()) fail("gradcheck_parameters: the module has no parameters");
  return gradcheck([&](const Tensors&) { return fn(); }, params, options);
}

}  // namespace attend::nn
