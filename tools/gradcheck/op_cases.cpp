#include "tools/gradcheck/op_cases.hpp"

#include <algorithm>

namespace attend::tools {

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases;
  add_elementwise_cases(cases);
  add_matmul_cases(cases);
  add_softmax_cases(cases);
  add_loss_cases(cases);
  add_shape_cases(cases);
  add_reduction_cases(cases);
  add_layer_cases(cases);
  return cases;
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (const OpCase& c : op_cases())
    if (std::find(names.begin(), names.end(), c.op) == names.end()) names.push_back(c.op);
  return names;
}

}  // namespace attend::tools
