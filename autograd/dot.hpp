#pragma once
// The recorded graph behind a tensor, for people to look at:
//
// - recorded_graph: the nodes as data (op or leaf, name, shape, inputs, value),
//   which tools/report/graph_svg.cpp draws as an SVG picture without Graphviz;
// - to_dot: the same as Graphviz DOT text. Ops are boxes (name and output
//   shape), leaves are ellipses labelled with their name when one is known
//   ("W_q\n[4, 4]"), else "leaf" (requires grad) or "constant".
//     dot -Tsvg graph.dot -o graph.svg
//
// Names: tensors carry none (a name field on every tensor would cost every op);
// the caller passes the names it knows, parameters usually:
//   to_dot(loss, {{model.W_q, "W_q"}, {s, "s"}})
// A name belongs to the tensor's storage handle (TensorImpl), so a clone or a
// detach() of a named tensor is a different, unnamed tensor.
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.hpp"

namespace attend {

class Node;

using TensorNames = std::vector<std::pair<Tensor, std::string>>;

struct GraphNode {
  std::string op;       // the op's name; empty for a leaf
  std::string name;     // a leaf's name from `names`, else empty
  Shape shape;          // the op's first output, or the leaf
  bool requires_grad = false;  // a leaf that receives gradient (a parameter or input), not a constant
  std::vector<int> inputs;     // indices into the node list, in the op's input order
  // The leaf itself, or the op's first output as its first consumer saw it
  // (for the root: the root). Undefined when no consumer used output 0.
  Tensor value;
  // The tap nodes (autograd/ops/hooks.cpp) that sat on this node's first output.
  // They are identities, so the picture leaves them out and shows their gradient here.
  std::vector<const Node*> taps;
};

// Every node reachable from root, inputs before the nodes that use them; the
// root is the last one. Taps are folded into the node they observe.
std::vector<GraphNode> recorded_graph(const Tensor& root, const TensorNames& names = {});

std::string to_dot(const Tensor& root, const TensorNames& names = {});

}  // namespace attend
