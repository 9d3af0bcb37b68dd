#include "autograd/dot.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "autograd/node.hpp"

namespace attend {

namespace {

// A leaf's DOT label: its name if known, else what it is.
std::string leaf_label(const GraphNode& n) {
  if (!n.name.empty()) return n.name;
  return n.requires_grad ? "leaf" : "constant";
}

}  // namespace

std::vector<GraphNode> recorded_graph(const Tensor& root, const TensorNames& names) {
  check_defined("recorded_graph", root, "the root");
  std::unordered_map<const TensorImpl*, std::string> name_of;
  for (const auto& [t, name] : names)
    if (t.defined()) name_of.emplace(t.impl().get(), name);

  std::vector<GraphNode> nodes;
  std::unordered_map<const void*, int> index;  // Node* or leaf TensorImpl* -> position in nodes
  // What a tensor handle stands for: the op behind it (through any taps, which
  // are folded away), or itself as a leaf; `seen` is the handle the taps observe.
  struct Resolved {
    const void* key;
    const TensorImpl* impl;
    const Tensor* seen;
    std::vector<const Node*> taps;
  };
  auto resolve = [](const Tensor& t) {
    Resolved r{nullptr, t.impl().get(), &t, {}};
    while (r.impl->grad_fn && std::string_view(r.impl->grad_fn->name()) == "tap" && !r.impl->grad_fn->released()) {
      r.taps.push_back(r.impl->grad_fn.get());
      r.seen = &r.impl->grad_fn->inputs()[0];
      r.impl = r.seen->impl().get();
    }
    r.key = r.impl->grad_fn ? static_cast<const void*>(r.impl->grad_fn.get()) : static_cast<const void*>(r.impl);
    return r;
  };
  // What this handle adds to a known node: its value and taps, if it is the
  // node's first output (a tap on an op's second output watches another tensor).
  auto note = [](GraphNode& n, const Resolved& r) {
    if (!n.op.empty() && r.impl->output_nr != 0) return;
    for (const Node* tp : r.taps)
      if (std::find(n.taps.begin(), n.taps.end(), tp) == n.taps.end()) n.taps.push_back(tp);
    if (!n.value.defined()) n.value = *r.seen;
  };
  // Depth-first, inputs before their users, with an explicit stack so that a
  // deep graph (a long sequence) cannot overflow the call stack.
  struct Item {
    Tensor tensor;
    bool expanded;
  };
  std::vector<Item> stack{{root, false}};
  while (!stack.empty()) {
    const Resolved r = resolve(stack.back().tensor);
    if (auto it = index.find(r.key); it != index.end()) {
      note(nodes[it->second], r);
      stack.pop_back();
      continue;
    }
    const auto& fn = r.impl->grad_fn;
    if (fn && !stack.back().expanded) {
      stack.back().expanded = true;
      const std::span<const Tensor> ins = fn->inputs();
      for (auto in = ins.rbegin(); in != ins.rend(); ++in) stack.push_back({*in, false});
      continue;
    }
    GraphNode n;
    if (fn) {
      n.op = fn->name();
      n.shape = fn->output_shapes().empty() ? r.impl->shape : fn->output_shapes()[0];
      n.requires_grad = true;
      for (const Tensor& in : fn->inputs()) n.inputs.push_back(index.at(resolve(in).key));
    } else {
      n.shape = r.impl->shape;
      n.requires_grad = r.impl->requires_grad;
      if (auto it = name_of.find(r.impl); it != name_of.end()) n.name = it->second;
    }
    note(n, r);
    nodes.push_back(std::move(n));
    index.emplace(r.key, static_cast<int>(nodes.size()) - 1);
    stack.pop_back();
  }
  return nodes;
}

std::string to_dot(const Tensor& root, const TensorNames& names) {
  check_defined("to_dot", root, "the root");
  const std::vector<GraphNode> nodes = recorded_graph(root, names);
  std::string out = "digraph attend {\n  rankdir=BT;\n  node [fontname=\"monospace\"];\n";
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const GraphNode& n = nodes[i];
    if (!n.op.empty())
      out += fmt::format("  n{} [shape=box, label=\"{}\\n{}\"];\n", i, n.op, n.shape);
    else
      out += fmt::format("  n{} [shape=ellipse, style={}, label=\"{}\\n{}\"];\n", i,
                         n.requires_grad ? "bold" : "dashed", leaf_label(n), n.shape);
  }
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (int from : nodes[i].inputs) out += fmt::format("  n{} -> n{};\n", from, i);
  out += "}\n";
  return out;
}

}  // namespace attend
