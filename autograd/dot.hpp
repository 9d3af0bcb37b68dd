#pragma once
// to_dot: the recorded graph behind a tensor as Graphviz DOT text. Ops are
// boxes (name and output shape), leaves that require grad are ellipses.
//   dot -Tsvg graph.dot -o graph.svg
#include <string>

#include "core/tensor.hpp"

namespace attend {

std::string to_dot(const Tensor& root);

}  // namespace attend
