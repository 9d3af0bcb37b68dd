#pragma once
// The graphs of the step `attend explain` differentiates: as Graphviz DOT (the
// graph training records, parameters named) and as an SVG picture drawn by
// attend (tools/report/graph_svg.hpp) with the composed step and the fused step side by
// side, every small value and gradient in its box. Internal to tools/explain/explain*.cpp.
#include <string>

#include "tools/explain/explain_model.hpp"

namespace attend::tools::explain_detail {

std::string step_dot(const Setup& st);
std::string step_graph_svg(const Setup& st);

}  // namespace attend::tools::explain_detail
