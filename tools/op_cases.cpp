#include "tools/op_cases.hpp"

namespace attend::tools {

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases;
  add_elementwise_cases(cases);
  add_matmul_cases(cases);
  add_softmax_cases(cases);
  add_loss_cases(cases);
  add_shape_cases(cases);
  add_reduction_cases(cases);
  return cases;
}

}  // namespace attend::tools
