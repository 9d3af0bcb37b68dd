#pragma once
// A recorded graph (autograd/dot.hpp: recorded_graph) drawn as SVG by attend
// itself, no Graphviz: one box per op or leaf, inputs below the ops that use
// them, edges pointing up towards the loss. A box shows the op's name and the
// names of its named inputs (or the leaf's name: W_q, v, s, ...), its shape, and
// for a small tensor (at most kGraphSmall numbers) its value and its gradient,
// like micrograd's draw_dot. Several graphs go side by side in one picture, each
// in a <g class="panel">; every box is a <g class="node" data-name="...">.
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "autograd/dot.hpp"
#include "core/tensor.hpp"

namespace attend::tools {

inline constexpr std::int64_t kGraphSmall = 8;

struct GraphPanel {
  std::string title;
  std::vector<GraphNode> nodes;
  // Per node (same order as nodes): the gradient of its value, or empty when
  // not known (a constant, or an op output nothing tapped).
  std::vector<std::vector<double>> grads;
};

std::string graph_svg(const std::vector<GraphPanel>& panels, const std::string& caption = "");

// Taps op outputs while a graph is built, so that the picture can show their
// gradients: wrap each op's result, T(linear(x, W)), run the backward, then
// panel() pairs every node with the gradient its tap saw (leaves: .grad; the
// root: 1). recorded_graph folds the taps away again.
class GraphTaps {
 public:
  Tensor operator()(const Tensor& x);
  GraphPanel panel(std::string title, std::vector<GraphNode> nodes) const;

 private:
  std::deque<std::vector<double>> slots_;  // a deque: the taps hold references into it
  std::map<const Node*, std::size_t> slot_of_;
};

// What a box says, line by line (the first line is its title); for tests and
// for the SVG. Numbers to 4 significant digits ({:+.3e}), 4 to a line.
std::vector<std::string> graph_node_lines(const GraphPanel& panel, std::size_t node);

}  // namespace attend::tools
