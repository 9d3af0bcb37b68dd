// The backward pass: walk the recorded graph from the roots in reverse
// topological order, so that each node runs only after every consumer of its
// outputs has added its contribution, then release the graph.
#include <atomic>
#include <cmath>

#include "autograd/node.hpp"

namespace attend {

namespace {
thread_local bool grad_enabled = true;
thread_local bool anomaly_enabled = false;
thread_local bool replay_enabled = false;

bool all_finite(const Tensor& t) {
  return dispatch(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* p = t.data<T>();
    for (std::int64_t i = 0, n = t.numel(); i < n; ++i)
      if (!std::isfinite(p[i])) return false;
    return true;
  });
}
}  // namespace

bool GradMode::enabled() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }
bool AnomalyMode::enabled() { return anomaly_enabled; }
void AnomalyMode::set_enabled(bool enabled) { anomaly_enabled = enabled; }
bool ReplayMode::enabled() { return replay_enabled; }
void ReplayMode::set_enabled(bool enabled) { replay_enabled = enabled; }

void Node::set_replay(std::vector<std::string> input_names, ReplayFn fn) {
  input_names_ = std::move(input_names);
  replay_ = std::move(fn);
}

std::string Node::input_name(std::size_t input) const {
  if (input < input_names_.size() && !input_names_[input].empty()) return input_names_[input];
  return fmt::format("input {}", input);
}

// A graph that is dropped without a backward (evaluation with grad on, an
// exception) would otherwise be destroyed recursively, one stack frame chain per
// node: a long sequence overflows the stack. Nodes that would die with this one
// are handed to a list and destroyed in a loop instead.
namespace {
thread_local bool draining = false;
thread_local std::vector<std::shared_ptr<Node>> pending;
}  // namespace

Node::~Node() {
  for (Tensor& in : inputs_) {
    const auto& impl = in.impl();
    if (impl && impl.use_count() == 1 && impl->grad_fn && impl->grad_fn.use_count() == 1)
      pending.push_back(std::move(impl->grad_fn));
  }
  inputs_.clear();
  if (draining) return;
  draining = true;
  while (!pending.empty()) {
    std::shared_ptr<Node> next = std::move(pending.back());
    pending.pop_back();
    next.reset();  // may push its own inputs' nodes
  }
  draining = false;
}

void Node::release() {
  inputs_.clear();
  out_grads_.clear();
  release_saved();
  released_ = true;
}

Tensor& Grads::dx(int input) {
  TensorImpl& impl = *node_.inputs_[input].impl();
  if (impl.grad_fn) {  // an intermediate: its gradient waits in its producer's slot
    Node& producer = *impl.grad_fn;
    Tensor& slot = producer.out_grads_[impl.output_nr];
    if (!slot.defined()) slot = zeros(impl.shape, impl.dtype);
    return slot;
  }
  if (!impl.grad.defined()) impl.grad = zeros(impl.shape, impl.dtype);  // a leaf: accumulates across backward calls
  return impl.grad;
}

void check_finite_forward(const char* name, std::span<Tensor* const> outputs) {
  int k = 0;
  for (Tensor* y : outputs) {
    if (!all_finite(*y)) fail("anomaly: the forward of '{}' produced a non-finite value in output {} (shape {})", name, k, y->shape());
    ++k;
  }
}

void record_node(std::shared_ptr<Node> node, const char* name, std::span<const Tensor> inputs,
                 std::span<Tensor* const> outputs) {
  node->name_ = name;
  node->inputs_.assign(inputs.begin(), inputs.end());
  node->out_grads_.resize(outputs.size());
  node->output_shapes_.reserve(outputs.size());
  int k = 0;
  for (Tensor* y : outputs) {
    TensorImpl& impl = *y->impl();
    node->output_shapes_.push_back(impl.shape);
    node->dtype_ = impl.dtype;
    impl.grad_fn = node;
    impl.output_nr = k++;
    impl.requires_grad = true;
  }
}

