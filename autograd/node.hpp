#pragma once
// The recorded graph. Every op that has an input requiring grad creates a Node:
// the op's name, its inputs (the edges gradients flow back along), and its
// backward function. The op's outputs point at the Node through grad_fn.
//
// Writing an op (see autograd/ops/elementwise.cpp for many):
//
//   // y = tanh(x)   dx += dy * (1 - y*y)
//   Tensor tanh(const Tensor& x) {
//     Tensor y = ...forward...;
//     record("tanh", {x}, {y}, [y = y.detach()](Grads& g) {
//       if (g.needs(0)) { Tensor& dx = g.dx(0); ... dx += dy * (1 - y*y) ... }
//     });
//     return y;
//   }
//
// Saved tensors are captured detach()ed: a Node holding its own output with
// grad_fn set would be a reference cycle.
//
// record() returns a handle on which the op says how to run its forward again
// from its inputs, and names them, for gradcheck's per-node mode:
//
//     record("tanh", {x}, {&y}, ...backward...)
//         .replay({"x"}, [](const Tensors& in) { return Tensors{tanh(in[0])}; });
//
// The replay must call the same op (the checker verifies that it records a
// node of the same name); non-tensor arguments (masks, indices, dropout masks)
// are captured by the lambda. It is stored only under ReplayMode.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "autograd/grad_mode.hpp"
#include "core/small_objects.hpp"
#include "core/tensor.hpp"

namespace attend {

class Grads;
using Tensors = std::vector<Tensor>;
// Runs an op's forward again: its inputs, in the order recorded, to its outputs.
using ReplayFn = std::function<Tensors(const Tensors&)>;

class Node {
 public:
  virtual ~Node();
  const char* name() const { return name_; }

  // Runs the op's backward: reads the output gradients, accumulates into the inputs'.
  virtual void apply(Grads& grads) = 0;
  // Drops the inputs and saved tensors once backward has used them.
  void release();
  bool released() const { return released_; }

  std::span<const Tensor> inputs() const { return inputs_; }
  std::span<const Shape> output_shapes() const { return output_shapes_; }
  DType dtype() const { return dtype_; }

  // Set under ReplayMode only (see record): the forward again, and the inputs' names.
  const ReplayFn& replay() const { return replay_; }
  void set_replay(std::vector<std::string> input_names, ReplayFn fn);
  // "keys", or "input 1" when the op named none.
  std::string input_name(std::size_t input) const;

 protected:
  virtual void release_saved() = 0;

 private:
  friend class Grads;
  friend struct Engine;
  friend void record_node(std::shared_ptr<Node>, const char*, std::span<const Tensor>, std::span<Tensor* const>);

  // A node's own vectors come from small_objects too: three small blocks per op
  // (~900 per S training step) that went through malloc's bins.
  template <class T>
  using SmallVector = std::vector<T, small_objects::Allocator<T>>;

  const char* name_ = "";
  SmallVector<Tensor> inputs_;
  SmallVector<Shape> output_shapes_;
  DType dtype_ = Float32;
  SmallVector<Tensor> out_grads_;  // filled by the consumers during backward
  std::uint64_t visit_mark_ = 0;   // used by the engine's topological sort
  bool released_ = false;
  ReplayFn replay_;
  std::vector<std::string> input_names_;
};

// What record() returns: a handle on the node just recorded (none when nothing
// was recorded), through which the op registers its replay.
class Recorded {
 public:
  explicit Recorded(Node* node = nullptr) : node_(node) {}
  Node* node() const { return node_; }
  // Keeps fn as the node's replay, under ReplayMode only: otherwise the lambda
  // is dropped unused, and recording costs what it did without it.
  template <class F>
  void replay(std::initializer_list<const char*> input_names, F&& fn) const {
    if (node_ && ReplayMode::enabled())
      node_->set_replay(std::vector<std::string>(input_names.begin(), input_names.end()), ReplayFn(std::forward<F>(fn)));
  }

 private:
  Node* node_;
};

// What a backward function sees: the gradients of the op's outputs (dy) and
// the gradient slots of its inputs (dx), which it must add to (dx += ...),
// never assign. A slot may already hold gradient when the backward runs:
// another consumer's contribution (an input used by several ops receives the
// sum of all of them), a leaf's .grad from an earlier backward(), or, under
// gradcheck, random values seeded there to catch an assignment. It is
// zero-filled only when nothing has arrived yet.
class Grads {
 public:
  explicit Grads(Node& node) : node_(node) {}
  const Tensor& dy(int output = 0) const { return node_.out_grads_[output]; }
  bool needs(int input) const { return node_.inputs_[input].requires_grad(); }
  Tensor& dx(int input);  // the input's slot: what has arrived so far (zeros if nothing has)

 private:
  Node& node_;
};

// A Node whose backward is a lambda; the lambda holds the saved tensors.
template <class F>
class FnNode final : public Node {
 public:
  explicit FnNode(F&& fn) : fn_(std::move(fn)) {}
  void apply(Grads& grads) override {
    if (fn_) (*fn_)(grads);
  }

 protected:
  void release_saved() override { fn_.reset(); }

 private:
  std::optional<F> fn_;
};

// True when an op on these inputs must be recorded.
inline bool should_record(std::span<const Tensor> inputs) {
  if (!GradMode::enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.requires_grad()) return true;
  return false;
}

// Links outputs to a new node. Checks outputs for NaN/inf under AnomalyMode.
void record_node(std::shared_ptr<Node> node, const char* name, std::span<const Tensor> inputs,
                 std::span<Tensor* const> outputs);
inline void record_node(std::shared_ptr<Node> node, const char* name, std::span<const Tensor> inputs,
                        std::initializer_list<Tensor*> outputs) {
  record_node(std::move(node), name, inputs, std::span<Tensor* const>(outputs.begin(), outputs.size()));
}
void check_finite_forward(const char* name, std::span<Tensor* const> outputs);
inline void check_finite_forward(const char* name, std::initializer_list<Tensor*> outputs) {
  check_finite_forward(name, std::span<Tensor* const>(outputs.begin(), outputs.size()));
}

// Records an op whose backward is `fn` if any input requires grad and grad mode is on.
template <class F>
Recorded record(const char* name, std::span<const Tensor> inputs, std::initializer_list<Tensor*> outputs, F&& fn) {
  if (AnomalyMode::enabled()) check_finite_forward(name, outputs);
  if (!should_record(inputs)) return Recorded();
  auto node = small_objects::make_shared<FnNode<std::decay_t<F>>>(std::forward<F>(fn));
  Node* raw = node.get();  // owned by the outputs' grad_fn from here on
  record_node(std::move(node), name, inputs, outputs);
  return Recorded(raw);
}
template <class F>
Recorded record(const char* name, std::initializer_list<Tensor> inputs, std::initializer_list<Tensor*> outputs,
                F&& fn) {
  return record(name, std::span<const Tensor>(inputs.begin(), inputs.size()), outputs, std::forward<F>(fn));
}
template <class F>
Recorded record(const char* name, const std::vector<Tensor>& inputs, std::initializer_list<Tensor*> outputs, F&& fn) {
  return record(name, std::span<const Tensor>(inputs), outputs, std::forward<F>(fn));
}

// Every node that the roots depend on, each once, inputs before consumers
// (the order backward runs in reverse). For tools: gradcheck, to_dot.
std::vector<std::shared_ptr<Node>> graph_nodes(const std::vector<Tensor>& roots);

// Gradient of several outputs at once: sum_k <roots[k], grads[k]>.
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph = false);

}  // namespace attend
