#include "autograd/dot.hpp"

#include <unordered_map>
#include <vector>

#include "autograd/node.hpp"

namespace attend {

std::string to_dot(const Tensor& root) {
  check_defined("to_dot", root, "the root");
  std::string out = "digraph attend {\n  rankdir=BT;\n  node [fontname=\"monospace\"];\n";
  std::unordered_map<const void*, int> ids;  // Node* or TensorImpl* -> DOT id
  auto id_of = [&](const void* p, bool& is_new) {
    auto [it, inserted] = ids.emplace(p, static_cast<int>(ids.size()));
    is_new = inserted;
    return it->second;
  };
  std::vector<Node*> todo;
  bool is_new = false;
  if (const auto& fn = root.impl()->grad_fn) {
    int id = id_of(fn.get(), is_new);
    out += fmt::format("  n{} [shape=box, label=\"{}\\n{}\"];\n", id, fn->name(), root.shape());
    todo.push_back(fn.get());
  } else {
    int id = id_of(root.impl().get(), is_new);
    out += fmt::format("  n{} [shape=ellipse, label=\"leaf\\n{}\"];\n", id, root.shape());
  }
  while (!todo.empty()) {
    Node* node = todo.back();
    todo.pop_back();
    const int to = ids.at(node);
    for (const Tensor& in : node->inputs()) {
      const TensorImpl& impl = *in.impl();
      int from;
      if (impl.grad_fn) {
        from = id_of(impl.grad_fn.get(), is_new);
        if (is_new) {
          out += fmt::format("  n{} [shape=box, label=\"{}\\n{}\"];\n", from, impl.grad_fn->name(), impl.shape);
          todo.push_back(impl.grad_fn.get());
        }
      } else {
        from = id_of(&impl, is_new);
        if (is_new)
          out += fmt::format("  n{} [shape=ellipse, style={}, label=\"{}\\n{}\"];\n", from,
                             impl.requires_grad ? "bold" : "dashed", impl.requires_grad ? "leaf" : "constant", impl.shape);
      }
      out += fmt::format("  n{} -> n{};\n", from, to);
    }
  }
  out += "}\n";
  return out;
}

}  // namespace attend