struct Engine {
  // Post-order DFS without recursion (graphs of long sequences are deep).
  static std::vector<std::shared_ptr<Node>> topological_order(const std::vector<Tensor>& roots) {
    static std::atomic<std::uint64_t> epoch{0};
    const std::uint64_t mark = ++epoch;
    std::vector<std::shared_ptr<Node>> order;
    std::vector<std::pair<Node*, std::size_t>> stack;  // node, next input to visit
    std::vector<std::shared_ptr<Node>> keep;           // owners of the nodes on the stack
    for (const Tensor& root : roots) {
      const auto& fn = root.impl()->grad_fn;
      if (!fn || fn->visit_mark_ == mark) continue;
      fn->visit_mark_ = mark;
      stack.emplace_back(fn.get(), 0);
      keep.push_back(fn);
      while (!stack.empty()) {
        auto& [node, next] = stack.back();
        if (node->released_)
          fail("backward: the graph through '{}' was already released by an earlier backward; "
               "pass retain_graph=true to the first backward to go through it twice", node->name_);
        if (next < node->inputs_.size()) {
          const auto& child = node->inputs_[next++].impl()->grad_fn;
          if (child && child->visit_mark_ != mark) {
            child->visit_mark_ = mark;
            stack.emplace_back(child.get(), 0);
            keep.push_back(child);
          }
        } else {
          order.push_back(std::move(keep.back()));
          keep.pop_back();
          stack.pop_back();
        }
      }
    }
    return order;  // inputs before consumers; run it backwards
  }

  static void run(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph) {
    if (roots.size() != grads.size())
      fail("backward: {} roots but {} gradients", roots.size(), grads.size());
    for (std::size_t i = 0; i < roots.size(); ++i) {
      const Tensor& root = roots[i];
      check_defined("backward", root, "the root");
      if (!root.requires_grad())
        fail("backward: the tensor (shape {}) does not require grad and has no grad_fn: "
             "nothing that requires grad was used to compute it", root.shape());
      const Tensor& grad = grads[i];
      check_same_dtype("backward", root, grad);
      if (!(grad.shape() == root.shape()))
        fail("backward: the gradient's shape {} differs from the tensor's shape {}", grad.shape(), root.shape());
    }
    std::vector<std::shared_ptr<Node>> order = topological_order(roots);
    for (std::size_t i = 0; i < roots.size(); ++i) {
      TensorImpl& impl = *roots[i].impl();
      Tensor& slot = impl.grad_fn ? impl.grad_fn->out_grads_[impl.output_nr] : impl.grad;
      if (!slot.defined()) slot = zeros(impl.shape, impl.dtype);
      slot.add_(grads[i]);
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node& node = **it;
      bool any = false;
      for (const Tensor& g : node.out_grads_) any = any || g.defined();
      if (any) {
        for (std::size_t k = 0; k < node.out_grads_.size(); ++k)
          if (!node.out_grads_[k].defined()) node.out_grads_[k] = zeros(node.output_shapes_[k], node.dtype_);
        Grads grads_view(node);
        node.apply(grads_view);
        check_gradients(node);
      }
      node.out_grads_.assign(node.out_grads_.size(), Tensor());
      if (!retain_graph) node.release();
    }
  }

  // After a node's backward, the gradients it left in its inputs' slots: a
  // tensor of another shape or dtype there (dx = something, instead of adding
  // into dx) would corrupt every later sum; under AnomalyMode a non-finite one
  // is blamed on this node.
  static void check_gradients(Node& node) {
    for (std::size_t i = 0; i < node.inputs_.size(); ++i) {
      const Tensor& in = node.inputs_[i];
      if (!in.requires_grad()) continue;
      TensorImpl& impl = *in.impl();
      const Tensor& g = impl.grad_fn ? impl.grad_fn->out_grads_[impl.output_nr] : impl.grad;
      if (!g.defined()) continue;
      if (!(g.shape() == impl.shape) || g.dtype() != impl.dtype)
        fail("backward of '{}': the gradient of {} is {} {} but the input is {} {}; a backward must add into "
             "g.dx(i), which has the input's shape and dtype, never replace it",
             node.name_, node.input_name(i), g.dtype(), g.shape(), impl.dtype, impl.shape);
      if (AnomalyMode::enabled() && !all_finite(g))
        fail("anomaly: the backward of '{}' produced a non-finite gradient for input {} (shape {})", node.name_, i,
             impl.shape);
    }
  }
};

std::vector<std::shared_ptr<Node>> graph_nodes(const std::vector<Tensor>& roots) {
  for (const Tensor& root : roots) check_defined("graph_nodes", root, "a root");
  return Engine::topological_order(roots);
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph) {
  Engine::run(roots, grads, retain_graph);
}

void Tensor::backward(const Tensor& grad, bool retain_graph) const {
  check_defined("backward", *this, "the tensor");
  Tensor seed = grad;
  if (!seed.defined()) {
    if (numel() != 1)
      fail("backward: the tensor has shape {}; a gradient can be created implicitly only for a "
           "one-element (scalar) output: pass one, as t.backward(grad)", shape());
    seed = ones(shape(), dtype());
  }
  Engine::run({*this}, {seed}, retain_graph);
}

}  // namespace attend
